package queue

import (
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// The hints: whether an event wakes a parked bucket (wakes, at the start
// of a cycle or after a Preempt plugin's commit), and, for a job the
// placement's room answer woke, whether it still would when the walk
// reaches it (stillWakes).

// woken notes why e was just woken: by the placement's answer that it
// fits on the ledger as it is now (byRoom), for events ev.
func (q *Queue) woken(c *framework.Cycle, e *entry, byRoom bool, ev framework.Events) {
	e.recheck, e.wokeAt, e.wokeEv = byRoom, c.St.Now().Version(), ev
}

// stillWakes asks again, for e woken by the placement's answer alone
// (recheck) on a ledger that has changed since (earlier jobs in the walk
// started), whether its bucket's hints would wake it now: the placement's
// answer on the ledger as it is, then the other hints for the events it
// was woken with. Trying it only to fail would change nothing but its
// backoff and its Wait reason: the placement would fail, and no other
// plugin's hint says it wants another try (the contract by which jobs are
// parked at all). This is the wake pass done when the walk reaches the
// job instead of when the cycle begins; on a long queue each release of
// room woke every bucket whose head fitted in it, and all but the first
// failed.
func (q *Queue) stillWakes(c *framework.Cycle, e *entry) bool {
	b := e.from
	u := &q.un
	if v := c.St.Now().Version(); u.passAt != v {
		u.pass++ // the memo of fitsNow is per version of the ledger
		u.passAt = v
	}
	if q.fitsNow(c, b, e.js) {
		return true
	}
	for _, h := range b.hints {
		if agrees(c, h, e.js, h.ev&e.wokeEv) {
			return true
		}
	}
	return false
}

// repark puts e, woken and active, back in its bucket, as Failed parks a
// job whose placement failed, but for its failures and backoff: it was
// not tried.
func (q *Queue) repark(c *framework.Cycle, e *entry) {
	q.active--
	q.un.park(c, q, e, e.from.hints)
	q.ev.parked = true
}

// wakes reports whether the events ev wake bucket b: some hint declared
// one of them and its plugin agrees, the built-in placement agreeing to
// EventRoom when the job fits on the cycle's ledgers at one of its sizes.
//
// byRoom reports that the placement's answer woke it, before any later
// hint was asked (stillWakes asks them if need be).
func (q *Queue) wakes(c *framework.Cycle, b *bucket, ev framework.Events) (wake, byRoom bool) {
	if b.union&ev == 0 {
		return false, false
	}
	rep := b.members[0].js
	for _, h := range b.hints {
		m := h.ev & ev
		if agrees(c, h, rep, m) {
			return true, false
		}
		if h.pl == nil && m&framework.EventRoom != 0 && q.fitsNow(c, b, rep) {
			return true, true
		}
	}
	return false, false
}

// agrees reports whether hint h wakes js for the events m, apart from
// the placement's EventRoom, which the queue answers itself (fitsNow): the
// built-in placement agrees to its other events, a plugin through its
// Requeue.
func agrees(c *framework.Cycle, h hint, js *cluster.JobState, m framework.Events) bool {
	if h.place {
		m &^= framework.EventRoom
	}
	return m != 0 && (h.pl == nil || requeue(c, h.pl, js, m))
}

// eventsOf returns pl's events for js, DefaultEvents for a plugin that
// declares none.
func eventsOf(c *framework.Cycle, pl framework.Plugin, js *cluster.JobState) framework.Events {
	if ee, ok := pl.(framework.EnqueueExtensions); ok {
		return ee.Events(c, js)
	}
	return framework.DefaultEvents
}

// requeue asks pl's hint; a plugin without one agrees.
func requeue(c *framework.Cycle, pl framework.Plugin, js *cluster.JobState, ev framework.Events) bool {
	if ee, ok := pl.(framework.EnqueueExtensions); ok {
		return ee.Requeue(c, js, ev)
	}
	return true
}
