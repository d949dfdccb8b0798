package oasis

import (
	"context"
	"math"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// psJob builds a parameter-server job needing w worker-slots of one hour
// with at most n workers, worker bandwidth b and PS bandwidth B (MB/s).
func psJob(id string, submit float64, wslots, n int, b, B float64, u cluster.Utility) *cluster.Job {
	p := &cluster.PSParams{Epochs: wslots, Chunks: n, MiniBatches: 1, MiniBatchTime: 3600 / float64(n) * 0.999, GradientMB: 0, WorkerBW: b, PSBW: B}
	// E*N*M*tau = wslots * 3600 * 0.999 worker-seconds: just under wslots.
	return &cluster.Job{ID: id, Class: cluster.ClassBE, Submit: submit, PS: p, Utility: u, Speed: Speed{},
		Groups: []cluster.ReplicaGroup{
			{Name: RoleWorker, Demand: vec(2, 4, 1, 5, b*8), Replicas: 1, Min: 1, Max: n},
			{Name: RolePS, Demand: vec(2, 4, 0, 5, B*8), Replicas: 1, Min: 1, Max: n},
		},
		Work: WorkerSeconds(p)}
}

func smallCluster(workers, pss int, gpus int64) []cluster.Node {
	var out []cluster.Node
	for i := 0; i < workers; i++ {
		out = append(out, cluster.Node{Name: "w" + string(rune('a'+i)), Role: RoleWorker, Capacity: vec(32, 64, gpus, 1000, 10000)})
	}
	for i := 0; i < pss; i++ {
		out = append(out, cluster.Node{Name: "p" + string(rune('a'+i)), Role: RolePS, Capacity: vec(32, 64, 0, 1000, 10000)})
	}
	return out
}

func snapshotOf(nodes []cluster.Node, now float64, pending ...*cluster.Job) *cluster.Snapshot {
	s := &cluster.Snapshot{Now: now, Pending: cluster.NewQueue()}
	for i, n := range nodes {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: n, Index: i, Ready: true})
	}
	for _, j := range pending {
		s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
	}
	return s
}

func TestPrice(t *testing.T) {
	const u, l, eta, c = 50.0, 0.01, 1.0, 100.0
	tests := []struct {
		name string
		g    float64
		want float64
	}{
		{"idle server: L/(2 eta)", 0, l / (2 * eta)},
		{"full server: U", c, u},
		{"half full: geometric mean of the ends", c / 2, math.Sqrt(l / (2 * eta) * u)},
	}
	for _, tc := range tests {
		if got := Price(tc.g, c, u, l, eta); math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("%s: Price(%v) = %v, want %v", tc.name, tc.g, got, tc.want)
		}
	}
	prev := 0.0
	for g := 0.0; g <= c; g += 5 {
		p := Price(g, c, u, l, eta)
		if p <= prev {
			t.Fatalf("price not increasing at g=%v: %v after %v", g, p, prev)
		}
		prev = p
	}
	if Price(10, c, 0, l, eta) != 0 {
		t.Error("a resource with U=0 (nobody demands it) must be free")
	}
}

func TestBoundsParamsRoundTrip(t *testing.T) {
	st := DefaultSetting(30, 4, 2, 20)
	b := ComputeBounds(st.Generate(3), st.Nodes(3), st.Slot, st.Slots)
	if b.LW <= 0 || b.LW >= b.UW[resource.CPU] {
		t.Fatalf("want 0 < L < U, got %+v", b)
	}
	_, params, err := policy.ParseSpec("oasis:" + b.String() + ";scale=0.5")
	if err != nil {
		t.Fatal(err)
	}
	p, err := newOASiS(params)
	if err != nil {
		t.Fatal(err)
	}
	got := p.bounds
	if math.Abs(got.UW[resource.CPU]-0.5*b.UW[resource.CPU]) > 1e-6*b.UW[resource.CPU] {
		t.Errorf("scaled U_cpu = %v, want %v", got.UW[resource.CPU], 0.5*b.UW[resource.CPU])
	}
	for _, bad := range []string{"oasis:uw=1/2", "oasis:scale=2", "oasis:slots=0", "oasis:bogus=1", "oasis:uw=1/1/1/1/1;up=1/1/1/1/1;lw=0;lp=1"} {
		_, ps, _ := policy.ParseSpec(bad)
		if _, err := newOASiS(ps); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

func TestSpeedModel(t *testing.T) {
	j := psJob("j", 0, 10, 8, 100, 200, nil)
	j.Groups[GWorker].Replicas = 4
	tests := []struct {
		name  string
		w, ps int
		want  float64
	}{
		{"requested counts with enough PS", 4, 2, 1},
		{"no PS: no progress", 4, 0, 0},
		{"twice the workers", 8, 4, 2},
		{"beyond N chunks: capped", 12, 6, 2},
	}
	for _, tc := range tests {
		if got := j.SpeedAt([]int{tc.w, tc.ps}, 2); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: speed = %v, want %v", tc.name, got, tc.want)
		}
	}
	// PS bandwidth short: with gradients, fewer PSs than needed slow the job.
	j.PS.GradientMB = 100
	if full, short := j.SpeedAt([]int{4, 2}, 2), j.SpeedAt([]int{4, 1}, 2); !(short < full) {
		t.Errorf("one PS for 4 workers needing 2: speed %v, want below %v", short, full)
	}
}

func newTestPolicy(t *testing.T, nodes []cluster.Node, slots int, jobs ...*cluster.Job) (*OASiS, *cluster.Snapshot) {
	t.Helper()
	b := ComputeBounds(jobs, nodes, 3600, slots)
	o, err := New(Config{Slot: 3600, Slots: slots, Eta: 1, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	s := snapshotOf(nodes, 0)
	o.sync(s)
	return o, s
}

// TestBestScheduleIdle: on an idle cluster the best schedule of a job
// whose utility decays finishes as early as N allows, carries exactly its
// workload, and meets the per-slot constraints.
func TestBestScheduleIdle(t *testing.T) {
	nodes := smallCluster(2, 1, 8)
	j := psJob("j", 0, 10, 4, 100, 250, cluster.Sigmoid{G1: 10, G2: 1.0 / 3600, G3: 3 * 3600})
	o, _ := newTestPolicy(t, nodes, 10, j)
	p := o.BestSchedule(j, 0)
	if p == nil {
		t.Fatal("no schedule")
	}
	if want := 2; p.End != want { // ceil(10/4) slots: 0, 1, 2
		t.Errorf("completion slot %d, want %d", p.End, want)
	}
	total := 0
	for s := p.Start; s <= p.End; s++ {
		w, ps := p.Counts(s)
		total += w
		if w > j.PS.Chunks {
			t.Errorf("slot %d: %d workers > N=%d", s, w, j.PS.Chunks)
		}
		if ps > w {
			t.Errorf("slot %d: %d PSs > %d workers", s, ps, w)
		}
		if w > 0 && float64(ps)*j.PS.PSBW < float64(w)*j.PS.WorkerBW {
			t.Errorf("slot %d: PS bandwidth %v below workers' %v", s, float64(ps)*j.PS.PSBW, float64(w)*j.PS.WorkerBW)
		}
	}
	if total != WorkerSlots(j.PS, 3600) {
		t.Errorf("schedule carries %d worker-slots, job needs %d", total, WorkerSlots(j.PS, 3600))
	}
	if p.Utility <= p.Cost {
		t.Errorf("idle cluster: payoff %v - %v should be positive", p.Utility, p.Cost)
	}
}

// TestDPMatchesBruteForce compares the dynamic program's least cost for
// every completion slot with an enumeration of all per-slot worker counts.
func TestDPMatchesBruteForce(t *testing.T) {
	nodes := smallCluster(2, 1, 8)
	j := psJob("j", 0, 7, 3, 100, 150, cluster.Sigmoid{G1: 5})
	other := psJob("o", 0, 20, 8, 100, 150, cluster.Sigmoid{G1: 5, G2: 1.0 / 3600, G3: 3600})
	o, _ := newTestPolicy(t, nodes, 5, j, other)
	// Uneven prices: another job's schedule loads some slots.
	if p := o.BestSchedule(other, 0); p != nil {
		o.admit(other, p)
	}
	p := o.BestSchedule(j, 0)
	if p == nil {
		t.Fatal("no schedule")
	}
	costs := o.scratch.costs
	W := WorkerSlots(j.PS, 3600)
	best := math.Inf(-1)
	var rec func(i, left int, cost float64)
	rec = func(i, left int, cost float64) {
		if left == 0 {
			// completion is the last slot with workers: i-1 at most
			return
		}
		if i == len(costs) {
			return
		}
		for w := 0; w < len(costs[i]) && w <= left; w++ {
			c := cost + costs[i][w]
			if w == left {
				if pay := utility(j, float64(i+1)*3600) - c; pay > best {
					best = pay
				}
				continue
			}
			rec(i+1, left-w, c)
		}
	}
	rec(0, W, 0)
	if got := p.Utility - p.Cost; math.Abs(got-best) > 1e-9*math.Max(1, math.Abs(best)) {
		t.Errorf("DP payoff %v, brute force %v", got, best)
	}
}

// TestGreedyFillCheapestFirst: workers go to the cheapest server first and
// PSs never outnumber workers.
func TestGreedyFillCheapestFirst(t *testing.T) {
	nodes := smallCluster(2, 2, 8)
	j := psJob("j", 0, 6, 6, 100, 400, cluster.Sigmoid{G1: 10, G2: 5.0 / 3600, G3: 3600})
	o, _ := newTestPolicy(t, nodes, 4, j)
	// Load server 0 (wa) in slot 0 so that it is dearer than wb.
	o.alloc[0][0] = vec(16, 32, 4, 0, 0)
	p := o.BestSchedule(j, 0)
	if p == nil || p.Start != 0 {
		t.Fatalf("want a schedule starting in slot 0, got %+v", p)
	}
	sp := p.Slots[0]
	if len(sp.W) == 0 || sp.W[0].Node != 1 {
		t.Fatalf("first workers on node %v, want the idle server 1", sp.W)
	}
	if sp.W[0].N != 6 && sp.W[0].N != maxFit(j.Groups[GWorker].Demand, nodes[1].Capacity) {
		t.Errorf("cheapest server not filled first: %+v", sp.W)
	}
	w, ps := p.Counts(0)
	if want, _ := PSFor(j.PS, w); ps != want || ps > w {
		t.Errorf("slot 0: %d workers, %d PSs; want %d PSs (bandwidth) and no more than workers", w, ps, want)
	}
}

// TestAdmission covers accept and reject decisions.
func TestAdmission(t *testing.T) {
	nodes := smallCluster(1, 1, 4)
	valuable := psJob("valuable", 0, 4, 4, 100, 400, cluster.Sigmoid{G1: 10})
	cheap := psJob("cheap", 0, 4, 4, 100, 400, cluster.Sigmoid{G1: 0.01})
	huge := psJob("huge", 0, 100, 4, 100, 400, cluster.Sigmoid{G1: 10})
	tests := []struct {
		name    string
		job     *cluster.Job
		preload bool
		admit   bool
	}{
		{"valuable job on an idle cluster", valuable, false, true},
		{"any job on an idle cluster (prices start at L/2)", cheap, false, true},
		{"worthless job on a nearly full cluster", cheap, true, false},
		{"job that cannot finish within the timespan", huge, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := ComputeBounds([]*cluster.Job{valuable, cheap}, nodes, 3600, 6)
			o, err := New(Config{Slot: 3600, Slots: 6, Eta: 1, Bounds: &b})
			if err != nil {
				t.Fatal(err)
			}
			s := snapshotOf(nodes, 0, tc.job)
			o.sync(s)
			if tc.preload {
				for t := range o.alloc {
					o.alloc[t][0] = vec(26, 52, 3, 0, 0)
				}
			}
			acts := NewPolicy(OASiSProfile(o)).Schedule(s)
			admitted := false
			for _, a := range acts {
				switch a.(type) {
				case policy.SetLabel:
					admitted = true
				case policy.Reject:
					if admitted {
						t.Fatal("both admitted and rejected")
					}
				}
			}
			if admitted != tc.admit {
				t.Fatalf("admitted = %v, want %v (actions %v)", admitted, tc.admit, acts)
			}
			if tc.admit {
				// prices rose where the schedule took resources
				pl := o.Plan(tc.job.ID)
				h := pl.Slots[0].W[0].Node
				if o.UnitPrice(pl.Start, h, resource.GPU, false) <= Price(0, 4, o.bounds.UW[resource.GPU], o.bounds.LW, 1) {
					t.Error("GPU price did not rise after admission")
				}
			}
		})
	}
}

func TestScheduleLabelRoundTrip(t *testing.T) {
	nodes := smallCluster(2, 1, 8)
	j := psJob("j", 0, 9, 4, 100, 250, cluster.Sigmoid{G1: 10, G2: 1.0 / 3600, G3: 3 * 3600})
	o, s := newTestPolicy(t, nodes, 8, j)
	p := o.BestSchedule(j, 0)
	enc := o.EncodeSchedule(p, s)
	q, err := DecodeSchedule(enc, o.nodeIdx)
	if err != nil {
		t.Fatal(err)
	}
	for ts := p.Start; ts <= p.End; ts++ {
		if a, b := p.placement(ts), q.placement(ts); len(a) != len(b) {
			t.Errorf("slot %d: %v decoded as %v", ts, a, b)
		}
	}
	for _, bad := range []string{"", "3-1|", "0-2|0:nosuch*1/", "0-2|5:wa*1/", "0-2|0:wa*x/"} {
		if _, err := DecodeSchedule(bad, o.nodeIdx); err == nil {
			t.Errorf("DecodeSchedule(%q): want an error", bad)
		}
	}
}

// TestScenario runs OASiS in the simulator with invariant checks: every
// admitted job finishes by the end of its planned completion slot, no
// action is refused, and a fresh instance rebuilds the same allocation
// from the job labels.
func TestScenario(t *testing.T) {
	st := DefaultSetting(40, 6, 3, 30)
	jobs := st.Generate(7)
	nodes := st.Nodes(7)
	b := ComputeBounds(jobs, nodes, st.Slot, st.Slots)
	o, err := New(Config{Slot: st.Slot, Slots: st.Slots, Eta: 1, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	var fresh *OASiS
	var restored bool
	cfg := sim.Config{Tick: st.Slot, Horizon: st.Slot * float64(st.Slots), Check: true}
	wrap := &probe{inner: NewPolicy(OASiSProfile(o)), after: func(s *cluster.Snapshot) {
		// Half way through, a restarted scheduler rebuilds its state
		// from the labels of running and pending jobs.
		if restored || s.Now < st.Slot*float64(st.Slots)/2 {
			return
		}
		restored = true
		fresh, _ = New(Config{Slot: st.Slot, Slots: st.Slots, Eta: 1, Bounds: &b})
		fresh.sync(s)
		fresh.restore(s)
		var labelled []*cluster.JobState
		for _, js := range activeJobs(s) {
			if _, ok := js.Labels[LabelSchedule]; ok {
				labelled = append(labelled, js)
			}
		}
		if len(labelled) == 0 {
			t.Error("no labelled job to restore from")
		}
		for _, js := range labelled {
			if fresh.Plan(js.Job.ID) == nil {
				t.Errorf("restart lost the plan of %s", js.Job.ID)
			}
		}
		now := o.slotAt(s.Now)
		for h := range s.Nodes {
			// what running and pending jobs hold from now on
			if got, want := fresh.alloc[now][h], o.allocOf(labelled, now, h); got != want {
				t.Errorf("node %d slot %d: restored allocation %v, want %v", h, now, got, want)
			}
		}
	}}
	sm, err := sim.New(cfg, nodes, jobs, wrap)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sm.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refusals) > 0 {
		t.Fatalf("%d refused actions, first: %v", len(res.Refusals), res.Refusals[0])
	}
	if !restored {
		t.Fatal("restart probe never ran")
	}
	m := res.Metrics()
	if int(m["rejected"]) != o.Rejected || o.Admitted+o.Rejected != len(jobs) {
		t.Errorf("rejected %v, policy says admitted %d rejected %d of %d", m["rejected"], o.Admitted, o.Rejected, len(jobs))
	}
	for _, r := range res.Records {
		p := o.Plan(r.ID)
		if p == nil {
			continue
		}
		if !r.Finished() || r.Finish > float64(p.End+1)*st.Slot+1e-6 {
			t.Errorf("%s: finished %v, planned by %v", r.ID, r.Finish, float64(p.End+1)*st.Slot)
		}
	}
	if o.Admitted == 0 {
		t.Error("nothing admitted")
	}
}

// allocOf sums the planned allocation of the given jobs on node h in slot t.
func (o *OASiS) allocOf(jobs []*cluster.JobState, t, h int) resource.Vector {
	var v resource.Vector
	for _, js := range jobs {
		p := o.plans[js.Job.ID]
		if p == nil || t < p.Start || t > p.End {
			continue
		}
		for _, c := range p.Slots[t-p.Start].W {
			if c.Node == h {
				v = v.Add(js.Job.Groups[GWorker].Demand.Scale(int64(c.N)))
			}
		}
		for _, c := range p.Slots[t-p.Start].P {
			if c.Node == h {
				v = v.Add(js.Job.Groups[GPS].Demand.Scale(int64(c.N)))
			}
		}
	}
	return v
}

// probe wraps a policy to look at snapshots after it decided.
type probe struct {
	inner policy.Policy
	after func(*cluster.Snapshot)
}

func (p *probe) Name() string     { return p.inner.Name() }
func (p *probe) TimeDriven() bool { return true }
func (p *probe) Schedule(s *cluster.Snapshot) []policy.Action {
	a := p.inner.Schedule(s)
	p.after(s)
	return a
}

// TestOnlineBounds: without given bounds the policy learns U and L from
// the jobs seen so far and still runs a valid schedule.
func TestOnlineBounds(t *testing.T) {
	st := DefaultSetting(30, 4, 2, 30)
	o, err := New(Config{Slot: st.Slot, Slots: st.Slots, Eta: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := runPolicy(t, NewPolicy(OASiSProfile(o)), st, 11)
	if o.Admitted == 0 || o.bounds.LW <= 0 || math.IsInf(o.bounds.LW, 1) || o.bounds.UW[resource.CPU] <= 0 {
		t.Errorf("admitted %d, learned bounds %+v", o.Admitted, o.bounds)
	}
	if m := res.Metrics(); m["completed"] != float64(o.Admitted) {
		t.Errorf("completed %v of %d admitted", m["completed"], o.Admitted)
	}
}
