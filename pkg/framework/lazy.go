package framework

import (
	"cmp"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
)

// The index on the lazy walk (Cycle.inOrder: no QueueSort, or a queue in
// its order already) of a profile without Preempt plugins. The lazy walk
// runs one body per queued job, in queue order: skip, then try and tried,
// until try returns false. With the index the same body runs, in the
// same order, only for the jobs where it may do something (walkLazy); at
// every other position the full walk meets a job parked since an earlier
// cycle whose class is not awake or has failed in this cycle, whose own
// state is the one it was parked with (QueueLog's contract, see follow),
// so that skip only calls Statement.wait with the reason it was parked
// with: that records nothing when the executor shows that reason (the
// job is not to be rechecked) and no Wait was recorded for it in this
// cycle so far (no Wait for it was recorded before the walk reached it).

// walkLazy is the lazy walk with the index. It visits, in queue order
// (the queue's Order numbers, which do not change within a cycle), and
// each at most once:
//   - the active jobs (queued, not parked);
//   - the awake classes' parked members, each class's in queue order
//     (jobClass.jobs) until the class fails: they are candidates until
//     then (see skip), and parked jobs of a failed class afterwards;
//   - the rechecked jobs (a Wait was recorded for them since a walk last
//     met them);
//   - the queued jobs a Wait is recorded for during the walk, ahead of
//     the job being tried (Statement.waited is read after every visit):
//     skip records their parked reason again where the full walk would.
//
// It stops where try returns false; the rechecked jobs it did not reach
// stay to be rechecked (the full walk did not meet them either). A Wait
// recorded without its job (Statement.blind) hides whose reason changed:
// the rest of the walk is then the full one (walkRest; finish drops the
// index).
func (r *Runtime) walkLazy(c *Cycle) {
	q, pq, st := r.q, c.Snap.Pending, c.St
	visits := q.lazyVisits(c)
	h := q.lazyClasses(c)
	ahead, ai := q.ahead[:0], 0
	read := 0 // st.waited read so far
	last, begun, stopped := 0, false, false
	for vi := 0; ; {
		for ; read < len(st.waited); read++ {
			js := st.waited[read]
			if pos, ok := pq.Order(js); ok && (!begun || pos > last) {
				k, _ := slices.BinarySearchFunc(ahead[ai:], pos, byPos)
				ahead = slices.Insert(ahead, ai+k, orderedJob{js: js, pos: pos})
			}
		}
		if st.blind {
			stopped = r.walkRest(c, last, begun)
			break
		}
		// The next job of the three streams.
		o, src := orderedJob{pos: math.MaxInt}, -1
		if vi < len(visits) {
			o, src = visits[vi], 0
		}
		if ai < len(ahead) && ahead[ai].pos < o.pos {
			o, src = ahead[ai], 1
		}
		hp := h.head(q)
		if hp != nil && hp.pos < o.pos {
			o, src = orderedJob{js: hp.js, pos: hp.pos}, 2
		}
		switch src {
		case -1:
		case 0:
			vi++
		case 1:
			ai++
		case 2:
			h.next(hp)
		}
		if src < 0 {
			break
		}
		if begun && o.pos <= last {
			continue // met already
		}
		last, begun = o.pos, true
		if q.skip(c, o.js, 0) {
			continue
		}
		if !r.try(c, o.js) {
			stopped = true
			break
		}
		q.tried(c, o.js)
	}
	clear(ahead)
	q.ahead = ahead[:0]
	clear(h.cs)
	q.cursors = h.cs[:0]
	// The rechecked jobs the walk did not reach are rechecked later, and
	// so is the one try stopped at (skip did not record its reason).
	keep := q.recheck[:0]
	if stopped && !st.blind {
		for _, o := range visits {
			if o.pos >= last && o.recheck {
				keep = append(keep, o.js)
			}
		}
	}
	clear(q.recheck[len(keep):])
	q.recheck = keep
	clear(visits)
	q.visits = visits[:0]
}

func byPos(o orderedJob, pos int) int { return cmp.Compare(o.pos, pos) }

// fewVisits reports whether walkLazy is worth it: it sorts the active
// and rechecked jobs before the first attempt, while the full walk reads
// the queue only up to where it stops (a profile that parks few jobs,
// say one whose Admit blocks behind a head that cannot start, has a long
// queue of active jobs and stops at once). The full walk then runs with
// the index on: it keeps active by the same parkings and unparkings, and
// metTo drops the rechecked jobs it met.
func (q *schedQueue) fewVisits(s *cluster.Snapshot) bool {
	return 2*(len(q.active)+len(q.recheck)+len(q.awake)) < s.Pending.Len()
}

// metTo is told that the full lazy walk, with the index on, stopped at
// stop (nil: it met every queued job): the rechecked jobs it met had
// their reason recorded again by skip where needed (finish rechecks those
// it recorded a Wait for), or were candidates and tried.
func (q *schedQueue) metTo(c *Cycle, stop *cluster.JobState) {
	if !q.idx || len(q.recheck) == 0 {
		return
	}
	keep := q.recheck[:0]
	if stop != nil {
		pq := c.Snap.Pending
		at, _ := pq.Order(stop)
		for _, js := range q.recheck {
			if pos, ok := pq.Order(js); ok && pos >= at {
				keep = append(keep, js)
			}
		}
	}
	clear(q.recheck[len(keep):])
	q.recheck = keep
}

// lazyVisits returns the active and rechecked jobs, sorted by queue Order
// (a job may be listed twice).
func (q *schedQueue) lazyVisits(c *Cycle) []orderedJob {
	pq := c.Snap.Pending
	v := q.visits[:0]
	for js := range q.active {
		if pos, ok := pq.Order(js); ok {
			v = append(v, orderedJob{js: js, pos: pos})
		}
	}
	for _, js := range q.recheck {
		if pos, ok := pq.Order(js); ok {
			v = append(v, orderedJob{js: js, pos: pos, recheck: true})
		}
	}
	slices.SortFunc(v, func(a, b orderedJob) int { return cmp.Compare(a.pos, b.pos) })
	return v
}

// classCursor walks one awake class's members (jobClass.jobs, in queue
// order, with their Order numbers): jobs[i] is the next one, unless the
// class's jobs were edited since (edits): a member tried and parked again
// is inserted, and a compaction drops the entries no longer parked. The
// cursor then finds the first entry after the last it gave (after).
type classCursor struct {
	cl    *jobClass
	i     int
	edits uint64
	after int
}

// classCursors are the awake classes' cursors.
type classCursors struct{ cs []classCursor }

// lazyClasses puts the awake classes' members in queue order (order) and
// returns a cursor on each.
func (q *schedQueue) lazyClasses(c *Cycle) classCursors {
	pq := c.Snap.Pending
	renum := pq.(cluster.QueueLog).Renumbered()
	h := classCursors{cs: q.cursors[:0]}
	for _, cl := range q.awake {
		if !cl.inOrder || cl.num != renum {
			q.order(pq, cl) // may unpark jobs no longer queued (active)
		}
		h.cs = append(h.cs, classCursor{cl: cl, edits: cl.edits, after: math.MinInt})
	}
	return h
}

// head returns the earliest member, still parked, of the classes that
// have not failed in this cycle, nil if none; next moves past it. A
// failed class's cursor is dropped: its members are then parked jobs of
// a failed class, for which skip only keeps the reason. (A linear scan:
// a cursor's place moves when its class's jobs are edited, which would
// break a heap's order.)
func (h *classCursors) head(q *schedQueue) *parkedJob {
	var best *parkedJob
	for k := 0; k < len(h.cs); {
		cu := &h.cs[k]
		cu.seek()
		for cu.i < len(cu.cl.jobs) && cu.cl.jobs[cu.i].gone {
			cu.i++
		}
		if cu.cl.failEpoch == q.epoch || cu.i == len(cu.cl.jobs) {
			h.cs[k] = h.cs[len(h.cs)-1]
			h.cs = h.cs[:len(h.cs)-1]
			continue
		}
		if p := cu.cl.jobs[cu.i]; best == nil || p.pos < best.pos {
			best = p
		}
		k++
	}
	return best
}

// next moves the cursor at p, the member head returned, past it.
func (h *classCursors) next(p *parkedJob) {
	for k := range h.cs {
		cu := &h.cs[k]
		if cu.cl.jobs[cu.i] == p {
			cu.after = p.pos
			cu.i++
			return
		}
	}
}

// seek puts the cursor back on the first entry after the last it gave,
// if its class's jobs were edited since it last looked (entries in queue
// order: a number is never given twice within one numbering, and the
// class's jobs are not renumbered within a cycle).
func (cu *classCursor) seek() {
	if cu.edits == cu.cl.edits {
		return
	}
	cu.edits = cu.cl.edits
	cu.i, _ = slices.BinarySearchFunc(cu.cl.jobs, cu.after+1, func(p *parkedJob, pos int) int { return cmp.Compare(p.pos, pos) })
}

// walkRest is the full lazy walk over the queued jobs after position last
// (all of them unless begun). It reports whether try stopped it.
func (r *Runtime) walkRest(c *Cycle, last int, begun bool) bool {
	q, pq := r.q, c.Snap.Pending
	for js := range pq.All() {
		if pos, _ := pq.Order(js); begun && pos <= last {
			continue
		}
		if q.skip(c, js, 0) {
			continue
		}
		if !r.try(c, js) {
			return true
		}
		q.tried(c, js)
	}
	return false
}

// fillLazy is the lazy walk's part in building the index: active gets
// every queued job that is not parked, before the walk (which may stop
// before the end of the queue), and the walk keeps it from there. A
// queued job parked with another state than its own (a state object of
// its job other than the parked one, or one changed since it was parked)
// would be unparked by skip only where the walk meets it: the index is
// then not built in this cycle (never so on the simulator's queue, whose
// queued jobs change state only when pushed, which unparks them). The
// parked jobs whose executor's reason is not the one they were parked
// with are rechecked: the walk may stop before it meets them.
func (q *schedQueue) fillLazy(s *cluster.Snapshot) {
	for js := range s.Pending.All() {
		p, ok := q.parked[js.Job]
		if !ok {
			q.active[js] = struct{}{}
			continue
		}
		if p.js != js || p.enqueued != js.Enqueued || p.preemptions != js.Preemptions || p.labels != len(js.Labels) {
			q.build = false
			clear(q.active)
			q.recheck = q.recheck[:0]
			return
		}
		if js.Reason != p.reason {
			q.recheck = append(q.recheck, js)
		}
	}
	q.built = true
}

// dedupRecheck drops the repeats from recheck once it holds many more
// jobs than are parked: a lazy walk that stops early may leave the same
// job to be rechecked cycle after cycle while Waits are recorded for it.
// Its order does not matter (walks sort it by queue Order).
func dedupRecheck(recheck []*cluster.JobState, parked int) []*cluster.JobState {
	if len(recheck) <= 2*parked+64 {
		return recheck
	}
	seen := make(map[*cluster.JobState]bool, len(recheck))
	keep := recheck[:0]
	for _, js := range recheck {
		if !seen[js] {
			seen[js] = true
			keep = append(keep, js)
		}
	}
	clear(recheck[len(keep):])
	return keep
}
