package framework

import (
	"github.com/drover-sched/drover/pkg/cluster"
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

// QueueOptions tune the scheduling queue; DefaultQueueOptions are
// kube-scheduler's.
type QueueOptions struct {
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

// DefaultQueueOptions returns kube-scheduler's defaults: backoff from 1 s
// to 10 s, and the 5-minute flush.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{InitialBackoff: 1, MaxBackoff: 10, FlushAfter: 300}
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
	// listed: the entry is in the active list (queue_active.go), where
	// it stays, skipped, while it is parked.
	listed bool
	// key is the job's KeyedSort key, computed in cycle keyAt at sort
	// generation keyGen (schedQueue.keyOf).
	key    SortKey
	keyAt  uint64
	keyGen int
}

// schedQueue is the Runtime's scheduling queue.
type schedQueue struct {
	r       *Runtime
	opts    QueueOptions
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

func newSchedQueue(r *Runtime, o QueueOptions) *schedQueue {
	q := &schedQueue{r: r, opts: o, entries: map[string]*entry{}}
	q.un.buckets = map[string]*bucket{}
	return q
}

// begin follows the pending queue, finds the events since the previous
// cycle and moves the jobs they wake, whose backoff ended or that were
// parked too long, to the active set. It reports whether nothing happened:
// no event and no job made active.
func (q *schedQueue) begin(c *Cycle) bool {
	s := c.Snap
	q.cycles++
	q.follow(s)
	ev := q.ev.since(c, q.r.p.Future)
	if q.pendingMoved {
		ev |= EventPending
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
func (q *schedQueue) end(c *Cycle) {
	q.ev.fold(c, q.r.p.Future)
}

// follow brings the entries in line with the executor's pending queue.
func (q *schedQueue) follow(s *cluster.Snapshot) {
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
func (q *schedQueue) change(js *cluster.JobState, pushed bool) {
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

func (q *schedQueue) add(js *cluster.JobState) {
	q.pendingMoved = true
	e := &entry{js: js, job: js.Job, at: inUnschedulable, seen: q.reads}
	q.entries[js.Job.ID] = e
	q.toActive(e)
}

func (q *schedQueue) drop(id string, e *entry) {
	q.pendingMoved = true
	q.leave(e)
	e.at = gone
	if e.listed {
		q.list.gone++
	}
	delete(q.entries, id)
}

// leave takes e out of the set it is in.
func (q *schedQueue) leave(e *entry) {
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
func (q *schedQueue) activate(e *entry) {
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
func (q *schedQueue) keyOf(c *Cycle, ks KeyedSort, e *entry) SortKey {
	if e.keyAt != q.cycles || e.keyGen != c.sortGen {
		e.key, e.keyAt, e.keyGen = ks.Key(c, e.js), q.cycles, c.sortGen
	}
	return e.key
}

// entryOrder is Runtime.walkOrder for two entries, by their memoised keys
// when the QueueSort is a KeyedSort (which orders as its Compare).
func (q *schedQueue) entryOrder(c *Cycle, a, b *entry) int {
	ks, ok := q.r.p.QueueSort.(KeyedSort)
	if !ok {
		return q.r.walkOrder(c, a.js, b.js)
	}
	if d := CompareKeys(q.keyOf(c, ks, a), q.keyOf(c, ks, b)); d != 0 {
		return d
	}
	return queueOrder(c, a.js, b.js)
}

// isActive reports whether js is to be tried this cycle.
func (q *schedQueue) isActive(js *cluster.JobState) bool {
	e := q.entries[js.Job.ID]
	return e == nil || e.at == inActive
}

// failed parks js, which was tried and did not start, with the events of
// the plugins that turned it away: rejector, the Admit plugin that
// answered Unschedulable or Wait, or nil when placement failed and no
// Preempt plugin made room.
func (q *schedQueue) failed(c *Cycle, js *cluster.JobState, rejector Plugin) {
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
func (q *schedQueue) wakeMid(c *Cycle, cur *cluster.JobState) []*cluster.JobState {
	if !q.ev.grew(c, q.r.p.Future) {
		return nil
	}
	return q.un.wakeAfter(c, q, cur)
}
