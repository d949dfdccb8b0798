package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
)

// Executor runs scheduling cycles against an API server: it reads the
// world through package view, brings jobs in line with what was decided
// before (reconcile), runs the policy, and carries out its actions
// through package apply, whose Writer holds the state of the writes. It
// is not safe for concurrent use: the manager runs one cycle at a time.
type Executor struct {
	cfg Config
	pol policy.Policy
	log logr.Logger
	// w makes the API writes and keeps what they remember between cycles
	// (package apply).
	w *apply.Writer

	cycle uint64
	// caches are the snapshot's caches kept between cycles.
	caches caches
	// noPodGroups is set once listing PodGroups found no such API (the
	// scheduler-plugins CRD is not installed); it is tried again
	// PodGroupRetry later, so that gangs are read within that of the CRD
	// appearing (their pods wait as PodGroupNotFound meanwhile).
	noPodGroups time.Time
	// positioned is when queue positions were last written (queue.go).
	positioned time.Time
	// indexed is set when the client's cache has the live indexes
	// (live.go): a cycle then reads only unfinished TrainingJobs and pods.
	indexed bool
	// finished counts the finished TrainingJobs for drover_jobs when the
	// cycle does not read them (indexed).
	finished *finishedJobs
	// reports are the trainers' reports the informer delivered
	// (ObserveReport) and the stuck pods already reported.
	reports *reportBook
	// pipelined is set during Run's cycles (runCycle).
	pipelined bool

	// Origin is time 0 of the policies' clock, kept in the ConfigMap
	// drover-clock so that every scheduler that ever runs against the
	// cluster agrees on it. Set on the first cycle unless preset.
	Origin time.Time

	// Now is the clock; tests may replace it.
	Now func() time.Time
	// fence, with leader election, refuses writes once leadership cannot
	// be shown (fence.go); nil without leader election.
	fence *Fence

	// Fault, when set, is called before every API write with a short
	// description; an error it returns aborts the write. Tests use it to
	// kill the scheduler in the middle of a cycle.
	Fault func(op string) error
	// OnCycle, when set, is called by Run after every cycle with its
	// result (failed cycles included, Err set). The soak test uses it to
	// record cycle times and how much of the world each cycle read.
	OnCycle func(*CycleResult)
}

// caches are the caches a snapshot keeps from one cycle to the next
// (view.Options).
type caches struct {
	// jobs caches converted TrainingJob specs between cycles.
	jobs *view.JobCache
	// nodes keeps node indices stable between cycles.
	nodes *view.NodeTable
	// elig keeps node constraints' eligible sets between cycles.
	elig *cluster.Eligibility
	// crowded remembers nodes whose pod slots a refused start lacked.
	crowded view.Crowded
}

// New returns an executor. reader may be nil, in which case c is used for
// conflict retries too.
func New(cfg Config, c client.Client, reader client.Reader, rec record.EventRecorder, pol policy.Policy, log logr.Logger) *Executor {
	e := &Executor{cfg: cfg, pol: pol, log: log, reports: newReportBook(), Now: time.Now}
	name := ""
	if pol != nil {
		name = pol.Name()
	}
	e.w = apply.New(cfg.applyConfig(), c, reader, rec, nil, name)
	// The writer reads the executor's clock and fault hook at each call:
	// tests replace them after New.
	e.w.Now = func() time.Time { return e.Now() }
	e.w.Fault = func(op string) error {
		if e.Fault == nil {
			return nil
		}
		return e.Fault(op)
	}
	return e
}

// Fence returns the leadership fence of the executor's writes, nil
// without leader election.
func (e *Executor) Fence() *Fence { return e.fence }

// leading returns nil unless the executor runs under leader election and
// cannot show it still leads (Fence.Check). The cycle asks before each
// batch of writes, and stops at once on loss.
func (e *Executor) leading() error {
	if e.fence == nil {
		return nil
	}
	return e.fence.Check()
}

// drain waits for every start in flight.
func (e *Executor) drain() { e.w.Drain() }

// EnsurePriorityClass makes sure the placeholder PriorityClass exists
// (apply.Writer.EnsurePriorityClass).
func (e *Executor) EnsurePriorityClass(ctx context.Context) error {
	return e.w.EnsurePriorityClass(ctx)
}

// Policy returns the policy the executor runs.
func (e *Executor) Policy() policy.Policy { return e.pol }

// Run runs cycles every period until ctx is done. A failed cycle is
// logged and retried at the next period: every cycle starts again from the
// API server's state.
//
// Run's cycles are pipelined: a cycle returns once its actions are
// decided, validated and sent, without waiting for the round trips of its
// starts (status write, pod creations, Bindings), which go on on the
// start workers. The next cycle waits only until those starts are
// committed (their status written) before it reads, and leaves the jobs
// whose pods are still in flight alone (see flights). Run waits for the
// starts in flight before it returns.
func (e *Executor) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.Period.Duration)
	defer t.Stop()
	defer e.drain()
	for {
		res, err := e.runCycle(ctx, true)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrNotLeader) {
				// Another replica may be scheduling: stop now, before the
				// elector notices; the manager exits and the process
				// restarts as a standby.
				e.log.Error(err, "leadership lost; stopping")
				return err
			}
			e.log.Error(err, "scheduling cycle failed")
		}
		if e.OnCycle != nil {
			if res == nil {
				res = &CycleResult{}
			}
			res.Err = err
			e.OnCycle(res)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CycleResult summarises one cycle, for tests and benchmarks.
type CycleResult struct {
	// Stages is where Duration went.
	Stages   CycleStages
	Actions  []policy.Action
	Refusals []policy.Refusal
	// Jobs and Pods are how many TrainingJobs and pods the cycle read
	// from the cache (its work grows with these); Duration is how long it
	// took, reading included.
	Jobs, Pods int
	Duration   time.Duration
	// Err is the cycle's error (set by Run for OnCycle).
	Err error
	// Faults are the policy's panics contained this cycle.
	Faults []policy.Fault
}

// CycleStages splits a cycle's duration: Commit waits for the starts of
// earlier cycles still in flight to be committed, Read lists the world,
// Reconcile brings jobs in line (completions, pods), Decide runs the
// gangs, held jobs' reasons and the policy, Apply validates and sends the
// actions (and, in Cycle, waits for their writes), After writes new jobs'
// Pending, policy panics and queue positions.
type CycleStages struct {
	Commit, Read, Reconcile, Decide, Apply, After time.Duration
}

// PodGroupRetry is how long after listing PodGroups found no PodGroup API
// a cycle tries again (one discovery request).
const PodGroupRetry = 2 * time.Second

// Read lists the world from the (cached) client.
func (e *Executor) Read(ctx context.Context) (*view.World, error) {
	w := &view.World{}
	var nodes corev1.NodeList
	var nodeOpts []client.ListOption
	if e.indexed {
		// Nodes are only read (Build and the NodeTable copy what they
		// keep), so the cycle shares the cache's objects instead of
		// copying every node every period: at 5,000 nodes that copy was
		// the largest allocation of a cycle. (e.indexed: the client reads
		// through the manager's cache, where this option applies.)
		nodeOpts = append(nodeOpts, client.UnsafeDisableDeepCopy)
	}
	if err := e.w.C.List(ctx, &nodes, nodeOpts...); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	w.Nodes = nodes.Items
	var pods corev1.PodList
	var podOpts []client.ListOption
	if e.indexed {
		podOpts = append(podOpts, client.MatchingFields{IndexPod: podLive})
	}
	if err := e.w.C.List(ctx, &pods, podOpts...); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	w.Pods = pods.Items
	var jobs v1alpha1.TrainingJobList
	var opts []client.ListOption
	if e.cfg.Namespace != "" {
		opts = append(opts, client.InNamespace(e.cfg.Namespace))
	}
	jobOpts := opts
	if e.indexed {
		jobOpts = append(slices.Clone(opts), client.MatchingFields{IndexJobLive: "true"})
	}
	if err := e.w.C.List(ctx, &jobs, jobOpts...); err != nil {
		return nil, fmt.Errorf("listing trainingjobs: %w", err)
	}
	w.Jobs = jobs.Items
	e.w.Overlay(w.Jobs)
	if err := e.readFinished(ctx, w); err != nil {
		return nil, err
	}
	e.reports.forget(e.w.Settle(w))
	if err := e.readGroupsQuotas(ctx, w, opts); err != nil {
		return nil, err
	}
	return w, nil
}

// readFinished adds the finished pods of running jobs to w (with the
// live indexes, Read's pod list holds live pods only).
func (e *Executor) readFinished(ctx context.Context, w *view.World) error {
	if !e.indexed {
		return nil
	}
	// The finished pods of running jobs: how a job completes or fails.
	// A pod that finished between the two lists is in both: the
	// finished copy is the newer one.
	var finished map[types.UID]bool
	for i := range w.Jobs {
		tj := &w.Jobs[i]
		if tj.Status.Phase != v1alpha1.PhaseAdmitted && tj.Status.Phase != v1alpha1.PhaseRunning {
			continue
		}
		var done corev1.PodList
		if err := e.w.C.List(ctx, &done, client.InNamespace(tj.Namespace), client.MatchingFields{IndexPod: podDone + "/" + tj.Name}); err != nil {
			return fmt.Errorf("listing finished pods of %s: %w", view.JobKey(tj), err)
		}
		for k := range done.Items {
			if finished == nil {
				finished = map[types.UID]bool{}
			}
			finished[done.Items[k].UID] = true
		}
		w.Pods = append(w.Pods, done.Items...)
	}
	if len(finished) > 0 {
		w.Pods = slices.DeleteFunc(w.Pods, func(p corev1.Pod) bool {
			return finished[p.UID] && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
		})
	}
	return nil
}

// readGroupsQuotas lists PodGroups (unless their CRD was found missing
// less than PodGroupRetry ago), ResourceQuotas and placeholder
// Deployments into w.
func (e *Executor) readGroupsQuotas(ctx context.Context, w *view.World, opts []client.ListOption) error {
	if time.Since(e.noPodGroups) > PodGroupRetry {
		var pgs schedv1alpha1.PodGroupList
		if err := e.w.C.List(ctx, &pgs, opts...); err != nil {
			if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "no matches for kind") {
				return fmt.Errorf("listing podgroups: %w", err)
			}
			e.noPodGroups = time.Now() // no PodGroup CRD: gangs from the Volcano annotation only
		} else {
			w.PodGroups = pgs.Items
		}
	}
	// ResourceQuotas, for admission against namespace quota (admission.go).
	var quotas corev1.ResourceQuotaList
	if err := e.w.C.List(ctx, &quotas, opts...); err != nil {
		return fmt.Errorf("listing resourcequotas: %w", err)
	}
	w.Quotas = quotas.Items
	var deps appsv1.DeploymentList
	if err := e.w.C.List(ctx, &deps, client.InNamespace(e.cfg.PlaceholderNamespace), client.HasLabels{v1alpha1.LabelPlaceholder}); err != nil {
		return fmt.Errorf("listing placeholder deployments: %w", err)
	}
	w.Deployments = deps.Items
	return nil
}

// reportHeld tells users why the jobs held out of the queue wait (see
// View.hold): the TrainingJob's status.reason and a Warning Event when it
// changes, PodScheduled=False on an opted-in pod, the reason on a gang's
// PodGroup and pods.
func (e *Executor) reportHeld(ctx context.Context, v *view.View) error {
	ids, why := v.Held()
	var errs []error
	for _, id := range ids {
		reason := why[id]
		switch {
		case v.PodJobs[id] != nil:
			if err := e.w.SetPodScheduled(ctx, v.PodJobs[id].Pod, reason); err != nil {
				errs = append(errs, err)
			}
		case v.Gangs[id] != nil:
			if err := e.w.GangWaiting(ctx, v.Gangs[id], reason); err != nil {
				errs = append(errs, err)
			}
		case v.Jobs[id] != nil:
			jv := v.Jobs[id]
			if jv.TJ.Status.Reason == reason {
				continue
			}
			code, _, _ := strings.Cut(reason, ":")
			unschedulable := code == view.ReasonUnschedulable || code == view.ReasonQuotaExceeded
			if err := e.w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
				o.Status.Reason = reason
				if o.Status.Phase == "" {
					o.Status.Phase = v1alpha1.PhasePending // a new job's first write
				}
				if unschedulable {
					meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionUnschedulable,
						Status: metav1.ConditionTrue, Reason: code, Message: strings.TrimSpace(strings.TrimPrefix(reason, code+":"))})
				}
				return nil
			}); err != nil {
				errs = append(errs, err)
				continue
			}
			kind := "Waiting"
			if unschedulable {
				kind = code // Unschedulable or QuotaExceeded, a Warning
			}
			e.w.Event(jv.TJ, unschedulable, kind, "%s", reason)
		}
	}
	return errors.Join(errs...)
}

// Cycle runs one scheduling cycle: read the world, bring pods and status
// in line with what was decided before (completions, progress, pods to
// create or bind), run the policy on a fresh snapshot and apply its
// actions. It returns once every API call of its actions returned (Run's
// cycles do not wait for their starts: see Run).
func (e *Executor) Cycle(ctx context.Context) (*CycleResult, error) {
	return e.runCycle(ctx, false)
}

// runCycle is Cycle; pipelined, it leaves its starts in flight (Run).
func (e *Executor) runCycle(ctx context.Context, pipelined bool) (*CycleResult, error) {
	start := time.Now()
	res := &CycleResult{}
	mark := start
	stage := func(d *time.Duration) {
		now := time.Now()
		*d += now.Sub(mark)
		mark = now
	}
	defer func() {
		res.Duration = time.Since(start)
		e.w.M.CycleSeconds.Observe(res.Duration.Seconds())
	}()
	e.pipelined = pipelined
	if !pipelined {
		defer e.drain()
	}
	// Never act on a stale view: the starts of earlier cycles are
	// committed first (their status written, so that this cycle reads
	// them placed), and the jobs whose pods are still in flight are left
	// alone below.
	if err := e.w.AwaitCommitted(ctx); err != nil {
		return res, err
	}
	busy := e.w.InFlight()
	stage(&res.Stages.Commit)
	if err := e.leading(); err != nil {
		return res, err
	}
	w, err := e.Read(ctx)
	if err != nil {
		return res, err
	}
	res.Jobs, res.Pods = len(w.Jobs), len(w.Pods)
	stage(&res.Stages.Read)
	if err := e.ensureOrigin(ctx); err != nil {
		return res, err
	}
	e.cycle++
	opts := e.snapshotOptions()
	v := view.Build(w, e.Now(), opts)
	errs := e.w.LateErrs()
	if err := e.leading(); err != nil {
		return res, err // before the reconcile writes
	}
	v, fresh, errs, stop := e.reconcileAll(ctx, w, v, opts, busy, errs)
	if stop {
		return nil, errors.Join(errs...)
	}
	if err := e.w.YieldPlaceholders(ctx, w, v); err != nil {
		errs = append(errs, err)
	}
	stage(&res.Stages.Reconcile)
	errs = append(errs, e.reconcileGangs(ctx, v)...)
	e.observe(v)
	acts, faults := e.schedule(v.Snap)
	res.Actions, res.Faults = acts, faults
	if err := e.leading(); err != nil {
		// The policy may have run long: check again before its writes.
		return res, errors.Join(append(errs, err)...)
	}
	stage(&res.Stages.Decide)
	ap := apply.NewCycle(e.w, v, w)
	errs = e.applyAll(ctx, ap, v, acts, res, errs)
	if pipelined {
		ap.Late()
	} else if err := ap.Wait(); err != nil {
		errs = append(errs, err)
	}
	stage(&res.Stages.Apply)
	defer stage(&res.Stages.After)
	if err := e.leading(); err != nil {
		return res, errors.Join(append(errs, err)...)
	}
	errs = append(errs, e.afterApply(ctx, w, v, ap, faults, fresh)...)
	return res, errors.Join(errs...)
}

// ensureOrigin sets Origin, unless set, from the drover-clock ConfigMap
// (apply.Writer.LoadOrigin).
func (e *Executor) ensureOrigin(ctx context.Context) error {
	if !e.Origin.IsZero() {
		return nil
	}
	origin, err := e.w.LoadOrigin(ctx)
	if err != nil {
		return err
	}
	e.Origin = origin
	return nil
}

// reconcileGangs reconciles the PodGroup gangs of v and tells the held
// jobs' users why they wait.
func (e *Executor) reconcileGangs(ctx context.Context, v *view.View) []error {
	var errs []error
	for _, key := range v.GangOrder {
		ns, name, _ := strings.Cut(key, "/")
		if err := e.w.ReconcileGang(ctx, v, v.Gangs[view.GangJobID(ns, name)]); err != nil {
			errs = append(errs, fmt.Errorf("podgroup %s: %w", key, err))
		}
	}
	if err := e.reportHeld(ctx, v); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// afterApply contains the policy's faults, writes Pending on the fresh
// jobs it left pending, and publishes the metrics and the queue.
func (e *Executor) afterApply(ctx context.Context, w *view.World, v *view.View, ap *apply.Cycle, faults []policy.Fault, fresh []string) []error {
	var errs []error
	if ctx.Err() == nil {
		errs = append(errs, e.contain(ctx, ap, v, faults)...)
	}
	if ctx.Err() == nil {
		errs = append(errs, e.markPending(ctx, v, fresh)...)
	}
	e.observeJobs(w, v)
	if err := e.publishQueue(ctx, v); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// snapshotOptions are the options of this cycle's snapshot, with the
// caches kept from one cycle to the next.
func (e *Executor) snapshotOptions() view.Options {
	if e.caches.jobs == nil {
		e.caches.jobs = view.NewJobCache()
	}
	if e.caches.nodes == nil {
		e.caches.nodes = view.NewNodeTable()
	}
	if e.caches.elig == nil {
		e.caches.elig = cluster.NewEligibility()
	}
	if e.caches.crowded == nil {
		e.caches.crowded = view.Crowded{}
	}
	o := view.Options{Seed: e.cfg.Seed, Cycle: e.cycle, DefaultDuration: e.cfg.DefaultDurationSeconds,
		StuckAfter: e.cfg.StuckAfter.Duration, Origin: e.Origin, Catalog: e.cfg.catalog(),
		SchedulerName: e.cfg.SchedulerName, Jobs: e.caches.jobs, Nodes: e.caches.nodes, Eligibility: e.caches.elig, Crowded: e.caches.crowded, Tenants: e.cfg.Tenants,
		PlaceholderNamespace: e.cfg.PlaceholderNamespace}
	if len(e.cfg.Namespaces) > 0 {
		o.InScope = e.cfg.InScope
	}
	return o
}

// reconcileAll reconciles the jobs of view v built from w (those in busy
// excepted: their starts are in flight) concurrently, appends their
// errors to errs, and rebuilds the view when a job's phase changed. It
// returns the jobs whose Pending write waits for the policy (fresh), and
// stop when the lease was lost.
func (e *Executor) reconcileAll(ctx context.Context, w *view.World, v *view.View, opts view.Options, busy map[string]bool, errs []error) (_ *view.View, fresh []string, _ []error, stop bool) {
	changed := false
	// Jobs are reconciled concurrently (each touches only its own job, its
	// pods and the executor's locked bookkeeping): a cycle in which
	// hundreds of jobs complete writes their statuses apply.Workers at a
	// time instead of one round trip after another.
	type outcome struct {
		changed bool
		err     error
	}
	outs := make([]outcome, len(v.Order))
	var rg errgroup.Group
	rg.SetLimit(apply.Workers)
	for i, key := range v.Order {
		jv := v.Jobs[key]
		if busy[key] {
			// Its start's pods are still being created: nothing to bring
			// in line yet, and two writers must not share the job.
			continue
		}
		rg.Go(func() error {
			c, err := e.reconcile(ctx, v, jv)
			outs[i] = outcome{c, err}
			return nil
		})
	}
	_ = rg.Wait()
	for i, key := range v.Order {
		if err := outs[i].err; err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", key, err))
			if errors.Is(err, ErrNotLeader) {
				return v, fresh, errs, true
			}
		}
		changed = changed || outs[i].changed
		if v.Jobs[key].Fresh {
			fresh = append(fresh, key)
		}
	}
	if changed {
		// Completions and requeues change what the policy sees: rebuild
		// from the objects as written.
		for i := range w.Jobs {
			if jv := v.Jobs[view.JobKey(&w.Jobs[i])]; jv != nil && jv.Ended != nil {
				w.Jobs[i] = *jv.Ended
			} else if jv != nil {
				w.Jobs[i] = *jv.TJ
			}
		}
		v = view.Build(w, e.Now(), opts)
	}
	return v, fresh, errs, false
}

// applyAll validates and carries out the policy's actions in order:
// a refused one is recorded in res, an API error appended to errs (and
// the rest skipped when it is fatal).
func (e *Executor) applyAll(ctx context.Context, ap *apply.Cycle, v *view.View, acts []policy.Action, res *CycleResult, errs []error) []error {
	for _, a := range acts {
		if err := ap.Apply(ctx, a); err != nil {
			var fatal *apply.APIError
			if errors.As(err, &fatal) {
				errs = append(errs, err)
				if ctx.Err() != nil || fatal.Abort || errors.Is(err, ErrNotLeader) {
					break
				}
				continue
			}
			if tm := (*view.TooManyPods)(nil); errors.As(err, &tm) {
				e.caches.crowded.Note(tm)
			}
			r := policy.Refusal{Time: v.Snap.Now, Action: a, Reason: err.Error()}
			res.Refusals = append(res.Refusals, r)
			e.w.M.Refused.WithLabelValues(policy.Kind(a)).Inc()
			e.log.V(1).Info("action refused", "action", policy.Kind(a), "target", a.Target(), "reason", err.Error())
			continue
		}
	}
	return errs
}

// markPending writes phase Pending on the new jobs of this cycle that the
// policy left pending (reconcile deferred it: see jobView.fresh). A job
// that was started or rejected has had its own status write instead.
func (e *Executor) markPending(ctx context.Context, v *view.View, fresh []string) []error {
	var errs []error
	for _, key := range fresh {
		jv := v.Jobs[key]
		if jv == nil || jv.St == nil || jv.St.Phase != cluster.Pending || jv.TJ.Status.Phase != "" {
			continue
		}
		if err := e.w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			if o.Status.Phase != "" {
				return apply.Precondition{Msg: "job has a phase already"}
			}
			o.Status.Phase = v1alpha1.PhasePending
			return nil
		}); err != nil {
			if _, ok := err.(apply.Precondition); !ok {
				errs = append(errs, fmt.Errorf("job %s: %w", key, err))
			}
		}
	}
	return errs
}

func (e *Executor) observe(v *view.View) {
	counts := map[string]int{"TE": 0, "BE": 0}
	for js := range v.Snap.Pending.All() {
		counts[js.Job.Class.String()]++
	}
	for c, n := range counts {
		e.w.M.QueueLength.WithLabelValues(c).Set(float64(n))
	}
	e.w.M.Running.Set(float64(len(v.Snap.Running)))
	stuck := 0
	for _, jv := range v.Jobs {
		stuck += len(jv.Stuck)
	}
	e.w.M.StuckPods.Set(float64(stuck))
}

// schedule runs the policy on the snapshot without letting a panic of its
// code stop the process: a policy.Guarded policy (every preset and
// profile) contains it to one job or plugin; any other is recovered
// around the whole call, its actions of the cycle dropped.
func (e *Executor) schedule(s *cluster.Snapshot) (acts []policy.Action, faults []policy.Fault) {
	if g, ok := e.pol.(policy.Guarded); ok {
		return g.ScheduleGuarded(s)
	}
	defer func() {
		if v := recover(); v != nil {
			acts, faults = nil, []policy.Fault{{Stage: policy.StageCycle, Value: fmt.Sprint(v)}}
		}
	}()
	return e.pol.Schedule(s), nil
}

// ReasonPolicyPanic starts the reason of a job failed because the policy
// panicked while deciding about it.
const ReasonPolicyPanic = "PolicyPanic"

// contain acts on the faults of the cycle's policy run: each is logged and
// counted (drover_policy_panics_total); a job the policy panicked on is
// taken out of the queue for good, so that it cannot take the scheduler
// down cycle after cycle: a TrainingJob is marked Failed with the panic
// in its reason and a Warning Event, an opted-in pod or a PodGroup gang is
// rejected (their way of leaving the queue). A panic outside any one job
// changes no job; the cycle's other actions stand.
func (e *Executor) contain(ctx context.Context, ap *apply.Cycle, v *view.View, faults []policy.Fault) []error {
	var errs []error
	for _, f := range faults {
		e.w.M.PolicyPanics.WithLabelValues(string(f.Stage)).Inc()
		e.log.Error(f, "policy panic contained", "policy", e.pol.Name(), "stage", string(f.Stage), "job", f.Job, "plugin", f.Plugin)
		if f.Job == "" {
			continue
		}
		reason := fmt.Sprintf("%s: policy %s panicked while deciding about this job: %s", ReasonPolicyPanic, e.pol.Name(), f.Value)
		if f.At != "" {
			reason += " (at " + f.At + ")"
		}
		jv := v.Jobs[f.Job]
		if jv == nil || jv.St == nil {
			// A plain pod or a gang: reject it (validated: still pending).
			if err := ap.Apply(ctx, policy.Reject{Job: f.Job, Reason: reason}); err != nil {
				errs = append(errs, fmt.Errorf("job %s: after a policy panic: %w", f.Job, err))
			}
			continue
		}
		if jv.St.Phase != cluster.Pending {
			continue // decided for in this cycle after all (cannot happen: its actions were discarded)
		}
		if err := e.w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			if o.Status.Phase.Terminal() || len(o.Status.Placement) > 0 {
				return apply.Precondition{Msg: "job is no longer pending"}
			}
			now := metav1.Time{Time: e.Now()}
			o.Status.Phase = v1alpha1.PhaseFailed
			o.Status.Reason = reason
			o.Status.CompletionTime = &now
			apply.SetTerminal(&o.Status, v1alpha1.PhaseFailed, reason)
			return nil
		}); err != nil {
			if _, ok := err.(apply.Precondition); !ok {
				errs = append(errs, fmt.Errorf("job %s: marking it Failed after a policy panic: %w", f.Job, err))
			}
			continue
		}
		jv.St.Phase = cluster.Rejected // out of the queue for the rest of the cycle
		e.w.Event(jv.TJ, true, ReasonPolicyPanic, "%s", reason)
	}
	return errs
}
