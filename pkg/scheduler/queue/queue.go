// Package queue is drover's scheduling queue, in kube-scheduler's shape
// (pkg/scheduler/backend/queue, kept apart from pkg/scheduler/framework):
// the framework's Runtime walks the jobs it makes active and tells it which
// failed and which started; it asks the Runtime (Runtime) for the walk's
// order and whether a job fits.
package queue

import (
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// The scheduling queue, in kube-scheduler's shape
// (pkg/scheduler/backend/queue): every pending job is in one of three
// sets.
//
//   - active: tried this cycle, in QueueSort order (activeQ);
//   - unschedulable: failed, parked until an event its plugins declared
//     happens and their hints agree, or until the periodic flush
//     (unschedulable.go; unschedulablePods);
//   - backoff: woken, but failed recently: it waits out a backoff that
//     doubles with each failure before it is active again (backoff.go;
//     backoffQ).
//
// A job enters active when it joins the queue or its queue entry changes
// (a preempted job pushed back at the head, a changed spec). The queue
// follows the executor's pending queue across cycles: by its change log
// when it has one (cluster.QueueLog, the simulator's), else by reading it
// every cycle (the Kubernetes executor, whose snapshot is rebuilt each
// cycle); either way both executors run this same queue.
//
// What the queue costs a decision: nothing, when every plugin's events
// and hints are right (a parked job would have failed exactly as it did);
// otherwise at most FlushAfter of latency, after which every parked job is
// tried again. Randomness is per job (Cycle.Rand), so not trying a job
// changes no other job's draws.

// Options tune the scheduling queue; DefaultOptions are
// kube-scheduler's.
type Options struct {
	// InitialBackoff and MaxBackoff bound the backoff of a job that fails
	// again after it was woken, in seconds of the snapshots' clock: the
	// first failure waits InitialBackoff, each further one twice as long,
	// at most MaxBackoff. 0 turns backoff off.
	InitialBackoff, MaxBackoff float64
	// FlushAfter is how long a job may stay parked before it is tried
	// again whatever its events (kube-scheduler's
	// podMaxInUnschedulablePodsDuration), in seconds; 0 never flushes.
	FlushAfter float64
}

// DefaultOptions returns kube-scheduler's defaults: backoff from 1 s
// to 10 s, and the 5-minute flush.
func DefaultOptions() Options {
	return Options{InitialBackoff: 1, MaxBackoff: 10, FlushAfter: 300}
}

// where a job is.
type where uint8

const (
	inActive where = iota
	inUnschedulable
	inBackoff
	// gone: the job left the queue (its entry may still be listed).
	gone
)

// entry is the queue's record of one pending job, by ID.
type entry struct {
	js  *cluster.JobState
	job *cluster.Job // the spec the entry was made for
	at  where
	// b is the bucket of a parked job; parkedAt when it was parked.
	b        *bucket
	parkedAt float64
	// fails counts failures since the job last started (backoff);
	// backoffUntil is when its backoff ends.
	fails        int
	backoffUntil float64
	// seen is the read of the pending queue that last saw the job.
	seen uint64
	// from is the bucket the job was woken from as its head: when it
	// starts, the next member is tried (see bucket).
	from *bucket
	// listed: the entry is in the active list (active.go), where
	// it stays, skipped, while it is parked.
	listed bool
	// key is the job's KeyedSort key, computed in cycle keyAt at sort
	// generation keyGen (Queue.keyOf).
	key    framework.SortKey
	keyAt  uint64
	keyGen int
	// recheck: the job was woken by the placement's answer that it fits
	// on the Now ledger at version wokeAt, no other hint asked, with the
	// events wokeEv; the walk asks again before trying it if the ledger
	// changed since (see Walk).
	recheck bool
	wokeAt  uint64
	wokeEv  framework.Events
}

// Runtime is what the queue asks of the framework's Runtime, which it
// serves: the walk's order, whether a job fits now, and forgetting the
// placement's failure messages when the nodes change.
type Runtime interface {
	Profile() framework.Profile
	// WalkOrder compares a and b as the walk orders them: by the
	// QueueSort, then by queue position.
	WalkOrder(c *framework.Cycle, a, b *cluster.JobState) int
	// FitsNow answers whether js fits at one of its sizes on the
	// Statement's Now ledger as it is (framework.NoRoom: it does not, from
	// its placement shape alone).
	FitsNow(c *framework.Cycle, js *cluster.JobState) framework.Fit
	// FitsByShape reports whether FitsNow's answer is a function of the
	// job's placement shape (framework.AppendPlaceKey) and the ledger
	// alone, so that jobs that differ only in class, priority, tenant or
	// utility may share it.
	FitsByShape() bool
	// ForgetReasons drops the memo of failure messages, which name the
	// nodes' rules.
	ForgetReasons()
}

var _ Runtime = (*framework.Runtime)(nil)

// Queue is the Runtime's scheduling queue.
type Queue struct {
	r Runtime
	// p is the Runtime's profile.
	p       framework.Profile
	opts    Options
	entries map[string]*entry
	// active counts the entries in the active set.
	active int
	// src, mark and reads follow the executor's pending queue.
	src   cluster.PendingQueue
	mark  uint64
	reads uint64
	// pendingMoved: a job joined or left since the previous cycle.
	pendingMoved bool
	// cycles counts the cycles begun (the entries' key memo).
	cycles uint64
	// woke holds the jobs a start woke within the cycle, for the walk.
	woke []*cluster.JobState
	list activeList
	un   unschedulable
	bo   backoff
	ev   eventWatch
}

// New returns a scheduling queue with options o for the Runtime r (which
// takes it with Runtime.WithQueue).
func New(r Runtime, o Options) *Queue {
	q := &Queue{r: r, p: r.Profile(), opts: o, entries: map[string]*entry{}}
	q.un.buckets = map[string]*bucket{}
	q.un.byShape = r.FitsByShape()
	return q
}

// Reset empties the queue, options kept: every pending job is tried again
// in the next cycle (after a plugin's panic, which may have left it half
// updated).
func (q *Queue) Reset() { *q = *New(q.r, q.opts) }

// Active is the number of jobs in the active set.
func (q *Queue) Active() int { return q.active }

// TakeWoke returns the jobs a start woke since the last call (the next
// member of the bucket whose head started), for the walk to put in their
// places; the slice is valid until the next job is tried.
func (q *Queue) TakeWoke() []*cluster.JobState {
	w := q.woke
	q.woke = q.woke[:0]
	return w
}

// BeforeCommit is told, as a Preempt plugin's fork is about to be
// committed, to note the room the nodes it changed had before it.
func (q *Queue) BeforeCommit(c *framework.Cycle) { q.ev.beforeCommit(c, q.p.Future) }

// begin follows the pending queue, finds the events since the previous
// cycle and moves the jobs they wake, whose backoff ended or that were
// parked too long, to the active set. It reports whether nothing happened:
// no event and no job made active.
func (q *Queue) Begin(c *framework.Cycle) bool {
	s := c.Snap
	q.cycles++
	q.follow(s)
	ev := q.ev.since(c, q.r, q.p.Future)
	if q.pendingMoved {
		ev |= framework.EventPending
		q.pendingMoved = false
	}
	active := q.active
	q.un.wake(c, q, ev)
	q.un.flush(q, s.Now)
	q.bo.pop(q, s.Now)
	q.prepare(c, ev)
	return ev == 0 && q.active == active
}

// end closes the cycle: what parked jobs saw of the room is kept for the
// next cycle's comparison.
func (q *Queue) End(c *framework.Cycle) {
	q.ev.fold(c, q.p.Future)
}

// follow brings the entries in line with the executor's pending queue.
func (q *Queue) follow(s *cluster.Snapshot) {
	if lg, ok := s.Pending.(cluster.QueueLog); ok && q.src == s.Pending {
		if lg.Since(q.mark, q.change) {
			q.mark = lg.Mark()
			// A job's entry is refreshed as it is pushed; the pointer
			// stays the same while it is queued (QueueLog's contract).
			return
		}
	}
	q.src = s.Pending
	if lg, ok := s.Pending.(cluster.QueueLog); ok {
		q.mark = lg.Mark()
	}
	q.reads++
	n := 0
	for js := range s.Pending.All() {
		n++
		e := q.entries[js.Job.ID]
		switch {
		case e == nil:
			q.add(js)
		case e.job != js.Job || e.js.Enqueued != js.Enqueued || e.js.Preemptions != js.Preemptions:
			// A new spec or a new queue entry: tried afresh, and placed
			// in the walk's order anew.
			q.drop(js.Job.ID, e)
			q.add(js)
		default:
			e.js = js
		}
		q.entries[js.Job.ID].seen = q.reads
	}
	if n != len(q.entries) {
		for id, e := range q.entries {
			if e.seen != q.reads {
				q.drop(id, e)
			}
		}
	}
}

// change applies one push or removal of the pending queue's log.
func (q *Queue) change(js *cluster.JobState, pushed bool) {
	q.pendingMoved = true
	e := q.entries[js.Job.ID]
	if !pushed {
		if e != nil && e.js == js {
			q.drop(js.Job.ID, e)
		}
		return
	}
	if e != nil {
		q.drop(js.Job.ID, e)
	}
	q.add(js)
}

func (q *Queue) add(js *cluster.JobState) {
	q.pendingMoved = true
	e := &entry{js: js, job: js.Job, at: inUnschedulable, seen: q.reads}
	q.entries[js.Job.ID] = e
	q.toActive(e)
}

func (q *Queue) drop(id string, e *entry) {
	q.pendingMoved = true
	q.leave(e)
	e.at = gone
	if e.listed {
		q.list.gone++
	}
	delete(q.entries, id)
}

// leave takes e out of the set it is in.
func (q *Queue) leave(e *entry) {
	switch e.at {
	case inActive:
		q.active--
	case inUnschedulable:
		q.un.remove(e)
	case inBackoff:
		q.bo.remove(e)
	}
}

// activate moves e to the active set.
func (q *Queue) activate(e *entry) {
	if e.at == inActive {
		return
	}
	q.leave(e)
	q.toActive(e)
}

// keyOf returns e's key under the KeyedSort ks in this cycle, computed
// once per cycle and sort generation: a key is a function of the cycle's
// snapshot and allocations (KeyedSort's contract), and a QueueSort whose
// order moves within a cycle says so with Cycle.Resort. Parking a job in
// its bucket and putting a woken one in the active list compare it with
// O(log n) others; without the memo every comparison computes two keys.
func (q *Queue) keyOf(c *framework.Cycle, ks framework.KeyedSort, e *entry) framework.SortKey {
	if e.keyAt != q.cycles || e.keyGen != c.SortGen() {
		e.key, e.keyAt, e.keyGen = ks.Key(c, e.js), q.cycles, c.SortGen()
	}
	return e.key
}

// entryOrder is Runtime.walkOrder for two entries, by their memoised keys
// when the QueueSort is a KeyedSort (which orders as its Compare).
func (q *Queue) entryOrder(c *framework.Cycle, a, b *entry) int {
	ks, ok := q.p.QueueSort.(framework.KeyedSort)
	if !ok {
		return q.r.WalkOrder(c, a.js, b.js)
	}
	if d := framework.CompareKeys(q.keyOf(c, ks, a), q.keyOf(c, ks, b)); d != 0 {
		return d
	}
	return framework.QueueOrder(c, a.js, b.js)
}

// isActive reports whether js is to be tried this cycle.
func (q *Queue) IsActive(js *cluster.JobState) bool {
	e := q.entries[js.Job.ID]
	return e == nil || e.at == inActive
}

// failed parks js, which was tried and did not start, with the events of
// the plugins that turned it away: rejector, the Admit plugin that
// answered Unschedulable or Wait, or nil when placement failed and no
// Preempt plugin made room.
func (q *Queue) Failed(c *framework.Cycle, js *cluster.JobState, rejector framework.Plugin) {
	e := q.entries[js.Job.ID]
	if e == nil || e.at != inActive {
		return
	}
	e.fails++
	if q.opts.InitialBackoff > 0 {
		d := q.opts.InitialBackoff
		for i := 1; i < e.fails && d < q.opts.MaxBackoff; i++ {
			d *= 2
		}
		e.backoffUntil = c.Snap.Now + min(d, q.opts.MaxBackoff)
	}
	hs, always := q.hints(c, js, rejector)
	if always {
		return
	}
	q.active--
	q.un.park(c, q, e, hs)
	q.ev.parked = true
}

// wakeMid returns the parked jobs, after cur in the walk, that the room a
// Preempt plugin just gave back may let start, moved to the active set.
func (q *Queue) WakeMid(c *framework.Cycle, cur *cluster.JobState) []*cluster.JobState {
	if !q.ev.grew(c, q.p.Future) {
		return nil
	}
	return q.un.wakeAfter(c, q, cur)
}
