package elastic

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Elastic is the article's scheduler. Each cycle follows its last
// algorithm ("Scheduling Algorithm"):
//
//  1. If jobs are waiting and the heaviest waiting job outranks every
//     running job (priority, then utility), it is the high-priority job h.
//     h is started if it fits; otherwise scale-down shrinks lower-weight
//     running jobs towards their minimum until h fits, all or nothing.
//  2. If there was no high-priority job, or scale-down succeeded, the first
//     waiting job (in weight order) that fits is started and the cycle
//     ends there (the pseudo-code returns).
//  3. Otherwise scale-up grows running jobs, heaviest first, towards their
//     maximum worker count while resources last.
//
// A job starts at its requested counts when they fit, else with the most
// workers between its minimum and its request that fit (as DRAGON starts
// jobs), placed by gang placement: all replicas on the first node that
// holds them all, else the default spread. The policy keeps no state
// between cycles, so it survives a scheduler restart unchanged.
type Elastic struct {
	// Strategy places a job that no single node holds (default spread,
	// kube-scheduler's least-allocated scoring).
	Strategy placement.Strategy
	// LocalScaleUp restricts scale-up to nodes the job already uses, so
	// that growing a job never adds a node to it (and never pays the
	// cross-node penalty for it). The article's scale-up has no such
	// restriction; this variant exists to measure what that costs.
	LocalScaleUp bool
}

var (
	_ policy.Policy     = (*Elastic)(nil)
	_ policy.TimeDriven = (*Elastic)(nil)
)

// Name implements policy.Policy.
func (*Elastic) Name() string { return "elastic" }

// TimeDriven implements policy.TimeDriven. The article's loop starts at
// most one job per pass and scales up only in a pass that starts none, so
// it relies on the controller running it again soon (Kubeflow controllers
// reconcile on events and on a periodic resync) even when nothing else
// happened: the simulator must call it on every tick.
func (*Elastic) TimeDriven() bool { return true }

// Schedule implements policy.Policy.
func (e *Elastic) Schedule(s *cluster.Snapshot) []policy.Action {
	capacity := s.ReadyCapacity()
	var pending []*cluster.JobState
	for js := range s.Pending.All() {
		pending = append(pending, js)
	}
	waiting := ByWeight(pending, capacity)
	running := ByWeight(runningOrder(s), capacity)
	l := placement.NewLedger(s, true)
	var out []policy.Action

	var h *cluster.JobState
	scaledDown := false
	if len(waiting) > 0 {
		top := WeightOf(waiting[0].Job, capacity)
		high := true
		for _, r := range running {
			if !top.Outranks(WeightOf(r.Job, capacity)) {
				high = false
				break
			}
		}
		if high {
			h = waiting[0]
			if p, ok := e.fit(l, h.Job); ok {
				out = append(out, policy.Start{Job: h.Job.ID, Placement: p})
			} else if acts, ok := e.scaleDown(l, h, running, capacity); ok {
				out = append(out, acts...)
				scaledDown = true
			}
		}
	}
	if h == nil || scaledDown {
		for _, w := range waiting {
			if p, ok := e.fit(l, w.Job); ok {
				return append(out, policy.Start{Job: w.Job.ID, Placement: p})
			}
		}
	}
	for _, w := range waiting {
		if w != h || len(out) == 0 {
			out = append(out, policy.Wait{Job: w.Job.ID, Reason: "no room for its parameter servers and minimum workers"})
			break
		}
	}
	return append(out, e.scaleUp(l, running)...)
}

// runningOrder lists the jobs holding resources in a stable order (first
// start, then id), since a snapshot's running set has no order.
func runningOrder(s *cluster.Snapshot) []*cluster.JobState {
	out := slices.Clone(s.Running)
	slices.SortStableFunc(out, func(a, b *cluster.JobState) int {
		if c := cmp.Compare(a.FirstStart, b.FirstStart); c != 0 {
			return c
		}
		return cmp.Compare(a.Job.ID, b.Job.ID)
	})
	return out
}

// fit finds a placement for a pending job and takes it from the ledger:
// the requested counts if they fit, else the largest worker count down to
// the minimum. It returns false, with the ledger unchanged, when not even
// the minimum fits.
func (e *Elastic) fit(l *placement.Ledger, j *cluster.Job) (cluster.Placement, bool) {
	counts := j.RequestedCounts()
	for w := counts[0]; w >= j.Groups[0].Min; w-- {
		counts[0] = w
		if p, ok := GangPlace(l, j, counts, e.Strategy); ok {
			return p, true
		}
	}
	return nil, false
}

// GangPlace is the article's gang placement: every replica of the job on
// the first node (in node order) with room for all of them; if there is no
// such node, the regular placement with the given strategy (the default
// scheduler's). It takes the placement from the ledger, all or nothing.
func GangPlace(l *placement.Ledger, j *cluster.Job, counts []int, st placement.Strategy) (cluster.Placement, bool) {
	total := j.Demand(counts)
	s := l.Snapshot()
	for i, n := range s.Nodes {
		if !n.Ready || n.Gone || !total.Fits(l.Free(i)) {
			continue
		}
		eligible := true
		for g, c := range counts {
			if c > 0 && !placement.Eligible(n, j, g) {
				eligible = false
			}
		}
		if !eligible {
			continue
		}
		p := make(cluster.Placement, 0, len(j.Groups))
		for g, c := range counts {
			for r := 0; r < c; r++ {
				p = append(p, cluster.Assignment{Group: g, Node: i})
			}
		}
		l.Take(i, total)
		return p, true
	}
	p, err := placement.Place(l, j, counts, placement.Options{Strategy: st})
	return p, err == nil
}

// scaleDown is the article's scale-down: it removes workers of running
// jobs that weigh less than h, lightest job first, each down to its
// minimum, testing before each removal whether h now fits at its minimum.
// It succeeds with the Resize actions that make room, leaving the freed
// resources in the ledger for h; when even every lighter job at its
// minimum leaves no room it fails cleanly: no action and the ledger
// unchanged.
func (e *Elastic) scaleDown(l *placement.Ledger, h *cluster.JobState, running []*cluster.JobState, capacity resource.Vector) ([]policy.Action, bool) {
	hw := WeightOf(h.Job, capacity)
	minCounts := h.Job.RequestedCounts()
	minCounts[0] = h.Job.Groups[0].Min
	fits := func() bool {
		l.Fork()
		_, ok := GangPlace(l, h.Job, minCounts, e.Strategy)
		l.Revert()
		return ok
	}
	l.Fork()
	var acts []policy.Action
	for i := len(running) - 1; i >= 0; i-- {
		q := running[i]
		if q.Phase != cluster.Running || WeightOf(q.Job, capacity).Compare(hw) >= 0 {
			continue
		}
		keep, removed := shrinkOrder(q)
		extra := q.Counts()[0] - q.Job.Groups[0].Min
		n := 0
		for ; n < extra && n < len(removed); n++ {
			if fits() {
				break
			}
			l.Give(removed[n].Node, q.Job.Groups[0].Demand)
		}
		if n > 0 {
			p := append(slices.Clone(keep), removed[n:]...)
			acts = append(acts, policy.Resize{Job: q.Job.ID, Placement: p, Reason: "scale-down for " + h.Job.ID})
		}
		if fits() {
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

// shrinkOrder splits a job's placement into the replicas scale-down never
// removes (parameter servers) and its workers in removal order: workers on
// nodes without a parameter server of the job first, then the rest, the
// most recently added first (as DRAGON's SortNodeFromJob keeps the
// parameter server's node for last).
func shrinkOrder(q *cluster.JobState) (keep, workers cluster.Placement) {
	psNode := map[int]bool{}
	for _, a := range q.Placement {
		if a.Group != 0 {
			keep = append(keep, a)
			psNode[a.Node] = true
		}
	}
	var far, near cluster.Placement
	for i := len(q.Placement) - 1; i >= 0; i-- {
		a := q.Placement[i]
		switch {
		case a.Group != 0:
		case psNode[a.Node]:
			near = append(near, a)
		default:
			far = append(far, a)
		}
	}
	workers = append(far, near...)
	// workers[n:] must be a valid placement of the remaining workers,
	// which it is in any order.
	return keep, workers
}

// scaleUp is the article's scale-up: running jobs, heaviest first, get
// workers until they reach their maximum or no node has room for one
// more. A new worker goes to a node the job already uses when one has room
// (nodes with its parameter servers first), else to the first node with
// room.
func (e *Elastic) scaleUp(l *placement.Ledger, running []*cluster.JobState) []policy.Action {
	var out []policy.Action
	s := l.Snapshot()
	for _, q := range running {
		if q.Phase != cluster.Running {
			continue
		}
		g := &q.Job.Groups[0]
		want := g.Max - q.Counts()[0]
		if want <= 0 {
			continue
		}
		order := preferredNodes(q, len(s.Nodes))
		if e.LocalScaleUp {
			order = q.Placement.Nodes()
		}
		p := slices.Clone(q.Placement)
		added := 0
		for _, ni := range order {
			n := s.Nodes[ni]
			if !n.Ready || n.Gone || !placement.Eligible(n, q.Job, 0) {
				continue
			}
			for added < want && l.Take(ni, g.Demand) {
				p = append(p, cluster.Assignment{Group: 0, Node: ni})
				added++
			}
		}
		if added > 0 {
			out = append(out, policy.Resize{Job: q.Job.ID, Placement: p, Reason: "scale-up"})
		}
	}
	return out
}

// preferredNodes lists node indices: the nodes of the job's parameter
// servers, then its other nodes, then the rest, each in index order.
func preferredNodes(q *cluster.JobState, n int) []int {
	rank := make([]int, n)
	for i := range rank {
		rank[i] = 2
	}
	for _, a := range q.Placement {
		r := 1
		if a.Group != 0 {
			r = 0
		}
		rank[a.Node] = min(rank[a.Node], r)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
	return out
}
