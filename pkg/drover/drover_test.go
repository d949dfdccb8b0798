package drover

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	"github.com/drover-sched/drover/pkg/scheduler/queue"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/specon"
)

// world builds snapshots: nodes of 8 GPUs, jobs of 1-GPU workers.
type world struct{ s *cluster.Snapshot }

func newWorld(nodes int) *world {
	w := &world{s: &cluster.Snapshot{Pending: cluster.NewQueue(), Seed: 1}}
	for i := range nodes {
		w.s.Nodes = append(w.s.Nodes, &cluster.NodeState{Node: cluster.Node{Name: fmt.Sprintf("n%d", i), Capacity: resource.New(64, 512, 8)}, Index: i, Ready: true})
	}
	return w
}

type jb struct{ j *cluster.Job }

func te(id string, gpus int) jb {
	return jb{&cluster.Job{ID: id, Class: cluster.ClassTE, Work: 600,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(8, 32, int64(gpus)), Replicas: 1, Min: 1, Max: 1}}}}
}

func be(id string, workers, lo, hi int) jb {
	return jb{&cluster.Job{ID: id, Class: cluster.ClassBE, Work: 3600, GracePeriod: 60,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(8, 32, 1), Replicas: workers, Min: lo, Max: hi}}}}
}

func (b jb) grace(g float64) jb { b.j.GracePeriod = g; return b }
func (b jb) prio(p int) jb      { b.j.Priority = p; return b }

// run puts job b on node n with the given worker count and phase.
func (w *world) run(b jb, n, workers int, phase cluster.Phase, labels map[string]string) *world {
	js := cluster.NewJobState(b.j)
	js.Phase, js.Labels, js.FirstStart = phase, labels, 0
	for range workers {
		js.Placement = append(js.Placement, cluster.Assignment{Node: n})
	}
	node := w.s.Nodes[n]
	node.Allocated = node.Allocated.Add(b.j.Groups[0].Demand.Scale(int64(workers)))
	if phase == cluster.Suspending {
		node.Releasing = node.Releasing.Add(b.j.Groups[0].Demand.Scale(int64(workers)))
	}
	node.Jobs = append(node.Jobs, js)
	w.s.Running = append(w.s.Running, js)
	return w
}

func (w *world) pend(bs ...jb) *world {
	for _, b := range bs {
		w.s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(b.j))
	}
	return w
}

func summary(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case policy.Start:
			out = append(out, fmt.Sprintf("start %s x%d", a.Job, len(a.Placement)))
		case policy.Resize:
			out = append(out, fmt.Sprintf("resize %s x%d", a.Job, len(a.Placement)))
		case policy.Preempt:
			out = append(out, "preempt "+a.Job)
		case policy.Migrate:
			out = append(out, "migrate "+a.Job)
		case policy.Reject:
			out = append(out, "reject "+a.Job)
		case policy.Wait:
			out = append(out, "wait "+a.Job)
		}
	}
	return out
}

func testRuntime(t *testing.T, mod func(*Options)) *framework.Runtime {
	t.Helper()
	o := DefaultOptions()
	o.Speculate, o.Provision = false, false // labels and forecasts are not what these cases test
	if mod != nil {
		mod(&o)
	}
	p, err := Profile(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scheduler.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestInteractions(t *testing.T) {
	cc := map[string]string{specon.LabelCategory: specon.CC.String()}
	tests := []struct {
		name  string
		world *world
		mod   func(*Options)
		want  []string
	}{
		{"a TE job shrinks an elastic job before preempting anything",
			newWorld(1).run(be("b", 8, 2, 8), 0, 8, cluster.Running, nil).pend(te("t", 2)),
			nil, []string{"resize b x6", "start t x1"}},
		{"a job in its grace period or migrating is never shrunk or preempted",
			newWorld(2).run(be("sus", 8, 2, 8), 0, 8, cluster.Suspending, nil).run(be("mig", 8, 2, 8), 1, 8, cluster.Migrating, nil).pend(te("t", 2)),
			nil, []string{"wait t"}},
		{"whole-job preemption when nothing can shrink, with the grace period",
			newWorld(1).run(be("b", 8, 8, 8), 0, 8, cluster.Running, nil).pend(te("t", 2)),
			nil, []string{"preempt b", "wait t"}},
		{"a converged job is the first victim",
			newWorld(2).run(be("big", 8, 8, 8), 0, 8, cluster.Running, nil).run(be("conv", 8, 8, 8), 1, 8, cluster.Running, cc).pend(te("t", 2)),
			func(o *Options) { o.Speculate, o.CCVictim = true, true }, []string{"preempt conv", "wait t"}},
		{"without ccvictim FitGpp picks by size and grace",
			newWorld(2).run(be("a", 8, 8, 8).grace(10), 0, 8, cluster.Running, nil).run(be("conv", 8, 8, 8).grace(200), 1, 8, cluster.Running, cc).pend(te("t", 2)),
			func(o *Options) { o.Speculate, o.CCVictim = true, false }, []string{"preempt a", "wait t"}},
		{"no scale-up while a TE job waits",
			newWorld(2).run(be("b", 4, 2, 8), 0, 4, cluster.Running, nil).run(be("full", 8, 8, 8), 1, 8, cluster.Running, nil).pend(te("t", 8)),
			func(o *Options) { o.Shrink, o.Preempt, o.CCVictim = false, false, false }, []string{"wait t"}},
		{"scale-up into idle capacity when no TE job waits",
			newWorld(1).run(be("b", 4, 2, 8), 0, 4, cluster.Running, nil),
			nil, []string{"resize b x8"}},
		{"a BE job does not shrink a job it does not outrank",
			newWorld(1).run(be("b", 8, 2, 8), 0, 8, cluster.Running, nil).pend(be("c", 2, 2, 2)),
			nil, []string{"wait c"}},
		{"a higher-priority BE job shrinks a lower one",
			newWorld(1).run(be("b", 8, 2, 8), 0, 8, cluster.Running, nil).pend(be("c", 2, 2, 2).prio(5)),
			nil, []string{"resize b x6", "start c x2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(testRuntime(t, tc.mod).Schedule(tc.world.s))
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShrinkIsNotAPreemption: in the simulator, a TE job that arrives on a
// cluster full of one elastic job gets its room by a shrink; the BE job
// keeps running, is resized, and its preemption count (FitGpp's cap P)
// stays 0.
func TestShrinkIsNotAPreemption(t *testing.T) {
	nodes := []cluster.Node{{Name: "n0", Capacity: resource.New(64, 512, 8)}}
	b := be("b", 8, 2, 8).j
	tj := te("t", 2).j
	tj.Submit = 100
	res := simulate(t, mustProfile(t), sim.Config{Tick: 10}, nodes, []*cluster.Job{b, tj})
	got := map[string][2]int{}
	for _, rec := range res.Records {
		got[rec.ID] = [2]int{rec.Preemptions, rec.Resizes}
	}
	if got["b"][0] != 0 || got["b"][1] < 1 {
		t.Errorf("BE job: %d preemptions, %d resizes; want 0 and at least 1", got["b"][0], got["b"][1])
	}
}

func mustProfile(t *testing.T) framework.Profile {
	o := DefaultOptions()
	o.Provision = false
	p, err := Profile(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// simulate runs profile p (with the default queue) on nodes and jobs in
// the simulator with its invariant checks on (cfg.Check is set), and
// returns the result; any error, and any action the validator refused,
// fails the test.
func simulate(t *testing.T, p framework.Profile, cfg sim.Config, nodes []cluster.Node, jobs []*cluster.Job) *sim.Result {
	t.Helper()
	r, err := scheduler.New(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Check = true
	s, err := sim.New(cfg, nodes, jobs, r)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refusals) > 0 {
		t.Fatalf("refused: %v", res.Refusals)
	}
	return res
}

// constUtility is a utility of a fixed value (NaN included).
type constUtility float64

func (u constUtility) Value(float64) float64 { return float64(u) }

// candProbe is a Preempt plugin that compares shrinkCands with the
// straightforward rule it replaces (every running job checked, sorted
// lightest first) for each job that did not fit.
type candProbe struct {
	t      *testing.T
	name   string
	probed int
}

func (*candProbe) Name() string { return "cand-probe" }

func (p *candProbe) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	var want []string
	var ref []*cluster.JobState
	jw := weightOf(c, js)
	for _, r := range c.Snap.Running {
		if r.Phase != cluster.Running || c.St.Busy(r) || isTE(r) || r.Counts()[0] <= max(r.Job.Groups[0].Min, 1) {
			continue
		}
		if !isTE(js) && !jw.Outranks(weightOf(c, r)) {
			continue
		}
		ref = append(ref, r)
	}
	slices.SortFunc(ref, func(a, b *cluster.JobState) int {
		return cmp.Or(weightOf(c, a).Compare(weightOf(c, b)), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	for _, r := range ref {
		want = append(want, r.Job.ID)
	}
	var got []string
	for _, r := range shrinkCands(c, js) {
		got = append(got, r.Job.ID)
	}
	if d := gocmp.Diff(want, got); d != "" {
		p.t.Errorf("%s: candidates for %s (-want +got):\n%s", p.name, js.Job.ID, d)
	}
	any := false
	for _, r := range c.Snap.Running {
		any = any || !isTE(r) && jw.Outranks(weightOf(c, r))
	}
	if got := outranksAny(c, js.Job); got != any {
		p.t.Errorf("%s: outranksAny(%s) = %v, want %v", p.name, js.Job.ID, got, any)
	}
	p.probed++
	return framework.NewStatus(framework.Unschedulable, "")
}

// TestShrinkCandidates checks shrinkCands, which walks a per-cycle list of
// the shrinkable jobs and stops early, and outranksAny, which compares
// with the lowest rank running, against the rules they implement, on
// random full clusters: running jobs TE or BE, running, suspending or
// migrating, at or above their minimum, of priorities 0 to 2 and
// utilities none, 0, 1, 2 or NaN; pending jobs the same.
func TestShrinkCandidates(t *testing.T) {
	utils := []cluster.Utility{nil, constUtility(0), constUtility(1), constUtility(2), constUtility(math.NaN())}
	phases := []cluster.Phase{cluster.Running, cluster.Running, cluster.Running, cluster.Suspending, cluster.Migrating}
	probed := 0
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		w := newWorld(4)
		mk := func(id string) jb {
			b := be(id, 8, 1+r.IntN(3), 8)
			if r.IntN(4) == 0 {
				b.j.Class = cluster.ClassTE
			}
			b.j.Priority, b.j.Utility = r.IntN(3), utils[r.IntN(len(utils))]
			return b
		}
		for n := range 4 {
			for k := range 2 {
				w.run(mk(fmt.Sprintf("r%d-%d", n, k)), n, 1+r.IntN(4), phases[r.IntN(len(phases))], nil)
			}
		}
		for k := range 6 {
			b := mk(fmt.Sprintf("p%d", k))
			b.j.Groups[0].Demand = resource.New(8, 32, 8) // never fits a used node
			w.pend(b)
		}
		p := mustProfile(t)
		probe := &candProbe{t: t, name: fmt.Sprintf("seed %d", seed)}
		p.Preempt = []framework.Preempt{probe}
		p.Admit, p.Reserve, p.Rebalance, p.Provision = nil, nil, nil, nil
		rt, err := scheduler.New(p)
		if err != nil {
			t.Fatal(err)
		}
		rt.Schedule(w.s)
		probed += probe.probed
	}
	if probed < 100 {
		t.Fatalf("probed %d jobs, want at least 100", probed)
	}
}

// TestShrinkWakesParkedTE: a TE job that found nothing to shrink and no
// victim is set aside (drover-shrink asks only for a BE job above its
// minimum; fitgpp watches the room its victims would give back). When
// such a job starts in the room a finished job left, nothing else that
// the queue watches has changed, and the TE job must be tried again: it
// shrinks the new job and starts, as it does without the queue.
func TestShrinkWakesParkedTE(t *testing.T) {
	cycles := func(rt *framework.Runtime) [][]string {
		w := newWorld(1).
			run(be("a", 4, 4, 4), 0, 4, cluster.Running, nil).
			run(be("b", 4, 4, 4), 0, 4, cluster.Running, nil).
			pend(te("t", 2))
		for _, js := range w.s.Running {
			js.Preemptions = 1 // no FitGpp victim (P = 1)
		}
		w.s.Cycle = 1
		var out [][]string
		out = append(out, summary(rt.Schedule(w.s)))
		// b ends and elastic e starts on its 4 GPUs: the room is as it
		// was, but e can shrink to 1 worker.
		node := w.s.Nodes[0]
		b := w.s.Running[1]
		node.Jobs = node.Jobs[:1]
		node.Allocated = node.Allocated.Sub(b.Job.Groups[0].Demand.Scale(4))
		w.s.Running = w.s.Running[:1]
		w.run(be("e", 4, 1, 4), 0, 4, cluster.Running, nil)
		w.s.Running[1].Preemptions = 1
		w.s.Cycle = 2
		out = append(out, summary(rt.Schedule(w.s)))
		return out
	}
	want := cycles(testRuntime(t, nil).WithoutQueue())
	if d := gocmp.Diff(want, cycles(scheduler.WithQueue(testRuntime(t, nil), queue.Options{}))); d != "" {
		t.Errorf("actions per cycle differ with the queue (-without +with):\n%s", d)
	}
	if len(want[1]) == 0 || want[1][0] != "resize e x2" {
		t.Fatalf("without the queue the second cycle did %v, want e shrunk for t", want[1])
	}
}
