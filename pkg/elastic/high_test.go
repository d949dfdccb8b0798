package elastic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/resource"
)

// constUtility is a utility function of a fixed value (NaN included).
type constUtility float64

func (u constUtility) Value(float64) float64 { return float64(u) }

// highProbe is a Rebalance plugin that reports the cycle's high-priority
// job as the elastic plugins see it.
type highProbe struct{ got **cluster.JobState }

func (highProbe) Name() string { return "high-probe" }

func (p highProbe) Rebalance(c *framework.Cycle) *framework.Status {
	*p.got = elasticState(c).highJob(c)
	return nil
}

// scanHigh is the high-priority job by definition: the heaviest pending
// job (the first in queue order among equals) when it outranks every
// running job.
func scanHigh(s *cluster.Snapshot) *cluster.JobState {
	capacity := s.ReadyCapacity()
	var top *cluster.JobState
	var tw Weight
	for js := range s.Pending.All() {
		if w := WeightOf(js.Job, capacity); top == nil || w.Compare(tw) > 0 {
			top, tw = js, w
		}
	}
	if top == nil {
		return nil
	}
	for _, r := range s.Running {
		if !tw.Outranks(WeightOf(r.Job, capacity)) {
			return nil
		}
	}
	return top
}

// TestHighJobMatchesScan: the high-priority job the plugins find (which
// skips the search for the heaviest pending job when no pending job
// outranks every running one) is the one the definition gives, on random
// queues with priorities, utilities (NaN included) and no utility.
func TestHighJobMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 15))
	job := func(id string) *cluster.Job {
		j := psJob(id, 0, 100, r.IntN(3), float64(1+r.IntN(3)), 2, 1, 1, 2)
		randomUtility(r, j, 4)
		return j
	}
	found := 0
	for k := range 2000 {
		s := snapshot(nodes(2, 64, 256))
		for i := range r.IntN(4) {
			rs := cluster.NewJobState(job(fmt.Sprintf("r%d", i)))
			rs.Phase, rs.FirstStart = cluster.Running, float64(i)
			rs.Placement = cluster.Placement{{Group: 0, Node: 0}, {Group: 1, Node: 0}}
			s.Nodes[0].Allocated = s.Nodes[0].Allocated.Add(rs.Job.Demand(rs.Counts()))
			s.Running = append(s.Running, rs)
		}
		for i := range r.IntN(6) {
			s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(job(fmt.Sprintf("p%d", i))))
		}
		var got *cluster.JobState
		p := ElasticProfile(ElasticOptions{})
		p.Rebalance = append([]framework.Rebalance{highProbe{&got}}, p.Rebalance...)
		mustNew(p).Schedule(s)
		want := scanHigh(s)
		if got != want {
			t.Fatalf("snapshot %d: high-priority job %v, want %v", k, got, want)
		}
		if want != nil {
			found++
		}
	}
	if found < 100 {
		t.Errorf("only %d snapshots of 2000 have a high-priority job", found)
	}
}

// TestPendingRanksFollowQueue: mayOutrank from the counts kept across
// cycles from the queue's log (pendingRanks) answers as the read of the
// whole queue does, while jobs are pushed at both ends and removed, the
// log is outrun, and the queue is replaced.
func TestPendingRanksFollowQueue(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	job := func(id string) *cluster.Job {
		j := psJob(id, 0, 100, r.IntN(3), 1, 2, 1, 1, 2)
		randomUtility(r, j, 5)
		return j
	}
	ranks := &pendingRanks{}
	q := cluster.NewQueue()
	var queued []*cluster.JobState
	capacity := resource.New(128, 512, 0)
	both := [2]int{}
	for k := range 3000 {
		switch {
		case r.IntN(500) == 0:
			q, queued = cluster.NewQueue(), nil // a new queue object
		case r.IntN(200) == 0:
			for range 3000 { // more changes than the log keeps
				js := cluster.NewJobState(job(fmt.Sprintf("x%d", k)))
				q.PushBack(js)
				q.Remove(js)
			}
		}
		for range r.IntN(4) {
			js := cluster.NewJobState(job(fmt.Sprintf("p%d", k)))
			if r.IntN(3) == 0 {
				q.PushFront(js)
			} else {
				q.PushBack(js)
			}
			queued = append(queued, js)
		}
		for range r.IntN(4) {
			if len(queued) > 0 {
				i := r.IntN(len(queued))
				q.Remove(queued[i])
				queued = slices.Delete(queued, i, i+1)
			}
		}
		s := &cluster.Snapshot{Pending: q.ReadOnly()}
		for i := range 1 + r.IntN(3) {
			rs := cluster.NewJobState(job(fmt.Sprintf("r%d", i)))
			rs.Phase = cluster.Running
			s.Running = append(s.Running, rs)
		}
		scan := &elasticCycle{capacity: capacity, weights: map[*cluster.JobState]Weight{}}
		kept := &elasticCycle{capacity: capacity, weights: map[*cluster.JobState]Weight{}, ranks: ranks}
		want, got := scan.mayOutrank(s), kept.mayOutrank(s)
		if got != want {
			t.Fatalf("step %d: mayOutrank %v from the counts, %v from the queue", k, got, want)
		}
		if want {
			both[1]++
		} else {
			both[0]++
		}
	}
	if both[0] < 100 || both[1] < 100 {
		t.Errorf("answers false/true %v: not both exercised", both)
	}
}

// randomUtility gives j, by a draw of r.IntN(n), a constant utility of
// 0 to 2, a NaN one, a negative one, or (draw 0, or 4 and more) none.
func randomUtility(r *rand.Rand, j *cluster.Job, n int) {
	switch r.IntN(n) {
	case 1:
		j.Utility = constUtility(float64(r.IntN(3)))
	case 2:
		j.Utility = constUtility(math.NaN())
	case 3:
		j.Utility = constUtility(-1)
	}
}
