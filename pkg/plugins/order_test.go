package plugins_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/fitgpp"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
)

// hiddenOrder is a QueueSort without QueueOrdered: the Runtime collects
// and sorts (or checks) the candidates every cycle.
type hiddenOrder struct{ s framework.QueueSort }

func (h hiddenOrder) Name() string { return h.s.Name() }
func (h hiddenOrder) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	return h.s.Compare(c, a, b)
}
func (h hiddenOrder) Requeue(c *framework.Cycle, js *cluster.JobState) framework.Events {
	return h.s.(framework.Requeuer).Requeue(c, js)
}

// countedOrder passes a QueueOrdered's answers on and counts them; lie
// makes it say the queue is in order whatever the queue says.
type countedOrder struct {
	hiddenOrder
	lie           bool
	inOrder, outs *int
}

func (o countedOrder) InQueueOrder(c *framework.Cycle) bool {
	if o.s.(framework.QueueOrdered).InQueueOrder(c) {
		*o.inOrder++
		return true
	}
	*o.outs++
	return o.lie
}

// fcfsPreempting is FCFS with fitgpp's preemption: evicted jobs go back
// to the head of the queue with a later Enqueued, so the queue is not
// always in FCFS's order.
func fcfsPreempting(t *testing.T) framework.Profile {
	t.Helper()
	pre, err := fitgpp.NewPreemptor(fitgpp.LRTP, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	return framework.Profile{
		Name:      "fcfs-lrtp",
		QueueSort: elastic.FCFS{},
		Filter:    []framework.Filter{framework.NodeRole{}},
		Score:     []framework.WeightedScore{{Score: framework.Strategy{S: placement.Pack}, Weight: 1}},
		Preempt:   []framework.Preempt{pre},
		Future:    true,
	}
}

// replayProfile replays jobs on nodes under the runtime of p, with or
// without the scheduling queue, and returns what runQueued returns.
func replayProfile(t *testing.T, p framework.Profile, queue bool, nodes []cluster.Node, jobs []*cluster.Job, seed uint64) (string, []string) {
	t.Helper()
	rt, err := framework.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if !queue {
		rt.WithoutQueue()
	}
	return observe(t, rt, nodes, jobs, seed, nil)
}

// TestQueueOrderedChangesNoDecision: a QueueSort that says the queue is in
// its order (FCFS on the simulator's queue) has the Runtime walk the queue
// lazily instead of sorting the candidates; every action, metric and
// record is the same as with the sort, with and without the scheduling
// queue. DRAGON's queue is always in order (it never preempts); with
// fitgpp's preemption it is not while an evicted job waits at its head.
// The same sort saying the queue is in order when it is not must change
// some decision, or the comparison could not fail.
func TestQueueOrderedChangesNoDecision(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	profiles := []struct {
		name string
		p    framework.Profile
		// unordered: some cycle must see the queue out of order.
		unordered bool
	}{
		{"dragon", elastic.DragonProfile(elastic.DefaultStarveAfter, elastic.DefaultScaleUpAfter), false},
		{"fcfs-lrtp", fcfsPreempting(t), true},
	}
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			ins, outs, lies := 0, 0, 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				for k, mk := range []func(uint64) ([]cluster.Node, []*cluster.Job){randomWorld, longQueueWorld} {
					nodes, jobs := mk(seed)
					for _, queue := range []bool{false, true} {
						name := fmt.Sprintf("world %d seed %d queue %v", k, seed, queue)
						sorted := pr.p
						sorted.QueueSort = hiddenOrder{pr.p.QueueSort}
						m0, log0 := replayProfile(t, sorted, queue, nodes, jobs, seed)
						ordered := pr.p
						ordered.QueueSort = countedOrder{hiddenOrder: hiddenOrder{pr.p.QueueSort}, inOrder: &ins, outs: &outs}
						m1, log1 := replayProfile(t, ordered, queue, nodes, jobs, seed)
						if d := cmp.Diff(log0, log1); d != "" {
							t.Errorf("%s: actions differ walking the queue in order (-sorted +in order):\n%s", name, d)
						}
						if m0 != m1 {
							t.Errorf("%s: metrics or records differ walking the queue in order", name)
						}
						var n int
						liar := pr.p
						liar.QueueSort = countedOrder{hiddenOrder: hiddenOrder{pr.p.QueueSort}, lie: true, inOrder: &n, outs: &n}
						if m2, _ := replayProfile(t, liar, queue, nodes, jobs, seed); m2 != m0 {
							lies++
						}
					}
				}
			}
			t.Logf("%d cycles in order, %d out of order; %d of %d replays changed when told it was in order",
				ins, outs, lies, 4*seeds)
			if ins == 0 {
				t.Error("no cycle saw the queue in order")
			}
			if pr.unordered && (outs == 0 || lies == 0) {
				t.Errorf("%d cycles saw the queue out of order, %d replays changed when told it was in order: the test cannot fail",
					outs, lies)
			}
		})
	}
}
