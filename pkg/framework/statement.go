package framework

import (
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// Op is what this cycle has done to a job so far.
type Op uint8

// Ops, in the order a job can go through them in one cycle.
const (
	OpNone     Op = iota
	OpStart       // started from the queue
	OpNominate    // room held for it (victims in their grace period)
	OpEvict       // preempted
	OpResize      // replica count changed
	OpMigrate     // moved
	OpReject      // rejected for good
)

// Statement records one cycle's actions and keeps two ledgers in step with
// them: Now, what is free at this moment (placeholders count as free, as
// they do for every real job), and, when the profile asks for it, Soon,
// what will be free once the jobs in their grace period are gone. Fork,
// Commit and Discard nest: a gang is started all or nothing, and a
// preemption is tried on a fork and kept only when it makes room (Volcano's
// Statement over cluster-autoscaler's forking snapshot).
//
// The accounting methods (Start, Evict, Resize, Migrate, Nominate) change
// the ledgers and record the action; Record records an action as it is.
// Plugins that need a finer what-if (shrink one replica at a time and test)
// may fork a ledger themselves, revert, and then call the accounting
// method, or change the ledger and Record: both leave the same state.
type Statement struct {
	now, soon *placement.Ledger
	hasSoon   bool
	acts      []policy.Action
	// lastActs is the number of actions of the previous cycle: the first
	// action of a cycle allocates room for that many, so that a cycle
	// like the one before (a time-driven plugin writing a label on each
	// running job, say) grows acts once instead of doubling it from 1.
	// acts stays nil in a cycle without actions, as before.
	lastActs int
	// reasons interns the reasons of the Waits recorded, across cycles
	// (see intern).
	reasons map[string]string
	// noFit maps placement failures to their interned messages (waitFor).
	noFit map[placement.NoFitError]string
	ops   map[*cluster.JobState]Op
	undo  []opUndo
	marks []stMark
	// waits holds, for each job a Wait was recorded for in this cycle,
	// the index in acts of the last one (see wait; an index that a
	// Discard has cut off, or that now holds another action, is no Wait).
	waits map[*cluster.JobState]int
}

type opUndo struct {
	js   *cluster.JobState
	prev Op
	had  bool
}

type stMark struct{ acts, undo int }

// reset starts a new cycle on fresh ledgers.
func (st *Statement) reset(now, soon *placement.Ledger, hasSoon bool) {
	st.now, st.soon, st.hasSoon = now, soon, hasSoon
	st.lastActs, st.acts = len(st.acts), nil
	clear(st.ops)
	if st.ops == nil {
		st.ops = map[*cluster.JobState]Op{}
	}
	st.undo, st.marks = st.undo[:0], st.marks[:0]
	clear(st.waits)
}

// wait records that js waits for reason, unless the executor already
// shows that reason and no other Wait was recorded for js in this cycle:
// both executors take such a Wait as no change (the simulator sets the
// same reason; the Kubernetes executor writes nothing and posts no
// Event), and on a long queue most jobs that cannot start fail for the
// same reason cycle after cycle, so the Runtime would otherwise hand
// thousands of them to the executor's validator every cycle.
func (st *Statement) wait(js *cluster.JobState, reason string) {
	if _, ok := st.lastWait(js); !ok && js.Reason == reason {
		return
	}
	if st.waits == nil {
		st.waits = map[*cluster.JobState]int{}
	}
	st.waits[js] = len(st.acts)
	st.Record(js, policy.Wait{Job: js.Job.ID, Reason: st.intern(reason)})
}

// waitFor is wait with the reason of status s, formatted once per
// distinct placement failure: on a long queue most jobs that cannot start
// fail with the same NoFitError cycle after cycle, and formatting its
// resource vector each time was a tenth of a busy profile's cost.
func (st *Statement) waitFor(js *cluster.JobState, s *Status) {
	var e *placement.NoFitError
	ok := false
	if s != nil {
		e, ok = s.cause.(*placement.NoFitError)
	}
	if !ok || s.reason != "" {
		st.wait(js, s.Reason())
		return
	}
	e.Resolve() // the map's key is the error's content
	r, ok := st.noFit[*e]
	if !ok {
		if st.noFit == nil || len(st.noFit) >= maxReasons {
			st.noFit = make(map[placement.NoFitError]string)
		}
		r = st.intern(e.Error())
		st.noFit[*e] = r
	}
	s.reason, s.cause = r, nil
	st.wait(js, r)
}

// maxReasons bounds the interned reasons: a reason may name a job, and a
// long replay would otherwise keep one per job.
const maxReasons = 1024

// intern returns the string equal to reason that this Statement handed out
// before, else reason, remembered. The executor shows a job the reason of
// the Wait it applied, that very string, so that comparing it with an
// interned reason (a class's, given to every member of the class that is
// not tried: queue.Queue.End) finds equal pointers and skips comparing the
// bytes: on a long queue that comparison, per member per cycle, was most
// of the cost of closing the walk.
func (st *Statement) intern(reason string) string {
	if r, ok := st.reasons[reason]; ok {
		return r
	}
	if st.reasons == nil || len(st.reasons) >= maxReasons {
		st.reasons = make(map[string]string)
	}
	st.reasons[reason] = reason
	return reason
}

// lastWait returns the reason of the last Wait recorded for js in this
// cycle and not discarded since, if any.
func (st *Statement) lastWait(js *cluster.JobState) (string, bool) {
	i, ok := st.waits[js]
	if !ok || i >= len(st.acts) {
		return "", false
	}
	w, ok := st.acts[i].(policy.Wait)
	if !ok || w.Job != js.Job.ID {
		return "", false
	}
	return w.Reason, true
}

// reason returns the reason js waits for after this cycle's actions so
// far: the last Wait recorded for it, else the executor's.
func (st *Statement) reason(js *cluster.JobState) string {
	if r, ok := st.lastWait(js); ok {
		return r
	}
	return js.Reason
}

// Now is the ledger of what is free now.
func (st *Statement) Now() *placement.Ledger { return st.now }

// Soon is the ledger of what will be free once jobs in their grace period
// have stopped; nil unless the profile sets Future.
func (st *Statement) Soon() *placement.Ledger {
	if !st.hasSoon {
		return nil
	}
	return st.soon
}

// Actions returns the recorded actions in order. Valid until the next
// cycle.
func (st *Statement) Actions() []policy.Action { return st.acts }

// Op returns what this cycle has done to js so far.
func (st *Statement) Op(js *cluster.JobState) Op { return st.ops[js] }

// Busy reports whether js is in the middle of something that must not be
// interrupted by another decision: touched by this cycle already, in its
// grace period, or migrating.
func (st *Statement) Busy(js *cluster.JobState) bool {
	return st.ops[js] != OpNone || js.Phase == cluster.Suspending || js.Phase == cluster.Migrating
}

// Fork starts a nested what-if over the actions and both ledgers.
func (st *Statement) Fork() {
	st.marks = append(st.marks, stMark{acts: len(st.acts), undo: len(st.undo)})
	st.now.Fork()
	if st.hasSoon {
		st.soon.Fork()
	}
}

// Commit keeps everything since the matching Fork.
func (st *Statement) Commit() {
	st.marks = st.marks[:len(st.marks)-1]
	st.now.Commit()
	if st.hasSoon {
		st.soon.Commit()
	}
	if len(st.marks) == 0 {
		st.undo = st.undo[:0]
	}
}

// Discard undoes everything since the matching Fork: actions, job marks
// and both ledgers.
func (st *Statement) Discard() {
	m := st.marks[len(st.marks)-1]
	st.marks = st.marks[:len(st.marks)-1]
	st.rollback(m)
	st.now.Revert()
	if st.hasSoon {
		st.soon.Revert()
	}
}

// rollback drops the actions recorded since m and restores the job marks
// they changed; the ledgers are the caller's to revert.
func (st *Statement) rollback(m stMark) {
	st.acts = st.acts[:m.acts]
	for i := len(st.undo) - 1; i >= m.undo; i-- {
		u := st.undo[i]
		if u.had {
			st.ops[u.js] = u.prev
		} else {
			delete(st.ops, u.js)
		}
	}
	st.undo = st.undo[:m.undo]
}

func (st *Statement) mark(js *cluster.JobState, op Op) {
	if js == nil {
		return
	}
	if len(st.marks) > 0 {
		prev, had := st.ops[js]
		st.undo = append(st.undo, opUndo{js: js, prev: prev, had: had})
	}
	st.ops[js] = op
}

// Record appends an action without changing the ledgers, marking the job
// it names (js may be nil for actions on nodes or placeholders).
func (st *Statement) Record(js *cluster.JobState, a policy.Action) {
	switch a.(type) {
	case policy.Start:
		st.mark(js, OpStart)
	case policy.Preempt:
		st.mark(js, OpEvict)
	case policy.Resize:
		st.mark(js, OpResize)
	case policy.Migrate:
		st.mark(js, OpMigrate)
	case policy.Reject:
		st.mark(js, OpReject)
	}
	if st.acts == nil && st.lastActs > 0 {
		st.acts = make([]policy.Action, 0, st.lastActs)
	}
	st.acts = append(st.acts, a)
}

// eligible reports whether every assignment of p is on a node whose role,
// labels and taints admit its group (placement.Eligible), so that a
// plugin that picks nodes itself (a migration target, a scale-up) cannot
// cross a node constraint: the validator would refuse it anyway.
func (st *Statement) eligible(j *cluster.Job, p cluster.Placement) bool {
	nodes := st.now.Snapshot().Nodes
	for _, a := range p {
		if a.Node < 0 || a.Node >= len(nodes) || a.Group < 0 || a.Group >= len(j.Groups) || !placement.Eligible(nodes[a.Node], j, a.Group) {
			return false
		}
	}
	return true
}

// Start takes placement p of pending job js from Now (all or nothing) and
// from Soon, and records the Start. It reports false, changing nothing,
// when p does not fit in Now or uses a node that refuses one of its groups.
func (st *Statement) Start(js *cluster.JobState, p cluster.Placement) bool {
	if !st.eligible(js.Job, p) || !st.now.TakePlacement(js.Job, p) {
		return false
	}
	if st.hasSoon {
		st.soon.TakePlacement(js.Job, p)
	}
	st.Record(js, policy.Start{Job: js.Job.ID, Placement: p})
	return true
}

// Evict records a preemption of running job v with a grace period. Its
// resources count as coming back in Soon; in Now they stay held until the
// grace period is over, unless grace is 0 and now is set, in which case
// they are free at once.
func (st *Statement) Evict(v *cluster.JobState, grace float64, by, reason string, now bool) {
	if st.hasSoon {
		st.soon.GiveJob(v)
	}
	if now {
		st.now.GiveJob(v)
	}
	st.Record(v, policy.Preempt{Job: v.Job.ID, Grace: grace, By: by, Reason: reason})
}

// Resize moves running job js to placement p (new counts): its current
// replicas are given back and p is taken, in both ledgers. It reports
// false, changing nothing, when p does not fit or uses a node that refuses
// one of its groups.
func (st *Statement) Resize(js *cluster.JobState, p cluster.Placement, reason string) bool {
	if !st.move(js, p) {
		return false
	}
	st.Record(js, policy.Resize{Job: js.Job.ID, Placement: p, Reason: reason})
	return true
}

// Migrate moves running job js to placement p (same counts), as Resize.
func (st *Statement) Migrate(js *cluster.JobState, p cluster.Placement, reason string) bool {
	if !st.move(js, p) {
		return false
	}
	st.Record(js, policy.Migrate{Job: js.Job.ID, Placement: p, Reason: reason})
	return true
}

func (st *Statement) move(js *cluster.JobState, p cluster.Placement) bool {
	if !st.eligible(js.Job, p) {
		return false
	}
	st.now.Fork()
	st.now.GiveJob(js)
	if !st.now.TakePlacement(js.Job, p) {
		st.now.Revert()
		return false
	}
	st.now.Commit()
	if st.hasSoon {
		st.soon.Fork()
		st.soon.GiveJob(js)
		st.soon.TakePlacement(js.Job, p)
		st.soon.Commit()
	}
	return true
}

// Nominate holds room for pending job js on the nodes of placement p,
// which was planned on Soon: the part of it that is free now is taken from
// Now, so that jobs tried later in the cycle do not take the room that
// victims are being preempted for (kube-scheduler's nominated node).
func (st *Statement) Nominate(js *cluster.JobState, p cluster.Placement) {
	for n, d := range p.DemandOn(js.Job) {
		st.now.Take(n, d.Min(st.now.Free(n)))
	}
	st.mark(js, OpNominate)
}
