package k8s

import (
	"slices"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// phases lists every TrainingJob phase, for drover_jobs (zeros included,
// so a phase that empties drops to 0 instead of keeping its last value).
var phases = []v1alpha1.TrainingJobPhase{v1alpha1.PhasePending, v1alpha1.PhaseAdmitted, v1alpha1.PhaseRunning,
	v1alpha1.PhaseSuspended, v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseRejected}

// observeJobs sets drover_jobs from every TrainingJob of the world (the
// copies this cycle wrote, where there are), and drover_placeholder_pods.
func (e *Executor) observeJobs(w *view.World, v *view.View) {
	n := map[phaseClass]int{}
	// cur is job i as this cycle left it: its jobView's copy, unless a
	// write of the job is in flight (the flight owns the jobView: the
	// world's copy, one period behind, is counted) or the job left the
	// snapshot (the world holds it as ended).
	busy := e.w.InFlight()
	cur := func(i int) *v1alpha1.TrainingJob {
		key := view.JobKey(&w.Jobs[i])
		if jv := v.Jobs[key]; jv != nil && !busy[key] {
			return jv.TJ
		}
		return &w.Jobs[i]
	}
	// With the live indexes (NewManager), the world holds the jobs the
	// cache showed unfinished; finished ones are counted by e.finished
	// from the informer's events. A job this cycle finished is counted
	// here until the informer shows it finished.
	var ended []string
	if e.finished != nil {
		for i := range w.Jobs {
			if tj := cur(i); tj.Status.Phase.Terminal() {
				ended = append(ended, view.JobKey(tj))
			}
		}
		var counted map[string]bool
		n, counted = e.finished.counts(ended)
		ended = ended[:0]
		for k := range counted {
			ended = append(ended, k)
		}
	}
	for i := range w.Jobs {
		tj := cur(i)
		if len(ended) > 0 && slices.Contains(ended, view.JobKey(tj)) {
			continue // counted by e.finished
		}
		p := tj.Status.Phase
		if p == "" {
			p = v1alpha1.PhasePending
		}
		n[phaseClass{string(p), apply.JobClass(tj)}]++
	}
	for _, p := range phases {
		for _, c := range []string{string(v1alpha1.ClassTE), string(v1alpha1.ClassBE)} {
			e.w.M.Jobs.WithLabelValues(string(p), c).Set(float64(n[phaseClass{string(p), c}]))
		}
	}
	ph := 0
	for _, p := range v.Snap.Placeholders {
		ph += p.Count
	}
	e.w.M.Placeholders.Set(float64(ph))
}
