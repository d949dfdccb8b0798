package plugins_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/resource"
)

// nanUtility is a utility function that gives NaN: a weight with a NaN
// utility must sort as Compare puts it.
type nanUtility struct{}

func (nanUtility) Value(float64) float64 { return math.NaN() }

// keyWorld is a snapshot of a few nodes, running jobs of some tenants and a
// pending queue of jobs that tie and differ in every field a queue sort
// reads: priority, class, tenant, utility (none, finite, infinite, NaN),
// demand and enqueue time.
func keyWorld(seed uint64) *cluster.Snapshot {
	r := rand.New(rand.NewPCG(seed, 0x50a7))
	s := &cluster.Snapshot{Seed: seed}
	for i := range 3 {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: cluster.Node{Name: fmt.Sprintf("n%d", i), Capacity: resource.New(32, 256, 8)},
			Index: i, Ready: true})
	}
	mk := func(id string) *cluster.Job {
		j := &cluster.Job{ID: id, Work: float64(60 + r.IntN(3)*60), Priority: r.IntN(3) - 1,
			Tenant: fmt.Sprintf("t%d", r.IntN(3)), Class: []cluster.Class{cluster.ClassTE, cluster.ClassBE, cluster.ClassUnknown}[r.IntN(3)],
			Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(float64(1+r.IntN(2)), 8, int64(1+r.IntN(2))), Replicas: 1 + r.IntN(2), Min: 1, Max: 3}}}
		switch r.IntN(5) {
		case 0:
			j.Utility = cluster.Sigmoid{G1: float64(1 + r.IntN(2)), G2: 0.001, G3: 100}
		case 1:
			j.Utility = nanUtility{}
		}
		return j
	}
	for i := range 4 {
		js := cluster.NewJobState(mk(fmt.Sprintf("run%d", i)))
		js.Phase = cluster.Running
		js.Placement = cluster.Placement{{Node: i % 3}}
		s.Running = append(s.Running, js)
	}
	q := cluster.NewQueue()
	for i := range 30 {
		js := cluster.NewJobState(mk(fmt.Sprintf("p%02d", i)))
		js.Enqueued = float64(r.IntN(5) * 10)
		q.PushBack(js)
	}
	s.Pending = q.ReadOnly()
	return s
}

// TestSortKeysMatchCompare: every preset's queue sort that sorts by keys
// (framework.KeyedSort) orders every two pending jobs as its Compare does,
// on queues with ties, NaN utilities and several tenants.
func TestSortKeysMatchCompare(t *testing.T) {
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	keyed := 0
	for _, e := range reg.Entries() {
		p, err := reg.New(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		rt, ok := p.(*framework.Runtime)
		if !ok {
			continue
		}
		ks, ok := rt.Profile().QueueSort.(framework.KeyedSort)
		if !ok {
			continue
		}
		keyed++
		for seed := uint64(1); seed <= 20; seed++ {
			if err := framework.CheckSortKeys(ks, keyWorld(seed)); err != nil {
				t.Errorf("%s, seed %d: %v", e.Name, seed, err)
			}
		}
	}
	if keyed < 3 {
		t.Errorf("%d presets sort by keys, want at least 3 (drf, elastic, drover)", keyed)
	}
}
