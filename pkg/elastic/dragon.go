package elastic

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// Dragon is DRAGON's scheduling algorithm as its controller implements it
// (NTHU-LSALAB/DRAGON v0.9.1, pkg/controller.v1/DRAGON/scheduling,
// SchedulingAlgorithm, ScheduleJob, ScaleDown and ScaleUp), without its
// KubeShare GPU-sharing branch:
//
//   - The waiting queue is first come, first served; the running queue is
//     in start order. Neither is weighted.
//   - Phase 1: when the head of the waiting queue has waited at least
//     StarveAfter (30 s in the code) it is the high-priority job, and
//     ScaleDown tries to make room for its minimum number of workers
//     (the code's GetMinInstanceWorkerPodRequests: workers only, not its
//     parameter servers) by removing workers of running jobs, in running
//     order, each down to its minimum, nodes without the job's parameter
//     server first.
//   - Phase 2: when there is no high-priority job or ScaleDown succeeded,
//     the first waiting job for which ScheduleJob places all parameter
//     servers and at least the minimum number of workers (of its requested
//     count) starts, with as many workers as were placed. At most one job
//     starts per cycle.
//   - Phase 3: when nothing was done for ScaleUpAfter (60 s), ScaleUp adds
//     workers to running jobs in running order, filling one node after the
//     other, up to each job's maximum.
//
// ScheduleJob first looks for one node that holds every requested replica
// (gang placement); failing that, it fills nodes one after the other
// starting from the node that can hold the most replicas of one group, and
// moves to the next node at the first replica that does not fit.
//
// Where we had to choose: the controller iterates Go maps of nodes, whose
// order is random; we use node index order. Its ScaleUp recomputes a job's
// headroom from the job's placement before the cycle on every node, which
// can push a job past its maximum; we count the workers already added so
// the simulator does not refuse the resize. Jobs pausing for a rescale are
// skipped by ScaleDown and ScaleUp (the simulator cannot resize them).
// The clock state (time of the last action) lives in the policy, as it
// lives in the controller's process.
type Dragon struct {
	// StarveAfter is how long the head of the queue waits before it counts
	// as high priority (30 s).
	StarveAfter float64
	// ScaleUpAfter is how long without an action before scale-up (60 s).
	ScaleUpAfter float64

	started    bool
	lastAction float64
}

var (
	_ policy.Policy     = (*Dragon)(nil)
	_ policy.TimeDriven = (*Dragon)(nil)
)

// NewDragon returns DRAGON with the controller's timers.
func NewDragon() *Dragon { return &Dragon{StarveAfter: 30, ScaleUpAfter: 60} }

// Name implements policy.Policy.
func (*Dragon) Name() string { return "dragon" }

// TimeDriven implements policy.TimeDriven: DRAGON's phases depend on the
// clock (waiting time, time since the last action).
func (*Dragon) TimeDriven() bool { return true }

// Schedule implements policy.Policy.
func (d *Dragon) Schedule(s *cluster.Snapshot) []policy.Action {
	if !d.started {
		d.started, d.lastAction = true, s.Now
	}
	var waiting []*cluster.JobState
	for js := range s.Pending.All() {
		waiting = append(waiting, js)
	}
	slices.SortStableFunc(waiting, func(a, b *cluster.JobState) int { return cmp.Compare(a.Enqueued, b.Enqueued) })
	running := runningOrder(s)
	l := placement.NewLedger(s, true)
	var out []policy.Action

	// Phase 1.
	var hp *cluster.JobState
	scaledDown := false
	if len(waiting) > 0 && s.Now-waiting[0].Enqueued >= d.StarveAfter {
		hp = waiting[0]
		if acts, ok := dragonScaleDown(l, hp.Job, running); ok {
			out = append(out, acts...)
			scaledDown = true
		}
		d.lastAction = s.Now
	}

	// Phase 2.
	if hp == nil || scaledDown {
		for _, w := range waiting {
			j := w.Job
			reqs := make([]dragonReq, 0, len(j.Groups))
			for g := 1; g < len(j.Groups); g++ {
				reqs = append(reqs, dragonReq{group: g, n: j.Groups[g].Replicas})
			}
			reqs = append(reqs, dragonReq{group: 0, n: j.Groups[0].Replicas})
			p, ok := dragonScheduleJob(l, j, reqs)
			good := true
			for i, r := range reqs {
				need := j.Groups[r.group].Replicas
				if r.group == 0 {
					need = j.Groups[0].Min
				}
				if ok[i] < need {
					good = false
				}
			}
			if good && l.TakePlacement(j, p) {
				out = append(out, policy.Start{Job: j.ID, Placement: p})
				d.lastAction = s.Now
				break
			}
		}
	}
	for _, w := range waiting {
		if len(out) == 0 || w.Job.ID != out[len(out)-1].Target() {
			out = append(out, policy.Wait{Job: w.Job.ID, Reason: "waiting for room (FIFO)"})
			break
		}
	}

	// Phase 3.
	if s.Now-d.lastAction >= d.ScaleUpAfter {
		out = append(out, dragonScaleUp(l, running)...)
		d.lastAction = s.Now
	}
	return out
}

// dragonReq asks for n replicas of one group.
type dragonReq struct{ group, n int }

// dragonScheduleJob is DRAGON's ScheduleJob on a copy of the ledger's free
// resources: it returns a placement (possibly partial) and how many
// replicas of each request it placed. The ledger is not changed.
func dragonScheduleJob(l *placement.Ledger, j *cluster.Job, reqs []dragonReq) (cluster.Placement, []int) {
	s := l.Snapshot()
	ok := make([]int, len(reqs))
	usable := func(i, g int) bool {
		n := s.Nodes[i]
		return n.Ready && !n.Gone && placement.Eligible(n, j, g)
	}
	maxSlot, maxNode := 0, -1
	for i := range s.Nodes {
		free := l.Free(i)
		placed := make([]int, len(reqs))
		one := true
	node:
		for ri, r := range reqs {
			d := j.Groups[r.group].Demand
			for c := 0; c < r.n; c++ {
				if !usable(i, r.group) || !d.Fits(free) {
					one = false
					break node
				}
				free = free.Sub(d)
				placed[ri]++
			}
		}
		if one {
			var p cluster.Placement
			for _, r := range reqs {
				for c := 0; c < r.n; c++ {
					p = append(p, cluster.Assignment{Group: r.group, Node: i})
				}
			}
			copy(ok, placed)
			return p, ok
		}
		if m := slices.Max(placed); m > maxSlot {
			maxSlot, maxNode = m, i
		}
	}
	if maxSlot == 0 {
		return nil, ok
	}
	order := []int{maxNode}
	for i := range s.Nodes {
		if i != maxNode {
			order = append(order, i)
		}
	}
	var p cluster.Placement
	ri, c := 0, 0
	for _, i := range order {
		free := l.Free(i)
	fill:
		for ; ri < len(reqs); ri++ {
			r := reqs[ri]
			d := j.Groups[r.group].Demand
			for ; c < r.n; c++ {
				if !usable(i, r.group) || !d.Fits(free) {
					break fill
				}
				free = free.Sub(d)
				p = append(p, cluster.Assignment{Group: r.group, Node: i})
				ok[ri]++
			}
			c = 0
		}
	}
	return p, ok
}

// dragonScaleDown is DRAGON's ScaleDown for a high-priority job that needs
// its minimum number of workers. On success it returns the Resize actions
// and leaves their freed resources in the ledger; on failure the ledger is
// unchanged and there are no actions.
func dragonScaleDown(l *placement.Ledger, hp *cluster.Job, running []*cluster.JobState) ([]policy.Action, bool) {
	req := []dragonReq{{group: 0, n: hp.Groups[0].Min}}
	fits := func() bool {
		_, ok := dragonScheduleJob(l, hp, req)
		return ok[0] == req[0].n
	}
	l.Fork()
	var acts []policy.Action
	for _, q := range running {
		if q.Phase != cluster.Running {
			continue
		}
		keep, workers := shrinkOrder(q)
		maxDelete := q.Counts()[0] - q.Job.Groups[0].Min
		n := 0
		done := false
		for range workers {
			if fits() {
				done = true
				break
			}
			if n >= maxDelete {
				break
			}
			l.Give(workers[n].Node, q.Job.Groups[0].Demand)
			n++
		}
		if n > 0 {
			p := append(slices.Clone(keep), workers[n:]...)
			acts = append(acts, policy.Resize{Job: q.Job.ID, Placement: p, Reason: "dragon scale-down for " + hp.ID})
		}
		if done {
			l.Commit()
			return acts, true
		}
	}
	if fits() {
		l.Commit()
		return acts, true
	}
	l.Revert()
	return nil, false
}

// dragonScaleUp is DRAGON's ScaleUp: nodes in order, and on each node the
// running jobs in running order from where the previous node stopped, each
// given workers until it reaches its maximum or the node is full.
func dragonScaleUp(l *placement.Ledger, running []*cluster.JobState) []policy.Action {
	s := l.Snapshot()
	plans := make([]cluster.Placement, len(running))
	added := make([]int, len(running))
	i := 0
	for ni, n := range s.Nodes {
		if !n.Ready || n.Gone {
			continue
		}
		for ; i < len(running); i++ {
			q := running[i]
			if q.Phase != cluster.Running || !placement.Eligible(n, q.Job, 0) {
				continue
			}
			g := &q.Job.Groups[0]
			stop := false
			for added[i] < g.Max-q.Counts()[0] {
				if !l.Take(ni, g.Demand) {
					stop = true
					break
				}
				if plans[i] == nil {
					plans[i] = slices.Clone(q.Placement)
				}
				plans[i] = append(plans[i], cluster.Assignment{Group: 0, Node: ni})
				added[i]++
			}
			if stop {
				break
			}
		}
	}
	var out []policy.Action
	for k, q := range running {
		if added[k] > 0 {
			out = append(out, policy.Resize{Job: q.Job.ID, Placement: plans[k], Reason: "dragon scale-up"})
		}
	}
	return out
}
