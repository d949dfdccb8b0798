package specon

import (
	"cmp"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Bound names a reference schedule of Fluid: the same jobs, submitted at
// the same times, on W identical workers with free and instant migration
// (no checkpoint, no pause), each job never faster than alone on a worker.
// None is a proven optimum once jobs arrive over time (minimising total
// completion time on parallel machines with release dates and preemption
// is NP-hard), but each is reachable by a policy of its kind, so each
// shows how much room such a policy has under the simulator's sharing
// model.
type Bound int

const (
	// BoundPooledPS: the workers form one pool that the n running jobs
	// share equally, each at speed min(1, W/n). It is the limit of a
	// balancer that keeps every worker equally loaded; it treats every
	// job alike, so it is not a bound on a placement policy that favours
	// some jobs over others.
	BoundPooledPS Bound = iota
	// BoundPlacementSRPT: placement only (every running job is on some
	// worker and shares it equally with the jobs there), favouring the
	// jobs with least work left: when n > W, the W-1 of them with least
	// work left run alone and the other n-W+1 share the last worker. Its
	// rate vector majorises that of every other placement of n jobs on W
	// workers (each job gets at least 1/(n-W+1) in any placement that
	// uses every worker), so it is the shortest-remaining-first placement.
	BoundPlacementSRPT
	// BoundPooledSRPT: the W jobs with least work left run alone and the
	// others wait. This needs pausing jobs, which placement alone cannot
	// do (SpeCon never pauses a job except to move it).
	BoundPooledSRPT
)

// Bounds lists the reference schedules in report order.
var Bounds = []Bound{BoundPooledPS, BoundPlacementSRPT, BoundPooledSRPT}

func (b Bound) String() string {
	switch b {
	case BoundPooledPS:
		return "pooled-ps"
	case BoundPlacementSRPT:
		return "placement-srpt"
	case BoundPooledSRPT:
		return "pooled-srpt"
	}
	return "bound?"
}

// rates returns the speed of each of n running jobs sorted by work left
// (least first) on w workers.
func (b Bound) rates(n, w int) []float64 {
	r := make([]float64, n)
	for i := range r {
		switch b {
		case BoundPooledPS:
			r[i] = math.Min(1, float64(w)/float64(n))
		case BoundPlacementSRPT:
			switch {
			case n <= w:
				r[i] = 1
			case i < w-1:
				r[i] = 1
			default:
				r[i] = 1 / float64(n-w+1)
			}
		case BoundPooledSRPT:
			if i < w {
				r[i] = 1
			}
		}
	}
	return r
}

// Fluid runs jobs through the reference schedule b on the given number of
// workers and returns the mean JCT and the makespan (first submission to
// last completion). Between two arrivals or completions every speed is
// constant and the order of the jobs by work left does not change (a job
// with less work left never runs slower), so the schedule is exact.
func Fluid(jobs []*cluster.Job, workers int, b Bound) (meanJCT, makespan float64) {
	js := slices.Clone(jobs)
	slices.SortStableFunc(js, func(a, b *cluster.Job) int { return cmp.Compare(a.Submit, b.Submit) })
	if len(js) == 0 || workers <= 0 {
		return 0, 0
	}
	type act struct {
		j    *cluster.Job
		left float64
	}
	var active []act
	now, next, sum, last := js[0].Submit, 0, 0.0, 0.0
	for next < len(js) || len(active) > 0 {
		for next < len(js) && js[next].Submit <= now {
			active = append(active, act{js[next], js[next].Work})
			next++
		}
		slices.SortStableFunc(active, func(a, b act) int {
			return cmp.Or(cmp.Compare(a.left, b.left), cmp.Compare(a.j.Submit, b.j.Submit), cmp.Compare(a.j.ID, b.j.ID))
		})
		rate := b.rates(len(active), workers)
		dt := math.Inf(1)
		for i, a := range active {
			if rate[i] > 0 {
				dt = math.Min(dt, a.left/rate[i])
			}
		}
		if next < len(js) {
			dt = math.Min(dt, js[next].Submit-now)
		}
		now += dt
		kept := active[:0]
		for i, a := range active {
			a.left -= dt * rate[i]
			if a.left <= 1e-9 {
				sum += now - a.j.Submit
				last = now
				continue
			}
			kept = append(kept, a)
		}
		active = kept
	}
	return sum / float64(len(js)), last - js[0].Submit
}
