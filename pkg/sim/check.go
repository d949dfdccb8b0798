package sim

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// check verifies the simulator's invariants when Config.Check is set:
// no node over capacity, allocations equal to what is placed, every job in
// exactly one place, and no work lost or created.
func (s *Sim) check() error {
	if !s.cfg.Check {
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("t=%gs: invariant: "+format, append([]any{s.now}, a...)...))
	}
	want := make([]resource.Vector, len(s.nodes))
	for _, u := range s.phUnits {
		if u.node >= 0 {
			want[u.node] = want[u.node].Add(u.demand)
		}
	}
	for i, rt := range s.runRT {
		st := rt.st
		if s.running[i] != st || rt.runIdx != i {
			bad("running index of %s is inconsistent", st.Job.ID)
		}
		switch st.Phase {
		case cluster.Running, cluster.Suspending, cluster.Migrating:
		default:
			bad("job %s is in the running set but %s", st.Job.ID, st.Phase)
		}
		if s.queue.Contains(st) {
			bad("job %s is both running and queued", st.Job.ID)
		}
		for _, a := range st.Placement {
			want[a.Node] = want[a.Node].Add(st.Job.Groups[a.Group].Demand)
		}
	}
	for i, n := range s.nodes {
		if n.Allocated != want[i] {
			bad("node %s allocated %v, placements sum to %v", n.Name, n.Allocated, want[i])
		}
		if !n.Allocated.Fits(n.Capacity) || n.Allocated.AnyNegative() {
			bad("node %s over capacity: %v of %v", n.Name, n.Allocated, n.Capacity)
		}
		if n.Gone && !n.Allocated.IsZero() {
			bad("released node %s still holds %v", n.Name, n.Allocated)
		}
	}
	queued, running := 0, 0
	for _, rt := range s.jobs {
		st := rt.st
		left := st.Remaining(s.now)
		if left > rt.lastLeft+1e-6 {
			bad("job %s gained work: %g -> %g", st.Job.ID, rt.lastLeft, left)
		}
		if left < 0 || left > st.Job.Work+1e-6 {
			bad("job %s has %g work left of %g", st.Job.ID, left, st.Job.Work)
		}
		rt.lastLeft = left
		switch st.Phase {
		case cluster.Pending:
			if rt.arrived {
				queued++
				if !s.queue.Contains(st) {
					bad("arrived pending job %s is not queued", st.Job.ID)
				}
				if st.Rate != 0 {
					bad("pending job %s progresses", st.Job.ID)
				}
			}
		case cluster.Running, cluster.Suspending, cluster.Migrating:
			running++
			if rt.runIdx < 0 {
				bad("job %s is %s but not in the running set", st.Job.ID, st.Phase)
			}
		case cluster.Done:
			if left > 1e-6*st.Job.Work+1e-9 {
				bad("job %s finished with %g work left", st.Job.ID, left)
			}
		}
	}
	if s.queue.InEnqueuedOrder() {
		var prev *cluster.JobState
		for st := range s.queue.All() {
			if prev != nil && cmp.Compare(prev.Enqueued, st.Enqueued) > 0 {
				bad("queue says it is in Enqueued order, but %s (%g) is before %s (%g)",
					prev.Job.ID, prev.Enqueued, st.Job.ID, st.Enqueued)
				break
			}
			prev = st
		}
	}
	if queued != s.queue.Len() {
		bad("queue holds %d jobs, %d are pending", s.queue.Len(), queued)
	}
	if running != len(s.running) {
		bad("running set holds %d jobs, %d are running", len(s.running), running)
	}
	return errors.Join(errs...)
}
