package elastic

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// psJob builds a parameter-server job: n workers (bounds lo..hi) of the
// given cores and GiB, one PS of 1 core and 2 GiB.
func psJob(id string, submit, work float64, prio int, cores, gib float64, n, lo, hi int) *cluster.Job {
	return &cluster.Job{ID: id, Class: cluster.ClassBE, Priority: prio, Submit: submit, Work: work, Speed: DefaultPSSpeed(),
		Groups: []cluster.ReplicaGroup{
			{Name: "worker", Demand: resource.New(cores, gib, 0), Replicas: n, Min: lo, Max: hi},
			{Name: "ps", Demand: resource.New(1, 2, 0), Replicas: 1, Min: 1, Max: 1},
		}}
}

func nodes(n int, cores, gib float64) []cluster.Node {
	out := make([]cluster.Node, n)
	for i := range out {
		out[i] = cluster.Node{Name: "n" + string(rune('0'+i)), Capacity: resource.New(cores, gib, 0)}
	}
	return out
}

type event struct {
	t       float64
	kind    string
	job     string
	workers int
	nodes   int
	rate    float64
}

// run simulates with invariant checks on and returns the observed events.
func run(t *testing.T, p policy.Policy, ns []cluster.Node, jobs []*cluster.Job, tick float64) ([]event, *sim.Result) {
	t.Helper()
	var evs []event
	cfg := sim.Config{Tick: tick, Check: true, Observe: func(tm float64, kind sim.Observed, js *cluster.JobState, _ string) {
		c := js.Counts()
		evs = append(evs, event{tm, string(kind), js.Job.ID, c[0], len(js.Placement.Nodes()), js.Rate})
	}}
	s, err := sim.New(cfg, ns, jobs, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Refusals {
		t.Errorf("refused: %v", r)
	}
	return evs, res
}

func find(evs []event, kind, job string) []event {
	var out []event
	for _, e := range evs {
		if e.kind == kind && e.job == job {
			out = append(out, e)
		}
	}
	return out
}

func TestWeightOrder(t *testing.T) {
	capacity := resource.New(24, 90, 0)
	big := psJob("big", 0, 100, 0, 2, 8, 3, 1, 4)
	small := psJob("small", 0, 100, 0, 1, 2, 2, 1, 4)
	urgent := psJob("urgent", 0, 100, 1, 1, 2, 1, 1, 2)
	valued := psJob("valued", 0, 100, 0, 1, 2, 1, 1, 2)
	valued.Utility = cluster.Sigmoid{G1: 5}
	twin := psJob("twin", 0, 100, 0, 1, 2, 2, 1, 4)
	tests := []struct {
		name string
		in   []*cluster.Job
		want string
	}{
		{"larger demand first", []*cluster.Job{small, big}, "big small"},
		{"user priority overrides demand", []*cluster.Job{big, small, urgent}, "urgent big small"},
		{"utility before demand", []*cluster.Job{big, valued}, "valued big"},
		{"priority before utility", []*cluster.Job{valued, urgent}, "urgent valued"},
		{"equal weight keeps queue order", []*cluster.Job{twin, small}, "twin small"},
		{"equal weight keeps queue order, reversed", []*cluster.Job{small, twin}, "small twin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var js []*cluster.JobState
			for _, j := range tc.in {
				js = append(js, cluster.NewJobState(j))
			}
			var got []string
			for _, s := range ByWeight(js, capacity) {
				got = append(got, s.Job.ID)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("order %q, want %q", g, tc.want)
			}
		})
	}
	if !WeightOf(urgent, capacity).Outranks(WeightOf(big, capacity)) {
		t.Error("priority 1 does not outrank priority 0")
	}
	if WeightOf(big, capacity).Outranks(WeightOf(small, capacity)) {
		t.Error("demand alone must not make a job high priority")
	}
}

func TestSpeedModelShape(t *testing.T) {
	m := DefaultPSSpeed()
	// Throughput rises to the tipping point Tip*p and falls after it.
	for _, p := range []int{1, 2} {
		tip := int(m.Tip) * p
		for w := 1; w < tip; w++ {
			if !(m.Throughput(w+1, p, 1) > m.Throughput(w, p, 1)) {
				t.Errorf("p=%d: throughput does not grow from %d to %d workers", p, w, w+1)
			}
		}
		for w := tip; w < 4*tip; w++ {
			if !(m.Throughput(w+1, p, 1) < m.Throughput(w, p, 1)) {
				t.Errorf("p=%d: throughput does not fall from %d to %d workers", p, w, w+1)
			}
		}
	}
	// Spreading costs more the more nodes, and nothing without Gamma.
	for k := 1; k < 4; k++ {
		if !(m.Throughput(4, 1, k+1) < m.Throughput(4, 1, k)) {
			t.Errorf("no cross-node penalty from %d to %d nodes", k, k+1)
		}
	}
	flat := PSSpeed{Alpha: 0.1, Tip: 6}
	if flat.Throughput(4, 1, 3) != flat.Throughput(4, 1, 1) {
		t.Error("gamma 0 still penalises spreading")
	}
	j := psJob("j", 0, 100, 0, 1, 2, 3, 2, 6)
	tests := []struct {
		name   string
		counts []int
		nodes  int
		want   func(float64) bool
	}{
		{"requested on one node is 1", []int{3, 1}, 1, func(s float64) bool { return math.Abs(s-1) < 1e-12 }},
		{"spread is slower", []int{3, 1}, 2, func(s float64) bool { return s < 1 && s > 0 }},
		{"more workers below the tip is faster", []int{5, 1}, 1, func(s float64) bool { return s > 1 }},
		{"below min workers is 0", []int{1, 1}, 1, func(s float64) bool { return s == 0 }},
		{"no parameter server is 0", []int{3, 0}, 1, func(s float64) bool { return s == 0 }},
	}
	for _, tc := range tests {
		if s := m.Speed(j, tc.counts, tc.nodes); !tc.want(s) {
			t.Errorf("%s: speed %v", tc.name, s)
		}
	}
	for _, bad := range []PSSpeed{{Alpha: -1, Tip: 1}, {Gamma: math.NaN(), Tip: 1}, {Tip: 0}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

func TestGangPlacement(t *testing.T) {
	ns := nodes(3, 8, 30)
	// a occupies most of n0, so b's gang (3 x 1 core + PS) goes whole to
	// n1, the first node with room for all of it; c (3 x 3 cores + PS,
	// 10 cores) fits no node and is spread.
	a := psJob("a", 0, 1000, 0, 2, 4, 3, 3, 3)
	b := psJob("b", 1, 1000, 0, 1, 2, 3, 3, 3)
	c := psJob("c", 2, 1000, 0, 3, 4, 3, 3, 3)
	evs, res := run(t, NewElastic(ElasticOptions{}), ns, []*cluster.Job{a, b, c}, 0)
	for _, id := range []string{"a", "b"} {
		s := find(evs, "start", id)
		if len(s) != 1 || s[0].nodes != 1 {
			t.Errorf("%s: starts %+v, want one start on one node", id, s)
		}
	}
	if s := find(evs, "start", "c"); len(s) != 1 || s[0].nodes < 2 {
		t.Errorf("c: starts %+v, want one start spread over several nodes", s)
	}
	if res.Metrics()["completed"] != 3 {
		t.Errorf("completed %v of 3", res.Metrics()["completed"])
	}
}

// TestGangOrderRun runs both gang orders through the simulator (with its
// invariant checks, no refusal allowed): c's requested gang (4 x 2 cores +
// a 1-core PS, 9 cores) fits no node of 8 cores. With one-node-first it
// starts on one node with 3 workers; with size-first it starts spread at
// 4. Both runs finish every job.
func TestGangOrderRun(t *testing.T) {
	mk := func() []*cluster.Job {
		return []*cluster.Job{psJob("a", 0, 600, 0, 1, 2, 2, 2, 2), psJob("c", 10, 900, 0, 2, 4, 4, 2, 6)}
	}
	tests := []struct {
		order          Order
		workers, nodes int
	}{
		{OneNodeFirst, 3, 1},
		{SizeFirst, 4, 3},
	}
	for _, tc := range tests {
		t.Run(tc.order.String(), func(t *testing.T) {
			evs, res := run(t, NewElastic(ElasticOptions{Order: tc.order}), nodes(3, 8, 30), mk(), 5)
			s := find(evs, "start", "c")
			if len(s) != 1 {
				t.Fatalf("c: starts %+v, want one", s)
			}
			if d := cmp.Diff([2]int{tc.workers, tc.nodes}, [2]int{s[0].workers, s[0].nodes}); d != "" {
				t.Errorf("c's start (workers, nodes) (-want +got):\n%s", d)
			}
			if res.Metrics()["completed"] != 2 {
				t.Errorf("completed %v of 2", res.Metrics()["completed"])
			}
		})
	}
}

func TestGangPlaceFirstNode(t *testing.T) {
	// The gang (3 one-core workers + a one-core PS) fits neither on node 0
	// (2 cores free) but on nodes 1 and 2. It goes whole to node 1, the
	// first node that holds it, whatever the strategy for jobs no node
	// holds: in the first case spread would pick node 2, in the second
	// pack would.
	for _, free := range [][]float64{{2, 5, 8}, {2, 8, 5}} {
		for _, st := range []placement.Strategy{placement.Spread, placement.Pack, placement.FirstFit} {
			s := snapshot(nodes(3, 8, 30))
			for i, f := range free {
				s.Nodes[i].Allocated = resource.New(8-f, 0, 0)
			}
			j := psJob("j", 0, 100, 0, 1, 2, 3, 1, 4)
			s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
			var got cluster.Placement
			for _, a := range NewElastic(ElasticOptions{Placement: st}).Schedule(s) {
				if a, ok := a.(policy.Start); ok {
					got = a.Placement
				}
			}
			want := cluster.Placement{{Group: 0, Node: 1}, {Group: 0, Node: 1}, {Group: 0, Node: 1}, {Group: 1, Node: 1}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("free %v, %v: start placement (-want +got):\n%s", free, st, d)
			}
		}
	}
}

func snapshot(ns []cluster.Node) *cluster.Snapshot {
	s := &cluster.Snapshot{Pending: cluster.NewQueue()}
	for i, n := range ns {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: n, Index: i, Ready: true})
	}
	return s
}

func TestScaleUp(t *testing.T) {
	// One small job on an idle node grows to its max at once, on its own
	// node, and finishes faster than its nominal work.
	j := psJob("j", 0, 1000, 0, 1, 2, 2, 1, 4)
	evs, res := run(t, NewElastic(ElasticOptions{}), nodes(1, 8, 30), []*cluster.Job{j}, 5)
	r := find(evs, "resize", "j")
	if len(r) != 1 || r[0].workers != 4 || r[0].nodes != 1 {
		t.Fatalf("resizes %+v, want one scale-up to 4 workers on one node", r)
	}
	if jct := res.Records[0].JCT(); !(jct < 1000) {
		t.Errorf("JCT %v not below the nominal 1000 s", jct)
	}
	// Scale-up stops when resources run out, heaviest job first: a (4
	// cores) and b (3 cores) share 8 cores, and a takes the one left.
	a := psJob("a", 0, 1000, 0, 1, 2, 3, 1, 8)
	b := psJob("b", 0, 1000, 0, 1, 2, 2, 1, 8)
	evs, _ = run(t, NewElastic(ElasticOptions{}), nodes(1, 8, 30), []*cluster.Job{a, b}, 5)
	ra, rb := find(evs, "resize", "a"), find(evs, "resize", "b")
	if len(rb) > 0 && rb[0].t < find(evs, "complete", "a")[0].t {
		t.Fatalf("b grew while a was running: %+v", rb)
	}
	if len(ra) == 0 {
		t.Fatalf("resizes a=%+v b=%+v, want only the heavier a grown", ra, rb)
	}
	if ra[0].workers != 4 {
		t.Errorf("a grew to %d workers, want the 4 that fit", ra[0].workers)
	}
}

func TestScaleDown(t *testing.T) {
	// low fills the node at its max of 6 workers; high (priority 1)
	// arrives and needs 1 PS + 2 workers: low shrinks to make room, never
	// below its min, and high starts in the same cycle.
	low := psJob("low", 0, 5000, 0, 1, 2, 3, 2, 7)
	high := psJob("high", 100, 500, 1, 1, 2, 2, 2, 2)
	evs, res := run(t, NewElastic(ElasticOptions{}), nodes(1, 8, 30), []*cluster.Job{low, high}, 5)
	up := find(evs, "resize", "low")
	if len(up) == 0 || up[0].workers != 7 {
		t.Fatalf("low resizes %+v, want a scale-up to 7 first", up)
	}
	hs := find(evs, "start", "high")
	if len(hs) != 1 {
		t.Fatalf("high starts %+v", hs)
	}
	var down *event
	for i := range up {
		if up[i].t == hs[0].t {
			down = &up[i]
		}
	}
	if down == nil || down.workers != 4 {
		t.Fatalf("no scale-down of low to 4 workers when high started at %v: %+v", hs[0].t, up)
	}
	if hs[0].t > 105 {
		t.Errorf("high started at %v, want within a cycle of its arrival at 100", hs[0].t)
	}
	m := res.Metrics()
	if m["completed"] != 2 {
		t.Errorf("completed %v of 2", m["completed"])
	}
}

func TestScaleDownFailsCleanly(t *testing.T) {
	// low holds 6 of 8 cores even at its min; high needs 1 PS + 3 workers
	// = 4 cores. Scale-down cannot make room, so it must change nothing:
	// low keeps its workers, high waits until low finishes.
	low := psJob("low", 0, 1000, 0, 1, 2, 5, 5, 7)
	high := psJob("high", 100, 500, 1, 1, 2, 3, 3, 3)
	evs, _ := run(t, NewElastic(ElasticOptions{}), nodes(1, 8, 30), []*cluster.Job{low, high}, 5)
	for _, r := range find(evs, "resize", "low") {
		if r.workers < 7 {
			t.Errorf("low shrunk to %d workers at %v though high could never fit", r.workers, r.t)
		}
	}
	done := find(evs, "complete", "low")
	hs := find(evs, "start", "high")
	if len(done) != 1 || len(hs) != 1 || hs[0].t < done[0].t {
		t.Errorf("high started %+v, low completed %+v: want high only after low", hs, done)
	}
	// The same situation in one cycle: Schedule returns no Resize.
	e := NewElastic(ElasticOptions{})
	snap := snapshot(nodes(1, 8, 30))
	ls := cluster.NewJobState(low)
	ls.Phase = cluster.Running
	ls.FirstStart = 0
	for i := 0; i < 6; i++ {
		ls.Placement = append(ls.Placement, cluster.Assignment{Group: 0, Node: 0})
	}
	ls.Placement = append(ls.Placement, cluster.Assignment{Group: 1, Node: 0})
	snap.Nodes[0].Allocated = low.Demand(ls.Counts())
	snap.Running = []*cluster.JobState{ls}
	hsState := cluster.NewJobState(high)
	snap.Pending.(*cluster.Queue).PushBack(hsState)
	for _, a := range e.Schedule(snap) {
		if r, ok := a.(policy.Resize); ok && r.Placement.Counts(2)[0] < 6 {
			t.Errorf("failed scale-down still emitted %+v", a)
		}
		if _, ok := a.(policy.Start); ok {
			t.Errorf("high started without room: %+v", a)
		}
	}
}

func TestEqualPriorityDoesNotScaleDown(t *testing.T) {
	// Same as TestScaleDown but high has priority 0: no job is "high
	// priority", so low is never shrunk and the newcomer waits.
	low := psJob("low", 0, 2000, 0, 1, 2, 3, 2, 7)
	other := psJob("other", 100, 500, 0, 1, 2, 2, 2, 2)
	evs, _ := run(t, NewElastic(ElasticOptions{}), nodes(1, 8, 30), []*cluster.Job{low, other}, 5)
	for _, r := range find(evs, "resize", "low") {
		if r.workers < 7 {
			t.Errorf("low shrunk to %d for an equal-priority job", r.workers)
		}
	}
}

func TestTFOperatorPartialStart(t *testing.T) {
	// a takes 6 of 8 cores; b (PS + 3 one-core workers, min 2) gets its PS
	// and one worker, below its min: it holds them without progress until
	// a finishes and its other workers are bound.
	a := psJob("a", 0, 1000, 0, 1, 2, 5, 5, 5)
	b := psJob("b", 10, 500, 0, 1, 2, 3, 2, 3)
	evs, res := run(t, NewTFOperator(), nodes(1, 8, 30), []*cluster.Job{a, b}, 5)
	bs := find(evs, "start", "b")
	if len(bs) != 1 || bs[0].workers != 1 || bs[0].rate != 0 {
		t.Fatalf("b starts %+v, want a partial start with 1 worker at speed 0", bs)
	}
	br := find(evs, "resize", "b")
	ad := find(evs, "complete", "a")
	if len(br) != 1 || br[0].workers != 3 || br[0].t < ad[0].t {
		t.Fatalf("b resizes %+v (a done at %v), want the rest bound after a finishes", br, ad[0].t)
	}
	var rb float64
	for _, r := range res.Records {
		if r.ID == "b" {
			rb = r.Finish
		}
	}
	// b made no progress while partial: it finishes its whole work after
	// the resize.
	if rb < br[0].t+500-1e-6 {
		t.Errorf("b finished at %v, before resize %v + its 500 s of work", rb, br[0].t)
	}
	// tf-operator never resizes a complete job.
	for _, e := range evs {
		if e.kind == "resize" && e.job == "a" {
			t.Errorf("tf-operator resized a complete job: %+v", e)
		}
	}
}

func TestTFOperatorSpreads(t *testing.T) {
	j := psJob("j", 0, 1000, 0, 1, 2, 2, 1, 4)
	evs, res := run(t, NewTFOperator(), nodes(3, 8, 30), []*cluster.Job{j}, 5)
	if s := find(evs, "start", "j"); len(s) != 1 || s[0].nodes != 3 {
		t.Fatalf("start %+v, want the 3 pods spread over 3 nodes", s)
	}
	if jct := res.Records[0].JCT(); !(jct > 1000) {
		t.Errorf("JCT %v: the spread job should pay the cross-node penalty", jct)
	}
}

func TestDragon(t *testing.T) {
	// Scale-up waits for 60 s without an action.
	j := psJob("j", 0, 2000, 0, 1, 2, 2, 1, 4)
	evs, _ := run(t, NewDragon(), nodes(1, 8, 30), []*cluster.Job{j}, 5)
	r := find(evs, "resize", "j")
	if len(r) != 1 || r[0].workers != 4 || r[0].t < 60 || r[0].t > 65 {
		t.Fatalf("resizes %+v, want one scale-up to 4 about 60 s after the start", r)
	}
	// A job at the head of the queue for 30 s triggers scale-down of
	// running jobs towards their min, whatever its priority. (low at its
	// max holds 7 cores; one 2-core worker less leaves room for late's PS
	// and two workers.)
	low := psJob("low", 0, 5000, 0, 2, 2, 2, 1, 3)
	late := psJob("late", 100, 500, 0, 1, 2, 2, 2, 2)
	evs, res := run(t, NewDragon(), nodes(1, 8, 30), []*cluster.Job{low, late}, 5)
	ls := find(evs, "start", "late")
	if len(ls) != 1 || ls[0].t < 130 || ls[0].t > 140 {
		t.Fatalf("late starts %+v, want one about 30 s after its arrival at 100", ls)
	}
	shrunk := false
	for _, e := range find(evs, "resize", "low") {
		if e.t <= ls[0].t && e.workers < 3 {
			shrunk = true
		}
		if e.workers < 1 {
			t.Errorf("low below its min: %+v", e)
		}
	}
	if !shrunk {
		t.Error("low was not scaled down for the starved job")
	}
	if res.Metrics()["completed"] != 2 {
		t.Errorf("completed %v", res.Metrics()["completed"])
	}
}

func TestDragonScaleDownIgnoresPS(t *testing.T) {
	// DRAGON's scale-down makes room for the starved job's minimum workers
	// only, not its parameter servers (GetMinInstanceWorkerPodRequests).
	// With low at 7 of 8 cores, shrinking it by 2 leaves 3 cores: the test
	// passes, but late needs 1 + 2 and does not start; the freed cores
	// stay idle until low finishes.
	low := psJob("low", 0, 3000, 0, 1, 2, 3, 2, 7)
	late := psJob("late", 100, 500, 0, 1, 2, 2, 2, 2)
	evs, _ := run(t, NewDragon(), nodes(1, 8, 30), []*cluster.Job{low, late}, 5)
	rs := find(evs, "resize", "low")
	if len(rs) < 2 || rs[1].workers != 5 {
		t.Fatalf("low resizes %+v, want scale-up to 7 then scale-down to 5", rs)
	}
	ls, ld := find(evs, "start", "late"), find(evs, "complete", "low")
	if len(ls) != 1 || ls[0].t < ld[0].t {
		t.Errorf("late started %+v before low completed at %v", ls, ld[0].t)
	}
}

func TestDragonScheduleJobFill(t *testing.T) {
	// No node holds 4 workers of 3 cores + PS (13 cores); DRAGON fills the
	// node that holds the most replicas first, then the next.
	s := snapshot(nodes(3, 8, 30))
	l := placement.NewLedger(s, true)
	l.Take(0, resource.New(5, 0, 0))
	j := psJob("j", 0, 100, 0, 3, 2, 4, 1, 4)
	p, ok := dragonScheduleJob(l, j, []dragonReq{{group: 1, n: 1}, {group: 0, n: 4}})
	if ok[0] != 1 || ok[1] != 4 {
		t.Fatalf("ok %v, want all placed", ok)
	}
	per := map[int]int{}
	for _, a := range p {
		per[a.Node]++
	}
	// node 1 first (PS + 2 workers = 7 cores), then node 0 (3 free: one
	// worker), then node 2 (one worker).
	if per[1] != 3 || per[0] != 1 || per[2] != 1 {
		t.Errorf("replicas per node %v", per)
	}
	if l.Free(0) != resource.New(3, 30, 0) {
		t.Error("dragonScheduleJob changed the ledger")
	}
}

func TestValidateJobs(t *testing.T) {
	ns := nodes(3, 8, 30)
	ok := psJob("ok", 0, 100, 0, 1, 2, 2, 1, 4)
	minAboveMax := psJob("m", 0, 100, 0, 1, 2, 2, 5, 4)
	zeroMax := psJob("z", 0, 100, 0, 1, 2, 0, 0, 0)
	huge := psJob("h", 0, 100, 0, 16, 2, 1, 1, 2)
	noWorker := psJob("w", 0, 100, 0, 1, 2, 1, 0, 2)
	tests := []struct {
		job  *cluster.Job
		want string
	}{
		{minAboveMax, "job m: groups[worker].min_replicas: 5 is above max_replicas 4"},
		{zeroMax, "job z: groups[worker].max_replicas: 0 is not positive"},
		{huge, "job h: groups[worker].demand"},
		{noWorker, "job w: groups[worker].min_replicas: 0"},
	}
	for _, tc := range tests {
		err := ValidateJobs([]*cluster.Job{ok, tc.job}, ns)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.job.ID, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "job ok") {
			t.Errorf("the valid job was reported: %v", err)
		}
	}
	if err := ValidateJobs([]*cluster.Job{ok}, ns); err != nil {
		t.Error(err)
	}
	if err := ValidateJobs([]*cluster.Job{huge}, ns); !strings.Contains(err.Error(), "larger than every node") {
		t.Errorf("error %v does not say why", err)
	}
}

func TestEntries(t *testing.T) {
	r := policy.NewRegistry()
	if err := r.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"elastic", "elastic:scaleup=local;placement=first-fit", "elastic:scaleup=node", "elastic:order=size-first", "elastic:order=one-node-first",
		"tf-operator", "dragon:starve_s=10;scaleup_s=20"} {
		if _, err := r.New(spec); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	for _, spec := range []string{"elastic:scaleup=far", "elastic:placement=x", "elastic:order=spread", "elastic:order=", "elastic:tick=1", "tf-operator:x=1", "dragon:starve_s=-1", "dragon:scaleup_s=abc"} {
		if _, err := r.New(spec); err == nil {
			t.Errorf("%s: no error", spec)
		}
	}
}

func TestDeterministic(t *testing.T) {
	mk := func() []*cluster.Job {
		return []*cluster.Job{psJob("a", 0, 900, 0, 2, 4, 3, 1, 4), psJob("b", 30, 600, 0, 2, 4, 3, 1, 4),
			psJob("c", 60, 1200, 0, 2, 4, 3, 1, 4), psJob("d", 90, 800, 1, 2, 4, 3, 1, 4)}
	}
	for _, mkp := range []func() policy.Policy{
		func() policy.Policy { return NewElastic(ElasticOptions{}) }, func() policy.Policy { return NewTFOperator() },
		func() policy.Policy { return NewDragon() }} {
		_, r1 := run(t, mkp(), nodes(3, 8, 30), mk(), 5)
		_, r2 := run(t, mkp(), nodes(3, 8, 30), mk(), 5)
		for i := range r1.Records {
			if r1.Records[i].Finish != r2.Records[i].Finish {
				t.Errorf("%s: job %s finished at %v then %v", r1.Policy, r1.Records[i].ID, r1.Records[i].Finish, r2.Records[i].Finish)
			}
		}
		if r1.Metrics()["completed"] != 4 {
			t.Errorf("%s: completed %v of 4", r1.Policy, r1.Metrics()["completed"])
		}
	}
}

// TestLoopOrder checks the article's scheduling loop on single passes: a
// pass that starts an ordinary job ends there (no scale-up), a pass that
// starts the high-priority job goes on to scale-up, and a pass with nothing
// to start scales up.
func TestLoopOrder(t *testing.T) {
	running := psJob("run", 0, 1000, 0, 1, 2, 2, 1, 4)
	mk := func(pending ...*cluster.Job) *cluster.Snapshot {
		s := snapshot(nodes(2, 8, 30))
		rs := cluster.NewJobState(running)
		rs.Phase, rs.FirstStart = cluster.Running, 0
		rs.Placement = cluster.Placement{{Group: 0, Node: 0}, {Group: 0, Node: 0}, {Group: 1, Node: 0}}
		s.Nodes[0].Allocated = running.Demand(rs.Counts())
		s.Running = []*cluster.JobState{rs}
		for _, j := range pending {
			s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
		}
		return s
	}
	kinds := func(as []policy.Action) string {
		var k []string
		for _, a := range as {
			k = append(k, policy.Kind(a)+":"+a.Target())
		}
		return strings.Join(k, " ")
	}
	tests := []struct {
		name    string
		pending []*cluster.Job
		want    string
	}{
		{"ordinary job: start and stop", []*cluster.Job{psJob("a", 0, 100, 0, 1, 2, 2, 1, 2), psJob("b", 0, 100, 0, 1, 2, 1, 1, 2)},
			"start:a"},
		{"high-priority job: start, then scale-up", []*cluster.Job{psJob("h", 0, 100, 1, 1, 2, 2, 1, 2)},
			"start:h resize:run"},
		{"nothing pending: scale-up", nil, "resize:run"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := kinds(NewElastic(ElasticOptions{}).Schedule(mk(tc.pending...))); got != tc.want {
				t.Errorf("actions %q, want %q", got, tc.want)
			}
		})
	}
}
