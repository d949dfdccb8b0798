package oasis

import (
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// Transition moves each job to its target placement (nil: not running)
// through the Statement, in two phases so that no action needs capacity
// another job has yet to give back: first every job that changes shrinks
// to the replicas it keeps (or stops), then every job grows to (or starts
// on) its target. keep says which running jobs without a target are left
// alone. Jobs are visited in the given order; a job that moves to other
// servers, or would shrink a group below its minimum (which executors
// refuse), is stopped and started again. A step that does not fit the
// Statement's ledger is left out (the job keeps what it has).
func Transition(st *framework.Statement, jobs []*cluster.JobState, targets []cluster.Placement, keep func(*cluster.JobState) bool) {
	type step struct {
		js     *cluster.JobState
		common cluster.Placement // what a shrunk job keeps
		tgt    cluster.Placement
		kind   uint8
	}
	const (
		stop   = iota // shrink phase: preempt
		shrink        // shrink phase: resize to common
		start         // grow phase: start a pending (or just stopped) job
		grow          // grow phase: resize from the current placement
		regrow        // grow phase: resize from common (after shrink)
	)
	var shrinks, grows []step
	for i, js := range jobs {
		tgt := targets[i]
		switch js.Phase {
		case cluster.Pending:
			if len(tgt) > 0 {
				grows = append(grows, step{js: js, tgt: tgt, kind: start})
			}
		case cluster.Running:
			cur := canonical(slices.Clone(js.Placement))
			if len(tgt) == 0 {
				if keep == nil || !keep(js) {
					shrinks = append(shrinks, step{js: js, kind: stop})
				}
				continue
			}
			if slices.Equal(cur, tgt) {
				continue
			}
			common := intersect(cur, tgt)
			switch {
			case len(common) == 0 || belowMin(js.Job, common):
				shrinks = append(shrinks, step{js: js, tgt: tgt, kind: stop})
				grows = append(grows, step{js: js, tgt: tgt, kind: start})
			case !slices.Equal(common, cur):
				shrinks = append(shrinks, step{js: js, common: common, kind: shrink})
				if !slices.Equal(common, tgt) {
					grows = append(grows, step{js: js, common: common, tgt: tgt, kind: regrow})
				}
			default:
				grows = append(grows, step{js: js, tgt: tgt, kind: grow})
			}
		}
	}
	shrunk := map[*cluster.JobState]bool{}
	for _, s := range shrinks {
		switch s.kind {
		case stop:
			reason := "schedule: no replicas this slot"
			if len(s.tgt) > 0 {
				reason = "schedule: moves to other servers"
			}
			st.Evict(s.js, 0, "", reason, true)
		case shrink:
			shrunk[s.js] = st.Resize(s.js, s.common, "schedule: shrink")
		}
	}
	for _, s := range grows {
		switch s.kind {
		case start:
			st.Start(s.js, s.tgt)
		case grow:
			st.Resize(s.js, s.tgt, "schedule: grow")
		case regrow:
			if shrunk[s.js] {
				resizeFrom(st, s.js, s.common, s.tgt, "schedule: grow")
			}
		}
	}
}

// resizeFrom resizes running job js from placement from (what this cycle
// has left it, not its snapshot placement) to p, in both ledgers, and
// records the Resize; it reports false, changing nothing, when p does not
// fit.
func resizeFrom(st *framework.Statement, js *cluster.JobState, from, p cluster.Placement, reason string) bool {
	move := func(l *placement.Ledger) bool {
		l.Fork()
		for _, a := range from {
			l.Give(a.Node, js.Job.Groups[a.Group].Demand)
		}
		if !l.TakePlacement(js.Job, p) {
			l.Revert()
			return false
		}
		l.Commit()
		return true
	}
	if !move(st.Now()) {
		return false
	}
	if soon := st.Soon(); soon != nil {
		move(soon)
	}
	st.Record(js, policy.Resize{Job: js.Job.ID, Placement: p, Reason: reason})
	return true
}

// placement returns the plan's placement for slot t in canonical order.
func (p *Plan) placement(t int) cluster.Placement {
	sp := &p.Slots[t-p.Start]
	var out cluster.Placement
	for _, c := range sp.W {
		for k := 0; k < c.N; k++ {
			out = append(out, cluster.Assignment{Group: GWorker, Node: c.Node})
		}
	}
	for _, c := range sp.P {
		for k := 0; k < c.N; k++ {
			out = append(out, cluster.Assignment{Group: GPS, Node: c.Node})
		}
	}
	return canonical(out)
}

func canonical(p cluster.Placement) cluster.Placement {
	slices.SortFunc(p, func(a, b cluster.Assignment) int {
		if a.Group != b.Group {
			return a.Group - b.Group
		}
		return a.Node - b.Node
	})
	return p
}

// belowMin reports whether a placement leaves some group of j below its
// minimum.
func belowMin(j *cluster.Job, p cluster.Placement) bool {
	for g, c := range p.Counts(len(j.Groups)) {
		if c < j.Groups[g].Min {
			return true
		}
	}
	return false
}

// intersect returns the assignments two canonical placements share.
func intersect(a, b cluster.Placement) cluster.Placement {
	var out cluster.Placement
	i, k := 0, 0
	for i < len(a) && k < len(b) {
		switch {
		case a[i] == b[k]:
			out = append(out, a[i])
			i++
			k++
		case a[i].Group < b[k].Group || a[i].Group == b[k].Group && a[i].Node < b[k].Node:
			i++
		default:
			k++
		}
	}
	return out
}
