package framework

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
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
	// shapes gives the buckets of one placement shape one memo of the
	// built-in placement's hint, valid within one wake pass (pass), while
	// the ledger it was asked on is unchanged.
	shapes map[string]*shapeFit
	pass   uint64
	// parked lists the jobs in the order they were parked, for the
	// flush; an item whose job was parked again since is skipped.
	parked []parkItem
	key    []byte
}

// shapeFit is the placement's hint for one placement shape, answered in
// wake pass pass.
type shapeFit struct {
	pass uint64
	fits bool
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
	pl    Plugin
	ev    Events
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
	union   Events
	// guessed: a hint is DefaultEvents of a plugin that declares none, so
	// the periodic flush retries the bucket (see flush).
	guessed bool
	// shape is the memo of the placement's hint for the members'
	// placement shape; dead: the bucket emptied and left the map.
	shape *shapeFit
	dead  bool
}

// hints returns the events of the plugins that turned js away, and
// whether one of them asked for EventAlways.
func (q *schedQueue) hints(c *Cycle, js *cluster.JobState, rejector Plugin) ([]hint, bool) {
	if rejector != nil {
		ev := eventsOf(c, rejector, js)
		return []hint{{pl: rejector, ev: ev}}, ev&EventAlways != 0
	}
	p := &q.r.p
	// An Admit plugin that let js through may still need every attempt
	// of it (head-of-line blocking reads Cycle.Failed): EventAlways from
	// any of them keeps js active. Their other events do not matter: a
	// job that cannot be placed does not start, whatever they answer.
	for _, a := range p.Admit {
		if ee, ok := a.(EnqueueExtensions); ok && ee.Events(c, js)&EventAlways != 0 {
			return nil, true
		}
	}
	hs := []hint{{ev: EventRoom | EventNodes, place: true}}
	add := func(pl Plugin, place bool) bool {
		ev := eventsOf(c, pl, js)
		if ev != 0 {
			hs = append(hs, hint{pl: pl, ev: ev, place: place})
		}
		return ev&EventAlways != 0
	}
	if p.Size != nil && add(p.Size, true) {
		return nil, true
	}
	for _, f := range p.Filter {
		if _, ok := f.(NodeRole); !ok && add(f, true) {
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
func (u *unschedulable) park(c *Cycle, q *schedQueue, e *entry, hs []hint) {
	b := e.from
	if b == nil || b.dead || !sameHints(b.hints, hs) {
		b = u.bucketOf(e, hs)
	}
	e.at, e.b, e.parkedAt, e.from = inUnschedulable, b, c.Snap.Now, nil
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
		for _, h := range hs {
			b.union |= h.ev
			if _, ok := h.pl.(EnqueueExtensions); h.pl != nil && !ok {
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
func (u *unschedulable) wake(c *Cycle, q *schedQueue, ev Events) {
	if ev == 0 || u.n == 0 {
		return
	}
	for _, b := range u.sorted() {
		if b.dead || !q.wakes(c, b, ev) {
			continue
		}
		e := b.members[0]
		q.unpark(c, e)
		e.from = b
	}
}

// sorted returns the live buckets in the order they were made (waking
// may empty some: they are marked dead, and stay in the slice returned),
// and starts a new pass of the placement's hint memo.
func (u *unschedulable) sorted() []*bucket {
	if u.dead > 0 {
		u.order = slices.DeleteFunc(u.order, func(b *bucket) bool { return b.dead })
		u.dead = 0
	}
	u.pass++
	return u.order
}

// shapeOf returns the hint memo of j's placement shape.
func (u *unschedulable) shapeOf(j *cluster.Job) *shapeFit {
	k := placeKey(u.key[:0], j)
	u.key = k
	if f, ok := u.shapes[string(k)]; ok {
		return f
	}
	if u.shapes == nil || len(u.shapes) >= maxShapes {
		u.shapes = map[string]*shapeFit{}
	}
	f := &shapeFit{}
	u.shapes[string(k)] = f
	return f
}

// wakeAfter moves to the active set the parked jobs that come after cur
// in the walk and that the room on the Statement's ledgers now may let
// start (a Preempt plugin gave room back), and returns them.
func (u *unschedulable) wakeAfter(c *Cycle, q *schedQueue, cur *cluster.JobState) []*cluster.JobState {
	var out []*cluster.JobState
	for _, b := range u.sorted() {
		if b.dead || !q.wakes(c, b, EventRoom|EventRunning) {
			continue
		}
		for _, e := range append([]*entry(nil), b.members...) {
			if q.r.walkOrder(c, e.js, cur) > 0 {
				q.leave(e)
				q.toActive(e)
				out = append(out, e.js)
				e.from = b
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
func (u *unschedulable) flush(q *schedQueue, now float64) {
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
			head.from = b
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
func (q *schedQueue) started(js *cluster.JobState) {
	e := q.entries[js.Job.ID]
	if e == nil || e.from == nil {
		return
	}
	b := e.from
	e.from = nil
	if q.un.buckets[b.key] != b || len(b.members) == 0 {
		return
	}
	m := b.members[0]
	q.leave(m)
	q.toActive(m)
	m.from = b
	q.woke = append(q.woke, m.js)
}

// unpark moves a parked job to the active set, or to the backoff set while
// its backoff lasts.
func (q *schedQueue) unpark(c *Cycle, e *entry) {
	q.leave(e)
	if c != nil && c.Snap.Now < e.backoffUntil {
		q.bo.add(e)
		return
	}
	q.toActive(e)
}

// wakes reports whether the events ev wake bucket b: some hint declared
// one of them and its plugin agrees, the built-in placement agreeing to
// EventRoom when the job fits on the cycle's ledgers at one of its sizes.
func (q *schedQueue) wakes(c *Cycle, b *bucket, ev Events) bool {
	if b.union&ev == 0 {
		return false
	}
	rep := b.members[0].js
	for _, h := range b.hints {
		m := h.ev & ev
		if m == 0 {
			continue
		}
		if h.place {
			if m&^EventRoom != 0 && (h.pl == nil || requeue(c, h.pl, rep, m&^EventRoom)) {
				return true
			}
			if m&EventRoom != 0 && h.pl == nil && q.fitsNow(c, b, rep) {
				return true
			}
			continue
		}
		if requeue(c, h.pl, rep, m) {
			return true
		}
	}
	return false
}

// requeue asks pl's hint; a plugin without one agrees.
func requeue(c *Cycle, pl Plugin, js *cluster.JobState, ev Events) bool {
	if ee, ok := pl.(EnqueueExtensions); ok {
		return ee.Requeue(c, js, ev)
	}
	return true
}

// shapeKey appends what makes jobs alike for the queue: class, priority,
// tenant, utility and the placement shape.
func shapeKey(k []byte, j *cluster.Job) []byte {
	k = append(k, byte(j.Class))
	k = binary.AppendVarint(k, int64(j.Priority))
	k = binary.AppendUvarint(k, uint64(len(j.Tenant)))
	k = append(k, j.Tenant...)
	// The utility ranks jobs of one priority (the elastic weight).
	if j.Utility != nil {
		k = binary.LittleEndian.AppendUint64(k, math.Float64bits(j.Utility.Value(j.Work)))
	}
	return placeKey(k, j)
}

// placeKey appends what placement reads of a job: its replica groups
// (names, demands, counts and their bounds, node constraints).
func placeKey(k []byte, j *cluster.Job) []byte {
	for _, g := range j.Groups {
		for _, v := range g.Demand {
			k = binary.AppendVarint(k, v)
		}
		k = binary.AppendUvarint(k, uint64(len(g.Name)))
		k = append(k, g.Name...)
		k = binary.AppendVarint(k, int64(g.Replicas))
		k = binary.AppendVarint(k, int64(g.Min))
		k = binary.AppendVarint(k, int64(g.Max))
		if g.Constraint != nil {
			ck := g.Constraint.Key()
			k = binary.AppendUvarint(k, uint64(len(ck))+1)
			k = append(k, ck...)
		} else {
			k = binary.AppendUvarint(k, 0)
		}
	}
	return append(k, 0xff)
}

// fitsNow is Runtime.fitsNow for b's head rep, memoised by placement
// shape (replica groups with their node constraints) for the wake pass:
// buckets that differ only in class, priority, tenant or utility share
// the answer.
func (q *schedQueue) fitsNow(c *Cycle, b *bucket, rep *cluster.JobState) bool {
	f := b.shape
	if f.pass != q.un.pass {
		f.pass, f.fits = q.un.pass, q.r.fitsNow(c, rep)
	}
	return f.fits
}

// fitsNow reports whether js fits at one of its sizes on the Statement's
// Now ledger as it is, with nothing taken. A profile with a Picker score
// plugin (a cursor that what-ifs move) says yes without trying. A size
// for which the free room cannot hold the replicas at all (roomFor) is
// not placed: on a long queue most buckets' heads are asked at every
// release of room, and most releases are far too small for a gang.
func (r *Runtime) fitsNow(c *Cycle, js *cluster.JobState) bool {
	if len(r.pickers) > 0 {
		return true
	}
	l := c.St.Now()
	l.Fork()
	defer l.Revert()
	for _, counts := range r.sizes(c, js) {
		if r.p.Place == nil && !roomFor(l, js.Job, counts) {
			continue
		}
		// As placeSizes: the first size that fits is taken (and given
		// back by the Revert).
		if _, st := r.place(c, l, js, counts); st.IsSuccess() {
			return true
		}
	}
	return false
}

// roomFor reports whether the free room on l could hold counts of j at
// all: for every group with replicas, the replicas of its demand that fit
// on the ready nodes it may use (its role and node constraints), summed
// over the nodes, are at least its count. It is necessary for any
// placement the Runtime makes (the built-in strategies and the generic
// path take a replica's demand from one eligible node, all or nothing), so
// a false answer is the placement's own; it costs one pass over the nodes
// per group with no allocation, where a placement that fails costs a scan
// per replica.
func roomFor(l *placement.Ledger, j *cluster.Job, counts []int) bool {
	nodes := l.Snapshot().Nodes
	for g, want := range counts {
		if want <= 0 {
			continue
		}
		gr := &j.Groups[g]
		if gr.Demand.IsZero() {
			continue
		}
		set := l.Eligible(j, g)
		have := 0
		for i, n := range nodes {
			if !n.Ready || n.Gone || n.Role != "" && n.Role != gr.Name || !set.Has(i) {
				continue
			}
			m := replicasIn(l.Free(i), gr.Demand)
			if m < 0 {
				have = want // a demand of nothing positive fits anywhere
			}
			if have += max(m, 0); have >= want {
				break
			}
		}
		if have < want {
			return false
		}
	}
	return true
}

// replicasIn is how many replicas of demand d fit in free, one after
// another; -1 when d asks for nothing positive.
func replicasIn(free, d resource.Vector) int {
	k := -1
	for r, v := range d {
		if v <= 0 {
			continue
		}
		if free[r] < v {
			return 0
		}
		if m := int(free[r] / v); k < 0 || m < k {
			k = m
		}
	}
	return k
}

// walkOrder compares a and b as the walk orders them: by the QueueSort,
// then by queue position.
func (r *Runtime) walkOrder(c *Cycle, a, b *cluster.JobState) int {
	if qs := r.p.QueueSort; qs != nil {
		if d := qs.Compare(c, a, b); d != 0 {
			return d
		}
	}
	return queueOrder(c, a, b)
}

// queueOrder compares a and b by their positions in the pending queue.
func queueOrder(c *Cycle, a, b *cluster.JobState) int {
	i, ok := c.Snap.Pending.Order(a)
	if !ok {
		i = math.MaxInt
	}
	j, ok := c.Snap.Pending.Order(b)
	if !ok {
		j = math.MaxInt
	}
	return cmp.Compare(i, j)
}
