package specon

import (
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// RoundRobin is the paper's fixed initial placement: the n-th job started
// goes to worker n mod |W| ("container 1, 2, 3, 4 is hosted by Worker-1,
// -2, -3, -4, then container 5, 6, 7, 8 rotate"); when that worker is full
// the job goes to the next one, in index order and wrapping around, that
// fits. W lists, in index order, the ready nodes eligible for every group
// of the job (the manager is not). The profile's gang mode should be
// placement.OneNodeOnly: a job's containers all go to its turn's worker.
//
//   - Filter passes only the nodes of W (the runtime has already dropped
//     the nodes that are not ready).
//   - Score ranks node n by its rotation distance from the current slot:
//     the worker at position slot mod |W| of W scores 0, the one after it
//     -1, and so on around W; nodes outside W score below all of them. So
//     the best feasible node is the first that fits in the rotation, and
//     no two nodes of W tie.
//   - Reserve gives each job started, by whichever plugin placed it, the
//     current slot, records it in the rr-slot label and advances the slot.
//
// The slot lives in the plugin for the run, as the sequence number lived
// in the old policy. A new instance (a restarted controller) rebuilds it,
// the first time it scores or reserves, as one past the highest rr-slot
// label among the running jobs; that is exact as long as the most
// recently started job is still running. Labels outside [0, 1<<40) are
// ignored.
type RoundRobin struct {
	next int
	init bool
}

var (
	_ framework.Filter            = (*RoundRobin)(nil)
	_ framework.EnqueueExtensions = (*RoundRobin)(nil)
	_ framework.Score             = (*RoundRobin)(nil)
	_ framework.Reserve           = (*RoundRobin)(nil)
)

// rrWorkers is the worker list W of the job last scored in this cycle, as
// a map from node index to position in W (-1: not in W).
type rrWorkers struct {
	js  *cluster.JobState
	pos []int
	n   int
}

var rrKey = framework.NewKey[*rrWorkers]("specon/round-robin")

// Name implements framework.Plugin.
func (*RoundRobin) Name() string { return RoundRobinName }

// Events implements framework.EnqueueExtensions: the filter's verdict is
// the node's eligibility for the job's groups (roles, labels, taints),
// nothing else, and the cursor only ranks.
func (*RoundRobin) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (*RoundRobin) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Filter implements framework.Filter: n must be eligible for every group
// of the job, whichever group is being placed.
func (*RoundRobin) Filter(_ *framework.Cycle, js *cluster.JobState, _ int, n *cluster.NodeState) *framework.Status {
	if isWorker(n, js.Job) {
		return nil
	}
	return framework.Statusf(framework.Unschedulable, "node %s (role %s) is not a worker for every group of the job", n.Name, n.Role)
}

// Score implements framework.Score: minus the rotation distance of node
// from the current slot in W.
func (r *RoundRobin) Score(c *framework.Cycle, js *cluster.JobState, _ int, node int) float64 {
	r.resume(c.Snap)
	w := framework.GetOrInit(c, rrKey, func() *rrWorkers { return &rrWorkers{} })
	if w.js != js {
		w.js, w.n = js, 0
		w.pos = w.pos[:0]
		for _, n := range c.Snap.Nodes {
			p := -1
			if n.Ready && !n.Gone && isWorker(n, js.Job) {
				p = w.n
				w.n++
			}
			w.pos = append(w.pos, p)
		}
	}
	p := w.pos[node]
	if p < 0 {
		return -float64(w.n)
	}
	return -float64((p - r.next%w.n + w.n) % w.n)
}

// Reserve implements framework.Reserve: the job takes the current slot.
func (r *RoundRobin) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	r.resume(c.Snap)
	c.St.Record(js, policy.SetLabel{Job: js.Job.ID, Key: LabelSlot, Value: strconv.Itoa(r.next)})
	r.next++
}

// resume rebuilds the slot from the running jobs' labels, once.
func (r *RoundRobin) resume(s *cluster.Snapshot) {
	if r.init {
		return
	}
	r.init = true
	for _, js := range s.Running {
		if v, ok := labelInt(js.Labels, LabelSlot); ok && int(v) >= r.next {
			r.next = int(v) + 1
		}
	}
}

// isWorker reports whether node n may host every group of job j.
func isWorker(n *cluster.NodeState, j *cluster.Job) bool {
	for g := range j.Groups {
		if !placement.Eligible(n, j, g) {
			return false
		}
	}
	return true
}

// workers lists W for job j: the ready nodes that may host all of it, in
// index order.
func workers(s *cluster.Snapshot, j *cluster.Job) []*cluster.NodeState {
	var out []*cluster.NodeState
	for _, n := range s.Nodes {
		if n.Ready && !n.Gone && isWorker(n, j) {
			out = append(out, n)
		}
	}
	return out
}
