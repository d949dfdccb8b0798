package specon

import (
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// TestClocklessOnGen: the monitor's ClocklessOn says true while no running
// job reports a metric. Its answer on a snapshot is kept for snapshots of
// the same Snapshot.Gen (the executor's promise that the cluster is the
// same) until a Rebalance runs, and is worked out again for another Gen,
// after a Rebalance, and always without a Gen (0). The steps that keep an
// answer change the job behind the Gen's back, so that a kept answer and a
// worked-out one differ.
func TestClocklessOnGen(t *testing.T) {
	sp := NewSpeculator(DefaultParams)
	rt, err := framework.New(framework.Profile{Name: "t", Reserve: []framework.Reserve{sp}, Rebalance: []framework.Rebalance{sp}})
	if err != nil {
		t.Fatal(err)
	}
	j := &cluster.Job{ID: "j", Class: cluster.ClassBE, Work: 3600,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Replicas: 1, Min: 1, Max: 1, Demand: resource.New(1, 1, 1)}}}
	js := cluster.NewJobState(j)
	js.Phase, js.Placement = cluster.Running, cluster.Placement{{Node: 0}}
	s := &cluster.Snapshot{Pending: cluster.NewQueue(), Running: []*cluster.JobState{js}, Cycle: 1, Gen: 7,
		Nodes: []*cluster.NodeState{{Node: cluster.Node{Name: "n0", Capacity: resource.New(8, 64, 8)}, Ready: true, Jobs: []*cluster.JobState{js}}}}
	// Two cycles: the first writes the job's labels, which the executor
	// applies; the second confirms them.
	for range 2 {
		for _, l := range actionsOf[policy.SetLabel](rt.Schedule(s)) {
			if js.Labels == nil {
				js.Labels = map[string]string{}
			}
			js.Labels[l.Key] = l.Value
		}
		s.Cycle++
		s.Gen++
	}
	metric := func(on bool) {
		js.Evals = nil
		if on {
			js.Evals = []cluster.EvalSample{{T: 1, Value: 1}}
		}
	}
	check := func(step string, gen uint64, want bool) {
		t.Helper()
		s.Gen = gen
		if got := sp.ClocklessOn(s); got != want {
			t.Errorf("%s: ClocklessOn = %v, want %v", step, got, want)
		}
	}
	check("quiet", 7, true)
	metric(true)
	check("a metric under the same Gen: the answer kept", 7, true)
	check("another Gen: worked out again", 8, false)
	metric(false)
	check("no Gen", 0, true)
	metric(true)
	check("no Gen: always worked out", 0, false)
	metric(false)
	check("quiet again", 11, true)
	// A cycle on another cluster runs the Rebalance...
	metric(true)
	s.Gen, s.Cycle = 12, s.Cycle+1
	rt.Schedule(s)
	// ...after which Gen 11's answer is not kept.
	check("after a Rebalance", 11, false)
}
