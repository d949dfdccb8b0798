package queue

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// activeList is the active set in walk order (kube-scheduler's activeQ):
// QueueSort order, ties in queue order. It persists across cycles, so a
// cycle that blocks at the head of a long queue visits the head, not the
// queue: a job keeps its place while it waits, jobs that become active
// are put in theirs, and the list is sorted anew only after an event that
// may change the QueueSort's order (see sortEvents) or a Resort. Parked
// jobs stay in the list, skipped, until it is rebuilt.
type activeList struct {
	items []*entry
	// fresh are the entries made active since the list was last put in
	// order that are not in items yet.
	fresh []*entry
	// gone counts entries in items that left the queue; dirty: the order
	// of items may be wrong (a Resort).
	gone  int
	dirty bool
}

// toActive puts e in the active set.
func (q *Queue) toActive(e *entry) {
	e.at = inActive
	q.active++
	if !e.listed {
		e.listed = true
		q.list.fresh = append(q.list.fresh, e)
	}
}

// sortEvents returns the events after which the QueueSort's order among
// waiting jobs may change: what its EnqueueExtensions.Events says (asked
// with no job), EventAlways for a QueueSort that declares none (it is
// re-sorted every cycle), nothing without a QueueSort (queue order).
func (q *Queue) sortEvents(c *framework.Cycle) framework.Events {
	qs := q.p.QueueSort
	if qs == nil {
		return 0
	}
	if ee, ok := qs.(framework.EnqueueExtensions); ok {
		return ee.Events(c, nil)
	}
	return framework.EventAlways
}

// prepare puts the active list in walk order for the cycle, ev being the
// events since the previous one.
func (q *Queue) prepare(c *framework.Cycle, ev framework.Events) {
	l := &q.list
	se := q.sortEvents(c)
	if l.dirty || se&(ev|framework.EventAlways) != 0 || 4*len(l.fresh) > len(l.items)+16 || 2*q.active+64 < len(l.items) {
		// Rebuild: every active job, sorted.
		items := l.items[:0]
		for _, e := range l.items {
			if e.at == inActive {
				items = append(items, e)
			} else {
				e.listed = false
			}
		}
		clear(l.items[len(items):])
		items = append(items, l.fresh...)
		q.sortEntries(c, items)
		l.items, l.fresh, l.gone, l.dirty = items, l.fresh[:0], 0, false
		return
	}
	if l.gone > 0 {
		items := l.items[:0]
		for _, e := range l.items {
			if e.at != gone {
				items = append(items, e)
			}
		}
		clear(l.items[len(items):])
		l.items, l.gone = items, 0
	}
	for _, e := range l.fresh {
		q.insert(c, e, 0)
	}
	l.fresh = l.fresh[:0]
}

// insert puts the listed entry e in items at its place in walk order,
// searching from index from on.
func (q *Queue) insert(c *framework.Cycle, e *entry, from int) int {
	l := &q.list
	rest := l.items[from:]
	k, _ := slices.BinarySearchFunc(rest, e, func(a, b *entry) int {
		if d := q.entryOrder(c, a, b); d != 0 {
			return d
		}
		return -1 // after its equals: they were there first
	})
	l.items = slices.Insert(l.items, from+k, e)
	return from + k
}

// sortEntries sorts entries in walk order: by the QueueSort (its keys for
// a KeyedSort), ties in queue order.
func (q *Queue) sortEntries(c *framework.Cycle, es []*entry) {
	pos := func(e *entry) int {
		i, _ := c.Snap.Pending.Order(e.js)
		return i
	}
	ks, keyed := q.p.QueueSort.(framework.KeyedSort)
	if !keyed {
		slices.SortFunc(es, func(a, b *entry) int {
			if d := q.r.WalkOrder(c, a.js, b.js); d != 0 {
				return d
			}
			return cmp.Compare(a.job.ID, b.job.ID)
		})
		return
	}
	type kp struct {
		key framework.SortKey
		pos int
		e   *entry
	}
	k := make([]kp, len(es))
	for i, e := range es {
		k[i] = kp{q.keyOf(c, ks, e), pos(e), e}
	}
	slices.SortFunc(k, func(a, b kp) int {
		if d := framework.CompareKeys(a.key, b.key); d != 0 {
			return d
		}
		return cmp.Compare(a.pos, b.pos)
	})
	for i := range k {
		es[i] = k[i].e
	}
}

// Walk tries the active jobs in walk order, with try, until try reports
// that an Admit plugin blocked the rest; jobs woken within the cycle (the
// next member of a bucket whose head started, jobs that room a Preempt
// plugin gave back wakes) are put in their places after the current one.
// Besides whether to go on, try reports whether a Preempt plugin committed
// while the job was tried and whether a Reserve plugin asked for a
// Resort (the Runtime's Try).
func (q *Queue) Walk(c *framework.Cycle, try func(*cluster.JobState) (cont, committed, resort bool)) {
	l := &q.list
	for i := 0; i < len(l.items); i++ {
		e := l.items[i]
		if e.at != inActive {
			continue
		}
		if e.recheck && e.wokeAt != c.St.Now().Version() && !q.stillWakes(c, e) {
			q.repark(c, e)
			continue
		}
		cont, committed, resort := try(e.js)
		if !cont {
			return
		}
		if committed {
			q.WakeMid(c, e.js)
		}
		for _, f := range l.fresh {
			q.insert(c, f, i+1)
		}
		l.fresh, q.woke = l.fresh[:0], q.woke[:0]
		if resort {
			rest := l.items[i+1:]
			slices.SortStableFunc(rest, func(a, b *entry) int { return q.r.WalkOrder(c, a.js, b.js) })
			l.dirty = true
		}
	}
}
