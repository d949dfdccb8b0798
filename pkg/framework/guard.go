package framework

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
)

// guard collects the faults of one ScheduleGuarded call.
type guard struct {
	faults []policy.Fault
}

// ScheduleGuarded implements policy.Guarded: Schedule, with a panic of a
// plugin contained to the job being decided about (or to the Rebalance or
// Provision plugin that panicked). Each job's decision, and each such
// plugin, runs on a fork of the Statement; a panic discards the fork
// (actions, job marks, both ledgers, and any what-if the plugin left
// open), and the cycle goes on. After a fault the scheduling queue and the
// idle-cycle memory are dropped, since a panic may have left them half
// updated; the next cycle rebuilds them. Plugins' own state between cycles
// is theirs to keep consistent: a plugin that panics may have changed it.
// Without a panic, the actions are those Schedule returns.
func (r *Runtime) ScheduleGuarded(s *cluster.Snapshot) (acts []policy.Action, faults []policy.Fault) {
	g := &guard{}
	r.guard = g
	defer func() {
		r.guard = nil
		if v := recover(); v != nil {
			// Outside any one job: ordering the queue, the runtime's own
			// bookkeeping. Keep the decisions completed before it.
			g.faults = append(g.faults, fault(policy.StageCycle, "", "", v))
			m := stMark{acts: len(r.st.acts), undo: len(r.st.undo)}
			if len(r.st.marks) > 0 {
				m = r.st.marks[0] // a fork left open: its actions are part of a decision
			}
			if r.st.now != nil {
				r.st.unwind(m, 0, 0, 0)
			}
			acts = r.st.acts
		}
		if len(g.faults) > 0 {
			r.forget()
		}
		faults = g.faults
	}()
	return r.schedule(s), nil
}

// forget drops the state the runtime keeps between cycles besides the
// plugins' (the scheduling queue), since a panic may have left it half
// updated: every pending job is tried again in the next cycle.
func (r *Runtime) forget() {
	if r.q != nil {
		r.q.Reset()
	}
}

// guarded runs f on a fork of the Statement. When f panics, everything it
// recorded and every fork it left open is undone, the per-cycle lists
// (started, failed) are restored, and the fault is recorded; job, when
// given, is the pending job f was deciding about. It reports whether f
// panicked.
func (r *Runtime) guarded(c *Cycle, stage policy.Stage, plugin string, f func(), job ...*cluster.JobState) (panicked bool) {
	st := &r.st
	depth, nowD, soonD := len(st.marks), st.now.Depth(), 0
	if st.hasSoon {
		soonD = st.soon.Depth()
	}
	started, failed := len(c.started), len(c.failed)
	st.Fork()
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		panicked = true
		id := ""
		if len(job) > 0 {
			id = job[0].Job.ID
		}
		st.unwind(st.marks[depth], depth, nowD, soonD)
		c.started, c.failed = c.started[:started], c.failed[:failed]
		c.on, c.trying, c.resort, c.committed = nil, nil, false, false
		c.sortGen++ // keys read during the undone work may have changed
		r.guard.faults = append(r.guard.faults, fault(stage, id, plugin, v))
	}()
	f()
	st.Commit()
	return false
}

// unwind undoes everything recorded since mark m (actions and job marks)
// and drops the forks from depth on, then reverts each ledger to the
// given depth (forks a plugin opened on a ledger itself included).
func (st *Statement) unwind(m stMark, depth, nowD, soonD int) {
	st.marks = st.marks[:depth]
	st.rollback(m)
	if depth == 0 {
		st.undo = st.undo[:0]
	}
	for st.now.Depth() > nowD {
		st.now.Revert()
	}
	if st.hasSoon {
		for st.soon.Depth() > soonD {
			st.soon.Revert()
		}
	}
}

// fault describes a recovered panic, with the function and line that
// panicked: the first frame below the runtime's panic machinery.
func fault(stage policy.Stage, job, plugin string, v any) policy.Fault {
	f := policy.Fault{Stage: stage, Job: job, Plugin: plugin, Value: fmt.Sprint(v)}
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		fr, more := frames.Next()
		switch {
		case fr.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(fr.Function, "runtime."):
			f.At = fmt.Sprintf("%s (%s:%d)", fr.Function, trimPath(fr.File), fr.Line)
			return f
		}
		if !more {
			return f
		}
	}
}

// trimPath keeps the last two elements of a source path.
func trimPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i > 0 {
		if j := strings.LastIndexByte(p[:i], '/'); j >= 0 {
			return p[j+1:]
		}
	}
	return p
}
