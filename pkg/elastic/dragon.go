package elastic

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// Plugin names.
const (
	FCFSName            = "fcfs"
	DragonPlaceName     = "dragon-place"
	DragonScaleDownName = "dragon-scale-down"
	DragonScaleUpName   = "dragon-scale-up"
)

// Defaults of DRAGON's timers (seconds).
const (
	DefaultStarveAfter  = 30
	DefaultScaleUpAfter = 60
)

// FCFS orders pending jobs by the time they entered the queue, earliest
// first (DRAGON's waiting queue); ties keep queue order.
type FCFS struct{}

var _ framework.QueueSort = FCFS{}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// order is the enqueue time, which does not change while a job waits.
func (FCFS) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (FCFS) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (FCFS) Name() string { return FCFSName }

// Compare implements framework.QueueSort.
func (FCFS) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	return cmp.Compare(a.Enqueued, b.Enqueued)
}

// DragonPlace is DRAGON's ScheduleJob as a Place plugin: the parameter
// servers (every group but the first) and then the workers of the counts
// asked for, all on the first node (in index order) that holds them all;
// failing that, nodes are filled one after the other starting from the
// node that can hold the most replicas of one group, moving to the next
// node at the first replica that does not fit. The job is placed when all
// its parameter servers and at least its minimum workers were, with as
// many workers as were placed.
//
// The zero value works; NewDragonPlace's keeps its failure statuses for
// reuse (the head of a long queue fails cycle after cycle).
type DragonPlace struct {
	// failed, when set, holds the statuses of the failures met so far;
	// nil makes a new status per failure.
	failed *failures
}

// failures are DragonPlace's statuses by failure, and the last one
// handed out (the head of a long queue fails the same way cycle after
// cycle: comparing with it costs less than hashing the failure).
type failures struct {
	m       map[placedTooFew]*framework.Status
	lastKey placedTooFew
	last    *framework.Status
	// memo counts the job's replicas (see countMemo).
	memo countMemo
}

// NewDragonPlace returns a DragonPlace that builds each failure status
// once. A status is not changed by its readers but for the plugin name
// (always this plugin's) and its reason formatted on first read, so
// handing the same one out again is the same as building it anew.
func NewDragonPlace() DragonPlace {
	return DragonPlace{failed: &failures{m: map[placedTooFew]*framework.Status{}}}
}

var _ framework.Place = DragonPlace{}

// Name implements framework.Plugin.
func (DragonPlace) Name() string { return DragonPlaceName }

// Events implements framework.EnqueueExtensions. For a job of one group
// ScheduleJob places, node after node, as many replicas as the room holds,
// so less room never places more: the queue's own check (does the job
// fit on the fresh ledger) decides. With parameter servers the fill is a
// heuristic whose outcome could in principle grow as room shrinks (the
// first node and the servers' nodes change), so such a job is never
// parked.
func (DragonPlace) Events(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if len(js.Job.Groups) == 1 {
		return 0
	}
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (DragonPlace) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Place implements framework.Place.
func (dp DragonPlace) Place(_ *framework.Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *framework.Status) {
	j := js.Job
	var rb [4]dragonReq
	var ob [4]int
	reqs, ok := rb[:0], ob[:0]
	if len(j.Groups) > len(rb) {
		reqs, ok = make([]dragonReq, 0, len(j.Groups)), make([]int, 0, len(j.Groups))
	}
	for g := 1; g < len(j.Groups); g++ {
		reqs = append(reqs, dragonReq{group: g, n: counts[g]})
	}
	reqs = append(reqs, dragonReq{group: 0, n: counts[0]})
	ok = ok[:len(reqs)]
	// Count first, and build the placement only when the job is placed:
	// the head of a long queue fails here cycle after cycle.
	if dp.failed != nil {
		dp.failed.memo.count(l, j, reqs, ok)
	} else {
		scheduleJob(l, j, reqs, ok, false)
	}
	for i, r := range reqs {
		need := r.n
		if r.group == 0 {
			need = j.Groups[0].Min
		}
		if ok[i] < need {
			return nil, dp.failure(placedTooFew{placed: ok[i], asked: r.n, need: need, group: j.Groups[r.group].Name})
		}
	}
	clear(ok)
	p := scheduleJob(l, j, reqs, ok, true)
	if !l.TakePlacement(j, p) {
		return nil, framework.NewStatus(framework.Unschedulable, "ScheduleJob's placement does not fit")
	}
	return p, nil
}

// failure returns Place's status for failure f: the one built before
// for the same f when dp keeps them.
func (dp DragonPlace) failure(f placedTooFew) *framework.Status {
	var st *framework.Status
	ok := false
	fs := dp.failed
	if fs != nil {
		if fs.last != nil && fs.lastKey == f {
			return fs.last
		}
		st, ok = fs.m[f]
	}
	if !ok {
		// A copy, so that f (taken by value) does not move to the heap
		// on every call, found or not.
		e := f
		st = framework.StatusOf(framework.Unschedulable, &e)
		if fs != nil {
			fs.m[f] = st
		}
	}
	if fs != nil {
		fs.lastKey, fs.last = f, st
	}
	return st
}

// placedTooFew is Place's failure, formatted only when the reason is
// read (for the head of the queue, scale-down's reason replaces it).
type placedTooFew struct {
	placed, asked, need int
	group               string
}

func (e *placedTooFew) Error() string {
	return fmt.Sprintf("ScheduleJob placed %d of %d %s replicas (need %d)", e.placed, e.asked, e.group, e.need)
}

// countMemo remembers scheduleJob's counts for one job and requests on
// one room: the starving head of a long queue is counted cycle after
// cycle on a cluster that did not change. The counts are a function of
// the nodes (the same NodeState each, as the simulator keeps them; the
// Kubernetes executor builds new ones every cycle, so there it never
// answers), their readiness and the ledger's free room, which it
// compares node by node.
type countMemo struct {
	job   *cluster.Job
	reqs  []dragonReq
	nodes []*cluster.NodeState
	up    []bool
	free  []resource.Vector
	ok    []int
}

// count is scheduleJob(l, j, reqs, ok, false), answered from m when l
// and the nodes are as they were.
func (m *countMemo) count(l *placement.Ledger, j *cluster.Job, reqs []dragonReq, ok []int) {
	s := l.Snapshot()
	if m.job == j && slices.Equal(m.reqs, reqs) && len(m.nodes) == len(s.Nodes) {
		same := true
		for i, n := range s.Nodes {
			if n != m.nodes[i] || (n.Ready && !n.Gone) != m.up[i] || l.Free(i) != m.free[i] {
				same = false
				break
			}
		}
		if same {
			copy(ok, m.ok)
			return
		}
	}
	scheduleJob(l, j, reqs, ok, false)
	m.job, m.reqs = j, append(m.reqs[:0], reqs...)
	m.nodes, m.up, m.free = m.nodes[:0], m.up[:0], m.free[:0]
	for i, n := range s.Nodes {
		m.nodes = append(m.nodes, n)
		m.up = append(m.up, n.Ready && !n.Gone)
		m.free = append(m.free, l.Free(i))
	}
	m.ok = append(m.ok[:0], ok...)
}

// dragonReq asks for n replicas of one group.
type dragonReq struct{ group, n int }

// dragonScheduleJob is DRAGON's ScheduleJob on a copy of the ledger's free
// resources: it returns a placement (possibly partial) and how many
// replicas of each request it placed. The ledger is not changed.
func dragonScheduleJob(l *placement.Ledger, j *cluster.Job, reqs []dragonReq) (cluster.Placement, []int) {
	ok := make([]int, len(reqs))
	return scheduleJob(l, j, reqs, ok, true), ok
}

// scheduleJob is dragonScheduleJob writing the counts placed into ok (one
// per request, zero on entry); it builds the placement only when build
// is set (a what-if that needs the counts only allocates nothing).
func scheduleJob(l *placement.Ledger, j *cluster.Job, reqs []dragonReq, ok []int, build bool) cluster.Placement {
	s := l.Snapshot()
	usable := func(i, g int) bool {
		n := s.Nodes[i]
		return n.Ready && !n.Gone && placement.Eligible(n, j, g)
	}
	var buf [8]int
	placed := buf[:0]
	if len(reqs) > len(buf) {
		placed = make([]int, 0, len(reqs))
	}
	placed = placed[:len(reqs)]
	maxSlot, maxNode := 0, -1
	for i := range s.Nodes {
		free := l.Free(i)
		clear(placed)
		one := true
	node:
		for ri, r := range reqs {
			d := j.Groups[r.group].Demand
			// usable depends on the node and the group only: tested
			// once, before the first replica, as the loop below did.
			if r.n > 0 && !usable(i, r.group) {
				one = false
				break node
			}
			for c := 0; c < r.n; c++ {
				if !d.Fits(free) {
					one = false
					break node
				}
				free = free.Sub(d)
				placed[ri]++
			}
		}
		if one {
			var p cluster.Placement
			if build {
				for _, r := range reqs {
					for c := 0; c < r.n; c++ {
						p = append(p, cluster.Assignment{Group: r.group, Node: i})
					}
				}
			}
			copy(ok, placed)
			return p
		}
		if m := slices.Max(placed); m > maxSlot {
			maxSlot, maxNode = m, i
		}
	}
	if maxSlot == 0 {
		return nil
	}
	// The node that holds the most replicas of one group first, then the
	// others in index order.
	var p cluster.Placement
	ri, c := 0, 0
	for k := -1; k < len(s.Nodes); k++ {
		i := k
		if k < 0 {
			i = maxNode
		} else if k == maxNode {
			continue
		}
		free := l.Free(i)
	fill:
		for ; ri < len(reqs); ri++ {
			r := reqs[ri]
			d := j.Groups[r.group].Demand
			if c < r.n && !usable(i, r.group) {
				break fill
			}
			for ; c < r.n; c++ {
				if !d.Fits(free) {
					break fill
				}
				free = free.Sub(d)
				if build {
					p = append(p, cluster.Assignment{Group: r.group, Node: i})
				}
				ok[ri]++
			}
			c = 0
		}
	}
	return p
}

// DragonScaleDown is DRAGON's phase 1. The head of the queue (earliest
// enqueued) is the high-priority job once it has waited StarveAfter
// seconds. As a Preempt plugin, for that job only: ScaleDown makes room
// for its minimum workers (not its parameter servers) by removing workers
// of running jobs in running order, each down to its minimum, testing
// with ScheduleJob before each removal; it succeeds with the Resizes (the
// Runtime then places the job again, and when it still does not fit the
// next jobs may use the room), or changes nothing. As an Admit plugin:
// once ScaleDown failed, no job starts this cycle. A cycle with a
// starving head counts as an action for DragonScaleUp's clock.
type DragonScaleDown struct {
	// StarveAfter is how long the head of the queue waits before it counts
	// as high priority (30 s).
	StarveAfter float64

	// cur is the state of the current cycle (under dragonKey), reset
	// when a cycle first asks for it; st are reasons kept across cycles.
	cur dragonCycle
	st  dragonStatuses
	// memo counts the starving head's minimum (see countMemo).
	memo countMemo
}

var (
	_ framework.Admit      = (*DragonScaleDown)(nil)
	_ framework.Preempt    = (*DragonScaleDown)(nil)
	_ framework.TimeDriven = (*DragonScaleDown)(nil)
)

// dragonCycle is phase 1's state in one cycle: the starving head, if any,
// and whether scale-down failed for it. DragonScaleUp reads hp.
type dragonCycle struct {
	hp, head *cluster.JobState
	failed   bool
}

// dragonStatuses are the reasons DragonScaleDown gives cycle after cycle
// while the same job starves, built once.
type dragonStatuses struct {
	// blocked: Admit's, for the jobs behind starving job hp.
	hp      *cluster.Job
	blocked *framework.Status
	// starved: Preempt's, when scale-down found no room for n workers.
	n       int
	starved *framework.Status
}

var dragonKey = framework.NewKey[*dragonCycle]("dragon-scale-down")

// Name implements framework.Plugin.
func (*DragonScaleDown) Name() string { return DragonScaleDownName }

// Events implements framework.EnqueueExtensions. The head of the queue
// (earliest enqueued) is never parked: it becomes the starving job with
// time, and the cycle's state (which DragonScaleUp reads) is made when it
// is admitted. Another job can only become the head when a job leaves the
// queue.
func (d *DragonScaleDown) Events(c *framework.Cycle, js *cluster.JobState) framework.Events {
	if js == nil || d.state(c).head == js { // starvation is a matter of time
		return framework.EventAlways
	}
	return framework.EventPending
}

// Requeue implements framework.EnqueueExtensions.
func (*DragonScaleDown) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool {
	return true
}

// TimeDriven implements framework.TimeDriven: starvation is a matter of
// time.
func (*DragonScaleDown) TimeDriven() bool { return true }

// state returns the cycle's phase-1 state, made when the cycle first asks.
func (d *DragonScaleDown) state(c *framework.Cycle) *dragonCycle {
	if st, ok := framework.Get(c, dragonKey); ok {
		return st
	}
	head, starving := starvingHead(c.Snap, d.StarveAfter)
	d.cur = dragonCycle{head: head}
	if starving {
		d.cur.hp = head
	}
	framework.Set(c, dragonKey, &d.cur)
	return &d.cur
}

// starvingHead returns the head of s's queue (the job enqueued earliest)
// and whether it has waited after seconds: DRAGON's starving job, which
// both phases read from the snapshot.
func starvingHead(s *cluster.Snapshot, after float64) (*cluster.JobState, bool) {
	head := earliest(s.Pending)
	return head, head != nil && s.Now-head.Enqueued >= after
}

// earliest returns the job of q enqueued earliest, the first in queue
// order among equals: q's head when q is in Enqueued order.
func earliest(q cluster.PendingQueue) *cluster.JobState {
	if q.InEnqueuedOrder() {
		return q.Head()
	}
	var head *cluster.JobState
	for js := range q.All() {
		if head == nil || js.Enqueued < head.Enqueued {
			head = js
		}
	}
	return head
}

// Admit implements framework.Admit.
func (d *DragonScaleDown) Admit(c *framework.Cycle, _ *cluster.JobState) *framework.Status {
	st := d.state(c)
	if !st.failed {
		return nil
	}
	if d.st.blocked == nil || d.st.hp != st.hp.Job {
		d.st.hp = st.hp.Job
		d.st.blocked = framework.NewStatus(framework.Blocked,
			"behind starving job "+st.hp.Job.ID+", which scale-down could not make room for")
	}
	return d.st.blocked
}

// Preempt implements framework.Preempt.
func (d *DragonScaleDown) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	st := d.state(c)
	if js != st.hp {
		// Not the job scale-down is for; the empty reason keeps the
		// placement's as the job's wait reason.
		return framework.NewStatus(framework.Unschedulable, "")
	}
	hp := js.Job
	req := []dragonReq{{group: 0, n: hp.Groups[0].Min}}
	l := c.St.Now()
	// ScheduleJob's answer is a function of the room on l: it is asked
	// again only after l changed (known is cleared when workers are given
	// back or removed).
	known, fit := false, false
	fits := func() bool {
		if !known {
			var ok [1]int
			d.memo.count(l, hp, req, ok[:])
			known, fit = true, ok[0] == req[0].n
		}
		return fit
	}
	// While l does not change, ScheduleJob's answer does not either: when
	// it fits now, the first job the loop below meets returns (or the
	// final test does) before any removal; when no running job may lose
	// a worker, nothing changes l and the answer is the final test's.
	if fits() {
		return nil
	}
	if d.shrinkable(c) {
		for _, q := range runningOrder(c.Snap) {
			if q.Phase != cluster.Running || c.St.Op(q) != framework.OpNone {
				continue
			}
			maxDelete := q.Placement.Count(0) - q.Job.Groups[0].Min
			if maxDelete <= 0 {
				// Nothing to remove: the loop below would test
				// ScheduleJob on l as it is (false) and stop.
				continue
			}
			keep, workers := shrinkOrder(q)
			// Give workers back one at a time on a fork of the ledger,
			// then record the removals as one Resize.
			l.Fork()
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
				known = false
				n++
			}
			l.Revert()
			if n > 0 {
				known = false
				c.St.Resize(q, append(slices.Clone(keep), workers[n:]...), "dragon scale-down for "+hp.ID)
			}
			if done {
				return nil
			}
		}
		if fits() {
			return nil
		}
	}
	st.failed = true
	if d.st.starved == nil || d.st.n != req[0].n {
		d.st.n = req[0].n
		d.st.starved = framework.NewStatus(framework.Unschedulable,
			"starving: running jobs at their minimum leave no room for "+strconv.Itoa(req[0].n)+" workers")
	}
	return d.st.starved
}

// shrinkable reports whether scale-down may remove a worker from some
// running job: one running, not acted on in this cycle, above its
// minimum.
func (d *DragonScaleDown) shrinkable(c *framework.Cycle) bool {
	for _, q := range c.Snap.Running {
		if q.Phase == cluster.Running && c.St.Op(q) == framework.OpNone && q.Placement.Count(0) > q.Job.Groups[0].Min {
			return true
		}
	}
	return false
}

// DragonScaleUp is DRAGON's phase 3, a Rebalance plugin: when nothing was
// done for ScaleUpAfter seconds (a start, or a starving head, which makes
// the controller run ScaleDown), running jobs get workers: nodes in index
// order, and on each node the running jobs in running order from where
// the previous node stopped, each given workers until it reaches its
// maximum or the node is full. It keeps the controller's clock (the time
// of the last action) across cycles.
type DragonScaleUp struct {
	// ScaleUpAfter is how long without an action before scale-up (60 s).
	ScaleUpAfter float64
	// StarveAfter is how long the head of the queue waits before it
	// starves (DragonScaleDown's, 30 s): a starving head counts as an
	// action. Scale-up reads it from the snapshot itself, not from
	// DragonScaleDown's cycle state, which exists only in cycles where the
	// queue asked DragonScaleDown about a job (a random profile with the
	// queue found the difference).
	StarveAfter float64

	started    bool
	lastAction float64

	// plans and added are Rebalance's buffers, one entry per running job.
	plans []cluster.Placement
	added []int
}

var (
	_ framework.Rebalance  = (*DragonScaleUp)(nil)
	_ framework.TimeDriven = (*DragonScaleUp)(nil)
)

// Name implements framework.Plugin.
func (*DragonScaleUp) Name() string { return DragonScaleUpName }

// TimeDriven implements framework.TimeDriven: the clock decides.
func (*DragonScaleUp) TimeDriven() bool { return true }

// Rebalance implements framework.Rebalance.
func (u *DragonScaleUp) Rebalance(c *framework.Cycle) *framework.Status {
	now := c.Snap.Now
	if !u.started {
		u.started, u.lastAction = true, now
	}
	if _, starving := starvingHead(c.Snap, u.StarveAfter); len(c.Started()) > 0 || starving {
		u.lastAction = now
	}
	if now-u.lastAction < u.ScaleUpAfter {
		return nil
	}
	u.lastAction = now
	s := c.Snap
	l := c.St.Now()
	running := runningOrder(s)
	// The plans go to Resize, the slices holding them are reused.
	u.plans = slices.Grow(u.plans[:0], len(running))[:len(running)]
	u.added = slices.Grow(u.added[:0], len(running))[:len(running)]
	plans, added := u.plans, u.added
	clear(plans)
	clear(added)
	l.Fork()
	i := 0
	for ni, n := range s.Nodes {
		if !n.Ready || n.Gone {
			continue
		}
		for ; i < len(running); i++ {
			q := running[i]
			if q.Phase != cluster.Running || c.St.Op(q) != framework.OpNone || !placement.Eligible(n, q.Job, 0) {
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
	l.Revert()
	for k, q := range running {
		if added[k] > 0 {
			c.St.Resize(q, plans[k], "dragon scale-up")
		}
	}
	return nil
}

// DragonProfile is the dragon preset with the controller's timers
// (starveAfter, scaleUpAfter): DRAGON's scheduling algorithm as its
// controller implements it (NTHU-LSALAB/DRAGON v0.9.1,
// pkg/controller.v1/DRAGON/scheduling, SchedulingAlgorithm, ScheduleJob,
// ScaleDown and ScaleUp), without its KubeShare GPU-sharing branch:
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
// As plugins: FCFS orders the queue; OnePerCycle admits one start;
// DragonPlace is ScheduleJob; DragonScaleDown is phase 1 (a Preempt plugin
// for the starving head, and an Admit plugin that holds every other job
// when it failed); DragonScaleUp is phase 3 with the controller's clock.
// Phase 1 runs in the controller before the head is placed; here it runs
// only when the head does not fit, which is the same: when the head's
// placement succeeds, its minimum workers fit and ScaleDown removes
// nothing.
//
// Where we had to choose: the controller iterates Go maps of nodes, whose
// order is random; we use node index order. Its ScaleUp recomputes a job's
// headroom from the job's placement before the cycle on every node, which
// can push a job past its maximum; we count the workers already added so
// the simulator does not refuse the resize. Jobs pausing for a rescale are
// skipped by ScaleDown and ScaleUp (the simulator cannot resize them), and
// so are jobs already resized in the cycle. The clock state (time of the
// last action) lives in the scale-up plugin, as it lives in the
// controller's process.
func DragonProfile(starveAfter, scaleUpAfter float64) framework.Profile {
	down := &DragonScaleDown{StarveAfter: starveAfter}
	return framework.Profile{
		Name:      "dragon",
		QueueSort: FCFS{},
		Admit:     []framework.Admit{OnePerCycle{}, down},
		Place:     NewDragonPlace(),
		Preempt:   []framework.Preempt{down},
		Rebalance: []framework.Rebalance{&DragonScaleUp{ScaleUpAfter: scaleUpAfter, StarveAfter: starveAfter}},
	}
}

// NewDragon returns the dragon preset's runtime with the controller's
// timers (30 s, 60 s).
func NewDragon() *framework.Runtime {
	return mustNew(DragonProfile(DefaultStarveAfter, DefaultScaleUpAfter))
}
