package elastic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// world builds a snapshot fluently: nodes, running jobs with their
// placements (taken from the nodes), pending jobs in queue order.
type world struct{ s *cluster.Snapshot }

func newWorld(n int, cores, gib float64) *world {
	return &world{s: snapshot(nodes(n, cores, gib))}
}

// at sets the snapshot's clock.
func (w *world) at(now float64) *world { w.s.Now = now; return w }

// alloc marks cores as used on node i by something outside the jobs.
func (w *world) alloc(i int, cores float64) *world {
	w.s.Nodes[i].Allocated = w.s.Nodes[i].Allocated.Add(resource.New(cores, 0, 0))
	return w
}

// run adds a running job that started at first with workers on the nodes
// ws and its parameter server on node ps.
func (w *world) run(j *cluster.Job, first float64, ps int, ws ...int) *world {
	js := cluster.NewJobState(j)
	js.Phase, js.FirstStart = cluster.Running, first
	for _, n := range ws {
		js.Placement = append(js.Placement, cluster.Assignment{Group: 0, Node: n})
	}
	js.Placement = append(js.Placement, cluster.Assignment{Group: 1, Node: ps})
	for _, a := range js.Placement {
		w.s.Nodes[a.Node].Allocated = w.s.Nodes[a.Node].Allocated.Add(j.Groups[a.Group].Demand)
	}
	w.s.Running = append(w.s.Running, js)
	return w
}

// wait adds a pending job that entered the queue at enqueued.
func (w *world) wait(j *cluster.Job, enqueued float64) *world {
	js := cluster.NewJobState(j)
	js.Enqueued = enqueued
	w.s.Pending.(*cluster.Queue).PushBack(js)
	return w
}

func (w *world) obj() *cluster.Snapshot { return w.s }

// show renders actions other than Wait as "kind job w=[nodes] ps=[nodes]".
func show(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		var p cluster.Placement
		switch a := a.(type) {
		case policy.Wait:
			continue
		case policy.Start:
			p = a.Placement
		case policy.Resize:
			p = a.Placement
		}
		out = append(out, policy.Kind(a)+" "+a.Target()+" "+showPlacement(p))
	}
	return out
}

func showPlacement(p cluster.Placement) string {
	var w, ps []int
	for _, a := range p {
		if a.Group == 0 {
			w = append(w, a.Node)
		} else {
			ps = append(ps, a.Node)
		}
	}
	slices.Sort(w)
	slices.Sort(ps)
	return fmt.Sprintf("w=%v ps=%v", w, ps)
}

func TestWeightedPlugin(t *testing.T) {
	s := newWorld(3, 8, 30).obj()
	small := psJob("small", 0, 100, 0, 1, 2, 2, 1, 4)
	big := psJob("big", 0, 100, 0, 2, 8, 3, 1, 4)
	urgent := psJob("urgent", 0, 100, 1, 1, 2, 1, 1, 2)
	twin := psJob("twin", 0, 100, 0, 1, 2, 2, 1, 4)
	var js []*cluster.JobState
	for _, j := range []*cluster.Job{small, big, twin, urgent} {
		js = append(js, cluster.NewJobState(j))
	}
	c := &framework.Cycle{Snap: s}
	slices.SortStableFunc(js, func(a, b *cluster.JobState) int { return Weighted{}.Compare(c, a, b) })
	var got []string
	for _, j := range js {
		got = append(got, j.Job.ID)
	}
	if d := cmp.Diff([]string{"urgent", "big", "small", "twin"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

func TestOrderParse(t *testing.T) {
	for _, o := range []Order{OneNodeFirst, SizeFirst} {
		got, err := ParseOrder(o.String())
		if err != nil || got != o {
			t.Errorf("ParseOrder(%q) = %v, %v", o, got, err)
		}
	}
	if _, err := ParseOrder("spread"); err == nil {
		t.Error("ParseOrder accepted spread")
	}
	if s := Order(7).String(); s != "Order(7)" {
		t.Errorf("Order(7).String() = %q", s)
	}
}

func TestWorkersSize(t *testing.T) {
	twoPS := psJob("j", 0, 1, 0, 1, 2, 3, 2, 5)
	twoPS.Groups = append(twoPS.Groups, cluster.ReplicaGroup{Name: "ps2", Demand: resource.New(1, 1, 0), Replicas: 2, Min: 2, Max: 2})
	tests := []struct {
		name string
		job  *cluster.Job
		want [][]int
	}{
		{"requested down to min", psJob("j", 0, 1, 0, 1, 2, 3, 1, 6), [][]int{{3, 1}, {2, 1}, {1, 1}}},
		{"fixed size", psJob("j", 0, 1, 0, 1, 2, 2, 2, 2), [][]int{{2, 1}}},
		{"servers keep their count", twoPS, [][]int{{3, 1, 2}, {2, 1, 2}}},
	}
	for _, tc := range tests {
		// Without a cycle there is no ledger to test one node on: both
		// orders give the sizes largest first.
		got := Workers{}.Size(nil, cluster.NewJobState(tc.job))
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: sizes (-want +got):\n%s", tc.name, d)
		}
		got = Workers{Order: SizeFirst}.Size(nil, cluster.NewJobState(tc.job))
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: sizes (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestElasticCycle runs single cycles of the elastic preset (and of
// profiles that isolate a plugin) and checks the actions.
func TestElasticCycle(t *testing.T) {
	// One node of 8 cores unless said otherwise; jobs have 1-core workers
	// and a 1-core PS.
	job := func(id string, prio, n, lo, hi int) *cluster.Job { return psJob(id, 0, 100, prio, 1, 2, n, lo, hi) }
	tests := []struct {
		name string
		snap *cluster.Snapshot
		prof framework.Profile
		want []string
	}{
		{"no high-priority job: the first job that fits starts, the cycle ends (no scale-up)",
			newWorld(1, 8, 30).run(job("r", 0, 2, 1, 4), 0, 0, 0, 0).
				wait(job("big", 0, 6, 6, 6), 0).wait(job("a", 0, 1, 1, 1), 0).wait(job("b", 0, 1, 1, 1), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"start a w=[0] ps=[0]"}},
		{"a job starts with fewer workers down to its minimum",
			newWorld(1, 8, 30).run(job("r", 1, 4, 4, 4), 0, 0, 0, 0, 0, 0).wait(job("a", 0, 4, 2, 4), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"start a w=[0 0] ps=[0]"}},
		{"high-priority job fits: it starts, then scale-up",
			newWorld(1, 8, 30).run(job("r", 0, 2, 1, 4), 0, 0, 0, 0).wait(job("h", 1, 2, 2, 2), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"start h w=[0 0] ps=[0]", "resize r w=[0 0 0 0] ps=[0]"}},
		{"scale-down: the lightest job shrinks first, then the next, only as far as needed; no scale-up",
			newWorld(1, 8, 30).run(job("r1", 0, 3, 1, 3), 0, 0, 0, 0, 0).run(job("r2", 0, 2, 1, 2), 1, 0, 0, 0).
				wait(job("h", 1, 2, 2, 2), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"resize r2 w=[0] ps=[0]", "resize r1 w=[0 0] ps=[0]", "start h w=[0 0] ps=[0]"}},
		{"scale-down removes workers away from the job's PS first",
			newWorld(2, 8, 30).alloc(1, 4).run(job("r", 0, 6, 1, 6), 0, 0, 0, 0, 0, 0, 1, 1).wait(psJob("h", 0, 100, 1, 1, 2, 5, 5, 5), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"resize r w=[0 0 0 0 1] ps=[0]", "start h w=[0 0 1 1 1] ps=[0]"}},
		{"failed scale-down changes nothing and blocks the queue; scale-up still runs",
			newWorld(1, 8, 30).run(job("r", 0, 5, 5, 7), 0, 0, 0, 0, 0, 0, 0).
				wait(job("h", 1, 3, 3, 3), 0).wait(job("s", 1, 1, 1, 1), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"resize r w=[0 0 0 0 0 0 0] ps=[0]"}},
		{"local scale-up stays on the job's nodes",
			newWorld(2, 8, 30).alloc(0, 4).run(job("r", 0, 2, 1, 8), 0, 0, 0, 0).obj(),
			ElasticProfile(ElasticOptions{LocalScaleUp: true}),
			[]string{"resize r w=[0 0 0] ps=[0]"}},
		// Node 0 has 3 cores free, node 1 5, node 2 6; a (priority 1) runs
		// on node 1, b on node 2, both below their maximum of 6 workers.
		{"node-by-node scale-up (the article's loop): node 0 for every job first, then node 1, then node 2",
			newWorld(3, 8, 30).alloc(0, 5).run(job("a", 1, 2, 1, 6), 0, 1, 1, 1).run(job("b", 0, 1, 1, 6), 0, 2, 2).obj(),
			ElasticProfile(ElasticOptions{NodeScaleUp: true}),
			[]string{"resize a w=[0 0 0 1 1 1] ps=[1]", "resize b w=[1 1 1 1 2 2] ps=[2]"}},
		{"the same cluster under the default scale-up: each job on its own node",
			newWorld(3, 8, 30).alloc(0, 5).run(job("a", 1, 2, 1, 6), 0, 1, 1, 1).run(job("b", 0, 1, 1, 6), 0, 2, 2).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"resize a w=[1 1 1 1 1 1] ps=[1]", "resize b w=[2 2 2 2 2 2] ps=[2]"}},
		{"scale-up prefers the job's nodes, then the others",
			newWorld(2, 8, 30).alloc(0, 3).run(job("r", 0, 2, 1, 6), 0, 0, 0, 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"resize r w=[0 0 0 0 1 1] ps=[0]"}},
		// Free cores 6, 5, 7; a's gang is 2 cores per worker + a 1-core
		// PS: 9 cores at its request of 4, 7 at 3 workers.
		{"one node first: a gang no node holds at its request starts on one node with fewer workers",
			newWorld(3, 8, 30).alloc(0, 2).alloc(1, 3).alloc(2, 1).wait(psJob("a", 0, 100, 0, 2, 2, 4, 2, 6), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"start a w=[2 2 2] ps=[2]"}},
		{"size first: the same gang is spread at its requested size",
			newWorld(3, 8, 30).alloc(0, 2).alloc(1, 3).alloc(2, 1).wait(psJob("a", 0, 100, 0, 2, 2, 4, 2, 6), 0).obj(),
			ElasticProfile(ElasticOptions{Order: SizeFirst}),
			[]string{"start a w=[0 1 2 2] ps=[0]"}},
		{"one node first: the requested gang on one node when a node holds it",
			newWorld(3, 8, 30).alloc(0, 4).wait(psJob("a", 0, 100, 0, 2, 2, 3, 1, 6), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"start a w=[1 1 1] ps=[1]"}},
		{"one node first: no count fits one node, the largest that fits spread",
			newWorld(3, 8, 30).alloc(0, 5).alloc(1, 5).alloc(2, 5).wait(psJob("a", 0, 100, 0, 2, 2, 3, 2, 6), 0).obj(),
			ElasticProfile(ElasticOptions{}),
			[]string{"start a w=[0 1 2] ps=[0]"}},
		{"one node first with first-fit for spread jobs: the one-node stage still comes first",
			newWorld(3, 8, 30).alloc(0, 2).alloc(1, 3).alloc(2, 1).wait(psJob("a", 0, 100, 0, 2, 2, 4, 2, 6), 0).obj(),
			ElasticProfile(ElasticOptions{Placement: placement.FirstFit}),
			[]string{"start a w=[2 2 2] ps=[2]"}},
		{"one per cycle alone: the second job waits",
			newWorld(1, 8, 30).wait(job("a", 0, 1, 1, 1), 0).wait(job("b", 0, 1, 1, 1), 0).obj(),
			framework.Profile{Name: "t", Admit: []framework.Admit{OnePerCycle{}}},
			[]string{"start a w=[0] ps=[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := scheduler.New(tc.prof)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, show(r.Schedule(tc.snap))); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}

func TestDragonPlace(t *testing.T) {
	// Three nodes of 8 cores; jobs have 3-core workers and a 1-core PS.
	job := func(n, lo int) *cluster.JobState { return cluster.NewJobState(psJob("j", 0, 1, 0, 3, 2, n, lo, n)) }
	bigPS := job(2, 1)
	bigPS.Job.Groups[1].Demand = resource.New(4, 2, 0)
	tests := []struct {
		name  string
		free  []float64
		js    *cluster.JobState
		want  string
		fails bool
	}{
		{"one node holds it all: the first such node", []float64{3, 8, 8}, job(2, 1), "w=[1 1] ps=[1]", false},
		{"fill from the node that holds most, then in index order", []float64{3, 8, 8}, job(4, 1), "w=[0 1 1 2] ps=[1]", false},
		{"fewer workers than requested, at least the minimum", []float64{4, 3, 0}, job(3, 1), "w=[0 1] ps=[0]", false},
		{"below the minimum: fails", []float64{4, 3, 0}, job(3, 3), "", true},
		{"no room for the PS: fails", []float64{3, 3, 3}, bigPS, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(3, 8, 30)
			for i, f := range tc.free {
				w.alloc(i, 8-f)
			}
			l := placement.NewLedger(w.obj(), true)
			before := []resource.Vector{l.Free(0), l.Free(1), l.Free(2)}
			p, st := DragonPlace{}.Place(nil, l, tc.js, tc.js.Job.RequestedCounts())
			if tc.fails {
				if st.IsSuccess() {
					t.Fatalf("placed %v, want a failure", p)
				}
				if d := cmp.Diff(before, []resource.Vector{l.Free(0), l.Free(1), l.Free(2)}); d != "" {
					t.Errorf("a failed placement changed the ledger:\n%s", d)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			if d := cmp.Diff(tc.want, showPlacement(p)); d != "" {
				t.Errorf("placement (-want +got):\n%s", d)
			}
			var took resource.Vector
			for i := range before {
				took = took.Add(before[i].Sub(l.Free(i)))
			}
			if want := tc.js.Job.Demand(p.Counts(2)); took != want {
				t.Errorf("took %v from the ledger, want %v", took, want)
			}
		})
	}
}

// TestDragonCycle runs single cycles, or a sequence of cycles of one
// runtime (for the scale-up clock), of the dragon preset.
func TestDragonCycle(t *testing.T) {
	job := func(id string, n, lo, hi int) *cluster.Job { return psJob(id, 0, 100, 0, 1, 2, n, lo, hi) }
	type step struct {
		snap *cluster.Snapshot
		want []string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"head not starving: the next job that fits starts, one per cycle", []step{{
			newWorld(1, 8, 30).at(110).run(job("r", 4, 4, 4), 0, 0, 0, 0, 0, 0).
				wait(job("head", 3, 3, 3), 100).wait(job("a", 1, 1, 1), 101).wait(job("b", 1, 1, 1), 102).obj(),
			[]string{"start a w=[0] ps=[0]"}}}},
		{"starving head: scale-down in start order, for its minimum workers only (not its PS): it still does not fit", []step{{
			newWorld(1, 8, 30).at(130).run(job("r1", 3, 1, 3), 0, 0, 0, 0, 0).run(job("r2", 2, 1, 2), 1, 0, 0, 0).
				wait(job("head", 3, 2, 3), 100).obj(),
			[]string{"resize r1 w=[0 0] ps=[0]"}}}},
		{"starving head: scale-down frees more than its minimum workers, it starts", []step{{
			newWorld(1, 8, 30).at(130).run(psJob("r", 0, 100, 0, 2, 2, 3, 1, 3), 0, 0, 0, 0, 0).
				wait(job("head", 2, 2, 2), 100).obj(),
			[]string{"resize r w=[0 0] ps=[0]", "start head w=[0 0] ps=[0]"}}}},
		{"starving head, failed scale-down: nothing starts", []step{{
			newWorld(1, 8, 30).at(130).run(job("r", 5, 5, 5), 0, 0, 0, 0, 0, 0, 0).
				wait(job("head", 3, 3, 3), 100).wait(job("a", 1, 1, 1), 101).obj(),
			nil}}},
		{"scale-up after 60 s without an action, then the clock restarts", []step{
			{newWorld(1, 8, 30).at(0).run(job("r", 2, 1, 4), 0, 0, 0, 0).obj(), nil},
			{newWorld(1, 8, 30).at(55).run(job("r", 2, 1, 4), 0, 0, 0, 0).obj(), nil},
			{newWorld(1, 8, 30).at(60).run(job("r", 2, 1, 3), 0, 0, 0, 0).obj(), []string{"resize r w=[0 0 0] ps=[0]"}},
			{newWorld(1, 8, 30).at(100).run(job("r", 3, 1, 4), 0, 0, 0, 0, 0).obj(), nil},
			{newWorld(1, 8, 30).at(120).run(job("r", 3, 1, 4), 0, 0, 0, 0, 0).obj(), []string{"resize r w=[0 0 0 0] ps=[0]"}},
		}},
		{"a start resets the clock", []step{
			{newWorld(1, 8, 30).at(0).run(job("r", 2, 1, 4), 0, 0, 0, 0).obj(), nil},
			{newWorld(1, 8, 30).at(50).run(job("r", 2, 1, 4), 0, 0, 0, 0).wait(job("a", 1, 1, 1), 50).obj(), []string{"start a w=[0] ps=[0]"}},
			{newWorld(1, 8, 30).at(60).run(job("r", 2, 1, 4), 0, 0, 0, 0).obj(), nil},
			{newWorld(1, 8, 30).at(110).run(job("r", 2, 1, 4), 0, 0, 0, 0).obj(), []string{"resize r w=[0 0 0 0] ps=[0]"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewDragon()
			for i, st := range tc.steps {
				if d := cmp.Diff(st.want, show(r.Schedule(st.snap))); d != "" {
					t.Errorf("step %d (t=%v): actions (-want +got):\n%s", i, st.snap.Now, d)
				}
			}
		})
	}
}

func TestPodByPod(t *testing.T) {
	// Two nodes of 8 cores; 2-core workers and a 1-core PS.
	job := func(id string, submit float64, prio, n, lo int) *cluster.Job {
		return psJob(id, submit, 100, prio, 2, 2, n, lo, n)
	}
	tests := []struct {
		name string
		snap *cluster.Snapshot
		want []string
	}{
		{"pods spread, PS first", newWorld(2, 8, 30).wait(job("a", 0, 0, 3, 3), 0).obj(),
			[]string{"start a w=[0 1 1] ps=[0]"}},
		{"partial start below the minimum", newWorld(2, 8, 30).alloc(0, 8).alloc(1, 4).wait(job("a", 0, 0, 3, 3), 0).obj(),
			[]string{"start a w=[1] ps=[1]"}},
		{"every job that gets a pod starts, in priority then submit order", newWorld(2, 8, 30).alloc(0, 8).alloc(1, 3).
			wait(job("late", 5, 0, 1, 1), 0).wait(job("early", 1, 0, 2, 2), 0).wait(job("vip", 9, 1, 1, 1), 0).obj(),
			[]string{"start vip w=[1] ps=[1]", "start early w=[] ps=[1]", "start late w=[] ps=[1]"}},
		{"the remaining pods of a partly started job are bound after the pending jobs", newWorld(2, 8, 30).alloc(0, 4).
			run(job("r", 0, 0, 4, 4), 0, 1, 1).wait(job("a", 5, 0, 1, 1), 0).obj(),
			[]string{"start a w=[1] ps=[0]", "resize r w=[0 1 1] ps=[1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, show(NewTFOperator().Schedule(tc.snap))); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}

func TestPluginEntries(t *testing.T) {
	reg := profile.NewRegistry()
	if err := reg.Add(Plugins()...); err != nil {
		t.Fatal(err)
	}
	for _, e := range Plugins() {
		p, err := e.New(policy.Params{})
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if p.Name() != e.Name {
			t.Errorf("entry %s builds plugin %s", e.Name, p.Name())
		}
		points := strings.Join(profile.Points(p), ", ")
		if head, _, _ := strings.Cut(e.Description, ":"); !samePoints(head, points) {
			t.Errorf("%s: description names %q, plugin implements %q", e.Name, head, points)
		}
		if _, err := e.New(policy.Params{"nosuch": "1"}); err == nil {
			t.Errorf("%s: unknown argument accepted", e.Name)
		}
	}
	for _, e := range Plugins() {
		if e.Name != ScaleUpName {
			continue
		}
		p, err := e.New(policy.Params{"node": "true"})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(ScaleUp{NodeMajor: true}, p); d != "" {
			t.Errorf("%s node=true (-want +got):\n%s", ScaleUpName, d)
		}
		if _, err := e.New(policy.Params{"node": "true", "local": "true"}); err == nil || !strings.Contains(err.Error(), "exclusive") {
			t.Errorf("%s local=true node=true: %v, want an error", ScaleUpName, err)
		}
	}
	bad := map[string]policy.Params{
		ScaleUpName:         {"local": "maybe"},
		WorkersName:         {"order": "spread"},
		DragonScaleDownName: {"starve_s": "-1"},
		DragonScaleUpName:   {"scaleup_s": "x"},
	}
	for name, args := range bad {
		for _, e := range Plugins() {
			if e.Name == name {
				if _, err := e.New(args); err == nil {
					t.Errorf("%s %v accepted", name, args)
				}
			}
		}
	}
}

// samePoints compares "preempt, admit" with "admit, preempt".
func samePoints(a, b string) bool {
	split := func(s string) []string {
		f := strings.Split(s, ", ")
		slices.Sort(f)
		return f
	}
	return slices.Equal(split(a), split(b))
}

// TestProfilesFromSpec builds each preset from a profile spec with the
// plugin registry and checks it decides as the preset does over a whole
// run.
func TestProfilesFromSpec(t *testing.T) {
	reg := profile.NewRegistry()
	if err := reg.Add(Plugins()...); err != nil {
		t.Fatal(err)
	}
	ref := func(names ...string) []profile.PluginRef {
		var out []profile.PluginRef
		for _, n := range names {
			out = append(out, profile.PluginRef{Name: n})
		}
		return out
	}
	one := func(n string) *profile.PluginRef { return &profile.PluginRef{Name: n} }
	specs := []struct {
		preset policy.Policy
		spec   profile.Spec
	}{
		{NewElastic(ElasticOptions{LocalScaleUp: true}), profile.Spec{Name: "elastic", Gang: "one-node-first", OneNodeFirstFit: true,
			Plugins: profile.PluginsSpec{QueueSort: one(WeightedName), Admit: ref(OnePerCycleName, ScaleDownName), Size: one(WorkersName),
				Score: ref("least-allocated"), Preempt: ref(ScaleDownName), Rebalance: ref(ScaleUpName)},
			PluginConfig: []profile.PluginConfig{{Name: ScaleUpName, Args: map[string]any{"local": true}}}}},
		{NewElastic(ElasticOptions{Order: SizeFirst}), profile.Spec{Name: "elastic", Gang: "one-node-first", OneNodeFirstFit: true,
			Plugins: profile.PluginsSpec{QueueSort: one(WeightedName), Admit: ref(OnePerCycleName, ScaleDownName), Size: one(WorkersName),
				Score: ref("least-allocated"), Preempt: ref(ScaleDownName), Rebalance: ref(ScaleUpName)},
			PluginConfig: []profile.PluginConfig{{Name: WorkersName, Args: map[string]any{"order": "size-first"}}}}},
		{NewDragon(), profile.Spec{Name: "dragon",
			Plugins: profile.PluginsSpec{QueueSort: one(FCFSName), Admit: ref(OnePerCycleName, DragonScaleDownName), Place: one(DragonPlaceName),
				Preempt: ref(DragonScaleDownName), Rebalance: ref(DragonScaleUpName)}}},
		{NewTFOperator(), profile.Spec{Name: "tf-operator",
			Plugins: profile.PluginsSpec{QueueSort: one(PodPriorityName), Place: one(PodByPodName), Rebalance: ref(PodByPodName)}}},
	}
	// least-allocated is a framework built-in; the lead's registry holds it.
	if err := reg.Add(profile.PluginEntry{Name: "least-allocated", New: func(policy.Params) (framework.Plugin, error) {
		return framework.Strategy{S: placement.Spread}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	mk := func() []*cluster.Job {
		return []*cluster.Job{psJob("a", 0, 900, 0, 2, 4, 3, 1, 4), psJob("b", 30, 600, 0, 2, 4, 3, 1, 4),
			psJob("c", 60, 1200, 0, 3, 4, 4, 2, 4), psJob("d", 90, 800, 1, 2, 4, 3, 1, 4), psJob("e", 95, 300, 0, 1, 2, 2, 1, 3)}
	}
	for _, sp := range specs {
		rt, err := reg.Build(sp.spec)
		if err != nil {
			t.Fatalf("%s: %v", sp.spec.Name, err)
		}
		if rt.TimeDriven() != sp.preset.(policy.TimeDriven).TimeDriven() {
			t.Errorf("%s: time-driven %v, preset %v", sp.spec.Name, rt.TimeDriven(), !rt.TimeDriven())
		}
		want, _ := run(t, sp.preset, nodes(3, 8, 30), mk(), 5)
		got, _ := run(t, rt, nodes(3, 8, 30), mk(), 5)
		if d := cmp.Diff(want, got, cmp.AllowUnexported(event{})); d != "" {
			t.Errorf("%s: events from the spec differ from the preset's (-preset +spec):\n%s", sp.spec.Name, d)
		}
	}
}

// gangPlaceRef is the elastic policy's placement before the port, kept as
// the reference the profile's placement must reproduce. With SizeFirst
// (the placement before issue 14): requested workers down to the minimum;
// for each, every replica on the first node (in index order) with room for
// all of them, else placement.Place with the strategy. With OneNodeFirst:
// first the one-node stage for every count, largest first; only then the
// strategy's placement for every count, largest first.
func gangPlaceRef(l *placement.Ledger, j *cluster.Job, st placement.Strategy, order Order) (cluster.Placement, bool) {
	onOne := func(counts []int) (cluster.Placement, bool) {
		total := j.Demand(counts)
		s := l.Snapshot()
		for i, n := range s.Nodes {
			if !n.Ready || n.Gone || !total.Fits(l.Free(i)) {
				continue
			}
			eligible := true
			for g, c := range counts {
				if c > 0 && !placement.Eligible(n, j, g) {
					eligible = false
				}
			}
			if !eligible {
				continue
			}
			p := make(cluster.Placement, 0, len(j.Groups))
			for g, c := range counts {
				for r := 0; r < c; r++ {
					p = append(p, cluster.Assignment{Group: g, Node: i})
				}
			}
			l.Take(i, total)
			return p, true
		}
		return nil, false
	}
	spread := func(counts []int) (cluster.Placement, bool) {
		p, err := placement.Place(l, j, counts, placement.Options{Strategy: st})
		return p, err == nil
	}
	var sizes [][]int
	for w := j.Groups[0].Replicas; w >= j.Groups[0].Min; w-- {
		counts := j.RequestedCounts()
		counts[0] = w
		sizes = append(sizes, counts)
	}
	if order == OneNodeFirst {
		for _, counts := range sizes {
			if p, ok := onOne(counts); ok {
				return p, true
			}
		}
		for _, counts := range sizes {
			if p, ok := spread(counts); ok {
				return p, true
			}
		}
		return nil, false
	}
	for _, counts := range sizes {
		if p, ok := onOne(counts); ok {
			return p, true
		}
		if p, ok := spread(counts); ok {
			return p, true
		}
	}
	return nil, false
}

// TestGangPlaceEquivalence checks on random clusters (with node roles and
// nodes that are not ready) that the elastic profile starts a lone job
// exactly where the reference gang placement puts it, in both orders.
func TestGangPlaceEquivalence(t *testing.T) {
	for _, order := range []Order{OneNodeFirst, SizeFirst} {
		t.Run(order.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			stats := map[string]int{}
			for k := range 2000 {
				n := 1 + rng.IntN(6)
				w := newWorld(n, 8, 30)
				for i := range n {
					w.alloc(i, float64(rng.IntN(9)))
					w.s.Nodes[i].Allocated[resource.Memory] = int64(rng.IntN(31)) * resource.New(0, 1, 0)[resource.Memory]
					switch rng.IntN(8) {
					case 0:
						w.s.Nodes[i].Ready = false
					case 1:
						w.s.Nodes[i].Role = "ps"
					case 2:
						w.s.Nodes[i].Role = "worker"
					}
				}
				reps := 1 + rng.IntN(5)
				lo := 1 + rng.IntN(reps)
				j := psJob("j", 0, 100, 0, float64(1+rng.IntN(3)), float64(1+rng.IntN(6)), reps, lo, reps+2)
				st := placement.Strategy(rng.IntN(3))
				s := w.wait(j, 0).obj()
				want, ok := gangPlaceRef(placement.NewLedger(s, true), j, st, order)
				var got cluster.Placement
				for _, a := range NewElastic(ElasticOptions{Placement: st, Order: order}).Schedule(s) {
					if a, isStart := a.(policy.Start); isStart {
						got = a.Placement
					}
				}
				if !ok {
					want = nil
				}
				one := len(got.Nodes()) == 1
				switch {
				case len(got) == 0:
					stats["none"]++
				case !one:
					stats["spread"]++
				default:
					stats["one"]++
				}
				if len(got) > 0 && got.Counts(2)[0] < reps {
					stats["fewer"]++
					if one {
						stats["fewer on one node"]++
					} else {
						stats["fewer spread"]++
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("case %d (%v): placement (-reference +profile):\n%s", k, st, d)
				}
			}
			// The random cases must reach every branch.
			for _, b := range []string{"none", "one", "spread", "fewer on one node", "fewer spread"} {
				if stats[b] == 0 {
					t.Errorf("no case placed %q: %v", b, stats)
				}
			}
		})
	}
}

// TestOrderDecides checks that the two orders differ on exactly the cases
// they should: a job whose requested gang no node holds but a smaller one
// does starts on one node with one-node-first and spread at a larger
// count with size-first.
func TestOrderDecides(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	differ := 0
	for range 2000 {
		n := 1 + rng.IntN(4)
		w := newWorld(n, 8, 30)
		for i := range n {
			w.alloc(i, float64(rng.IntN(9)))
		}
		reps := 2 + rng.IntN(4)
		j := psJob("j", 0, 100, 0, float64(1+rng.IntN(3)), 2, reps, 1+rng.IntN(reps), reps+2)
		s := w.wait(j, 0).obj()
		start := func(o Order) cluster.Placement {
			for _, a := range NewElastic(ElasticOptions{Order: o}).Schedule(s) {
				if a, ok := a.(policy.Start); ok {
					return a.Placement
				}
			}
			return nil
		}
		a, b := start(OneNodeFirst), start(SizeFirst)
		if cmp.Equal(a, b) {
			continue
		}
		differ++
		if len(a.Nodes()) != 1 || len(b.Nodes()) < 2 || a.Counts(2)[0] >= b.Counts(2)[0] {
			t.Fatalf("one-node-first %s, size-first %s: want one node with fewer workers against spread", showPlacement(a), showPlacement(b))
		}
	}
	if differ == 0 {
		t.Error("the orders never differed")
	}
}

// TestDragonPlaceKeptStatuses checks that a DragonPlace keeping its
// failure statuses gives, failure after failure, the reasons a DragonPlace
// building each one anew gives: a kept status is handed out only for the
// same failure.
func TestDragonPlaceKeptStatuses(t *testing.T) {
	job := func(n, lo int) *cluster.JobState { return cluster.NewJobState(psJob("j", 0, 1, 0, 3, 2, n, lo, n)) }
	bigPS := job(2, 1)
	bigPS.Job.Groups[1].Demand = resource.New(4, 2, 0)
	type attempt struct {
		free []float64
		js   *cluster.JobState
	}
	attempts := []attempt{
		{[]float64{4, 3, 0}, job(3, 3)}, // 2 of 3 workers, need 3
		{[]float64{3, 3, 3}, bigPS},     // no PS
		{[]float64{4, 3, 0}, job(4, 3)}, // 2 of 4 workers, need 3
		{[]float64{3, 3, 0}, job(3, 3)}, // 1 of 3 workers, need 3
		{[]float64{4, 3, 0}, job(3, 3)}, // the first again
		{[]float64{3, 8, 8}, job(2, 1)}, // placed
		{[]float64{3, 3, 3}, bigPS},
	}
	reasons := func(dp DragonPlace) []string {
		var out []string
		for _, a := range attempts {
			w := newWorld(3, 8, 30)
			for i, f := range a.free {
				w.alloc(i, 8-f)
			}
			l := placement.NewLedger(w.obj(), true)
			_, st := dp.Place(nil, l, a.js, a.js.Job.RequestedCounts())
			out = append(out, st.Code().String()+": "+st.Reason())
		}
		return out
	}
	want := reasons(DragonPlace{})
	if d := cmp.Diff(want, reasons(NewDragonPlace())); d != "" {
		t.Errorf("kept statuses (-anew +kept):\n%s", d)
	}
	kept := NewDragonPlace()
	reasons(kept)
	if d := cmp.Diff(want, reasons(kept)); d != "" {
		t.Errorf("kept statuses, second round (-anew +kept):\n%s", d)
	}
}

// countMemo answers as scheduleJob does, cycle after cycle on one
// cluster whose room, node readiness, job and requests change (and
// repeat): it answers from memory only when all of them are as they
// were.
func TestCountMemo(t *testing.T) {
	w := newWorld(3, 8, 30)
	a, b := psJob("a", 0, 1, 0, 3, 2, 4, 1, 4), psJob("b", 0, 1, 0, 2, 2, 6, 1, 6)
	reqsOf := func(j *cluster.Job, n int) []dragonReq {
		return []dragonReq{{group: 1, n: 1}, {group: 0, n: n}}
	}
	type step struct {
		name  string
		alloc []float64 // cores allocated on each node
		down  int       // a node not ready, or -1
		job   *cluster.Job
		n     int
	}
	steps := []step{
		{"first", []float64{2, 5, 8}, -1, a, 4},
		{"the same again", []float64{2, 5, 8}, -1, a, 4},
		{"less room on one node", []float64{2, 6, 8}, -1, a, 4},
		{"the room back", []float64{2, 5, 8}, -1, a, 4},
		{"a node down", []float64{2, 5, 8}, 0, a, 4},
		{"up again", []float64{2, 5, 8}, -1, a, 4},
		{"another job", []float64{2, 5, 8}, -1, b, 4},
		{"other requests", []float64{2, 5, 8}, -1, b, 6},
		{"the same again", []float64{2, 5, 8}, -1, b, 6},
		{"more room", []float64{0, 0, 0}, -1, b, 6},
		{"fewer replicas asked", []float64{0, 0, 0}, -1, b, 2},
	}
	var m countMemo
	for _, st := range steps {
		for i, n := range w.s.Nodes {
			n.Allocated = resource.New(st.alloc[i], 0, 0)
			n.Ready = i != st.down
		}
		l := placement.NewLedger(w.obj(), true)
		reqs := reqsOf(st.job, st.n)
		want := make([]int, len(reqs))
		scheduleJob(l, st.job, reqs, want, false)
		got := make([]int, len(reqs))
		m.count(l, st.job, reqs, got)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: counts (-scheduleJob +memo):\n%s", st.name, d)
		}
	}
	// A node that is not ready keeps the room a what-if gave it: the same
	// room, but scheduleJob does not use the node.
	for _, down := range []bool{false, true} {
		for i, n := range w.s.Nodes {
			n.Allocated, n.Ready = resource.New(8, 30, 0), !(down && i == 0)
		}
		l := placement.NewLedger(w.obj(), true)
		l.Give(0, resource.New(8, 30, 0))
		reqs := reqsOf(b, 2)
		want, got := make([]int, len(reqs)), make([]int, len(reqs))
		scheduleJob(l, b, reqs, want, false)
		m.count(l, b, reqs, got)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("node 0 down %v, room given: counts (-scheduleJob +memo):\n%s", down, d)
		}
	}
}
