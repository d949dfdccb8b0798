package queue

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// unschedulable is the set of parked jobs (kube-scheduler's
// unschedulablePods), in buckets of jobs alike: the same class, priority,
// tenant, replica groups (names, demands, node constraints, counts) and
// the same hints. The queue asks a bucket's hints once, for one member,
// and wakes all of them or none: on a long queue most waiting jobs are of
// a few shapes, so a cycle's cost follows the shapes, not the jobs.
type unschedulable struct {
	buckets map[string]*bucket
	// order lists the buckets in the order they were made, which is the
	// same in every run of the same inputs: hints are asked in it. A
	// bucket that empties is marked dead and left there until the next
	// pass (sorted) drops the dead in one sweep.
	order []*bucket
	dead  int
	n     int
	// shapes gives the buckets of one shape (the bucket key without the
	// hints) one memo of the built-in placement's hint, valid within one wake pass (pass), while
	// the ledger it was asked on is unchanged.
	shapes map[string]*shapeFit
	// places holds the placement shapes' memos (shapeFit.place).
	places map[string]*shapeFit
	// shapesGen counts the times shapes started afresh.
	shapesGen int
	pass      uint64
	// passAt is the Now ledger's version the pass's answers are for.
	passAt uint64
	// parked lists the jobs in the order they were parked, for the
	// flush; an item whose job was parked again since is skipped.
	parked []parkItem
	key    []byte
	// byShape: the Runtime's fit answer reads the placement shape only
	// (Runtime.FitsByShape), so the memo is shared more widely.
	byShape bool
}

// shapeFit is the placement's hint for one shape (shapeOf), answered in
// wake pass pass.
type shapeFit struct {
	pass uint64
	fits bool
	// place, when the memo is per bucket key (not FitsByShape), is the
	// memo of its placement shape, shared by the buckets that differ only
	// in class, priority, tenant or utility: a yes, or a no that is
	// framework.NoRoom, which no plugin can turn into a yes.
	place *shapeFit
}

// maxShapes bounds the shapes kept: past it the map starts afresh (the
// buckets keep their memos; new buckets of an old shape get a new one).
const maxShapes = 4096

type parkItem struct {
	at float64
	e  *entry
}

// hint is one plugin's events for a parked job. pl is nil for the
// built-in placement; place marks the placement plugins (Size, Filter,
// Score, Place and the built-in), whose EventRoom the queue checks itself
// by placing the job on the cycle's fresh ledger.
type hint struct {
	pl    framework.Plugin
	ev    framework.Events
	place bool
}

// bucket is a set of parked jobs alike, in walk order. Whether a member
// fails is a function of its shape, its hints and the cluster (the
// EnqueueExtensions contract), so the bucket wakes one member at a time:
// its head, then, each time the one woken starts, the next (the others
// would fail again at once, as the head did). A plugin whose answer for
// jobs alike may differ (random draws that decide success) keeps such
// jobs out of the queue with EventAlways.
type bucket struct {
	key     string
	members []*entry
	hints   []hint
	union   framework.Events
	// guessed: a hint is DefaultEvents of a plugin that declares none, so
	// the periodic flush retries the bucket (see flush).
	guessed bool
	// shape is the memo of the placement's hint for the members'
	// shape (shapeOf); dead: the bucket emptied and left the map.
	shape *shapeFit
	dead  bool
	// swept: a pass dropped the dead bucket from the wake order.
	swept bool
	// shapeGen is the shapesGen of shape.
	shapeGen int
}

// hints returns the events of the plugins that turned js away, and
// whether one of them asked for EventAlways.
func (q *Queue) hints(c *framework.Cycle, js *cluster.JobState, rejector framework.Plugin) ([]hint, bool) {
	if rejector != nil {
		ev := eventsOf(c, rejector, js)
		return []hint{{pl: rejector, ev: ev}}, ev&framework.EventAlways != 0
	}
	p := &q.p
	// An Admit plugin that let js through may still need every attempt
	// of it (head-of-line blocking reads Cycle.Failed): EventAlways from
	// any of them keeps js active. Their other events do not matter: a
	// job that cannot be placed does not start, whatever they answer.
	for _, a := range p.Admit {
		if ee, ok := a.(framework.EnqueueExtensions); ok && ee.Events(c, js)&framework.EventAlways != 0 {
			return nil, true
		}
	}
	hs := []hint{{ev: framework.EventRoom | framework.EventNodes, place: true}}
	add := func(pl framework.Plugin, place bool) bool {
		ev := eventsOf(c, pl, js)
		if ev != 0 {
			hs = append(hs, hint{pl: pl, ev: ev, place: place})
		}
		return ev&framework.EventAlways != 0
	}
	if p.Size != nil && add(p.Size, true) {
		return nil, true
	}
	for _, f := range p.Filter {
		if _, ok := f.(framework.NodeRole); !ok && add(f, true) {
			return nil, true
		}
	}
	// Score plugins are not asked: a score ranks the nodes that pass the
	// filters and have room, so it decides where a job goes, not whether.
	if p.Place != nil && add(p.Place, true) {
		return nil, true
	}
	for _, pp := range p.Preempt {
		if add(pp, false) {
			return nil, true
		}
	}
	return hs, false
}

// park puts e in the bucket of its shape and hints. A head woken from a
// bucket that fails again with the same hints goes back to that bucket
// (its key would be the same: the job's spec is the entry's) without its
// key being built and looked up.
func (u *unschedulable) park(c *framework.Cycle, q *Queue, e *entry, hs []hint) {
	b := e.from
	switch {
	case b == nil || !sameHints(b.hints, hs):
		b = u.bucketOf(e, hs)
	case b.dead:
		b = u.revive(b, e, hs)
	}
	e.at, e.b, e.parkedAt, e.from, e.recheck = inUnschedulable, b, c.Snap.Now, nil, false
	// In walk order: a job parked now is tried after the members it
	// follows in the walk.
	i, _ := slices.BinarySearchFunc(b.members, e, func(m, x *entry) int {
		if d := q.entryOrder(c, m, x); d != 0 {
			return d
		}
		return -1
	})
	b.members = slices.Insert(b.members, i, e)
	u.n++
	if b.guessed {
		u.parked = append(u.parked, parkItem{at: e.parkedAt, e: e})
	}
}

// revive returns the bucket for e, woken from the bucket b that emptied
// as it woke (most buckets of a long queue hold one job), now that e
// failed again with the same hints: b itself, alive again, unless a
// bucket of its key was made since, which e joins. It is what bucketOf
// would return, a bucket of the same key and hints, without building the
// key and making the bucket anew.
func (u *unschedulable) revive(b *bucket, e *entry, hs []hint) *bucket {
	if u.buckets[b.key] != nil {
		return u.bucketOf(e, hs)
	}
	b.dead, b.hints, b.union, b.guessed = false, hs, 0, false
	for _, h := range hs {
		b.union |= h.ev
		if _, ok := h.pl.(framework.EnqueueExtensions); h.pl != nil && !ok {
			b.guessed = true
		}
	}
	if b.shapeGen != u.shapesGen {
		// The memo bucketOf would give it (the shapes started afresh).
		b.shape = u.shapeOf(e.js.Job)
		b.shapeGen = u.shapesGen
	}
	u.buckets[b.key] = b
	// Last in the wake order, where bucketOf would put a new bucket
	// (out of its place among the dead if no pass swept it yet).
	if !b.swept {
		if i := slices.Index(u.order, b); i >= 0 {
			u.order = slices.Delete(u.order, i, i+1)
			u.dead--
		}
	}
	b.swept = false
	u.order = append(u.order, b)
	return b
}

// sameHints reports whether two hint lists give the same bucket key:
// the same events from plugins of the same names, in order.
func sameHints(a, b []hint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ev != b[i].ev || (a[i].pl == nil) != (b[i].pl == nil) || a[i].pl != nil && a[i].pl.Name() != b[i].pl.Name() {
			return false
		}
	}
	return true
}

// bucketOf returns the bucket of e's shape and hints hs, made if need be.
func (u *unschedulable) bucketOf(e *entry, hs []hint) *bucket {
	k := shapeKey(u.key[:0], e.js.Job)
	for _, h := range hs {
		k = binary.AppendUvarint(k, uint64(h.ev))
		if h.pl != nil {
			k = append(k, h.pl.Name()...)
		}
		k = append(k, 0)
	}
	u.key = k
	b := u.buckets[string(k)]
	if b == nil {
		b = &bucket{key: string(k), hints: hs}
		b.shape = u.shapeOf(e.js.Job) // after the key is copied: it reuses u.key
		b.shapeGen = u.shapesGen
		for _, h := range hs {
			b.union |= h.ev
			if _, ok := h.pl.(framework.EnqueueExtensions); h.pl != nil && !ok {
				b.guessed = true
			}
		}
		u.buckets[b.key] = b
		u.order = append(u.order, b)
	}
	return b
}

// remove takes e out of its bucket.
func (u *unschedulable) remove(e *entry) {
	b := e.b
	for i, m := range b.members {
		if m == e {
			b.members = append(b.members[:i], b.members[i+1:]...)
			break
		}
	}
	if len(b.members) == 0 {
		delete(u.buckets, b.key)
		b.dead = true
		u.dead++
	}
	e.b = nil
	u.n--
}

// wake moves to the active set (or the backoff set) the members of every
// bucket that the events ev wake.
func (u *unschedulable) wake(c *framework.Cycle, q *Queue, ev framework.Events) {
	if ev == 0 || u.n == 0 {
		return
	}
	for _, b := range u.sorted() {
		if b.dead {
			continue
		}
		wake, byRoom := q.wakes(c, b, ev)
		if !wake {
			continue
		}
		e := b.members[0]
		q.unpark(c, e)
		e.from = b
		q.woken(c, e, byRoom, ev)
	}
}

// sorted returns the live buckets in the order they were made (waking
// may empty some: they are marked dead, and stay in the slice returned),
// and starts a new pass of the placement's hint memo.
func (u *unschedulable) sorted() []*bucket {
	if u.dead > 0 {
		u.order = slices.DeleteFunc(u.order, func(b *bucket) bool {
			b.swept = b.dead
			return b.dead
		})
		u.dead = 0
	}
	u.pass++
	u.passAt = 0 // not a version: stillWakes starts a pass of its own
	return u.order
}

// shapeOf returns the hint memo of j's shape. When the Runtime's answer
// reads only the placement shape (the built-in placement, no Size or
// Place plugin: FitsByShape) that is the shape; otherwise it is the
// bucket key without the hints, the whole of what makes jobs alike
// (class, priority, tenant and utility as well): a Size, Filter or Score
// plugin may read any of them (a Filter that refuses one tenant's jobs),
// so buckets that differ in one of them may differ in whether they fit
// (TestQueueShapeMemoKeepsTenantsApart).
func (u *unschedulable) shapeOf(j *cluster.Job) *shapeFit {
	var k []byte
	if u.byShape {
		k = framework.AppendPlaceKey(u.key[:0], j)
	} else {
		k = shapeKey(u.key[:0], j)
	}
	u.key = k
	f, ok := u.shapes[string(k)]
	if !ok {
		if u.shapes == nil || len(u.shapes) >= maxShapes {
			u.shapes = map[string]*shapeFit{}
			u.places = map[string]*shapeFit{}
			u.shapesGen++
		}
		f = &shapeFit{}
		u.shapes[string(k)] = f
	}
	if !u.byShape && f.place == nil {
		// The memo of the placement shape, for answers that fit (see
		// fitsNow); made after f's key is copied (it reuses u.key).
		k = framework.AppendPlaceKey(u.key[:0], j)
		u.key = k
		p := u.places[string(k)]
		if p == nil {
			p = &shapeFit{}
			u.places[string(k)] = p
		}
		f.place = p
	}
	return f
}

// wakeAfter moves to the active set the parked jobs that come after cur
// in the walk and that the room on the Statement's ledgers now may let
// start (a Preempt plugin gave room back), and returns them.
func (u *unschedulable) wakeAfter(c *framework.Cycle, q *Queue, cur *cluster.JobState) []*cluster.JobState {
	var out []*cluster.JobState
	ev := framework.EventRoom | framework.EventRunning
	for _, b := range u.sorted() {
		if b.dead {
			continue
		}
		wake, byRoom := q.wakes(c, b, ev)
		if !wake {
			continue
		}
		for _, e := range append([]*entry(nil), b.members...) {
			if q.r.WalkOrder(c, e.js, cur) > 0 {
				q.leave(e)
				q.toActive(e)
				out = append(out, e.js)
				e.from = b
				q.woken(c, e, byRoom, ev)
				break
			}
		}
	}
	return out
}

// flush tries again the jobs parked for FlushAfter or longer, whatever
// their events, when one of their hints is a guess (DefaultEvents of a
// plugin that declares none): such a hint may be wrong, and the flush
// bounds what that costs to latency, never a job waiting for good. Hints
// that are declared are their plugin's contract, which the queue's tests
// check against the exhaustive walk (framework.CheckQueue), and the
// placement's own are exact; flushing them would only cost work (on a
// replayed trace of months, a retry of every bucket every five minutes
// was most of a replay).
// One member of a bucket is tried per flush (the one parked longest); the
// others are parked anew, and the whole bucket wakes if that member
// starts (the hints were wrong for it). On a long queue a flush of every
// parked job every five minutes would cost more than all the rest.
func (u *unschedulable) flush(q *Queue, now float64) {
	if q.opts.FlushAfter <= 0 {
		return
	}
	i := 0
	var again []parkItem
	tried := map[*bucket]bool{}
	for ; i < len(u.parked) && u.parked[i].at+q.opts.FlushAfter <= now; i++ {
		it := u.parked[i]
		e := it.e
		if e.at != inUnschedulable || e.parkedAt != it.at || q.entries[e.job.ID] != e {
			continue
		}
		if b := e.b; !tried[b] {
			tried[b] = true
			head := b.members[0]
			q.unpark(nil, head)
			head.from, head.recheck = b, false
			if head == e {
				continue
			}
		}
		e.parkedAt = now
		again = append(again, parkItem{at: now, e: e})
	}
	if i > 0 {
		u.parked = append(u.parked[:0], u.parked[i:]...)
	}
	u.parked = append(u.parked, again...)
}

// started is told that js started, or waits for room a Preempt plugin
// nominated for it: when it was woken as the head of a bucket, the next
// member is woken (and handed to the walk, q.woke), since it may do as
// well.
func (q *Queue) Started(js *cluster.JobState) {
	e := q.entries[js.Job.ID]
	if e == nil || e.from == nil {
		return
	}
	b, recheck := e.from, e.recheck
	e.from, e.recheck = nil, false
	if q.un.buckets[b.key] != b || len(b.members) == 0 {
		return
	}
	m := b.members[0]
	q.leave(m)
	q.toActive(m)
	// Woken for the reason its head was.
	m.from, m.recheck, m.wokeAt, m.wokeEv = b, recheck, e.wokeAt, e.wokeEv
	q.woke = append(q.woke, m.js)
}

// unpark moves a parked job to the active set, or to the backoff set while
// its backoff lasts.
func (q *Queue) unpark(c *framework.Cycle, e *entry) {
	q.leave(e)
	if c != nil && c.Snap.Now < e.backoffUntil {
		q.bo.add(e)
		return
	}
	q.toActive(e)
}

// shapeKey appends what makes jobs alike for the queue: class, priority,
// tenant, utility and the placement shape.
func shapeKey(k []byte, j *cluster.Job) []byte {
	k = append(k, byte(j.Class))
	k = binary.AppendVarint(k, int64(j.Priority))
	k = binary.AppendUvarint(k, uint64(len(j.Tenant)))
	k = append(k, j.Tenant...)
	// The utility ranks jobs of one priority (the elastic weight), at the
	// estimated run time as the plugins read it.
	if j.Utility != nil {
		k = binary.LittleEndian.AppendUint64(k, math.Float64bits(j.Utility.Value(j.EstimatedWork())))
	}
	return framework.AppendPlaceKey(k, j)
}

// fitsNow is Runtime.FitsNow for b's head rep, memoised by shape
// (shapeOf) for the wake pass. When the memo is per bucket key, two
// answers are also taken for the other buckets of the placement shape:
// Fits (waking a job the exhaustive walk would try anyway changes no
// decision: it is tried, and parked again if it fails) and NoRoom (it
// reads the placement shape alone). Any other no is not shared: it would
// keep a job asleep that another tenant's refusal says nothing of. For
// profiles whose answers read only the placement shape the two memos
// agree, so this wakes the same jobs as a memo per placement shape.
func (q *Queue) fitsNow(c *framework.Cycle, b *bucket, rep *cluster.JobState) bool {
	f := b.shape
	if f.pass == q.un.pass {
		return f.fits
	}
	f.pass = q.un.pass
	p := f.place
	if p != nil && p.pass == q.un.pass {
		f.fits = p.fits
		return f.fits
	}
	fit := q.r.FitsNow(c, rep)
	f.fits = fit == framework.Fits
	if p != nil && fit != framework.NoFit {
		p.pass, p.fits = q.un.pass, f.fits
	}
	return f.fits
}
