// Package apply is the executor's writing layer: it carries out a
// policy's actions as API calls (status writes with conflict retries,
// replica pods and their Bindings, evictions with the grace period to
// checkpoint, resizes, migrations, placeholder Deployments, PodGroup
// gangs and plain pods, Events) after validating each against the
// cycle's ledger, and keeps the bookkeeping those writes need between
// cycles (the TrainingJobs and pods it wrote that a lagging informer
// cache does not show yet, progress not yet written, the starts still in
// flight). Package view reads the objects into a snapshot; package k8s
// runs the cycle between the two (reconcile, the policy, the controller
// loops).
package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// Config is what the writes need of the executor's configuration (see
// k8s.Config for each field's meaning and default).
type Config struct {
	SchedulerName            string
	PlaceholderNamespace     string
	PlaceholderPriorityClass string
	PauseImage               string
	Tenants                  map[string]string
	DefaultDurationSeconds   float64
	ProgressPeriod           time.Duration
}

// Writer makes the executor's API writes and keeps what they need to
// remember from one cycle to the next. Its methods may be called from the
// start workers concurrently: the bookkeeping is locked.
type Writer struct {
	// C reads through the informer cache and writes to the API server;
	// API reads the API server directly (to retry after a conflict).
	C   client.Client
	API client.Reader
	Rec record.EventRecorder
	M   *Metrics
	Cfg Config
	// Policy names the policy in Events.
	Policy string
	// Now is the clock. Fault, when set, is called before every API write
	// with a short description; an error it returns aborts the write
	// (tests kill the scheduler in the middle of a cycle with it).
	Now   func() time.Time
	Fault func(op string) error

	mu sync.Mutex
	// written remembers the TrainingJobs this writer wrote, so that a
	// cycle that reads an informer cache lagging behind its own writes
	// does not act on the stale copy (start a job twice, say).
	written map[string]*v1alpha1.TrainingJob
	// progress holds, per job, progress copied from reports but not yet
	// written to the API server (Config.ProgressPeriod); Settle lays it
	// over the cached status, and any status write of the job carries it.
	progress map[string]*deferredProgress
	// made remembers the replica pods this writer created (and bound)
	// until the informer cache shows them, by namespace/name, so that a
	// cycle reading a lagging cache neither creates them again
	// (AlreadyExists) nor binds them again (Conflict).
	made map[string]madePod
	// flights are the starts whose API calls are under way, and, in Run's
	// pipelined cycles, the status writes that record jobs' ends
	// (flight.go).
	flights flights
}

// New returns a writer. api may be nil, in which case c is used for
// conflict retries too; m nil means DefaultMetrics.
func New(cfg Config, c client.Client, api client.Reader, rec record.EventRecorder, m *Metrics, policy string) *Writer {
	if api == nil {
		api = c
	}
	if m == nil {
		m = DefaultMetrics()
	}
	return &Writer{C: c, API: api, Rec: rec, M: m, Cfg: cfg, Policy: policy, Now: time.Now,
		written: map[string]*v1alpha1.TrainingJob{}, progress: map[string]*deferredProgress{}, made: map[string]madePod{}}
}

// Semantic is equality.Semantic, which compares metav1.Time by instant,
// also comparing v1alpha1.ReportTime by instant: a time.Time has
// unexported fields, which the reflective comparison refuses (it panics).
var Semantic = func() conversion.Equalities {
	e := equality.Semantic.Copy()
	if err := e.AddFunc(func(a, b v1alpha1.ReportTime) bool { return a.Equal(b.Time) }); err != nil {
		panic(err)
	}
	return e
}()

// APIError wraps a failed API call: unlike a refusal, the action was
// valid but could not be carried out now; the next cycle retries from the
// API server's state. Abort stops the cycle (the fault hook fired).
type APIError struct {
	Err   error
	Abort bool
}

func (a *APIError) Error() string { return a.Err.Error() }
func (a *APIError) Unwrap() error { return a.Err }

// ErrFault is what a Fault hook returns to simulate a crash.
var ErrFault = errors.New("fault injected")

func (w *Writer) fault(op string) error {
	if w.Fault == nil {
		return nil
	}
	if err := w.Fault(op); err != nil {
		return &APIError{Err: fmt.Errorf("%s: %w", op, err), Abort: true}
	}
	return nil
}

// Precondition is returned by a status mutation whose precondition no
// longer holds on the fresh object: the write is dropped, and the caller
// treats it as no error (see IsPrecondition).
type Precondition struct{ Msg string }

func (e Precondition) Error() string { return e.Msg }

// IsPrecondition reports whether err is a Precondition.
func IsPrecondition(err error) bool {
	_, ok := err.(Precondition)
	return ok
}

// UpdateStatus applies mutate to the job and writes its status, retrying
// on a resourceVersion conflict with the object re-read from the API
// server (mutate is applied again, so it must check its preconditions on
// the object it is given). It never overwrites a newer version blindly.
func (w *Writer) UpdateStatus(ctx context.Context, jv *view.Job, mutate func(*v1alpha1.TrainingJob) error) error {
	if err := w.fault("update status " + view.JobKey(jv.TJ)); err != nil {
		return err
	}
	obj := jv.TJ.DeepCopy()
	for try := 0; ; try++ {
		before := markOf(obj)
		if err := mutate(obj); err != nil {
			return err
		}
		deriveStatus(obj)
		// Users see the tenant they are charged to (kubectl's wide
		// Tenant column), on a write the scheduler makes anyway.
		obj.Status.Tenant = view.Options{Tenants: w.Cfg.Tenants}.Tenant(obj.Namespace)
		// Only the status subresource: policy state lives there too
		// (status.policyLabels), so the scheduler needs no update or
		// patch on TrainingJobs themselves, which tenants own.
		err := w.C.Status().Update(ctx, obj)
		if err == nil {
			w.M.transition(before, obj, w.Now())
			jv.TJ = obj
			w.mu.Lock()
			w.written[view.JobKey(obj)] = obj.DeepCopy()
			// The write carried any deferred progress (jv.TJ has it laid
			// over; a re-read object got it below).
			delete(w.progress, view.JobKey(obj))
			w.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) || try >= 5 {
			return &APIError{Err: fmt.Errorf("updating status of %s: %w", view.JobKey(obj), err)}
		}
		w.M.Conflicts.Inc()
		fresh := &v1alpha1.TrainingJob{}
		if err := w.API.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			return &APIError{Err: fmt.Errorf("re-reading %s after a conflict: %w", view.JobKey(obj), err)}
		}
		w.mu.Lock()
		if dp := w.progress[view.JobKey(fresh)]; dp != nil {
			dp.overlay(fresh)
		}
		w.mu.Unlock()
		obj = fresh
	}
}

// Event records a Kubernetes Event on obj (none without a recorder).
func (w *Writer) Event(obj runtime.Object, warning bool, reason, format string, args ...any) {
	if w.Rec == nil {
		return
	}
	t := corev1.EventTypeNormal
	if warning {
		t = corev1.EventTypeWarning
	}
	w.Rec.Eventf(obj, t, reason, format, args...)
}

// ClockConfigMap holds the scheduler clock's origin.
const ClockConfigMap = "drover-clock"

// LoadOrigin reads the clock origin from the drover-clock ConfigMap, or
// creates it with the current time. The first scheduler to run fixes it;
// restarts and new leaders read the same value.
func (w *Writer) LoadOrigin(ctx context.Context) (time.Time, error) {
	key := client.ObjectKey{Namespace: w.Cfg.PlaceholderNamespace, Name: ClockConfigMap}
	for range 3 {
		cm := &corev1.ConfigMap{}
		err := w.API.Get(ctx, key, cm)
		if err == nil {
			t, perr := time.Parse(time.RFC3339Nano, cm.Data["origin"])
			if perr != nil {
				return time.Time{}, fmt.Errorf("configmap %s: origin %q: %w", key, cm.Data["origin"], perr)
			}
			return t, nil
		}
		if !apierrors.IsNotFound(err) {
			return time.Time{}, fmt.Errorf("reading configmap %s: %w", key, err)
		}
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Data: map[string]string{"origin": w.Now().UTC().Format(time.RFC3339Nano)}}
		if err := w.C.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return time.Time{}, fmt.Errorf("creating configmap %s (does namespace %s exist?): %w", key, key.Namespace, err)
		}
	}
	return time.Time{}, fmt.Errorf("configmap %s: could not read or create it", key)
}

// Overlay replaces, in the jobs just listed from the cache, those older
// than the copy this writer wrote last (the cache lags behind its own
// writes), and forgets the copies the cache has caught up with.
func (w *Writer) Overlay(jobs []v1alpha1.TrainingJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range jobs {
		key := view.JobKey(&jobs[i])
		if mine, ok := w.written[key]; ok {
			if olderThan(jobs[i].ResourceVersion, mine.ResourceVersion) {
				jobs[i] = *mine.DeepCopy()
			} else {
				delete(w.written, key)
			}
		}
	}
}

// olderThan compares resourceVersions. They are opaque in general but
// etcd revisions in practice; when either does not parse, the cache wins.
func olderThan(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// Settle lays deferred progress over the world's jobs, adds the pods this
// writer made that the cache does not show yet, and drops the bookkeeping
// of jobs not in the world (gone, or finished with the live indexes), so
// that it does not grow with the jobs that ever ran. It returns the keys
// of the world's jobs. Call it after the world's pods are complete
// (finished pods of running jobs included): a pod this writer made that
// finished before the cache showed it live is among those, and must not
// be added back as live.
func (w *Writer) Settle(world *view.World) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	present := make(map[string]bool, len(world.Jobs))
	for i := range world.Jobs {
		key := view.JobKey(&world.Jobs[i])
		present[key] = true
		if dp := w.progress[key]; dp != nil {
			dp.overlay(&world.Jobs[i])
		}
	}
	world.Pods = w.withMade(world.Pods, present)
	for k := range w.written {
		if !present[k] {
			delete(w.written, k)
		}
	}
	for k := range w.progress {
		if !present[k] {
			delete(w.progress, k)
		}
	}
	return present
}

// madePod is a pod this writer created, as the API server returned it
// (with the node once bound).
type madePod struct {
	pod *corev1.Pod
	at  time.Time
}

// madeFor is how long a created pod is remembered at most: the cache
// normally shows it within a cycle or two; a pod deleted before the cache
// saw it is forgotten after this.
const madeFor = 30 * time.Second

// remember records a pod this writer created or bound.
func (w *Writer) remember(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.made[p.Namespace+"/"+p.Name] = madePod{pod: p.DeepCopy(), at: time.Now()}
}

// forget drops a pod from what remember recorded: this writer deleted
// it, so the cache's copy (terminating, or gone) is the one to believe.
func (w *Writer) forget(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.made, p.Namespace+"/"+p.Name)
}

// withMade adds to the pods listed from the cache those this writer
// created that the cache does not show yet, and forgets those it shows
// and those of jobs no longer listed (finished or gone). The caller holds
// w.mu.
func (w *Writer) withMade(pods []corev1.Pod, jobs map[string]bool) []corev1.Pod {
	if len(w.made) == 0 {
		return pods
	}
	lagging := map[string]int{} // made pods the cache shows unbound, by key
	for i := range pods {
		key := pods[i].Namespace + "/" + pods[i].Name
		m, ok := w.made[key]
		switch {
		case !ok:
		case pods[i].UID != m.pod.UID || pods[i].Spec.NodeName != "" || m.pod.Spec.NodeName == "":
			delete(w.made, key) // the cache caught up (or holds another pod of that name)
		default:
			lagging[key] = i
		}
	}
	now := time.Now()
	for key, m := range w.made {
		if now.Sub(m.at) > madeFor || !jobs[m.pod.Namespace+"/"+m.pod.Labels[v1alpha1.LabelJob]] {
			delete(w.made, key)
			continue
		}
		if i, ok := lagging[key]; ok {
			pods[i] = *m.pod.DeepCopy() // the cache has it, without the binding yet
		} else {
			pods = append(pods, *m.pod.DeepCopy())
		}
	}
	return pods
}
