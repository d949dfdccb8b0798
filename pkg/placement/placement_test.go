package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// snap builds a snapshot of ready nodes with the given free GPUs (8 GPUs
// each).
func snap(freeGPUs ...int64) *cluster.Snapshot {
	s := &cluster.Snapshot{Pending: cluster.NewQueue()}
	for i, f := range freeGPUs {
		n := &cluster.NodeState{Node: cluster.Node{Name: string(rune('a' + i)), Capacity: resource.New(0, 0, 8)}, Index: i, Ready: true}
		n.Allocated = resource.New(0, 0, 8-f)
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

func gpuJob(replicas int, gpus int64) *cluster.Job {
	return &cluster.Job{ID: "j", Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(0, 0, gpus), Replicas: replicas, Min: replicas, Max: replicas}}}
}

func TestPlaceStrategies(t *testing.T) {
	tests := []struct {
		name string
		free []int64
		job  *cluster.Job
		opt  Options
		want cluster.Placement
	}{
		{"spread picks emptiest", []int64{2, 8, 4}, gpuJob(1, 1), Options{Strategy: Spread}, cluster.Placement{{Node: 1}}},
		{"pack picks fullest that fits", []int64{2, 8, 4}, gpuJob(1, 2), Options{Strategy: Pack}, cluster.Placement{{Node: 0}}},
		{"first fit", []int64{1, 8, 4}, gpuJob(1, 2), Options{Strategy: FirstFit}, cluster.Placement{{Node: 1}}},
		{"spread spreads replicas", []int64{8, 8}, gpuJob(2, 2), Options{Strategy: Spread}, cluster.Placement{{Node: 0}, {Node: 1}}},
		{"one node first keeps gang together", []int64{8, 8}, gpuJob(2, 2), Options{Strategy: Spread, Gang: OneNodeFirst}, cluster.Placement{{Node: 0}, {Node: 0}}},
		{"one node first falls back", []int64{2, 2}, gpuJob(2, 2), Options{Strategy: Spread, Gang: OneNodeFirst}, cluster.Placement{{Node: 0}, {Node: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger(snap(tc.free...), true)
			got, err := Place(l, tc.job, tc.job.RequestedCounts(), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("placement (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlaceAllOrNothing(t *testing.T) {
	l := NewLedger(snap(4, 2), true)
	if _, err := Place(l, gpuJob(3, 2), []int{3}, Options{Strategy: Pack}); err != nil {
		t.Fatalf("3x2 GPUs in 4+2 free: %v", err)
	}
	l = NewLedger(snap(4, 2), true)
	if _, err := Place(l, gpuJob(4, 2), []int{4}, Options{Strategy: Pack}); err == nil {
		t.Fatal("4x2 GPUs placed in 6 free")
	}
	if l.Free(0) != resource.New(0, 0, 4) || l.Free(1) != resource.New(0, 0, 2) {
		t.Fatalf("failed placement changed the ledger: %v %v", l.Free(0), l.Free(1))
	}
}

func TestLedgerForkRevert(t *testing.T) {
	l := NewLedger(snap(8), true)
	l.Fork()
	l.Take(0, resource.New(0, 0, 3))
	l.Fork()
	l.Take(0, resource.New(0, 0, 3))
	l.Revert()
	if got := l.Free(0); got != resource.New(0, 0, 5) {
		t.Fatalf("after inner revert free = %v, want 5 GPUs", got)
	}
	l.Commit()
	if got := l.Free(0); got != resource.New(0, 0, 5) {
		t.Fatalf("after commit free = %v", got)
	}
	if l.Take(0, resource.New(0, 0, 6)) {
		t.Fatal("Take beyond free succeeded")
	}
}

func TestNotReadyAndRoles(t *testing.T) {
	s := snap(8, 8)
	s.Nodes[0].Ready = false
	s.Nodes[1].Role = "ps"
	l := NewLedger(s, true)
	if _, err := Place(l, gpuJob(1, 1), []int{1}, Options{}); err == nil {
		t.Fatal("placed a worker on a launching node or a ps node")
	}
}

func TestFeasibleToScore(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{1, 1}, {100, 100}, {101, 100}, {256, 122}, {1000, 420}, {5000, 500}, {20000, 1000}} {
		if got := feasibleToScore(tc.n); got != tc.want {
			t.Errorf("feasibleToScore(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// On a large cluster the scan scores a sample of feasible nodes from a
// rotating start; ScoreAll finds the global best. Both place every replica
// on a feasible node and are deterministic.
func TestSampledScan(t *testing.T) {
	free := make([]int64, 1000)
	for i := range free {
		free[i] = int64(1 + i%7)
	}
	free[999] = 8 // the emptiest node, at the end
	job := gpuJob(1, 1)
	l := NewLedger(snap(free...), true)
	p, err := Place(l, job, []int{1}, Options{Strategy: Spread, ScoreAll: true})
	if err != nil || p[0].Node != 999 {
		t.Fatalf("ScoreAll picked %v (%v), want node 999", p, err)
	}
	run := func() []int {
		l := NewLedger(snap(free...), true)
		var got []int
		for r := 0; r < 5; r++ {
			p, err := Place(l, job, []int{1}, Options{Strategy: Spread})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p[0].Node)
		}
		return got
	}
	a, b := run(), run()
	if d := cmp.Diff(a, b); d != "" {
		t.Fatalf("sampled placement not deterministic:\n%s", d)
	}
	if a[0] == 999 || a[0] >= 420 {
		t.Errorf("first sampled pick %d: want the best of the first 420 feasible nodes", a[0])
	}
	if a[1] < 420 {
		t.Errorf("second pick %d did not continue where the first scan stopped", a[1])
	}
}

// The score cache of large clusters changes no placement: two ledgers
// over the same 300 uneven nodes, one scanning with the cache and one
// without, make the same placements through random gangs of a few shapes,
// strategies, gang modes, role-restricted nodes, forks, reverts and gives.
func TestScoreCacheChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	s := &cluster.Snapshot{Pending: cluster.NewQueue()}
	for i := range 300 {
		n := &cluster.NodeState{Node: cluster.Node{Name: fmt.Sprint(i), Capacity: resource.New(float64(16+16*(i%3)), float64(64+64*(i%2)), int64(4+4*(i%2)))},
			Index: i, Ready: i%37 != 0}
		if i%50 == 7 {
			n.Role = "ps"
		}
		n.Allocated = resource.New(float64(rng.IntN(8)), float64(rng.IntN(32)), int64(rng.IntN(4)))
		s.Nodes = append(s.Nodes, n)
	}
	cached, plain := NewLedger(s, true), NewLedger(s, true)
	if !cached.cache {
		t.Fatalf("cache not in use on %d nodes", len(s.Nodes))
	}
	plain.cache = false // scans without the cache
	shapes := []resource.Vector{resource.New(1, 4, 0), resource.New(4, 16, 1), resource.New(2, 8, 2), resource.New(8, 32, 1), resource.New(1, 2, 0), resource.New(3, 3, 3)}
	type placed struct {
		j *cluster.Job
		p cluster.Placement
	}
	var live []placed
	for step := range 3000 {
		switch r := rng.IntN(20); {
		case r == 0 && len(live) > 0: // a job leaves
			k := rng.IntN(len(live))
			for _, l := range []*Ledger{cached, plain} {
				for _, a := range live[k].p {
					l.Give(a.Node, live[k].j.Groups[a.Group].Demand)
				}
			}
			live = append(live[:k], live[k+1:]...)
		case r == 1: // a what-if that is undone
			for _, l := range []*Ledger{cached, plain} {
				l.Fork()
			}
			j := &cluster.Job{ID: "w", Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: shapes[rng.IntN(len(shapes))], Replicas: 3}}}
			p1, err1 := Place(cached, j, []int{3}, Options{Strategy: Spread})
			p2, err2 := Place(plain, j, []int{3}, Options{Strategy: Spread})
			if (err1 == nil) != (err2 == nil) || !cmp.Equal(p1, p2) {
				t.Fatalf("step %d what-if: cached %v %v, plain %v %v", step, p1, err1, p2, err2)
			}
			for _, l := range []*Ledger{cached, plain} {
				l.Revert()
			}
		default:
			group := "worker"
			if rng.IntN(10) == 0 {
				group = "ps"
			}
			reps := 1 + rng.IntN(4)
			j := &cluster.Job{ID: fmt.Sprint(step), Groups: []cluster.ReplicaGroup{{Name: group, Demand: shapes[rng.IntN(len(shapes))], Replicas: reps}}}
			o := Options{Strategy: Strategy(rng.IntN(3)), Gang: Gang(rng.IntN(3)), ScoreAll: rng.IntN(8) == 0}
			p1, err1 := Place(cached, j, []int{reps}, o)
			p2, err2 := Place(plain, j, []int{reps}, o)
			if (err1 == nil) != (err2 == nil) || !cmp.Equal(p1, p2) {
				t.Fatalf("step %d %+v: cached %v %v, plain %v %v", step, o, p1, err1, p2, err2)
			}
			if err1 == nil {
				live = append(live, placed{j, p1})
			}
		}
		if step%1500 == 1499 { // a new cycle (after the cluster filled up)
			cached.Reset(s, true)
			plain.Reset(s, true)
			plain.cache = false
			live = nil
		}
	}
	for i := range s.Nodes {
		if cached.Free(i) != plain.Free(i) {
			t.Fatalf("node %d: free %v cached, %v plain", i, cached.Free(i), plain.Free(i))
		}
	}
}

// Scanning with the score cache returns the node and the next start that
// scanning without it does, from every start, whatever share of the
// nodes is full, with and without a (dense) eligible set (a third of the
// nodes carry a taint the jobs do not tolerate), on nodes with and without
// roles.
func TestScanCachedMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{101, 128, 300, 1000} {
		s := &cluster.Snapshot{Pending: cluster.NewQueue(), Eligibility: cluster.NewEligibility()}
		for i := range n {
			nd := cluster.Node{Name: fmt.Sprint(i), Capacity: resource.New(16, 64, 8)}
			if i%3 == 1 {
				nd.Taints = []cluster.Taint{{Key: "t", Effect: cluster.TaintNoSchedule}}
			}
			if i%97 == 5 {
				nd.Role = "ps" // the scans below refuse nodes with a role
			}
			s.Nodes = append(s.Nodes, &cluster.NodeState{Node: nd, Index: i, Ready: true})
		}
		var sets []cluster.NodeSet
		if set := NewLedger(s, true).Eligible(gpuJob(1, 1), 0); !set.All() && !set.Sparse(n) {
			sets = []cluster.NodeSet{set}
		} else {
			t.Fatalf("n=%d: want a dense eligible set", n)
		}
		for _, fullShare := range []float64{0, 0.5, 0.9, 0.99, 1} {
			for _, n := range s.Nodes {
				n.Allocated = resource.Vector{}
				if rng.Float64() < fullShare {
					n.Allocated = resource.New(16, 0, 8)
				} else if rng.IntN(2) == 0 {
					n.Allocated = resource.New(float64(rng.IntN(12)), 0, int64(rng.IntN(6)))
				}
			}
			cached, plain := NewLedger(s, true), NewLedger(s, true)
			plain.cache = false
			for range 200 {
				start := rng.IntN(2 * n)
				cached.next, plain.next = start, start
				d := resource.New(float64(1+rng.IntN(4)), 0, int64(rng.IntN(2)))
				o := Options{Strategy: Strategy(rng.IntN(2)), ScoreAll: rng.IntN(5) == 0}
				ss := sets[:rng.IntN(2)]
				noRole := func(n *cluster.NodeState) bool { return n.Role == "" }
				got := cached.scan(d, o, ss, noRole)
				want := plain.scan(d, o, ss, noRole)
				if got != want || cached.next != plain.next {
					t.Fatalf("n=%d full=%v start=%d %+v sets %d: cached %d next %d, plain %d next %d", n, fullShare, start, o, len(ss), got, cached.next, want, plain.next)
				}
				if got >= 0 && rng.IntN(2) == 0 {
					cached.Take(got, d)
					plain.Take(got, d)
				}
			}
		}
	}
}

// scanSparse must pick what the dense scan picks (same order, sampling
// and rotating start): a dense scan is forced by passing the set twice.
func TestScanSparseMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 20 {
		n := 50 + r.IntN(400)
		s := &cluster.Snapshot{Pending: cluster.NewQueue(), Eligibility: cluster.NewEligibility()}
		for i := range n {
			nd := cluster.Node{Name: fmt.Sprintf("n%d", i), Capacity: resource.New(0, 0, 8)}
			if r.IntN(7) != 0 {
				nd.Taints = []cluster.Taint{{Key: "t", Effect: cluster.TaintNoSchedule}}
			}
			ns := &cluster.NodeState{Node: nd, Index: i, Ready: true}
			ns.Allocated = resource.New(0, 0, int64(r.IntN(9)))
			s.Nodes = append(s.Nodes, ns)
		}
		j := gpuJob(1, 1)
		for _, st := range []Strategy{Spread, Pack, FirstFit} {
			a, b := NewLedger(s, true), NewLedger(s, true)
			set := a.Eligible(j, 0)
			if !set.Sparse(n) {
				continue
			}
			for k := range 30 {
				o := Options{Strategy: st}
				x := a.scan(j.Groups[0].Demand, o, []cluster.NodeSet{set}, nil)
				y := b.scan(j.Groups[0].Demand, o, []cluster.NodeSet{set, set}, nil)
				if x != y {
					t.Fatalf("trial %d %v pick %d: sparse %d, dense %d", trial, st, k, x, y)
				}
				if x < 0 {
					break
				}
				a.Take(x, j.Groups[0].Demand)
				b.Take(y, j.Groups[0].Demand)
			}
		}
	}
}

// TestResetReusedLedger: a Ledger reset cycle after cycle, on clusters
// whose nodes change capacity, readiness, placeholders and number, holds
// what a fresh Ledger holds for the same snapshot (Reset keeps each
// node's inverse capacity from the previous cycle while the capacity is
// the same, and writes free resources in place).
func TestResetReusedLedger(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	caps := []resource.Vector{resource.New(48, 384, 8), resource.New(16, 64, 0), resource.New(0, 0, 4), {}}
	var reused Ledger
	for step := range 200 {
		s := &cluster.Snapshot{Pending: cluster.NewQueue()}
		for i := range 1 + rng.IntN(6) {
			n := &cluster.NodeState{Node: cluster.Node{Name: fmt.Sprint(i), Capacity: caps[rng.IntN(len(caps))]}, Index: i, Ready: rng.IntN(5) > 0, Gone: rng.IntN(9) == 0}
			n.Allocated = resource.New(float64(rng.IntN(8)), 0, int64(rng.IntN(3)))
			n.Placeholder = resource.New(0, float64(rng.IntN(4)), int64(rng.IntN(2)))
			s.Nodes = append(s.Nodes, n)
		}
		take := rng.IntN(2) == 0
		var fresh Ledger
		fresh.Reset(s, take)
		reused.Reset(s, take)
		if d := cmp.Diff(fresh.free, reused.free); d != "" {
			t.Fatalf("step %d: free (-fresh +reused):\n%s", step, d)
		}
		var want []nodeInv
		for _, n := range s.Nodes {
			var v nodeInv
			k := 0.0
			for r, c := range n.Capacity {
				if c > 0 {
					v.cap[r], k = 1/float64(c), k+1
				}
			}
			if k > 0 {
				v.kinds = 1 / k
			}
			want = append(want, v)
		}
		if d := cmp.Diff(want, reused.inv, cmp.AllowUnexported(nodeInv{})); d != "" {
			t.Fatalf("step %d: inverse capacities (-want +reused):\n%s", step, d)
		}
		for i, n := range s.Nodes {
			want := resource.Vector{}
			if n.Ready && !n.Gone {
				want = n.Free()
				if take {
					want = want.Add(n.Placeholder)
				}
			}
			if reused.Free(i) != want {
				t.Fatalf("step %d node %d: free %v, want %v", step, i, reused.Free(i), want)
			}
		}
	}
}
