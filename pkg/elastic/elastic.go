package elastic

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// Plugin names.
const (
	WeightedName    = "elastic-weight"
	WorkersName     = "elastic"
	ScaleDownName   = "elastic-scale-down"
	ScaleUpName     = "elastic-scale-up"
	OnePerCycleName = "one-per-cycle"
)

// elasticCycle is what the elastic plugins share within one cycle: the
// weights (computed once per job) and the high-priority job, and what
// scale-down did for it.
type elasticCycle struct {
	capacity resource.Vector
	weights  map[*cluster.JobState]Weight
	high     *cluster.JobState
	highDone bool
	// ranks: the counts of the queued jobs' ranks, when scale-down keeps
	// them (see pendingRanks).
	ranks *pendingRanks
	// scaledDown: scale-down made room for the high-priority job.
	scaledDown bool
	// blocked: scale-down could not make room for it.
	blocked bool
}

var elasticKey = framework.NewKey[*elasticCycle]("elastic")

func elasticState(c *framework.Cycle) *elasticCycle {
	return framework.GetOrInit(c, elasticKey, func() *elasticCycle {
		return &elasticCycle{capacity: c.Snap.ReadyCapacity(), weights: map[*cluster.JobState]Weight{}}
	})
}

func (e *elasticCycle) weight(js *cluster.JobState) Weight {
	w, ok := e.weights[js]
	if !ok {
		w = WeightOf(js.Job, e.capacity)
		e.weights[js] = w
	}
	return w
}

// highJob returns the high-priority job of the cycle: the heaviest pending
// job (the first in queue order among equals) when it outranks every
// running job, else nil.
func (e *elasticCycle) highJob(c *framework.Cycle) *cluster.JobState {
	if e.highDone {
		return e.high
	}
	e.highDone = true
	s := c.Snap
	if len(s.Running) > 0 && !e.mayOutrank(s) {
		return nil
	}
	var top *cluster.JobState
	var tw Weight
	for js := range s.Pending.All() {
		if w := e.weight(js); top == nil || w.Compare(tw) > 0 {
			top, tw = js, w
		}
	}
	if top == nil {
		return nil
	}
	for _, r := range s.Running {
		if !tw.Outranks(e.weight(r)) {
			return nil
		}
	}
	e.high = top
	return top
}

// mayOutrank reports whether some pending job outranks every running job
// (s has some). The high-priority job, the heaviest pending job, has the
// highest rank (priority, then utility) of the pending jobs, so it can
// outrank every running job only if some pending job does: when none
// does, there is no high-priority job, and finding the heaviest pending
// job (a key lookup per job) is not needed. The check reads a pending
// job's priority from its spec and its utility from its weight only when
// it has one (a job without a utility function has utility 0).
func (e *elasticCycle) mayOutrank(s *cluster.Snapshot) bool {
	// w outranks every running job when its priority is above the highest
	// running priority p, or equal to it with a utility above every
	// utility u of the running jobs of priority p (none if one of those
	// is NaN: nothing compares above NaN).
	var p int
	var u float64
	nan := false
	for i, r := range s.Running {
		w := e.weight(r)
		switch {
		case i == 0 || w.Priority > p:
			p, u, nan = w.Priority, w.Utility, w.Utility != w.Utility
		case w.Priority == p:
			if w.Utility != w.Utility {
				nan = true
			} else if w.Utility > u {
				u = w.Utility
			}
		}
	}
	if e.ranks != nil && e.ranks.follow(s) {
		// The same answer from the counts: a pending job of a priority
		// above p outranks; of priority p (unless nan), one without a
		// utility function has utility 0; only when some job of
		// priority p has one is the queue read.
		top, some := 0, false
		for pr := range e.ranks.n {
			if !some || pr > top {
				top, some = pr, true
			}
		}
		switch {
		case !some:
			return false
		case top > p:
			return true
		case top < p || nan:
			return false
		case e.ranks.util[p] == 0:
			return 0 > u
		}
	}
	for js := range s.Pending.All() {
		j := js.Job
		if j.Priority < p || j.Priority == p && nan {
			continue
		}
		if j.Priority > p {
			return true
		}
		ju := 0.0
		if j.Utility != nil {
			ju = e.weight(js).Utility
		}
		if ju > u {
			return true
		}
	}
	return false
}

// pendingRanks counts, across cycles, the queued jobs of each priority
// and, of those, the ones with a utility function, following the queue's
// log (cluster.QueueLog, the simulator's), so that mayOutrank need not
// read the whole queue every cycle. It is a cache of the queue, not state
// of the policy: it is read again from the queue whenever the log does
// not reach back to its mark (a new queue object, as after a restart),
// and a queue without a log is read every cycle as before. A queued job's
// spec (its priority and utility function) never changes (executors
// never change a Job).
type pendingRanks struct {
	queue   cluster.PendingQueue
	mark    uint64
	n, util map[int]int
}

// follow brings the counts to s's queue; false when the queue keeps no
// log.
func (pr *pendingRanks) follow(s *cluster.Snapshot) bool {
	ql, ok := s.Pending.(cluster.QueueLog)
	if !ok {
		pr.queue = nil
		return false
	}
	if pr.queue != nil && pr.queue == s.Pending && ql.Since(pr.mark, pr.change) {
		pr.mark = ql.Mark()
		return true
	}
	if pr.n == nil {
		pr.n, pr.util = map[int]int{}, map[int]int{}
	}
	clear(pr.n)
	clear(pr.util)
	for js := range s.Pending.All() {
		pr.change(js, true)
	}
	pr.queue, pr.mark = s.Pending, ql.Mark()
	return true
}

func (pr *pendingRanks) change(js *cluster.JobState, pushed bool) {
	d, p := 1, js.Job.Priority
	if !pushed {
		d = -1
	}
	if pr.n[p] += d; pr.n[p] == 0 {
		delete(pr.n, p)
	}
	if js.Job.Utility != nil {
		if pr.util[p] += d; pr.util[p] == 0 {
			delete(pr.util, p)
		}
	}
}

// byWeight is ByWeight with the cycle's cached weights.
func (e *elasticCycle) byWeight(jobs []*cluster.JobState) []*cluster.JobState {
	out := slices.Clone(jobs)
	slices.SortStableFunc(out, func(a, b *cluster.JobState) int { return e.weight(b).Compare(e.weight(a)) })
	return out
}

// Weighted orders pending jobs by the article's weight (see Weight),
// heaviest first; jobs of equal weight keep queue order, which is what the
// article's insertion into the queue amounts to.
type Weighted struct{}

var _ framework.KeyedSort = Weighted{}

// Events implements framework.EnqueueExtensions for a QueueSort: a
// weight is a function of the job's spec and the cluster's ready
// capacity, which only a node change moves.
func (Weighted) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventNodes
}

// Requeue implements framework.EnqueueExtensions.
func (Weighted) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (Weighted) Name() string { return WeightedName }

// Compare implements framework.QueueSort.
func (Weighted) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	e := elasticState(c)
	return e.weight(b).Compare(e.weight(a))
}

// Key implements framework.KeyedSort: the weight's key, heaviest first.
// The weight is computed, not memoised in the cycle's map: the Runtime
// asks a job's key once per cycle and sort (KeyedSort), and an insertion
// into the map costs more than the division.
func (Weighted) Key(c *framework.Cycle, js *cluster.JobState) framework.SortKey {
	w := WeightOf(js.Job, elasticState(c).capacity).Key()
	return framework.SortKey{w[0], w[1], w[2], w[3], w[4]}
}

// Order is the order in which Workers proposes a job's sizes, i.e. the
// gang order: whether keeping the job on one node comes before keeping its
// requested worker count.
type Order uint8

const (
	// OneNodeFirst (the default, the article's reading): the largest
	// worker count, between the minimum and the request, whose whole gang
	// the profile places on one node goes first; only when no count fits
	// one node are the counts tried largest first, spread.
	OneNodeFirst Order = iota
	// SizeFirst (drover's reading before issue 14): the requested count
	// first, on one node or else spread, then one worker fewer at a time.
	SizeFirst
)

// Orders are the values of Order, as the parameter spells them.
var Orders = []string{"one-node-first", "size-first"}

func (o Order) String() string {
	if int(o) < len(Orders) {
		return Orders[o]
	}
	return fmt.Sprintf("Order(%d)", o)
}

// ParseOrder parses "one-node-first" or "size-first".
func ParseOrder(s string) (Order, error) {
	for i, n := range Orders {
		if s == n {
			return Order(i), nil
		}
	}
	return 0, fmt.Errorf("order %q: want %s", s, strings.Join(Orders, " or "))
}

// Workers sizes an elastic parameter-server job: its requested counts,
// then one worker fewer at a time down to the worker group's minimum; the
// parameter servers keep their requested count. With Order OneNodeFirst
// the largest of these counts whose gang fits on one node moves to the
// front, so that a job whose requested gang no node holds starts on one
// node with fewer workers (scale-up grows it later) rather than spread at
// its requested size.
//
// Why one node first is the article's reading: it defines gang scheduling
// as grouping "all workers to a single node" to "minimize the amount of
// communication overhead"; it leaves the worker count to the scheduler
// ("the scheduler can dictate the number of worker deployed"), starting a
// job "utilizing gang scheduling" and then calling scale-up "to maximize
// the number of workers"; and its scale-down makes room until the
// high-priority job "can be scheduled in n", one node. Its gang
// pseudo-code falls back to "the regular manner" when no node holds the
// pods asked for; we take that to mean when no node holds the job at any
// count it may run with. SizeFirst keeps the literal reading of that
// fallback (the requested pods, spread).
//
// "Fits one node" is decided with the profile's own placement (Filter,
// Score, gang mode, or Place plugin) on a fork of the cycle's ledger that
// is reverted: a count qualifies when the placement puts every replica on
// one node. Without a cycle (c == nil) the order is SizeFirst's.
type Workers struct {
	Order Order
}

var (
	_ framework.Size              = Workers{}
	_ framework.EnqueueExtensions = Workers{}
)

// Events implements framework.EnqueueExtensions: the sizes are the job's
// spec, and whether one fits is the placement's (the queue checks that
// itself).
func (Workers) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (Workers) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (Workers) Name() string { return WorkersName }

// Size implements framework.Size.
func (w Workers) Size(c *framework.Cycle, js *cluster.JobState) [][]int {
	j := js.Job
	g := len(j.Groups)
	k := j.Groups[0].Replicas - j.Groups[0].Min + 1
	if k <= 0 {
		return nil
	}
	// One array holds every size's counts (each a full slice of it, so
	// that an append copies): two allocations per job, not one per size.
	out := make([][]int, 0, k)
	flat := make([]int, k*g)
	for n := j.Groups[0].Replicas; n >= j.Groups[0].Min; n-- {
		i := len(out) * g
		counts := flat[i : i+g : i+g]
		for x := range j.Groups {
			counts[x] = j.Groups[x].Replicas
		}
		counts[0] = n
		out = append(out, counts)
	}
	if w.Order != OneNodeFirst || c == nil || len(out) < 2 {
		return out
	}
	l := c.Ledger()
	for i, counts := range out {
		l.Fork()
		p, st := c.Place(l, js, counts)
		l.Revert()
		if st.IsSuccess() && len(p.Nodes()) == 1 {
			if i == 0 {
				return out
			}
			front := append([][]int{counts}, out[:i]...)
			return append(front, out[i+1:]...)
		}
	}
	return out
}

// OnePerCycle admits at most one start per cycle, as the controllers'
// loops of the elastic article and of DRAGON do (each pass starts one job
// and returns). It is time-driven: a queue that drains one job per pass
// needs the controller's periodic resync to run the next pass.
type OnePerCycle struct{}

var (
	_ framework.Admit      = OnePerCycle{}
	_ framework.TimeDriven = OnePerCycle{}
)

// Name implements framework.Plugin.
func (OnePerCycle) Name() string { return OnePerCycleName }

// TimeDriven implements framework.TimeDriven.
func (OnePerCycle) TimeDriven() bool { return true }

// Events implements framework.EnqueueExtensions: it needs the next pass,
// not the clock (a cycle after one that started nothing, on an unchanged
// cluster, starts nothing either), and no job's failure matters to it.
func (OnePerCycle) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (OnePerCycle) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Admit implements framework.Admit: Blocked once a job started this cycle.
func (OnePerCycle) Admit(c *framework.Cycle, _ *cluster.JobState) *framework.Status {
	if len(c.Started()) > 0 {
		return framework.Statusf(framework.Blocked, "one job starts per cycle (%s did)", c.Started()[0].Job.ID)
	}
	return nil
}

// ScaleDown is the article's scale-down for the high-priority job h (the
// heaviest waiting job when it outranks every running job). As a Preempt
// plugin, for h only: it removes workers of running jobs that weigh less
// than h, lightest job first, each down to its minimum, testing before
// each removal whether h now fits at its minimum workers (with the
// profile's placement); it succeeds with the Resizes that make room
// (the Runtime then places h again), or changes nothing. As an Admit
// plugin: once scale-down failed for h, no other job starts this cycle
// (the article's loop starts another job only when there was no h or
// scale-down succeeded).
type ScaleDown struct {
	// ranks, when set (ElasticProfile), spares the search for the
	// high-priority job a read of the whole queue per cycle (see
	// pendingRanks); nil: the queue is read, as before.
	ranks *pendingRanks
}

// state is the cycle's shared state, told of d's ranks.
func (d ScaleDown) state(c *framework.Cycle) *elasticCycle {
	e := elasticState(c)
	if e.ranks == nil {
		e.ranks = d.ranks
	}
	return e
}

var (
	_ framework.Admit             = ScaleDown{}
	_ framework.Preempt           = ScaleDown{}
	_ framework.EnqueueExtensions = ScaleDown{}
)

// Name implements framework.Plugin.
func (ScaleDown) Name() string { return ScaleDownName }

// Events implements framework.EnqueueExtensions. The high-priority job
// is never parked (its failure blocks the queue). Scale-down declines
// every other job until it becomes the high-priority job, which takes a
// change of the pending jobs (a heavier one left) or of the running ones
// (it now outranks them all).
func (d ScaleDown) Events(c *framework.Cycle, js *cluster.JobState) framework.Events {
	if d.state(c).highJob(c) == js {
		return framework.EventAlways
	}
	return framework.EventPending | framework.EventRunning
}

// Requeue implements framework.EnqueueExtensions: scale-down acts for js
// only when js is the cycle's high-priority job (the heaviest pending job,
// the first in queue order among equals: the head of js's bucket when it
// is one of them).
func (d ScaleDown) Requeue(c *framework.Cycle, js *cluster.JobState, _ framework.Events) bool {
	return d.state(c).highJob(c) == js
}

// Admit implements framework.Admit.
func (ScaleDown) Admit(c *framework.Cycle, _ *cluster.JobState) *framework.Status {
	if e := elasticState(c); e.blocked {
		return framework.Statusf(framework.Blocked, "behind high-priority job %s, which scale-down could not make room for", e.high.Job.ID)
	}
	return nil
}

// declined is Preempt's answer for a job that is not the high-priority
// one: the empty reason keeps the placement's as the job's wait reason.
// One status serves every such job: its plugin is set here, so that the
// Runtime's WithPlugin reads it and never writes.
var declined = framework.NewStatus(framework.Unschedulable, "").WithPlugin(ScaleDownName)

// Preempt implements framework.Preempt.
func (d ScaleDown) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	e := d.state(c)
	h := e.highJob(c)
	if js != h {
		return declined
	}
	hw := e.weight(h)
	minCounts := h.Job.RequestedCounts()
	minCounts[0] = h.Job.Groups[0].Min
	l := c.St.Now()
	fits := func() bool {
		l.Fork()
		_, st := c.Place(l, h, minCounts)
		l.Revert()
		return st.IsSuccess()
	}
	running := e.byWeight(runningOrder(c.Snap))
	for i := len(running) - 1; i >= 0; i-- {
		q := running[i]
		if q.Phase != cluster.Running || c.St.Op(q) != framework.OpNone || e.weight(q).Compare(hw) >= 0 {
			continue
		}
		keep, removed := shrinkOrder(q)
		extra := q.Counts()[0] - q.Job.Groups[0].Min
		// Give workers back one at a time on a fork of the ledger to find
		// how many h needs, then record that as one Resize.
		l.Fork()
		n := 0
		for ; n < extra && n < len(removed); n++ {
			if fits() {
				break
			}
			l.Give(removed[n].Node, q.Job.Groups[0].Demand)
		}
		l.Revert()
		if n > 0 {
			c.St.Resize(q, append(slices.Clone(keep), removed[n:]...), "scale-down for "+h.Job.ID)
		}
		if fits() {
			e.scaledDown = true
			return nil
		}
	}
	if fits() {
		e.scaledDown = true
		return nil
	}
	e.blocked = true
	return framework.Statusf(framework.Unschedulable, "high-priority: lighter jobs at their minimum workers leave no room for %d workers", minCounts[0])
}

// ScaleUp is the article's scale-up, a Rebalance plugin: running jobs,
// heaviest first, get workers until they reach their maximum or no node
// has room for one more. A new worker goes to a node the job already uses
// when one has room (nodes with its parameter servers first), else to the
// first node with room; with Local, only to nodes the job already uses
// (growing a job never adds a node to it, nor the cross-node penalty; the
// article's scale-up has no such restriction, this variant measures what
// that costs). With NodeMajor, the article's literal loop ("for n in NR do
// for q in Q do", node by node): the nodes in index order, and on each
// node every running job, heaviest first, gets as many workers as fit
// there before the next node is tried; a job's own nodes get no
// preference. Scale-up is skipped in a cycle that started a job other
// than the high-priority one placed without scale-down (the article's loop
// returns after such a start). It is time-driven for the same reason as
// OnePerCycle: a skipped scale-up waits for the next pass.
type ScaleUp struct {
	Local     bool
	NodeMajor bool
}

var (
	_ framework.Rebalance  = ScaleUp{}
	_ framework.TimeDriven = ScaleUp{}
)

// Name implements framework.Plugin.
func (ScaleUp) Name() string { return ScaleUpName }

// TimeDriven implements framework.TimeDriven.
func (ScaleUp) TimeDriven() bool { return true }

// Events implements framework.EnqueueExtensions: scale-up follows the
// passes, not the clock (with nothing changed and nothing done in the
// last pass, it does nothing).
func (ScaleUp) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (ScaleUp) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Rebalance implements framework.Rebalance.
func (u ScaleUp) Rebalance(c *framework.Cycle) *framework.Status {
	e := elasticState(c)
	s := c.Snap
	for _, js := range c.Started() {
		if js != e.highJob(c) || e.scaledDown {
			return nil
		}
	}
	l := c.St.Now()
	if u.NodeMajor {
		nodeMajorScaleUp(c, l, e.byWeight(runningOrder(s)))
		return nil
	}
	for _, q := range e.byWeight(runningOrder(s)) {
		if q.Phase != cluster.Running || c.St.Op(q) != framework.OpNone {
			continue
		}
		g := &q.Job.Groups[0]
		want := g.Max - q.Counts()[0]
		if want <= 0 {
			continue
		}
		order := preferredNodes(q, len(s.Nodes))
		if u.Local {
			order = q.Placement.Nodes()
		}
		p, added := placement.Grow(l, q, 0, want, order)
		if added > 0 {
			c.St.Resize(q, p, "scale-up")
		}
	}
	return nil
}

// nodeMajorScaleUp grows the jobs (heaviest first) node by node: for each
// node in index order, each job below its maximum takes as many workers as
// the node still holds, then the next job, then the next node. The growth
// is worked out on a fork of the ledger, then recorded as one Resize per
// job, in job order.
func nodeMajorScaleUp(c *framework.Cycle, l *placement.Ledger, jobs []*cluster.JobState) {
	var grow []*cluster.JobState
	for _, q := range jobs {
		if q.Phase == cluster.Running && c.St.Op(q) == framework.OpNone && q.Counts()[0] < q.Job.Groups[0].Max {
			grow = append(grow, q)
		}
	}
	if len(grow) == 0 {
		return
	}
	ps := make([]cluster.Placement, len(grow))
	room := make([]int, len(grow))
	for i, q := range grow {
		ps[i] = slices.Clone(q.Placement)
		room[i] = q.Job.Groups[0].Max - q.Counts()[0]
	}
	l.Fork()
	for ni, n := range c.Snap.Nodes {
		if !n.Ready || n.Gone {
			continue
		}
		for i, q := range grow {
			if !placement.Eligible(n, q.Job, 0) {
				continue
			}
			for room[i] > 0 && l.Take(ni, q.Job.Groups[0].Demand) {
				ps[i] = append(ps[i], cluster.Assignment{Group: 0, Node: ni})
				room[i]--
			}
		}
	}
	l.Revert()
	for i, q := range grow {
		if len(ps[i]) > len(q.Placement) {
			c.St.Resize(q, ps[i], "scale-up (node by node)")
		}
	}
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

// ElasticOptions are the elastic preset's parameters. The zero value is
// the default: spread for jobs no node holds, scale-up onto any node, one
// node first.
type ElasticOptions struct {
	// Placement places a job that no single node holds at the counts
	// tried (kube-scheduler's least-allocated spread by default).
	Placement placement.Strategy
	// LocalScaleUp restricts scale-up to a job's own nodes.
	LocalScaleUp bool
	// NodeScaleUp grows jobs node by node, the article's literal loop
	// (ScaleUp.NodeMajor).
	NodeScaleUp bool
	// Order is the gang order of Workers.
	Order Order
}

// ElasticProfile is the elastic preset, the article's scheduler. Each
// cycle follows the article's last algorithm ("Scheduling Algorithm"):
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
// As plugins: the queue is in weight order (Weighted); at most one job
// starts per cycle (OnePerCycle); a job starts with a worker count
// between its minimum and its request (Workers, with o.Order: by default
// the largest count that fits one node, else the largest that fits
// spread), placed by the article's gang placement: all replicas on the
// first node in index order that holds them all, else o.Placement
// (Profile.Gang one-node-first with OneNodeFirstFit and o.Placement's
// scoring); h, when it does not fit, gets scale-down, and when that fails
// no other job starts (ScaleDown); scale-up runs after the queue unless
// the cycle started a job by step 2 (ScaleUp, o.LocalScaleUp). No plugin
// keeps state between cycles (scale-down's pendingRanks is a cache of the
// queue, read again from it after a restart), so the policy survives a
// scheduler restart unchanged. Each call makes its own cache: a profile
// value serves one Runtime.
func ElasticProfile(o ElasticOptions) framework.Profile {
	down := ScaleDown{ranks: &pendingRanks{}}
	return framework.Profile{
		Name:            "elastic",
		QueueSort:       Weighted{},
		Admit:           []framework.Admit{OnePerCycle{}, down},
		Size:            Workers{Order: o.Order},
		Filter:          []framework.Filter{framework.NodeRole{}},
		Score:           []framework.WeightedScore{{Score: framework.Strategy{S: o.Placement}, Weight: 1}},
		Gang:            placement.OneNodeFirst,
		OneNodeFirstFit: true,
		Preempt:         []framework.Preempt{down},
		Rebalance:       []framework.Rebalance{ScaleUp{Local: o.LocalScaleUp, NodeMajor: o.NodeScaleUp}},
	}
}

// NewElastic returns the elastic preset's runtime.
func NewElastic(o ElasticOptions) *framework.Runtime {
	return mustNew(ElasticProfile(o))
}

func mustNew(p framework.Profile) *framework.Runtime {
	r, err := scheduler.New(p)
	if err != nil {
		panic(err) // a fixed, valid profile
	}
	return r
}
