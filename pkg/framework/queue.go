package framework

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"sort"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// schedQueue is the Runtime's scheduling queue, kube-scheduler's
// unschedulable pods with QueueingHints: the pending jobs set aside
// ("parked") after they failed, and what it takes to tell when an event
// they wait for has happened. The Runtime has one only when every plugin
// of its profile is a Requeuer (see there for what parking means to a
// plugin).
//
// Why parking changes no decision. Placement is monotone in the room on
// the nodes: a job that does not fit in some room does not fit in less,
// node by node and resource by resource. A job is parked with the room it
// saw, folded into water, the per-node minimum over the parked jobs.
// Within a cycle the Now ledger only shrinks as jobs start, except when a
// Preempt plugin commits (evictions, shrinks); each cycle starts from the
// executor's free room, which exceeds water only after an event of
// EventRoom. While the room stays within water a parked job would fail
// again, and Requeuer's contract makes sure no plugin could tell that it
// was not tried. When a Preempt plugin gives room back within a cycle,
// the parked jobs the cycle has not passed yet are merged back into it,
// in queue-sort order.
//
// Classes. On the fast path (placement.Place alone decides), on the
// generic path when every Filter is uniform and gangs go on one node only,
// and with a Place plugin that is a ClassPlace (Runtime.classes), an attempt is a function of the room, the sizes
// tried and the groups' demands, names and node constraints (by Key);
// jobs alike in these form a class (kube-scheduler's equivalence
// classes). Once a job of a class failed in a cycle, the others would
// fail too until room comes back, so they are not placed again. When room
// comes back, a parked class is tried on the new room first (a dry run);
// if it fits, its members are "awake": they stay parked, and only the
// first of them in queue-sort order is a candidate; when it starts, the
// next one is; when one fails, the rest would too. A long queue of
// similar jobs thus costs a few attempts per cycle, not one per job.
type schedQueue struct {
	changeFn func(*cluster.JobState, bool) // q.change, made once
	parked   map[*cluster.Job]*parkedJob
	// water is, per node, the least room (per resource) any parked job
	// saw when it failed; meaningful while parked is not empty.
	water []resource.Vector
	// need is the union of the parked jobs' events; roomJobs counts the
	// parked jobs a plugin asked EventRoom for, and classless those
	// without a class: both come back whenever room does.
	need      Events
	evJobs    [8]int // per bit of Events, the parked jobs asking for it
	roomJobs  int
	classless int
	classes   map[string]*jobClass
	// cycle counts the Runtime's cycles; epoch also counts the commits of
	// Preempt plugins that gave room back (a class's failure holds within
	// an epoch).
	cycle, epoch uint64
	// fast: the profile's attempts form classes (Runtime.classes);
	// sampled: placement.Place samples nodes on this cluster (a failed
	// attempt may move its cursor); dryNow: a dry run on the Now ledger
	// leaves it as it was (not so for a ClassPlace plugin, whose
	// successful Place may move placement's cursor, which Revert keeps).
	fast, sampled, dryNow bool
	placeOpts             placement.Options
	scratch               placement.Ledger

	// The cluster as the previous cycle saw it, kept while a parked job
	// asks for the event.
	ready   []bool                     // EventNodes: ready and not gone, per node
	running map[*cluster.Job]runningFP // EventRunning
	// moved lists the running jobs new or changed at the last
	// runningChanged, kept while a parked job asks EventRunningHint.
	moved    []*cluster.JobState
	runStamp uint64
	lastRun  int
	pending  map[*cluster.Job]uint64 // EventPending: the cycle each was last seen
	penStamp uint64
	lastPend int
	// queue is the executor's queue of the previous cycle: while it is the
	// same object (the simulator's), jobs leave it only by this Runtime's
	// starts and rejections (departed: the previous cycle had some), and
	// when it holds only parked jobs a cycle need not walk it.
	queue    cluster.PendingQueue
	departed bool

	// The index (see follow): on the simulator's queue, which logs its
	// changes (cluster.QueueLog), a sorted profile keeps active, the
	// queued jobs that are not parked, so that a cycle visits them, the
	// awake classes' members and recheck, not the whole queue. idx:
	// active is valid as of the queue's mark; build: this cycle's walk
	// reads the whole queue and fills active.
	idx, build, built bool
	mark              uint64
	active            map[*cluster.JobState]struct{}
	// recheck lists the parked jobs a Wait was recorded for since the
	// last walk: the only parked jobs whose executor's reason may not be
	// the one they were parked with.
	recheck []*cluster.JobState
	byOrder []orderedJob
	keyed   []keyedPos
	// groupIDs numbers the GroupedKeys groups seen (generation groupGen),
	// so that a parked job's group is hashed once, not in every grouping;
	// groupAt/groupIdx map a group's number to its index in the class's
	// groups during grouping call groupCall.
	groupIDs            map[any]int
	groupGen, groupCall uint64
	groupAt             []uint64
	groupIdx            []int

	// Within a cycle. sorted: the profile has a QueueSort and the queue
	// is not in its order already (Cycle.inOrder: the walk is lazy);
	// mergeable: it also has Preempt plugins, the only way room comes
	// back mid-cycle.
	// skipped are the parked jobs met in the walk that may have to be
	// merged back (with the index, built by collect when first needed:
	// collected), pos the queue position of the jobs that may be
	// compared (with the index, the queue's Order: see posOf), awake the
	// classes woken this cycle.
	sorted, mergeable bool
	// lazy: the walk is lazy (Cycle.inOrder) and the profile has no
	// Preempt plugins (no room comes back mid-cycle): the index serves
	// it too (walkLazy).
	lazy      bool
	visits    []orderedJob
	ahead     []orderedJob
	cursors   []classCursor
	skipped   []*cluster.JobState
	collected bool
	// orderPos: the walk took the index (walkIndex), whose positions
	// are the queue's Order.
	orderPos bool
	pos      map[*cluster.JobState]int
	awake    []*jobClass
	// again: the awake classes end left parked although they fit on
	// the room after the cycle (see end and wakeAgain).
	again  []*jobClass
	merged bool
	// cur is the class of the job being tried (nil: none, or unsafe to
	// park: a job with several replicas on a sampled cluster).
	cur    *jobClass
	unsafe bool
	key    []byte
	// list holds the parked jobs (and some since unparked: gone tells),
	// for the walks over all of them that a map walks slowly.
	list []*parkedJob
	// skippers lists the parked jobs a Skipper asked RequeueSkip for
	// (and some since unparked: gone tells), in the walk's order (see
	// skipSorted); watchClassless counts the parked jobs without a class
	// that asked EventWatch.
	skippers       []*parkedJob
	watchClassless int
	// watchers: the profile has a Watcher or a Skipper.
	watchers bool
	// skipsDone: every skipper's turn in cycle skipsDone is accounted for.
	skipsDone uint64
	// skippers is in the walk's order while skipSorted (sorted under the
	// keys of generation skipGen, in cycle skipAt: see skipInOrder), so
	// that a flush finds its end by bisection; every skipper before
	// skippers[flushLo] had its turn accounted for in cycle flushAt.
	// skipGone counts the gone entries.
	skipSorted        bool
	skipGen, skipAt   uint64
	flushAt           uint64
	flushLo, skipGone int
	// memberKeys is rep's buffer for sorting an awake class by keys.
	memberKeys []keyedMember
	// watch's lists, reused.
	watchJobs  []*cluster.JobState
	watchCls   []*jobClass
	watchWoken []bool
}

// parkedJob is a parked job: the events it waits for, its wait reason,
// its class, the parts of its own state that, changed, bring it back, and
// within a cycle whether it is a candidate (a class's representative) or
// was passed by the cycle.
type parkedJob struct {
	js          *cluster.JobState
	reason      string
	class       *jobClass
	enqueued    float64
	preemptions int
	labels      int
	// pos is the job's queue Order when its class's jobs are in order.
	pos int
	// hinters: bit i is set when plugin i asked EventRunningHint; skips:
	// when plugin i asked RequeueSkip (a Skipper).
	hinters, skips uint64
	// flushed is the last cycle its turn was accounted for: it was tried,
	// or its Skippers were told (flushSkips).
	flushed uint64
	// key is its sort key under a StableKeys sort, kept so that the
	// members of an awake class are ordered without a lookup each (nil
	// until first needed; see keyOf).
	key *genKey
	// grouped: see groupedJob; nil until its class is grouped.
	grouped *groupedJob
	events  Events
	passed  bool
	inCands bool
	// gone: no longer parked (unparked, or parked again anew).
	gone bool
	// cycle is the cycle it was parked in.
	cycle uint64
}

// groupedJob is what a parked job of a GroupedKeys profile's awake class
// needs: its group, and its index in its class's members while they are
// grouped (apart from parkedJob, which the other profiles park by the
// million).
type groupedJob struct {
	group any
	slot  int
	// id is group's number in schedQueue.groupIDs of generation gen.
	id  int
	gen uint64
}

// jobClass is a class of jobs whose attempts are the same.
type jobClass struct {
	job *cluster.Job // a member, for dry runs
	// js is that member's state, for the generic path's dry run (uniform
	// filters read only its job's groups).
	js    *cluster.JobState
	sizes [][]int
	// jobs lists the parked members (and some that were since unparked:
	// gone tells); parked counts them. inOrder: with the index, jobs is
	// in queue order, by their pos, which are the queue's Order numbers
	// while it has been renumbered num times.
	jobs    []*parkedJob
	parked  int
	inOrder bool
	num     uint64
	// edits counts the changes of jobs' layout (compact, addMember):
	// a cursor over jobs (walkLazy) finds its place again after one.
	edits uint64
	// failed: the class failed in epoch failEpoch with status failSt, and
	// in cycle failCycle.
	failEpoch, failCycle uint64
	failSt               *Status
	// watch counts the parked members that asked EventWatch.
	watch int
	// awakeCycle: the class was woken in that cycle; members are the
	// parked members met in its walk, in queue order, sorted (by
	// QueueSort, ties in queue order) from next on when ordered.
	awakeCycle uint64
	members    []member
	next       int
	ordered    bool
	scans      int
	// groups: the members by GroupedKeys group, each in queue order, as
	// of groupCycle (see repGrouped).
	groups     []memberGroup
	groupCycle uint64
	// For a StableKeys sort: while keyed and not mixed, every parked
	// member's key is key under stamp keyStamp (see sameKeys).
	key          SortKey
	keyStamp     any
	keyed, mixed bool
}

// memberGroup is one group of an awake class's members, in queue order;
// those before head are taken or no longer parked.
type memberGroup struct {
	ms   []member
	head int
}

type orderedJob struct {
	js      *cluster.JobState
	pos     int
	recheck bool // walkLazy: listed from recheck
}

type member struct {
	js  *cluster.JobState
	p   *parkedJob
	pos int
}

type genKey struct {
	key SortKey
	gen uint64
}

// keyOf returns p's job's sort key under the profile's KeyedSort, from p
// while the Runtime's memo of StableKeys is the one it was noted under.
func (q *schedQueue) keyOf(c *Cycle, p *parkedJob) SortKey {
	r := c.rt
	sk, ok := r.p.QueueSort.(StableKeys)
	if !ok {
		k, _ := c.SortKey(p.js)
		return k
	}
	r.keyMemo(c, sk)
	if p.key != nil && p.key.gen == r.keyGen {
		return p.key.key
	}
	k, _ := c.SortKey(p.js)
	if p.key == nil {
		p.key = &genKey{}
	}
	p.key.key, p.key.gen = k, r.keyGen
	return k
}

type keyedMember struct {
	key SortKey
	m   member
}

type runningFP struct {
	phase    cluster.Phase
	replicas int
	seen     uint64
}

func newSchedQueue() *schedQueue {
	return &schedQueue{parked: map[*cluster.Job]*parkedJob{}, classes: map[string]*jobClass{}}
}

// begin starts a cycle on the fresh Now ledger: it brings back the parked
// jobs whose events happened since the previous cycle, and wakes the
// classes that fit in the room there is now.
func (q *schedQueue) begin(c *Cycle, r *Runtime) {
	q.cycle++
	q.epoch++
	s := c.Snap
	q.sorted = !c.inOrder
	q.mergeable = q.sorted && len(r.p.Preempt) > 0
	q.lazy = !q.sorted && len(r.p.Preempt) == 0
	q.fast = r.classes()
	q.placeOpts = r.opts
	q.sampled = r.p.Place == nil && r.fast && q.fast && len(s.Nodes) > 100 && !r.opts.ScoreAll && r.opts.Strategy != placement.FirstFit
	q.dryNow = q.fast && !q.sampled && r.p.Place == nil
	clear(q.skipped)
	q.skipped, q.awake, q.merged, q.collected, q.orderPos, q.cur = q.skipped[:0], q.awake[:0], false, false, false, nil
	clear(q.pos)
	q.follow(s, r.p.Window)
	again := q.again
	q.again = q.again[:0]
	if len(q.parked) == 0 {
		q.forget()
		return
	}
	happened := Events(0)
	if q.roomAbove(c.St.Now(), len(s.Nodes)) {
		happened |= EventRoom
	}
	if q.need&EventNodes != 0 && q.nodesChanged(s) {
		happened |= EventNodes
	}
	if q.need&(EventRunning|EventRunningHint) != 0 && q.runningChanged(s) {
		happened |= EventRunning
	}
	if q.need&EventPending != 0 && q.pendingChanged(s, false) {
		happened |= EventPending
	}

	if happened&EventRoom != 0 && q.classless == len(q.parked) {
		q.unparkAll()
		return
	}
	if happened != 0 {
		// Jobs a plugin waits on an event for (or, for room, classless
		// ones and those a plugin asked room for) come back; classes are
		// tried on the new room.
		wake := happened &^ EventRoom
		hint := happened&EventRunning != 0 && q.need&EventRunningHint != 0 && len(q.moved) > 0
		if happened&EventRoom != 0 && (q.roomJobs > 0 || q.classless > 0) || wake&q.need != 0 || hint {
			for _, p := range q.list {
				if p.gone {
					continue
				}
				if p.events&wake != 0 || happened&EventRoom != 0 && (p.class == nil || p.events&EventRoom != 0) ||
					hint && p.hinters != 0 && q.hinted(c, r.hinters, p.js.Job, p.hinters) {
					q.unpark(p.js.Job, p)
				}
			}
		}
		if happened&EventRoom != 0 {
			q.wakeClasses(c, r)
		}
	}
	if q.need&EventWatch != 0 {
		q.watch(c, r)
	}
	if happened != 0 {
		// The union of the parked jobs' events, from their counts.
		q.need = 0
		for b, n := range q.evJobs {
			if n > 0 {
				q.need |= 1 << b
			}
		}
	}
	q.wakeAgain(c, again)
	for _, pl := range r.plugins {
		if rc, ok := pl.(Recaller); ok {
			if js := rc.Recall(c); js != nil {
				if p, ok := q.parked[js.Job]; ok {
					q.unpark(js.Job, p)
				}
			}
		}
	}
	if len(q.parked) == 0 {
		q.forget()
		return
	}
	if len(q.parked) > 2*s.Pending.Len()+64 {
		q.sweep(s) // jobs that left the queue while parked
	}
}

// wakeClasses tries each parked class on the room there is now (on a
// scratch ledger: a dry run must not move placement's cursor); the classes
// that fit are awake this cycle. Every parked job is then known to fail
// in the room there is now, or is in an awake class, so water becomes that
// room.
func (q *schedQueue) wakeClasses(c *Cycle, r *Runtime) {
	s := c.Snap
	q.scratch.Reset(s, true)
	for k, cl := range q.classes {
		if cl.parked == 0 {
			delete(q.classes, k)
			continue
		}
		if q.fits(c, &q.scratch, cl) {
			cl.awakeCycle = q.cycle
			cl.members, cl.next, cl.ordered, cl.scans = cl.members[:0], 0, false, 0
			q.awake = append(q.awake, cl)
		}
	}
	l := c.St.Now()
	q.water = q.water[:0]
	for i := range s.Nodes {
		q.water = append(q.water, l.Free(i))
	}
}

// watch asks the profile's Watchers about the classes with a member that
// asked EventWatch, and about such jobs without a class (see Watcher):
// the classes they name are woken, the jobs unparked.
func (q *schedQueue) watch(c *Cycle, r *Runtime) {
	jobs, cls := q.watchJobs[:0], q.watchCls[:0]
	for _, cl := range q.classes {
		if cl.watch > 0 && cl.awakeCycle != q.cycle {
			jobs, cls = append(jobs, cl.js), append(cls, cl)
		}
	}
	nc := len(jobs)
	if q.watchClassless > 0 {
		for _, p := range q.list {
			if !p.gone && p.class == nil && p.events&EventWatch != 0 {
				jobs = append(jobs, p.js)
			}
		}
	}
	woken := slices.Grow(q.watchWoken[:0], len(jobs))[:len(jobs)]
	clear(woken)
	if len(jobs) > 0 {
		for _, pl := range r.requeuers {
			if w, ok := pl.(Watcher); ok {
				w.Woken(c, jobs, woken)
			}
		}
	}
	for i, ok := range woken {
		switch {
		case !ok:
		case i < nc:
			cl := cls[i]
			cl.awakeCycle = q.cycle
			cl.members, cl.next, cl.ordered, cl.scans = cl.members[:0], 0, false, 0
			q.awake = append(q.awake, cl)
		default:
			if p := q.parked[jobs[i].Job]; p != nil {
				q.unpark(jobs[i].Job, p)
			}
		}
	}
	clear(jobs)
	clear(cls)
	q.watchJobs, q.watchCls, q.watchWoken = jobs[:0], cls[:0], woken[:0]
}

// wakeAgain wakes the classes end left parked (again) that fit on the
// room there is now, and unparks the members of those that do not, as
// end did before: end would have unparked them all, and each would then
// have been a candidate of this cycle. Woken, the class is what it would
// be had room come back (wakeClasses): its first member in queue-sort
// order is a candidate, and when it fails the members met and not tried
// get its reason (end), as each member would have failed with the
// class's status and been parked again. The classes that do not fit are
// unparked rather than kept parked, so each member records its own
// failure (reason, events) as before.
func (q *schedQueue) wakeAgain(c *Cycle, again []*jobClass) {
	reset := false
	for _, cl := range again {
		if cl.parked == 0 || cl.awakeCycle == q.cycle {
			continue // woken by wakeClasses, or no member left
		}
		if !reset {
			q.scratch.Reset(c.Snap, true)
			reset = true
		}
		if q.fits(c, &q.scratch, cl) {
			cl.awakeCycle = q.cycle
			cl.members, cl.next, cl.ordered, cl.scans = cl.members[:0], 0, false, 0
			q.awake = append(q.awake, cl)
			continue
		}
		q.unparkClass(cl)
	}
	clear(again)
}

// unparkClass unparks every parked member of cl.
func (q *schedQueue) unparkClass(cl *jobClass) {
	for _, p := range cl.jobs {
		if !p.gone {
			q.unpark(p.js.Job, p)
		}
	}
	clear(cl.jobs)
	cl.jobs = cl.jobs[:0]
}

// fits reports whether class cl fits on l at one of its sizes (l is left
// as it was).
func (q *schedQueue) fits(c *Cycle, l *placement.Ledger, cl *jobClass) bool {
	for _, counts := range cl.sizes {
		if pp := c.rt.p.Place; pp != nil {
			// A ClassPlace plugin (Runtime.classes): Place has no effect
			// but on l, which Revert restores (its room).
			l.Fork()
			_, st := pp.Place(c, l, cl.js, counts)
			l.Revert()
			if st.IsSuccess() {
				return true
			}
			continue
		}
		if !c.rt.fast {
			if c.rt.feasible(c, l, cl.js, counts) {
				return true
			}
			continue
		}
		l.Fork()
		_, err := placement.Place(l, cl.job, counts, q.placeOpts)
		l.Revert()
		if err == nil {
			return true
		}
	}
	return false
}

// roomAbove reports whether some of the first n nodes has more room on l,
// in some resource, than water.
func (q *schedQueue) roomAbove(l *placement.Ledger, n int) bool {
	for i := range n {
		f := l.Free(i)
		if i >= len(q.water) {
			if !f.IsZero() {
				return true
			}
			continue
		}
		w := &q.water[i]
		for k := range f {
			if f[k] > w[k] {
				return true
			}
		}
	}
	return false
}

// hinted reports whether a plugin of mask (bits over plugins) says that
// a running job moved since the previous cycle may change its answer for
// j.
func (q *schedQueue) hinted(c *Cycle, plugins []RunningHinter, j *cluster.Job, mask uint64) bool {
	for _, r := range q.moved {
		for m := mask; m != 0; m &= m - 1 {
			if plugins[bits.TrailingZeros64(m)].RunningHint(c, j, r) {
				return true
			}
		}
	}
	return false
}

func (q *schedQueue) unpark(j *cluster.Job, p *parkedJob) {
	delete(q.parked, j)
	p.gone = true
	if p.skips != 0 {
		q.skipGone++
	}
	if (q.idx || q.build) && q.queue.Contains(p.js) {
		q.active[p.js] = struct{}{}
	}
	if p.class != nil {
		p.class.parked--
		if p.events&EventWatch != 0 {
			p.class.watch--
		}
	} else {
		q.classless--
		if p.events&EventWatch != 0 {
			q.watchClassless--
		}
	}
	if p.events&EventRoom != 0 {
		q.roomJobs--
	}
	q.countEvents(p.events, -1)
}

// skipsTurns reports whether this cycle's walk can tell the turns of the
// jobs it does not try (see Skipper): on the simulator's queue, which
// keeps its jobs and their order numbers from cycle to cycle, in a
// profile without a window (the jobs past it have no turn), whose order
// does not change within a cycle (Resort), and without the panic guard.
func (q *schedQueue) skipsTurns(c *Cycle) bool {
	r := c.rt
	_, logged := c.Snap.Pending.(cluster.QueueLog)
	return logged && r.p.Window == 0 && !r.resorts && r.guard == nil
}

// trying is told that js is about to be tried: if it is parked for a
// Skipper, its attempt takes the place of Skip in this cycle.
func (q *schedQueue) trying(js *cluster.JobState) {
	if p := q.parked[js.Job]; p != nil {
		p.flushed = q.cycle
	}
}

// flushSkips calls Skip for every job parked for a Skipper whose turn in
// this cycle's walk came before x's (every one whose turn came, for x
// nil), unless its turn was accounted for already: x is about to be
// offered to the Preempt plugins, or the walk ended (at c.stop, or with
// every job). A job's turn is its place in the walk's order, the
// QueueSort's with ties in queue order (walkOrder); jobs started, rejected
// or tried in this cycle had theirs. skippers is kept in that order, so
// the jobs before x are a prefix, found by bisection, of which the part
// before flushLo was accounted for already in this cycle. Skips made
// between two commits see one Statement, so their order among themselves
// does not matter (Skipper).
func (q *schedQueue) flushSkips(c *Cycle, x *cluster.JobState) {
	if q.skipsDone == q.cycle {
		return
	}
	q.skipOrder(c)
	if q.flushAt != q.cycle {
		q.flushAt, q.flushLo = q.cycle, 0
	}
	hi := len(q.skippers)
	if x != nil {
		px := q.parked[x.Job]
		hi = sort.Search(len(q.skippers), func(i int) bool {
			return q.walkOrder(c, q.skippers[i].js, q.skippers[i], x, px) > 0
		})
	}
	for i := q.flushLo; i < hi; i++ {
		p := q.skippers[i]
		if p.flushed == q.cycle || c.St.Op(p.js) != OpNone {
			continue
		}
		p.flushed = q.cycle
		for m := p.skips; m != 0; m &= m - 1 {
			c.rt.requeuers[bits.TrailingZeros64(m)].(Skipper).Skip(c, p.js)
		}
	}
	q.flushLo = max(q.flushLo, hi)
	if hi == len(q.skippers) {
		q.skipsDone = q.cycle
	}
}

// skipOrder puts skippers in the walk's order when it is not: after a
// skipper was added out of place, when keys were made anew (a StableKeys
// sort's stamp changed), and, for a QueueSort whose order is only known
// to hold within a cycle (no Resort: skipsTurns), in each new cycle. The
// gone entries are dropped first, so every entry's job is queued (on the
// simulator's queue, a job that leaves it is unparked).
func (q *schedQueue) skipOrder(c *Cycle) {
	if q.skipGone > 0 {
		q.compactSkippers()
	}
	if !q.skipInOrder(c) {
		slices.SortFunc(q.skippers, func(a, b *parkedJob) int { return q.walkOrder(c, a.js, a, b.js, b) })
		q.skipSorted, q.skipGen, q.skipAt, q.flushLo = true, c.rt.keyGen, q.cycle, 0
	}
}

// skipInOrder reports whether skippers is still in the walk's order: it
// was sorted and, for a StableKeys sort, under the keys of this memo
// (queue Order numbers keep the jobs' relative order from cycle to cycle),
// with no QueueSort ever, and with another sort in this cycle.
func (q *schedQueue) skipInOrder(c *Cycle) bool {
	if !q.skipSorted {
		return false
	}
	switch qs := c.rt.p.QueueSort.(type) {
	case nil:
		return true
	case StableKeys:
		c.rt.keyMemo(c, qs)
		return q.skipGen == c.rt.keyGen
	}
	return q.skipAt == q.cycle
}

// walkOrder compares two queued jobs in the walk's order: the QueueSort's
// (by key for a KeyedSort), then queue Order (pa, pb: their parked
// records, for the keys kept there, or nil).
func (q *schedQueue) walkOrder(c *Cycle, a *cluster.JobState, pa *parkedJob, b *cluster.JobState, pb *parkedJob) int {
	key := func(js *cluster.JobState, p *parkedJob) SortKey {
		if p != nil {
			return q.keyOf(c, p)
		}
		k, _ := c.SortKey(js)
		return k
	}
	k := 0
	switch qs := c.rt.p.QueueSort.(type) {
	case KeyedSort:
		k = CompareKeys(key(a, pa), key(b, pb))
	case nil:
	default:
		k = qs.Compare(c, a, b)
	}
	if k != 0 {
		return k
	}
	pq := c.Snap.Pending
	ia, _ := pq.Order(a)
	ib, _ := pq.Order(b)
	return cmp.Compare(ia, ib)
}

// compactSkippers drops the gone entries, keeping the order.
func (q *schedQueue) compactSkippers() {
	q.skippers, q.skipGone, q.flushLo = dropGone(q.skippers), 0, 0
}

// addSkipper adds p, just parked for a Skipper, to skippers: in its place
// while they are in the walk's order.
func (q *schedQueue) addSkipper(c *Cycle, p *parkedJob) {
	if q.skipGone > 0 {
		q.compactSkippers()
	}
	if q.skipInOrder(c) {
		i := sort.Search(len(q.skippers), func(i int) bool {
			return q.walkOrder(c, q.skippers[i].js, q.skippers[i], p.js, p) > 0
		})
		q.skippers = slices.Insert(q.skippers, i, p)
		return
	}
	q.skippers = append(q.skippers, p)
	q.skipSorted = false
}

// countEvents adds d to the count of parked jobs of each event in ev.
func (q *schedQueue) countEvents(ev Events, d int) {
	for b := 0; ev != 0; b, ev = b+1, ev>>1 {
		if ev&1 != 0 {
			q.evJobs[b] += d
		}
	}
}

func (q *schedQueue) unparkAll() {
	if q.idx {
		// Every queued job is active now: read the queue again.
		q.idx, q.build = false, true
		clear(q.active)
	}
	for _, p := range q.parked {
		p.gone = true
	}
	clear(q.parked)
	clear(q.list)
	clear(q.skippers)
	q.list, q.skippers, q.skipGone, q.flushLo = q.list[:0], q.skippers[:0], 0, 0
	clear(q.classes)
	q.evJobs = [8]int{}
	q.forget()
}

// forget drops the water and the event tracking (nothing is parked).
func (q *schedQueue) forget() {
	q.need, q.roomJobs, q.classless, q.watchClassless = 0, 0, 0, 0
	q.water = q.water[:0]
	q.ready = q.ready[:0]
	q.running, q.pending, q.moved = nil, nil, q.moved[:0]
}

// sweep drops the parked jobs that left the queue (a job deleted while
// pending, on Kubernetes).
func (q *schedQueue) sweep(s *cluster.Snapshot) {
	keep := make(map[*cluster.Job]bool, len(q.parked))
	for js := range s.Pending.All() {
		if _, ok := q.parked[js.Job]; ok {
			keep[js.Job] = true
		}
	}
	for j, p := range q.parked {
		if !keep[j] {
			q.unpark(j, p)
		}
	}
}

// skip is asked for each job of the walk, at queue position pos: whether
// it is not a candidate this cycle because it is parked. A parked job
// comes back when its own state changed (a new spec is a new *Job, never
// parked). A member of an awake class is a candidate on the lazy path
// until its class fails; on the sorted path it is collected for its class
// (see reps). A parked job skipped keeps its reason: a Wait is recorded
// only when the executor shows another.
func (q *schedQueue) skip(c *Cycle, js *cluster.JobState, pos int) bool {
	if len(q.parked) == 0 || q.merged {
		return false
	}
	p, ok := q.parked[js.Job]
	if !ok {
		if q.sorted && (q.mergeable || len(q.awake) > 0) {
			q.setPos(js, pos)
		}
		return false
	}
	if p.enqueued != js.Enqueued || p.preemptions != js.Preemptions || p.labels != len(js.Labels) {
		q.unpark(js.Job, p)
		if q.sorted && (q.mergeable || len(q.awake) > 0) {
			q.setPos(js, pos)
		}
		return false
	}
	p.passed, p.inCands = false, false
	if cl := p.class; cl != nil && cl.awakeCycle == q.cycle && cl.failEpoch != q.epoch {
		if !q.sorted {
			return false
		}
		q.setPos(js, pos)
		cl.members = append(cl.members, member{js: js, p: p, pos: pos})
		q.skipped = append(q.skipped, js)
		return true
	}
	c.St.wait(js, p.reason)
	if q.mergeable {
		q.setPos(js, pos)
		q.skipped = append(q.skipped, js)
	}
	return true
}

func (q *schedQueue) setPos(js *cluster.JobState, pos int) {
	if q.orderPos {
		return // posOf reads the queue's Order
	}
	if q.pos == nil {
		q.pos = map[*cluster.JobState]int{}
	}
	q.pos[js] = pos
}

// failed is told that js was tried in this cycle and could not start, and
// that its Wait with reason was recorded. It parks js unless a plugin
// asks for it every cycle.
func (q *schedQueue) failed(c *Cycle, js *cluster.JobState, plugins []Requeuer, reason string) {
	cl := q.cur
	if q.unsafe {
		return
	}
	ev := Events(0)
	var hinters, skips uint64
	for i, pl := range plugins {
		e := pl.Requeue(c, js)
		if e&RequeueAlways != 0 {
			return
		}
		if e&EventWatch != 0 {
			if _, ok := pl.(Watcher); !ok {
				return
			}
		}
		if e&RequeueSkip != 0 {
			if _, ok := pl.(Skipper); !ok || i >= 64 || !q.skipsTurns(c) {
				return
			}
			skips |= 1 << i
		}
		if e&EventRunningHint != 0 {
			if _, ok := pl.(RunningHinter); ok && i < 64 {
				hinters |= 1 << i
			} else {
				e = e&^EventRunningHint | EventRunning
			}
		}
		ev |= e
	}
	if ev&EventRunning != 0 {
		// Every change brings js back anyway.
		ev, hinters = ev&^EventRunningHint, 0
	}
	s := c.Snap
	fresh := len(q.parked) == 0
	if fresh {
		q.forget()
	}
	// Fold the room js saw into water. A node added since the first job
	// was parked had nothing for that job.
	l := c.St.Now()
	for i := len(q.water); i < len(s.Nodes); i++ {
		if fresh {
			q.water = append(q.water, l.Free(i))
		} else {
			q.water = append(q.water, resource.Vector{})
		}
	}
	for i := range s.Nodes {
		q.water[i] = q.water[i].Min(l.Free(i))
	}
	if old, ok := q.parked[js.Job]; ok {
		q.unpark(js.Job, old)
	}
	delete(q.active, js)
	added := ev &^ q.need
	trackRunning := ev&(EventRunning|EventRunningHint) != 0 && q.need&(EventRunning|EventRunningHint) == 0
	q.need |= ev
	p := &parkedJob{js: js, events: ev, hinters: hinters, skips: skips, reason: reason, class: cl, enqueued: js.Enqueued, preemptions: js.Preemptions,
		labels: len(js.Labels), passed: true, cycle: q.cycle, flushed: q.cycle}
	q.parked[js.Job] = p
	if len(q.list) > 2*len(q.parked)+64 {
		q.list = dropGone(q.list)
	}
	q.list = append(q.list, p)
	if skips != 0 {
		q.addSkipper(c, p)
	}
	if cl != nil {
		cl.parked++
		if ev&EventWatch != 0 {
			cl.watch++
		}
		if len(cl.jobs) > 2*cl.parked+16 {
			cl.compact()
		}
		q.addMember(c, cl, p)
		cl.noteKey(c, js)
	} else {
		q.classless++
		if ev&EventWatch != 0 {
			q.watchClassless++
		}
	}
	if ev&EventRoom != 0 {
		q.roomJobs++
	}
	q.countEvents(ev, 1)
	// Track a newly needed event from the cluster as this cycle found it.
	if added&EventNodes != 0 {
		q.nodesChanged(s)
	}
	if trackRunning {
		q.running = nil
		q.runningChanged(s)
	}
	if added&EventPending != 0 {
		q.pending = nil
		q.pendingChanged(s, true)
	}
}

// compact drops the members no longer parked from cl.jobs.
func (cl *jobClass) compact() {
	cl.edits++
	cl.jobs = dropGone(cl.jobs)
}

// dropGone removes, in place and in order, the jobs no longer parked.
func dropGone(ps []*parkedJob) []*parkedJob {
	live := ps[:0]
	for _, p := range ps {
		if !p.gone {
			live = append(live, p)
		}
	}
	clear(ps[len(live):])
	return live
}

// addMember adds p to its class cl's jobs. With the index, which reads
// them in queue order, it keeps them in that order while it can.
func (q *schedQueue) addMember(c *Cycle, cl *jobClass, p *parkedJob) {
	cl.edits++
	ql, ok := c.Snap.Pending.(cluster.QueueLog)
	if !ok || !q.idx && !q.build {
		cl.inOrder = false
		cl.jobs = append(cl.jobs, p)
		return
	}
	if len(cl.jobs) == 0 {
		cl.inOrder, cl.num = true, ql.Renumbered()
	}
	pos, queued := c.Snap.Pending.Order(p.js)
	if !cl.inOrder || cl.num != ql.Renumbered() || !queued {
		cl.inOrder = false // order sorts them when needed
		cl.jobs = append(cl.jobs, p)
		return
	}
	// Every entry, gone or not, got its pos under the same numbering, in
	// which no number is given twice.
	p.pos = pos
	i, _ := slices.BinarySearchFunc(cl.jobs, pos, func(e *parkedJob, pos int) int { return cmp.Compare(e.pos, pos) })
	cl.jobs = slices.Insert(cl.jobs, i, p)
}

// noteKey keeps track, for a StableKeys sort, of whether all of cl's
// parked members have one key (js just joined them): a StableKeys key is
// a function of the job and the stamp, so it holds while the stamp does.
func (cl *jobClass) noteKey(c *Cycle, js *cluster.JobState) {
	if _, ok := c.rt.p.QueueSort.(StableKeys); !ok {
		return
	}
	k, _ := c.SortKey(js) // checks the stamp: c.rt.keyStamp is this cycle's
	switch {
	case cl.parked == 1:
		cl.key, cl.keyStamp, cl.keyed, cl.mixed = k, c.rt.keyStamp, true, false
	case !cl.keyed || cl.mixed || cl.keyStamp != c.rt.keyStamp || CompareKeys(k, cl.key) != 0:
		cl.mixed = true
	}
}

// sameKeys reports whether every parked member of cl has the same key
// under the profile's StableKeys sort in this cycle (see noteKey).
func (cl *jobClass) sameKeys(c *Cycle) bool {
	sk, ok := c.rt.p.QueueSort.(StableKeys)
	if !ok || !cl.keyed || cl.mixed {
		return false
	}
	c.rt.keyMemo(c, sk) // the stamp of this cycle
	return cl.keyStamp == c.rt.keyStamp
}

// tried is told that js, a candidate, was tried: a parked job (a class's
// representative, or a member on the lazy path) that started is
// unparked. It returns the awake class whose next member is now to be a
// candidate, if any.
func (q *schedQueue) tried(c *Cycle, js *cluster.JobState) *jobClass {
	p, ok := q.parked[js.Job]
	if !ok || p.passed {
		return nil // not parked, or parked again by failed
	}
	q.unpark(js.Job, p)
	if op := c.St.Op(js); (op == OpStart || op == OpNominate) && q.sorted {
		// It started, or a Preempt plugin held room for it: the next
		// member may too.
		if cl := p.class; cl != nil && cl.awakeCycle == q.cycle && cl.failEpoch != q.epoch {
			return cl
		}
	}
	return nil
}

// rep returns the first member of awake class cl, in queue-sort order,
// that is still parked and not a candidate yet, or nil. It scans the
// members not yet taken for the least; the second time in a row without
// a Resort in between (see unorder) it sorts them once and moves along.
func (q *schedQueue) rep(c *Cycle, qs QueueSort, cl *jobClass) *cluster.JobState {
	live := func(m member) bool {
		return !m.p.gone && !m.p.inCands && !m.p.passed
	}
	if gk, ok := qs.(GroupedKeys); ok {
		return q.repGrouped(c, gk, cl)
	}
	order := func(a, b member) int { return cmp.Or(qs.Compare(c, a.js, b.js), cmp.Compare(a.pos, b.pos)) }
	if !cl.ordered && cl.scans >= 2 {
		if _, keyed := qs.(KeyedSort); keyed {
			// By each member's key, fetched once (keys order as Compare
			// does), not a Compare per comparison.
			km := q.memberKeys[:0]
			for _, m := range cl.members[cl.next:] {
				km = append(km, keyedMember{key: q.keyOf(c, m.p), m: m})
			}
			slices.SortFunc(km, func(a, b keyedMember) int {
				return cmp.Or(CompareKeys(a.key, b.key), cmp.Compare(a.m.pos, b.m.pos))
			})
			for i, k := range km {
				cl.members[cl.next+i] = k.m
			}
			clear(km)
			q.memberKeys = km[:0]
		} else {
			slices.SortFunc(cl.members[cl.next:], order)
		}
		cl.ordered = true
	}
	if !cl.ordered {
		cl.scans++
		best := -1
		if _, keyed := qs.(KeyedSort); keyed && cl.sameKeys(c) {
			// Every member has one key: the least is the first live
			// member in queue order. Members are collected in queue
			// order, and the swap below leaves the live ones from
			// next on in that order (it moves a member that is not
			// live to best's slot), as does the sort (by equal keys,
			// then queue order).
			for i := cl.next; i < len(cl.members); i++ {
				if live(cl.members[i]) {
					best = i
					break
				}
			}
		} else if _, keyed := qs.(KeyedSort); keyed {
			// qs is the profile's QueueSort, whose keys c.SortKey gives:
			// each member's key once (KeyedSort's contract: keys order
			// as Compare does), not a Compare per member and best.
			var bk SortKey
			for i := cl.next; i < len(cl.members); i++ {
				m := cl.members[i]
				if !live(m) {
					continue
				}
				k := q.keyOf(c, m.p)
				if best < 0 || cmp.Or(CompareKeys(k, bk), cmp.Compare(m.pos, cl.members[best].pos)) < 0 {
					best, bk = i, k
				}
			}
		} else {
			// The scan also learns whether the live members are all equal
			// in the sort and in queue order (a priority sort on a queue
			// of one priority): then they are in sort order already, as
			// with one key above, and the next members are taken in turn
			// without a scan.
			allEq, inc, last := true, true, -1
			for i := cl.next; i < len(cl.members); i++ {
				m := cl.members[i]
				if !live(m) {
					continue
				}
				inc = inc && m.pos > last
				last = m.pos
				if best < 0 {
					best = i
					continue
				}
				b := cl.members[best]
				o := qs.Compare(c, m.js, b.js)
				allEq = allEq && o == 0
				if o < 0 || o == 0 && m.pos < b.pos {
					best = i
				}
			}
			if best >= 0 && allEq && inc {
				cl.ordered = true
			}
		}
		if best < 0 {
			return nil
		}
		cl.members[cl.next], cl.members[best] = cl.members[best], cl.members[cl.next]
		cl.next++
		return cl.members[cl.next-1].js
	}
	for ; cl.next < len(cl.members); cl.next++ {
		if m := cl.members[cl.next]; live(m) {
			return m.js
		}
	}
	return nil
}

// repGrouped is rep for a GroupedKeys sort: the least member is the
// least of the groups' first members still parked and not taken (in a
// group, keys order members by queue position, as members are ordered;
// a member taken or unparked stays so for the cycle), one key per group.
// It takes the member as rep's scan does (swapped to next), so that the
// members end in the same order.
func (q *schedQueue) repGrouped(c *Cycle, gk GroupedKeys, cl *jobClass) *cluster.JobState {
	if cl.groupCycle != q.cycle {
		q.group(gk, cl)
	}
	best := -1
	var bk SortKey
	var bm member
	for gi := range cl.groups {
		g := &cl.groups[gi]
		for g.head < len(g.ms) && (g.ms[g.head].p.gone || g.ms[g.head].p.inCands || g.ms[g.head].p.passed) {
			g.head++
		}
		if g.head == len(g.ms) {
			continue
		}
		m := g.ms[g.head]
		k, _ := c.SortKey(m.js)
		if best < 0 || cmp.Or(CompareKeys(k, bk), cmp.Compare(m.pos, bm.pos)) < 0 {
			best, bk, bm = m.p.grouped.slot, k, m
		}
	}
	if best < 0 {
		return nil
	}
	n := cl.next
	cl.members[n], cl.members[best] = cl.members[best], cl.members[n]
	cl.members[n].p.grouped.slot, cl.members[best].p.grouped.slot = n, best
	cl.next++
	return bm.js
}

// group sorts cl's members (in queue order, none taken yet) into their
// groups.
func (q *schedQueue) group(gk GroupedKeys, cl *jobClass) {
	cl.groupCycle = q.cycle
	for i := range cl.groups {
		clear(cl.groups[i].ms)
		cl.groups[i].ms, cl.groups[i].head = cl.groups[i].ms[:0], 0
	}
	// The numbering starts anew (a new generation) only here, between
	// groupings, when it has grown large (groups of jobs long gone).
	if q.groupIDs == nil || len(q.groupIDs) > 1<<16 {
		q.groupIDs, q.groupGen = map[any]int{}, q.groupGen+1
		q.groupAt, q.groupIdx = q.groupAt[:0], q.groupIdx[:0]
	}
	q.groupCall++
	n := 0
	for i := cl.next; i < len(cl.members); i++ {
		m := cl.members[i]
		p := m.p
		if p.grouped == nil {
			p.grouped = &groupedJob{group: gk.Group(m.js)}
		}
		g := p.grouped
		g.slot = i
		if g.gen != q.groupGen {
			id, ok := q.groupIDs[g.group]
			if !ok {
				id = len(q.groupIDs)
				q.groupIDs[g.group] = id
				q.groupAt, q.groupIdx = append(q.groupAt, 0), append(q.groupIdx, 0)
			}
			g.id, g.gen = id, q.groupGen
		}
		// Groups are numbered in the order their first member comes, as
		// the members are in queue order.
		gi := q.groupIdx[g.id]
		if q.groupAt[g.id] != q.groupCall {
			gi = n
			n++
			q.groupAt[g.id], q.groupIdx[g.id] = q.groupCall, gi
			if gi == len(cl.groups) {
				cl.groups = append(cl.groups, memberGroup{})
			}
		}
		cl.groups[gi].ms = append(cl.groups[gi].ms, m)
	}
	cl.groups = cl.groups[:n]
}

// unorder is told that the queue-sort order changed (a Resort): the
// awake classes' members are to be sorted again.
func (q *schedQueue) unorder() {
	for _, cl := range q.awake {
		cl.ordered, cl.scans = false, 0
	}
}

// insert puts rep into sorted candidates cands (queue-sort order, ties in
// queue order) and marks it a candidate.
func (q *schedQueue) insert(c *Cycle, qs QueueSort, cands []*cluster.JobState, rep *cluster.JobState) []*cluster.JobState {
	q.parked[rep.Job].inCands = true
	i, _ := slices.BinarySearchFunc(cands, rep, func(a, b *cluster.JobState) int {
		return cmp.Or(qs.Compare(c, a, b), cmp.Compare(q.posOf(c, a), q.posOf(c, b)))
	})
	return slices.Insert(cands, i, rep)
}

// reps makes the first member of every awake class (that has not failed)
// a candidate in rest, the sorted candidates not yet tried.
func (q *schedQueue) reps(c *Cycle, qs QueueSort, rest []*cluster.JobState) []*cluster.JobState {
	for _, cl := range q.awake {
		if cl.failEpoch == q.epoch {
			continue
		}
		if js := q.rep(c, qs, cl); js != nil {
			rest = q.insert(c, qs, rest, js)
		}
	}
	return rest
}

// less orders two jobs as the sorted path does: by QueueSort, ties in
// queue order.
func (q *schedQueue) less(c *Cycle, qs QueueSort, a, b *cluster.JobState) bool {
	return cmp.Or(qs.Compare(c, a, b), cmp.Compare(q.posOf(c, a), q.posOf(c, b))) < 0
}

// posOf returns the queue position of js, a job of the walk (a candidate
// or a parked job met): when the walk took the index, the queue's Order,
// which orders the queued jobs as the full walk's count does (only
// relative positions are ever compared, and no number changes within a
// cycle); else the count skip noted.
func (q *schedQueue) posOf(c *Cycle, js *cluster.JobState) int {
	if q.orderPos {
		pos, _ := c.Snap.Pending.Order(js)
		return pos
	}
	return q.pos[js]
}

// started is told, before the Reserve plugins, that js starts. On the
// sorted path of a profile with Preempt and Reserve plugins (a Reserve
// plugin may call Resort, which reorders the rest by a changed Compare),
// the parked jobs skipped that sort before js are passed: the cycle would
// have tried them already. Without a Resort, mergeSkipped's own
// comparison with the job tried last finds them.
func (q *schedQueue) started(c *Cycle, qs QueueSort, js *cluster.JobState) {
	if !q.mergeable || q.merged {
		return
	}
	q.collect(c)
	if len(q.skipped) == 0 {
		return
	}
	q.pass(c, qs, js)
}

func (q *schedQueue) pass(c *Cycle, qs QueueSort, js *cluster.JobState) {
	for _, sj := range q.skipped {
		if p := q.parked[sj.Job]; p != nil && !p.passed && !p.inCands && q.less(c, qs, sj, js) {
			p.passed = true
		}
	}
}

// committed is told that a Preempt plugin committed while a job was tried
// (it may have given room back): every class may fit again. It reports
// whether the parked jobs must come back in this cycle, because the Now
// ledger has room above water; the walk then merges the ones it has not
// passed (sorted path) or stops skipping (lazy path).
func (q *schedQueue) committed(c *Cycle) bool {
	q.epoch++
	if q.merged || len(q.parked) == 0 || !q.roomAbove(c.St.Now(), len(c.Snap.Nodes)) {
		return false
	}
	q.merged = true
	return true
}

// mergeSkipped returns rest (the candidates not yet tried, after js) with
// the parked jobs met in the walk that the cycle has not passed merged
// in, in queue-sort order with ties in queue order; they are unparked.
func (q *schedQueue) mergeSkipped(c *Cycle, qs QueueSort, js *cluster.JobState, rest []*cluster.JobState) []*cluster.JobState {
	q.collect(c)
	q.pass(c, qs, js)
	n := len(rest)
	for _, sj := range q.skipped {
		if p := q.parked[sj.Job]; p != nil && !p.passed && !p.inCands {
			q.unpark(sj.Job, p)
			rest = append(rest, sj)
		}
	}
	if len(rest) > n {
		slices.SortFunc(rest, func(a, b *cluster.JobState) int {
			return cmp.Or(qs.Compare(c, a, b), cmp.Compare(q.posOf(c, a), q.posOf(c, b)))
		})
	}
	return rest
}

// collect builds, with the index, skipped as the full walk's skip would
// have collected it on this mergeable profile, when it is first needed
// (the first start with Reserve plugins, or a merge): the walk with the
// index does not visit most parked jobs, and most cycles never need the
// list. skip's list is every queued job parked at the collection, in
// queue order (the window takes in every queued job, and by QueueLog's
// contract no parked job's own state changed: see follow). Since then,
// only this cycle's failed parked jobs (records of this cycle, passed
// from the start: never passed again or merged back, so they can be left
// out), tried unparked candidates (no longer parked: left out) and pass
// and rep changed flags, and only on the jobs of awake classes
// (walkIndex gave them skip's flags at the collection) or of skipped
// (empty until now). So a job parked in an earlier cycle is on the list,
// with its flags as they are if its class is awake, else with those skip
// gives a parked job (not passed, not a candidate).
func (q *schedQueue) collect(c *Cycle) {
	if !q.idx || q.collected {
		return
	}
	q.collected = true
	pq := c.Snap.Pending
	byOrder := q.byOrder[:0]
	for _, p := range q.parked {
		if p.cycle == q.cycle {
			continue
		}
		pos, ok := pq.Order(p.js)
		if !ok {
			continue
		}
		if cl := p.class; cl == nil || cl.awakeCycle != q.cycle {
			p.passed, p.inCands = false, false
		}
		byOrder = append(byOrder, orderedJob{js: p.js, pos: pos})
	}
	slices.SortFunc(byOrder, func(a, b orderedJob) int { return cmp.Compare(a.pos, b.pos) })
	for _, o := range byOrder {
		q.skipped = append(q.skipped, o.js)
	}
	clear(byOrder)
	q.byOrder = byOrder[:0]
}

// finish closes the cycle: jobs a plugin started, rejected or labelled
// (a Rebalance plugin may start a pending job) are no longer parked.
func (q *schedQueue) finish(c *Cycle) {
	q.queue, q.departed = c.Snap.Pending, false
	for js, op := range c.St.ops {
		if op == OpStart || op == OpReject {
			q.departed = true
			if p, ok := q.parked[js.Job]; ok {
				q.unpark(js.Job, p)
			}
		}
	}
	for _, js := range c.St.labeled {
		if p, ok := q.parked[js.Job]; ok {
			q.unpark(js.Job, p)
		}
	}
	if q.build {
		// The index holds once a walk read the whole queue.
		q.idx, q.build, q.built = q.built, false, false
		if !q.idx {
			return
		}
	}
	if !q.idx {
		return
	}
	if c.St.blind {
		q.dropIndex()
		return
	}
	// The jobs to recheck: those of earlier cycles not rechecked yet (an
	// idle cycle does not walk) and this cycle's, while parked.
	keep := q.recheck[:0]
	for _, js := range q.recheck {
		if p, ok := q.parked[js.Job]; ok && p.js == js {
			keep = append(keep, js)
		}
	}
	for _, js := range c.St.waited {
		if p, ok := q.parked[js.Job]; ok && p.js == js {
			keep = append(keep, js)
		}
	}
	q.recheck = dedupRecheck(keep, len(q.parked))
}

// follow keeps the index across cycles. The index is kept on a queue
// that logs its changes and is the previous cycle's object, for a sorted
// profile (whose walk reads every job before trying any; with Preempt
// plugins, the parked jobs to merge back mid-cycle are listed when
// needed: see collect) and for a lazy walk without Preempt plugins
// (lazy.go: walkLazy visits the same jobs in queue order, interleaved
// with the attempts), while the window takes in every queued job. The
// queue's log since the previous cycle tells which jobs joined the queue
// (they are active) and which left it (they are unparked and dropped);
// the Runtime's own parkings and unparkings keep the rest in step.
//
// Why a cycle may visit only the active jobs, the awake classes' members
// and recheck (walkIndex): the full walk's skip does nothing for any
// other job. Such a job is queued and parked since an earlier cycle, so
// by QueueLog's contract its Enqueued and Preemptions are those it was
// parked with (they change only when it is pushed, which unparks it) and
// so are its labels (they change only by SetLabel actions, after which
// finish unparks it; one recorded without its job drops the index). Its
// class is not awake, so skip only asks Statement.wait to keep its
// reason, before any job is tried (sorted path: nothing else was
// recorded in the cycle), which records nothing when the executor shows
// the reason it was parked with: the executor changes a queued job's
// reason only by Wait actions, and every job a Wait was recorded for is
// rechecked in the next cycle.
func (q *schedQueue) follow(s *cluster.Snapshot, window int) {
	ql, ok := s.Pending.(cluster.QueueLog)
	if !ok || !q.sorted && !q.lazy || s.Pending != q.queue || window > 0 && s.Pending.Len() > window {
		q.dropIndex()
		return
	}
	if q.changeFn == nil {
		q.changeFn = q.change // one method value, not one per cycle
	}
	if q.idx && ql.Since(q.mark, q.changeFn) {
		q.mark = ql.Mark()
		return
	}
	q.dropIndex()
	q.build, q.mark = true, ql.Mark()
	if q.active == nil {
		q.active = map[*cluster.JobState]struct{}{}
	}
}

// change follows one push or removal of the queue's log. A job that
// joins or leaves the queue is no longer parked (unparking never changes
// a decision: the job is tried, as without the queue).
func (q *schedQueue) change(js *cluster.JobState, pushed bool) {
	if p, ok := q.parked[js.Job]; ok {
		q.unpark(js.Job, p)
	}
	if pushed {
		q.active[js] = struct{}{}
	} else {
		delete(q.active, js)
	}
}

// order puts cl's members in queue order, with their current Order
// numbers; those no longer queued are unparked.
func (q *schedQueue) order(pq cluster.PendingQueue, cl *jobClass) {
	for _, p := range cl.jobs {
		if p.gone {
			continue
		}
		if pos, ok := pq.Order(p.js); ok {
			p.pos = pos
		} else {
			q.unpark(p.js.Job, p)
		}
	}
	cl.compact()
	if !cl.inOrder {
		slices.SortFunc(cl.jobs, func(a, b *parkedJob) int { return cmp.Compare(a.pos, b.pos) })
	}
	cl.inOrder, cl.num = true, pq.(cluster.QueueLog).Renumbered()
}

func (q *schedQueue) dropIndex() {
	q.idx, q.build = false, false
	clear(q.active)
	q.recheck = q.recheck[:0]
}

// walkIndex is the sorted walk's collection with the index (see follow):
// the awake classes' members, the rechecked parked jobs' waits, and the
// active jobs as candidates, sorted as the full walk sorts them;
// positions are the queue's Order, which orders jobs as the full walk's
// count does.
func (q *schedQueue) walkIndex(c *Cycle, cands []*cluster.JobState) []*cluster.JobState {
	pq := c.Snap.Pending
	renum := pq.(cluster.QueueLog).Renumbered()
	for _, cl := range q.awake {
		if !cl.inOrder || cl.num != renum {
			q.order(pq, cl)
		}
		for _, p := range cl.jobs {
			if p.gone {
				continue
			}
			// Its queue Order (order, addMember): insert gives it to the
			// member that becomes a candidate.
			p.passed, p.inCands = false, false
			cl.members = append(cl.members, member{js: p.js, p: p, pos: p.pos})
		}
	}
	if len(q.recheck) > 0 {
		byOrder := q.byOrder[:0]
		for _, js := range q.recheck {
			if pos, ok := pq.Order(js); ok {
				byOrder = append(byOrder, orderedJob{js: js, pos: pos})
			}
		}
		slices.SortFunc(byOrder, func(a, b orderedJob) int { return cmp.Compare(a.pos, b.pos) })
		for i, o := range byOrder {
			if i > 0 && byOrder[i-1].js == o.js {
				continue
			}
			p := q.parked[o.js.Job]
			if p == nil || p.js != o.js {
				continue
			}
			if cl := p.class; cl != nil && cl.awakeCycle == q.cycle {
				continue // a member (no class failed yet in this cycle)
			}
			c.St.wait(o.js, p.reason)
		}
		clear(byOrder)
		q.byOrder = byOrder[:0]
		clear(q.recheck)
		q.recheck = q.recheck[:0]
	}
	if _, ok := c.rt.p.QueueSort.(KeyedSort); ok {
		// The full walk sorts the jobs in queue order stably by key:
		// that is one sort by key, then queue Order (no two jobs have
		// one number).
		keyed := q.keyed[:0]
		for js := range q.active {
			pos, _ := pq.Order(js)
			k, _ := c.SortKey(js)
			keyed = append(keyed, keyedPos{key: k, pos: pos, js: js})
		}
		slices.SortFunc(keyed, func(a, b keyedPos) int { return cmp.Or(CompareKeys(a.key, b.key), cmp.Compare(a.pos, b.pos)) })
		for _, k := range keyed {
			cands = append(cands, k.js) // positions: see posOf
		}
		clear(keyed)
		q.keyed = keyed[:0]
		return cands
	}
	byOrder := q.byOrder[:0]
	for js := range q.active {
		pos, _ := pq.Order(js)
		byOrder = append(byOrder, orderedJob{js: js, pos: pos})
	}
	slices.SortFunc(byOrder, func(a, b orderedJob) int { return cmp.Compare(a.pos, b.pos) })
	for _, o := range byOrder {
		cands = append(cands, o.js) // positions: see posOf
	}
	clear(byOrder)
	q.byOrder = byOrder[:0]
	c.rt.sortJobs(c, cands)
	return cands
}

type keyedPos struct {
	key SortKey
	pos int
	js  *cluster.JobState
}

// idle reports whether the walk can be skipped: nothing woke, and the
// queue is the previous cycle's object holding only parked jobs (parked
// jobs leave it only by this Runtime's actions, which finish follows; on
// Kubernetes the queue is rebuilt every cycle and is walked).
func (q *schedQueue) idle(s *cluster.Snapshot) bool {
	return len(q.awake) == 0 && len(q.parked) > 0 && s.Pending == q.queue && len(q.parked) == s.Pending.Len()
}

// end closes the walk. An awake class that did not fail in this cycle was
// not tried to the end (the walk stopped, or all its members met
// started): its members still parked are tried on the room left, and
// unparked if they fit.
func (q *schedQueue) end(c *Cycle) {
	if len(q.skippers) > 0 {
		q.flushSkips(c, c.stop)
	}
	for _, cl := range q.awake {
		if cl.failCycle == q.cycle {
			// The members met but not tried would have failed as the
			// class did: they get its reason. A member parked for a
			// Skipper fails as it did when parked (the Skipper's
			// reason, which stands for the placement's), and keeps it.
			reason := c.St.intern(cl.failSt.Reason())
			for _, m := range cl.members {
				if p := m.p; !p.gone && !p.inCands && p.skips == 0 {
					p.reason = reason
					c.St.wait(m.js, reason)
				}
			}
			continue
		}
		if cl.parked == 0 {
			continue
		}
		if q.dryNow {
			if !q.fits(c, c.St.Now(), cl) {
				l := c.St.Now()
				for i := range c.Snap.Nodes {
					q.water[i] = q.water[i].Min(l.Free(i))
				}
				continue
			}
			// The class still fits: rather than unparking its members
			// (each then a candidate of the next cycle, tried and, after
			// the first failure, parked again one by one), the next
			// cycle wakes it again (wakeAgain).
			q.again = append(q.again, cl)
			continue
		}
		q.unparkClass(cl)
	}
}

// inOrderWalk is the state of walk's pass over a queue in its order, one
// job per step (a method, so that the pass allocates nothing).
type inOrderWalk struct {
	r       *Runtime
	c       *Cycle
	n       int
	stopped bool // by the window or a job that blocks the rest
}

// step is one job of the pass; it returns false to end it.
func (w *inOrderWalk) step(js *cluster.JobState) bool {
	r, c, q := w.r, w.c, w.r.q
	if win := r.p.Window; win > 0 && w.n >= win {
		w.stopped = true
		return false
	}
	w.n++
	if q.skip(c, js, w.n) {
		return true
	}
	if !r.try(c, js) {
		q.metTo(c, js)
		w.stopped = true
		return false
	}
	q.tried(c, js)
	return true
}

// walk is Runtime.queue with the scheduling queue: parked jobs are
// skipped, awake classes are represented by their first member.
func (r *Runtime) walk(c *Cycle) {
	p, s, q := &r.p, c.Snap, r.q
	if q.idle(s) {
		// Every job would fail as it did: each had its turn.
		if len(q.skippers) > 0 {
			q.flushSkips(c, nil)
		}
		return
	}
	defer q.end(c)
	if c.inOrder {
		if q.idx && q.fewVisits(s) {
			r.walkLazy(c) // lazy.go
			return
		}
		if q.build {
			q.fillLazy(s)
		}
		w := &r.inOrder
		*w = inOrderWalk{r: r, c: c}
		if r.inOrderStep == nil {
			r.inOrderStep = w.step // one method value, not a closure per cycle
		}
		if e, ok := s.Pending.(cluster.Eacher); ok {
			e.Each(r.inOrderStep)
		} else {
			s.Pending.All()(r.inOrderStep)
		}
		if !w.stopped {
			q.metTo(c, nil)
		}
		*w = inOrderWalk{}
		return
	}
	qs := p.QueueSort
	cands := r.cands[:0]
	sortJobs := func(js []*cluster.JobState) { r.sortJobs(c, js) }
	if q.idx && 2*len(q.active) < s.Pending.Len() {
		q.orderPos = true
		cands = q.walkIndex(c, cands) // sorted
	} else {
		if q.idx {
			// Most queued jobs are active (a profile that parks few
			// jobs): reading the queue costs less than the index. The
			// full walk is exact with the index too: its skip waits
			// for every parked job (recheck's included) and collects
			// skipped; positions are its count (posOf).
			q.collected = true
			clear(q.recheck)
			q.recheck = q.recheck[:0]
		}
		// On the simulator's queue the positions compared are its Order
		// numbers, which order the jobs as the count does (posOf), so
		// skip need not note the count of each job it passes.
		_, q.orderPos = s.Pending.(cluster.QueueLog)
		n := 0
		for js := range s.Pending.All() {
			if p.Window > 0 && n >= p.Window {
				break
			}
			n++
			if q.skip(c, js, n) {
				continue
			}
			if q.build {
				q.active[js] = struct{}{}
			}
			cands = append(cands, js)
		}
		q.built = q.build
		sortJobs(cands)
	}
	cands = q.reps(c, qs, cands)
	var closer Closer
	if len(p.Admit) > 0 {
		closer, _ = p.Admit[0].(Closer)
	}
	for i := 0; i < len(cands); i++ {
		if !r.try(c, cands[i]) {
			break
		}
		cl := q.tried(c, cands[i])
		if closer != nil && len(c.started) > 0 && closer.Closed(c) {
			// Every job after this one would be Blocked, with nothing
			// recorded: neither the next member of cl nor the jobs to
			// merge back are needed.
			c.stop = cands[i]
			break
		}
		if c.merge {
			// A Preempt plugin gave room back: the parked jobs this cycle
			// has not passed are tried after all.
			c.merge = false
			cands = append(cands[:i+1], q.mergeSkipped(c, qs, cands[i], cands[i+1:])...)
			cl = nil
		}
		if c.resort {
			c.resort = false
			sortJobs(cands[i+1:])
			if len(q.awake) > 0 {
				q.unorder()
				// The order changed: each awake class's first member may
				// be another one.
				cands = append(cands[:i+1], q.reps(c, qs, cands[i+1:])...)
				cl = nil
			}
		}
		if cl != nil {
			if js := q.rep(c, qs, cl); js != nil {
				cands = append(cands[:i+1], q.insert(c, qs, cands[i+1:], js)...)
			}
		}
	}
	r.cands = cands
}

// attempt is sizeAndPlace on the Now ledger for the job the cycle tries,
// skipping the placement of a job whose class already failed in this
// epoch (it gets the status of the class's failure).
func (r *Runtime) attempt(c *Cycle, js *cluster.JobState) (cluster.Placement, *Status) {
	q := r.q
	if q == nil {
		return r.sizeAndPlace(c, &r.now, js)
	}
	q.cur, q.unsafe = nil, false
	sizes := r.sizes(c, js)
	if !q.fast {
		return r.placeSizes(c, &r.now, js, sizes)
	}
	// placement.Place samples feasible nodes on large clusters from a
	// cursor that each replica placed moves on: a job with several
	// replicas that fails there may have moved it, so it is neither
	// skipped nor parked.
	if q.sampled {
		for _, counts := range sizes {
			n := 0
			for _, k := range counts {
				n += k
			}
			if n > 1 {
				q.unsafe = true
				return r.placeSizes(c, &r.now, js, sizes)
			}
		}
	}
	cl := q.class(js, sizes)
	q.cur = cl
	if cl.failEpoch == q.epoch {
		return nil, cl.failSt
	}
	pl, st := r.placeSizes(c, &r.now, js, sizes)
	if !st.IsSuccess() {
		cl.failEpoch, cl.failCycle, cl.failSt = q.epoch, q.cycle, st
	}
	return pl, st
}

// class returns the class of js tried at sizes: jobs alike in the groups'
// demands, names and node constraints and in the sizes tried.
func (q *schedQueue) class(js *cluster.JobState, sizes [][]int) *jobClass {
	k := q.key[:0]
	for _, g := range js.Job.Groups {
		for _, v := range g.Demand {
			k = binary.AppendVarint(k, v)
		}
		k = binary.AppendUvarint(k, uint64(len(g.Name)))
		k = append(k, g.Name...)
		// The node constraint decides which nodes the group may use:
		// jobs alike in everything else but it are not alike.
		if g.Constraint != nil {
			ck := g.Constraint.Key()
			k = binary.AppendUvarint(k, uint64(len(ck))+1)
			k = append(k, ck...)
		} else {
			k = binary.AppendUvarint(k, 0)
		}
	}
	for _, counts := range sizes {
		k = binary.AppendUvarint(k, uint64(len(counts)))
		for _, n := range counts {
			k = binary.AppendVarint(k, int64(n))
		}
	}
	// With a Watcher or Skipper in the profile, also the counts the job
	// asks for, which a Preempt plugin may try apart from the sizes (see
	// Watcher), and its class (TE or BE), which such plugins set aside
	// apart: a class of one kind of job is woken for what that kind waits
	// on, and its members are alike in the sort more often.
	if q.watchers {
		for _, g := range js.Job.Groups {
			k = binary.AppendVarint(k, int64(g.Replicas))
		}
		k = append(k, byte(js.Job.Class))
	}
	q.key = k
	cl, ok := q.classes[string(k)]
	if !ok {
		cl = &jobClass{job: js.Job, js: js, sizes: sizes}
		q.classes[string(k)] = cl
	}
	return cl
}

// classes reports whether the profile's attempts are a function of the
// room and of a job's class (see schedQueue): placement.Place alone
// decides (the fast path), or, on the generic path, every Filter is
// uniform (see UniformFilter) and a gang goes on one node only, so that
// an attempt succeeds exactly when some node passes the filters and holds
// the whole gang (the scores only choose among such nodes, and no Picker
// is told of a failed attempt); or the Place plugin is a ClassPlace that
// says so, whose contract is that very promise (its dry run is Place on a
// fork of the room, reverted).
func (r *Runtime) classes() bool {
	if r.p.Place != nil {
		cp, ok := r.p.Place.(ClassPlace)
		return ok && cp.ClassPlace()
	}
	return r.fast || r.uniform && r.p.Gang == placement.OneNodeOnly
}

// feasible is the generic path's dry run for a uniform one-node-only
// profile: whether some node of l passes the filters for js at counts and
// holds the whole gang. It is exactly when placeGeneric would place it.
func (r *Runtime) feasible(c *Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) bool {
	d := js.Job.Demand(counts)
	var buf [4]cluster.NodeSet
	sets := buf[:0]
	for k := range js.Job.Groups {
		if counts[k] > 0 {
			sets = append(sets, l.Eligible(js.Job, k))
		}
	}
	for i, n := range c.Snap.Nodes {
		if n.Ready && !n.Gone && inSets(sets, i) && d.Fits(l.Free(i)) && r.filter(c, js, -1, n, counts) == "" {
			return true
		}
	}
	return false
}

// nodesChanged compares the nodes' readiness with the previous call's.
func (q *schedQueue) nodesChanged(s *cluster.Snapshot) bool {
	changed := len(q.ready) != len(s.Nodes)
	q.ready = slices.Grow(q.ready[:0], len(s.Nodes))[:len(s.Nodes)]
	for i, n := range s.Nodes {
		r := n.Ready && !n.Gone
		if q.ready[i] != r {
			changed = true
		}
		q.ready[i] = r
	}
	return changed
}

// runningChanged compares the running jobs (phase and replicas) with the
// previous call's: a job new, changed, or gone.
func (q *schedQueue) runningChanged(s *cluster.Snapshot) bool {
	first := q.running == nil
	if first {
		q.running = make(map[*cluster.Job]runningFP, len(s.Running))
	}
	changed, still := false, 0
	hints := q.need&EventRunningHint != 0
	q.moved = q.moved[:0]
	for _, js := range s.Running {
		fp := runningFP{phase: js.Phase, replicas: len(js.Placement), seen: q.cycle}
		moved := false
		if old, ok := q.running[js.Job]; ok && old.seen == q.runStamp {
			still++
			moved = old.phase != fp.phase || old.replicas != fp.replicas
		} else {
			moved = true
		}
		if moved {
			changed = true
			if hints && !first {
				q.moved = append(q.moved, js)
			}
		}
		q.running[js.Job] = fp
	}
	if still < q.lastRun {
		changed = true
	}
	q.runStamp, q.lastRun = q.cycle, len(s.Running)
	if len(q.running) > 2*len(s.Running)+64 {
		for j, fp := range q.running {
			if fp.seen != q.cycle {
				delete(q.running, j)
			}
		}
	}
	return changed && !first
}

// pendingChanged reports whether a job pending at the previous call is no
// longer.
func (q *schedQueue) pendingChanged(s *cluster.Snapshot, establish bool) bool {
	if s.Pending == q.queue {
		// The simulator's queue: only this Runtime's starts and
		// rejections take jobs out of it.
		return !establish && q.departed
	}
	first := q.pending == nil
	if first {
		if !establish {
			return true // not tracked: assume it changed
		}
		q.pending = make(map[*cluster.Job]uint64, s.Pending.Len())
	}
	still := 0
	for js := range s.Pending.All() {
		if seen, ok := q.pending[js.Job]; ok && seen == q.penStamp {
			still++
		}
		q.pending[js.Job] = q.cycle
	}
	changed := still < q.lastPend
	q.penStamp, q.lastPend = q.cycle, s.Pending.Len()
	if len(q.pending) > 2*s.Pending.Len()+64 {
		for j, seen := range q.pending {
			if seen != q.cycle {
				delete(q.pending, j)
			}
		}
	}
	return changed && !first
}

// stillness answers at once a cycle of a time-driven profile whose
// TimeDriven plugins are each Clockless or ClocklessOn, when the previous
// cycle recorded nothing but waits, the cluster has not changed since (see
// Clockless): the same snapshot apart from Now, Cycle and Seed, and every
// ClocklessOn plugin says so of it.
type stillness struct {
	// on lists the plugins that implement ClocklessOn, asked on every
	// cycle that finds the cluster unchanged.
	on []ClocklessOn
	// valid: the previous cycle recorded nothing but waits, and what
	// follows is the cluster it saw.
	valid   bool
	queue   cluster.PendingQueue
	pending int
	// gen is the cluster's Snapshot.Gen (0: unknown).
	gen     uint64
	nodes   []nodeFP
	running []runFP
	places  []cluster.Placeholder
}

type nodeFP struct {
	ready, gone                               bool
	alloc, usage, releasing, placeholder, cap resource.Vector
	jobs                                      int
}

type runFP struct {
	js                  *cluster.JobState
	job                 *cluster.Job
	phase               cluster.Phase
	replicas, evals, lb int
}

// newStillness returns the check for profiles it applies to, else nil.
func newStillness(r *Runtime) *stillness {
	if !r.timeDriven {
		return nil
	}
	w := &stillness{}
	for _, pl := range r.Plugins() {
		on, isOn := pl.(ClocklessOn)
		if isOn {
			w.on = append(w.on, on)
		}
		if td, ok := pl.(TimeDriven); ok && td.TimeDriven() && !isOn {
			if cl, ok := pl.(Clockless); !ok || !cl.Clockless() {
				return nil
			}
		}
	}
	return w
}

// idle reports whether the cycle on s can be answered at once with no
// action: s is the cluster the previous, idle cycle saw, and every
// ClocklessOn plugin agrees.
func (w *stillness) idle(s *cluster.Snapshot) bool {
	if !w.still(s) {
		return false
	}
	for _, on := range w.on {
		if !on.ClocklessOn(s) {
			return false
		}
	}
	return true
}

// still reports whether s is the cluster the previous, idle cycle saw.
func (w *stillness) still(s *cluster.Snapshot) bool {
	if w.valid && s.Gen != 0 && s.Gen == w.gen && s.Pending == w.queue {
		return true // the executor says it is the same cluster
	}
	if !w.valid || s.Pending != w.queue || s.Pending.Len() != w.pending || len(s.Nodes) != len(w.nodes) ||
		len(s.Running) != len(w.running) || !slices.Equal(s.Placeholders, w.places) {
		return false
	}
	for i, n := range s.Nodes {
		if w.nodes[i] != nodeOf(n) {
			return false
		}
	}
	for i, js := range s.Running {
		if w.running[i] != runOf(js) {
			return false
		}
	}
	return true
}

func nodeOf(n *cluster.NodeState) nodeFP {
	return nodeFP{ready: n.Ready, gone: n.Gone, alloc: n.Allocated, usage: n.Usage, releasing: n.Releasing,
		placeholder: n.Placeholder, cap: n.Capacity, jobs: len(n.Jobs)}
}

func runOf(js *cluster.JobState) runFP {
	return runFP{js: js, job: js.Job, phase: js.Phase, replicas: len(js.Placement), evals: len(js.Evals), lb: len(js.Labels)}
}

// record notes the cycle just run on s with actions acts.
func (w *stillness) record(s *cluster.Snapshot, acts []policy.Action) {
	for _, a := range acts {
		if _, ok := a.(policy.Wait); !ok {
			w.valid = false
			return
		}
	}
	if w.valid && w.still(s) {
		w.gen = s.Gen
		return // the same cluster again
	}
	w.valid, w.queue, w.pending, w.gen = true, s.Pending, s.Pending.Len(), s.Gen
	w.nodes = w.nodes[:0]
	for _, n := range s.Nodes {
		w.nodes = append(w.nodes, nodeOf(n))
	}
	w.running = w.running[:0]
	for _, js := range s.Running {
		w.running = append(w.running, runOf(js))
	}
	w.places = append(w.places[:0], s.Placeholders...)
}
