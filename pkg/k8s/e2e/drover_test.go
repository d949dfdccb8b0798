package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/specon"
)

// devClusterPolicy is what `make dev-cluster` and `drover dev-cluster` run
// by default (keep in step with cmd/drover/devcluster.go and the
// Makefile): the drover preset, with SpeCon's reading scaled to the
// stand-in trainers, which run at 5x with a loss that falls from 2 to 0.2:
// a round every 5 s (25 training seconds; the default 30 s is wall time),
// a threshold of 0.05 per round, and converged (CC) jobs as Alg. 3's
// candidates.
const devClusterPolicy = "drover:alpha=0.05;interval=5;candidates=converged"

// loadExamples reads the TrainingJobs of examples/ in file order (as
// `kubectl apply -f examples/` creates them), into namespace ns.
func loadExamples(t *testing.T, ns string) []*v1alpha1.TrainingJob {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	sort.Strings(files)
	var out []*v1alpha1.TrainingJob
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tj := &v1alpha1.TrainingJob{}
		if err := yaml.UnmarshalStrict(b, tj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if tj.Kind != "TrainingJob" {
			t.Fatalf("%s: kind %q", f, tj.Kind)
		}
		tj.Namespace = ns
		out = append(out, tj)
	}
	return out
}

// storyWatch samples the test's pods and jobs while the story runs: node
// capacity (pods bound and not terminating must fit their node; pods still
// terminating are counted separately, since drover frees a shrunk or moved
// replica's resources in the cycle that removes it) and the elastic job's
// worker counts over time.
type storyWatch struct {
	mu       sync.Mutex
	over     []string // nodes over capacity with live pods
	overTerm []string // ... counting terminating pods as well
	counts   []int32  // distinct successive worker counts of the elastic job
}

func (w *storyWatch) run(ctx context.Context, tc *testCluster, elastic string) {
	capacity := map[string]resource.Vector{}
	for i := range tc.nodes {
		n := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: tc.kube.NodeName(i)}, n); err == nil {
			capacity[n.Name] = k8s.Vector(n.Status.Allocatable)
		}
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(tc.ns)); err != nil {
			continue
		}
		live, all := map[string]resource.Vector{}, map[string]resource.Vector{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			d := k8s.PodDemand(&p.Spec)
			all[p.Spec.NodeName] = all[p.Spec.NodeName].Add(d)
			if p.DeletionTimestamp == nil {
				live[p.Spec.NodeName] = live[p.Spec.NodeName].Add(d)
			}
		}
		tj := &v1alpha1.TrainingJob{}
		err := cl.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: elastic}, tj)
		w.mu.Lock()
		for n, c := range capacity {
			if !live[n].Fits(c) {
				w.over = append(w.over, fmt.Sprintf("%s at %s: %v > %v", n, time.Now().Format("15:04:05.000"), live[n], c))
			}
			if !all[n].Fits(c) {
				w.overTerm = append(w.overTerm, fmt.Sprintf("%s at %s: %v > %v", n, time.Now().Format("15:04:05.000"), all[n], c))
			}
		}
		if err == nil && len(tj.Status.Placement) > 0 {
			var k int32
			for _, a := range tj.Status.Placement {
				k += a.Count
			}
			if len(w.counts) == 0 || w.counts[len(w.counts)-1] != k {
				w.counts = append(w.counts, k)
			}
		}
		w.mu.Unlock()
	}
}

// downThenUp reports whether the counts fall and later rise.
func (w *storyWatch) downThenUp() (bool, []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	down := false
	for i := 1; i < len(w.counts); i++ {
		if w.counts[i] < w.counts[i-1] {
			down = true
		} else if down && w.counts[i] > w.counts[i-1] {
			return true, slices.Clone(w.counts)
		}
	}
	return false, slices.Clone(w.counts)
}

// messages returns the messages of the job's Events with the reason.
func (tc *testCluster) messages(name, reason string) []string {
	var out []string
	for _, e := range tc.events(name) {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// The drover preset on a real API server, with the workload of examples/
// on the dev cluster's shape (4 nodes of 16 CPU, 64 GiB, 4 GPUs; trainers
// at 5x), so this test is also what `make dev-cluster` and `kubectl
// apply -f examples/` show. In one run:
//   - be-stale (utility weight 0) is not rejected: the payoff test defers
//     rather than rejects, and prices a tenant only from three jobs'
//     weight (issue 24), so the tenant's one valued job passes;
//   - te-sweep (TE, priority 10) starts first; te-finetune (TE, 5 workers
//     of 2 GPUs) waits for it, then makes room by shrinking the elastic BE
//     job elastic-gpt (a Resize, no preemption);
//   - elastic-gpt scales down for it and back up into the GPUs nobody
//     waits for;
//   - a CPU job whose reported loss has converged (SpeCon's CC) is moved
//     once to the worker left without a job;
//   - no node ever holds more live pods than it has room for.
func TestDroverProfileStory(t *testing.T) {
	requirePolicy(t, "drover")
	tc := newCluster(t, 4, "16", "4", standin.Config{TimeScale: 5, Tick: 100 * time.Millisecond})
	tc.tune = func(c *k8s.Config) { c.Period.Duration = time.Second } // as the dev cluster
	tc.startScheduler(devClusterPolicy, nil)
	jobs := loadExamples(t, tc.ns)
	t.Cleanup(func() {
		if t.Failed() {
			tc.logTimeline(t)
		}
	})

	ctx, stop := context.WithCancel(context.Background())
	w := &storyWatch{}
	watched := make(chan struct{})
	go func() { defer close(watched); w.run(ctx, tc, "elastic-gpt") }()
	defer func() { stop(); <-watched }()

	start := time.Now()
	var names []string
	for _, j := range jobs {
		err := cl.Create(context.Background(), j)
		if j.Name == "invalid" {
			if err == nil || !strings.Contains(err.Error(), "minReplicas must be <= maxReplicas") {
				t.Errorf("examples/99-invalid.yaml: want the API server's refusal, got %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("creating %s: %v", j.Name, err)
		}
		names = append(names, j.Name)
	}
	for _, want := range []string{"be-stale", "elastic-gpt", "te-sweep", "te-finetune"} {
		if !slices.Contains(names, want) {
			t.Fatalf("examples/ has no %s (have %v)", want, names)
		}
	}
	since := func() string { return time.Since(start).Round(100 * time.Millisecond).String() }

	// Admission: nothing is rejected by default; be-stale, its tenant's
	// only job with a utility, is not priced (TestDroverPayoffDefers shows
	// a deferral).
	tc.eventually("be-stale admitted", time.Minute, func() (bool, string) {
		got := tc.get("be-stale")
		return got.Status.Phase == v1alpha1.PhaseRunning || got.Status.Phase == v1alpha1.PhaseSucceeded,
			fmt.Sprintf("phase %s reason %q", got.Status.Phase, got.Status.Reason)
	})
	if ok, msg := tc.hasEvent("be-stale", "Rejected"); ok {
		t.Errorf("be-stale: rejected: %s", msg)
	}
	t.Logf("%s: be-stale admitted", since())

	// TE first: te-sweep runs while te-finetune waits for room.
	tc.waitPhase("te-sweep", v1alpha1.PhaseRunning, 2*time.Minute)
	if ok, msg := tc.waitEvent("te-finetune", "Waiting"); !ok {
		t.Errorf("te-finetune: no Waiting event while te-sweep runs: %s", msg)
	}

	// te-finetune starts once te-sweep is done, by shrinking elastic-gpt.
	tc.waitPhase("te-finetune", v1alpha1.PhaseRunning, 4*time.Minute)
	t.Logf("%s: te-finetune running", since())
	tc.eventually("elastic-gpt shrunk for te-finetune", 30*time.Second, func() (bool, string) {
		msgs := tc.messages("elastic-gpt", "Resized")
		for _, m := range msgs {
			if strings.Contains(m, "shrunk") && strings.Contains(m, "te-finetune") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("Resized events %q", msgs)
	})
	if sweep := tc.get("te-sweep"); sweep.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("te-finetune started while te-sweep is %s", sweep.Status.Phase)
	}

	// elastic-gpt scales down, then up into idle capacity.
	tc.eventually("elastic-gpt down then up", 4*time.Minute, func() (bool, string) {
		ok, counts := w.downThenUp()
		return ok, fmt.Sprintf("worker counts %v", counts)
	})
	_, counts := w.downThenUp()
	t.Logf("%s: elastic-gpt workers over time %v", since(), counts)
	// The Event is recorded by client-go's broadcaster, asynchronously:
	// the status may show the workers before the Event is stored.
	tc.eventually("elastic-gpt scale-up event", 30*time.Second, func() (bool, string) {
		msgs := tc.messages("elastic-gpt", "Resized")
		return slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "scale-up") }), fmt.Sprintf("Resized events %q", msgs)
	})

	// SpeCon: a converged job migrates, once.
	var moved string
	tc.eventually("a SpeCon migration", 5*time.Minute, func() (bool, string) {
		var st []string
		for _, n := range names {
			tj := tc.get(n)
			if tj.Status.Migrations > 0 {
				moved = n
				return true, ""
			}
			if tj.Spec.Progress != nil {
				st = append(st, fmt.Sprintf("%s:%s/%s/%.2f", n, tj.Status.Phase, tj.Status.ProgressCategory, progress(tj)))
			}
		}
		return false, strings.Join(st, " ")
	})
	t.Logf("%s: %s migrated at progress %.2f", since(), moved, progress(tc.get(moved)))
	if ok, msg := tc.waitEvent(moved, "Migrated"); !ok || !strings.Contains(msg, "specon") {
		t.Errorf("%s: Migrated event from specon: %v %q", moved, ok, msg)
	}
	// SpeCon moved it as converged: its labels (written in the cycle of
	// the move, copied to status.progressCategory in the next) say CC.
	tc.eventually(moved+" labelled converged", 20*time.Second, func() (bool, string) {
		tj := tc.get(moved)
		l, _ := k8s.PolicyLabels(tj)
		return l[specon.LabelCategory] == specon.CC.String() && l[specon.LabelConvergedAt] != "" && tj.Status.ProgressCategory == specon.CC.String(),
			fmt.Sprintf("labels %v, progressCategory %q", l, tj.Status.ProgressCategory)
	})
	tc.eventually(moved+" running again from its checkpoint", time.Minute, func() (bool, string) {
		tj := tc.get(moved)
		if tj.Status.Phase == v1alpha1.PhaseSucceeded {
			return true, ""
		}
		for _, p := range tc.pods(moved) {
			if p.DeletionTimestamp == nil && p.Annotations[v1alpha1.AnnotationResume] != "" && tj.Status.Phase == v1alpha1.PhaseRunning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %s migrating %v", tj.Status.Phase, tj.Status.Migrating)
	})

	// Two more SpeCon rounds (interval=5 on the scheduler's clock, whose
	// origin the executor keeps): nothing moves twice, nothing is
	// preempted (the shrink made the room), and the TE jobs are never
	// touched. (The round label records only rounds that changed a job's
	// state, so the clock counts the rounds.)
	round := func() int { return int(time.Since(tc.ex.Origin).Seconds() / 5) }
	r0 := round()
	tc.eventually("two more SpeCon rounds", time.Minute, func() (bool, string) {
		r := round()
		return r >= r0+2, fmt.Sprintf("round %d, was %d", r, r0)
	})
	for _, n := range names {
		tj := tc.get(n)
		if tj.Status.Migrations > 1 {
			t.Errorf("%s migrated %d times, want at most once", n, tj.Status.Migrations)
		}
		if tj.Status.Preemptions > 0 {
			t.Errorf("%s preempted %d times; the shrink should have made the room", n, tj.Status.Preemptions)
		}
		if tj.Spec.Class == v1alpha1.ClassTE && (tj.Status.Resizes > 0 || tj.Status.Migrations > 0) {
			t.Errorf("TE job %s resized %d, migrated %d times", n, tj.Status.Resizes, tj.Status.Migrations)
		}
	}
	stop()
	<-watched
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.over {
		t.Errorf("node over capacity: %s", o)
	}
	if len(w.overTerm) > 0 {
		t.Logf("%d samples with a node over capacity counting terminating pods (freed in the cycle that removes them), first: %s", len(w.overTerm), w.overTerm[0])
	}
	tc.logTimeline(t)
}

func progress(tj *v1alpha1.TrainingJob) float64 {
	if tj.Status.Progress == nil {
		return 0
	}
	return tj.Status.Progress.Fraction
}

// logTimeline logs the test namespace's Events in time order.
func (tc *testCluster) logTimeline(t *testing.T) {
	var l corev1.EventList
	if err := cl.List(context.Background(), &l, client.InNamespace(tc.ns)); err != nil {
		return
	}
	slices.SortStableFunc(l.Items, func(a, b corev1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	for _, e := range l.Items {
		t.Logf("event %s %-10s %-12s %s", e.FirstTimestamp.Format("15:04:05.000"), e.Reason, e.InvolvedObject.Name, e.Message)
	}
}

// The drover preset's payoff test (opt-in since issue 24: payoff=true)
// defers, not rejects, a job that is not
// worth its priced capacity (issue 24): once its tenant has three valued
// jobs running, a job worth nothing stays Pending with no pods, its
// status.reason and a Waiting event saying it was deferred by the payoff
// test (what `kubectl describe trainingjob` shows), and it runs once the
// valued jobs are done and nothing holds what it needs.
func TestDroverPayoffDefers(t *testing.T) {
	requirePolicy(t, "drover")
	tc := newCluster(t, 1, "8", "4", standin.Config{TimeScale: 5})
	tc.startScheduler("drover:provision=false;payoff=true", nil)
	for i := range 3 {
		j := tc.job(fmt.Sprintf("valued%d", i), v1alpha1.ClassBE, 60, group{name: "worker", replicas: 1, cpu: "2", gpu: "1"})
		j.Spec.Utility = &v1alpha1.Utility{Weight: 100}
		tc.create(j)
	}
	for i := range 3 {
		tc.waitPhase(fmt.Sprintf("valued%d", i), v1alpha1.PhaseRunning, 20*time.Second)
	}
	stale := tc.job("stale", v1alpha1.ClassBE, 60, group{name: "worker", replicas: 1, cpu: "1", gpu: "0"})
	stale.Spec.Utility = &v1alpha1.Utility{Weight: 0}
	tc.create(stale)
	tc.eventually("stale deferred", 15*time.Second, func() (bool, string) {
		got := tc.get("stale")
		return strings.Contains(got.Status.Reason, "deferred") && strings.Contains(got.Status.Reason, "payoff"),
			fmt.Sprintf("phase %s reason %q", got.Status.Phase, got.Status.Reason)
	})
	got := tc.get("stale")
	if got.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("stale: phase %s while deferred, want Pending", got.Status.Phase)
	}
	if ok, msg := tc.waitEvent("stale", "Waiting"); !ok || !strings.Contains(msg, "deferred") {
		t.Errorf("stale: no Waiting event saying it was deferred: %v %s", ok, msg)
	}
	if ok, _ := tc.hasEvent("stale", "Rejected"); ok {
		t.Errorf("stale: rejected; the payoff test must defer by default")
	}
	if n := len(tc.pods("stale")); n != 0 {
		t.Errorf("stale: deferred but has %d pods", n)
	}
	t.Logf("deferred: %s", got.Status.Reason)
	// Never lost: it runs when the valued jobs are done.
	tc.waitPhase("stale", v1alpha1.PhaseSucceeded, 90*time.Second)
}
