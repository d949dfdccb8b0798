package elastic

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// Weight orders jobs as the article's weighting algorithm does. The
// article compares a job's utility U first and its CPU + memory
// requirement R second, and lets a priority set by the user override both.
// We map these onto the job spec as:
//   - Priority: the user's priority (cluster.Job.Priority), compared first;
//   - Utility: the job's utility at its nominal completion time,
//     Job.Utility.Value(Job.EstimatedWork()) (the utility of finishing
//     after the estimated run time), or 0 when the job has none;
//   - Demand: CPU + memory at the requested counts, each as a fraction of
//     the cluster's ready capacity. The article adds the raw CPU and memory
//     quantities; in Kubernetes units memory bytes would swamp CPU cores,
//     so we add shares, which keeps both resources in the comparison.
type Weight struct {
	Priority int
	Utility  float64
	Demand   float64
}

// Key returns five numbers that, compared one after the other with
// cmp.Compare, order weights heaviest first exactly as o.Compare(w) does
// (cmp.Compare puts NaN below every number, so a NaN utility or demand is
// flagged before its negation; priorities are exact up to 2^53).
func (w Weight) Key() [5]float64 {
	neg := func(x float64) (float64, float64) {
		if x != x {
			return 1, 0
		}
		return 0, -x
	}
	nu, u := neg(w.Utility)
	nd, d := neg(w.Demand)
	return [5]float64{-float64(w.Priority), nu, u, nd, d}
}

// Compare returns -1, 0 or +1 as w weighs less than, as much as, or more
// than o.
func (w Weight) Compare(o Weight) int {
	if c := cmp.Compare(w.Priority, o.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(w.Utility, o.Utility); c != 0 {
		return c
	}
	return cmp.Compare(w.Demand, o.Demand)
}

// Outranks reports whether w's priority class (priority, then utility) is
// strictly above o's, ignoring demand. The scheduling loop calls a waiting
// job "high priority" when it outranks every running job this way (the
// article's "max waiting job utility > max running job utility").
func (w Weight) Outranks(o Weight) bool {
	if w.Priority != o.Priority {
		return w.Priority > o.Priority
	}
	return w.Utility > o.Utility
}

// WeightOf computes a job's weight against the given cluster capacity.
func WeightOf(j *cluster.Job, capacity resource.Vector) Weight {
	w := Weight{Priority: j.Priority}
	if j.Utility != nil {
		w.Utility = j.Utility.Value(j.EstimatedWork())
	}
	d := j.RequestedDemand()
	for _, k := range []resource.Kind{resource.CPU, resource.Memory} {
		if capacity[k] > 0 {
			w.Demand += float64(d[k]) / float64(capacity[k])
		}
	}
	return w
}

// ByWeight returns the jobs sorted by weight, heaviest first. The sort is
// stable, so jobs of equal weight keep their order (queue order for the
// pending queue), which is what the article's insertion into the queue
// amounts to: a new job goes before the first job it outweighs.
func ByWeight(jobs []*cluster.JobState, capacity resource.Vector) []*cluster.JobState {
	out := slices.Clone(jobs)
	ws := make(map[*cluster.JobState]Weight, len(out))
	for _, js := range out {
		ws[js] = WeightOf(js.Job, capacity)
	}
	slices.SortStableFunc(out, func(a, b *cluster.JobState) int { return ws[b].Compare(ws[a]) })
	return out
}
