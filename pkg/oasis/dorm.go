package oasis

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// Dorm (Sun et al., SmartComp 2017) as the OASiS paper uses it: every job
// is admitted; whenever the set of jobs changes, the worker (and PS)
// counts of all unfinished jobs are recomputed by maximising resource
// utilisation subject to fairness and adjustment-overhead limits. Dorm
// solves a MILP with a standard solver; we solve its LP relaxation with
// gonum's simplex and round down, then place with first-fit packing
// (Dorm's partitions) and top up greedily what rounding left free.
//
// The LP, over the continuous worker count x_i of each job (its PSs are
// x_i b_i / B_i): maximise sum_i x_i v_i, where v_i is the summed
// normalised demand of a worker and its PS share over both pools, subject
// to each pool's aggregate capacity per resource; x_i <= N_i; fairness,
// x_i >= Fair * (its equal dominant share of the cluster, in workers);
// adjustment, |x_i - current_i| <= Adjust for running jobs. When the
// bounds conflict with capacity the adjustment limit is dropped, then the
// fairness floor.
//
// As an Admit plugin it holds every pending job (Wait): jobs start only
// through the recomputation. As a Rebalance plugin it recomputes, places
// on a fork of the Statement's ledger with every running job's resources
// given back, and moves every job to its new placement (Transition).
type Dorm struct {
	Fair   float64 // fraction of the equal share guaranteed (default 0.5)
	Adjust int     // largest change of a running job's worker count (default 4)
	sig    string
	// LPFailures counts recomputations whose LP the simplex could not
	// solve; those fall back to the fairness floor.
	LPFailures int
}

var (
	_ framework.Admit     = (*Dorm)(nil)
	_ framework.Rebalance = (*Dorm)(nil)
)

// Name implements framework.Plugin.
func (*Dorm) Name() string { return DormName }

// Admit implements framework.Admit.
func (*Dorm) Admit(_ *framework.Cycle, js *cluster.JobState) *framework.Status {
	if err := CheckJob(js.Job); err != nil {
		return framework.NewStatus(framework.Unresolvable, "dorm: "+err.Error())
	}
	return framework.NewStatus(framework.Wait, "dorm: no workers in the last recomputation (redone on each arrival and completion)")
}

// Rebalance implements framework.Rebalance.
func (d *Dorm) Rebalance(c *framework.Cycle) *framework.Status {
	s := c.Snap
	jobs := activeJobs(s)
	if sig := signature(jobs); sig == d.sig {
		return nil
	} else {
		d.sig = sig
	}
	if len(jobs) == 0 {
		return nil
	}
	var capW, capP resource.Vector
	for _, n := range s.Nodes {
		if !n.Ready || n.Gone {
			continue
		}
		switch n.Role {
		case RolePS:
			capP = capP.Add(n.Capacity)
		default:
			capW = capW.Add(n.Capacity)
		}
	}
	n := len(jobs)
	v := make([]float64, n)
	ub := make([]float64, n)
	fair := make([]float64, n)
	cur := make([]float64, n)
	psr := make([]float64, n)
	for i, js := range jobs {
		j := js.Job
		psr[i] = j.PS.WorkerBW / j.PS.PSBW
		dw, dp := j.Groups[GWorker].Demand, j.Groups[GPS].Demand
		dom := 0.0
		for r := range dw {
			if capW[r] > 0 {
				v[i] += float64(dw[r]) / float64(capW[r])
				dom = math.Max(dom, float64(dw[r])/float64(capW[r]))
			}
			if capP[r] > 0 {
				v[i] += psr[i] * float64(dp[r]) / float64(capP[r])
				dom = math.Max(dom, psr[i]*float64(dp[r])/float64(capP[r]))
			}
		}
		ub[i] = float64(j.PS.Chunks)
		fair[i] = math.Min(ub[i], d.Fair/(float64(n)*math.Max(dom, 1e-9)))
		cur[i] = float64(js.Counts()[GWorker])
	}
	lo := make([]float64, n)
	hi := make([]float64, n)
	var x []float64
	for stage := 0; stage < 3 && x == nil; stage++ {
		for i, js := range jobs {
			lo[i], hi[i] = 0, ub[i]
			if stage < 2 {
				lo[i] = fair[i]
			}
			if stage < 1 && js.Phase == cluster.Running {
				lo[i] = math.Max(lo[i], cur[i]-float64(d.Adjust))
				hi[i] = math.Min(hi[i], cur[i]+float64(d.Adjust))
				lo[i] = math.Min(lo[i], hi[i])
			}
		}
		x = d.solve(jobs, v, lo, hi, psr, capW, capP)
	}
	if x == nil {
		x = make([]float64, n)
	}
	// Round down, place biggest first, shrinking what does not fit.
	counts := make([]int, n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
		counts[i] = min(int(math.Floor(x[i]+1e-6)), jobs[i].Job.PS.Chunks)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(counts[b], counts[a]) })
	l := c.St.Now()
	l.Fork()
	for _, js := range s.Running {
		l.GiveJob(js)
	}
	targets := make([]cluster.Placement, n)
	opts := placement.Options{Strategy: placement.FirstFit}
	for _, i := range order {
		for w := counts[i]; w > 0; w-- {
			ps, ok := PSFor(jobs[i].Job.PS, w)
			if !ok {
				continue
			}
			if p, err := placement.Place(l, jobs[i].Job, []int{w, ps}, opts); err == nil {
				targets[i], counts[i] = canonical(p), w
				break
			}
		}
		if targets[i] == nil {
			counts[i] = 0
		}
	}
	// Top up: utilisation maximisation would use what rounding left.
	for grew := true; grew; {
		grew = false
		for _, i := range order {
			w := counts[i] + 1
			ps, ok := PSFor(jobs[i].Job.PS, w)
			if !ok {
				continue
			}
			old := targets[i].Counts(2)
			add := []int{1, ps - old[GPS]}
			if p, err := placement.Place(l, jobs[i].Job, add, opts); err == nil {
				targets[i], counts[i] = canonical(append(targets[i], p...)), w
				grew = true
			}
		}
	}
	l.Revert()
	Transition(c.St, jobs, targets, nil)
	return nil
}

// solve maximises sum v_i x_i with lo <= x <= hi under the pools'
// aggregate capacities; nil when infeasible or unsolved. It substitutes
// y = x - lo so that the standard form starts from the all-slack basis.
func (d *Dorm) solve(jobs []*cluster.JobState, v, lo, hi, psr []float64, capW, capP resource.Vector) []float64 {
	n := len(jobs)
	type row struct {
		coef []float64
		rhs  float64
	}
	var rows []row
	for r := resource.Kind(0); r < resource.NumKinds; r++ {
		for pool := 0; pool < 2; pool++ {
			c := capW[r]
			if pool == 1 {
				c = capP[r]
			}
			if c <= 0 {
				continue
			}
			coef := make([]float64, n)
			rhs := float64(c)
			any := false
			for i, js := range jobs {
				a := float64(js.Job.Groups[GWorker].Demand[r])
				if pool == 1 {
					a = psr[i] * float64(js.Job.Groups[GPS].Demand[r])
				}
				coef[i] = a
				rhs -= a * lo[i]
				any = any || a > 0
			}
			if !any {
				continue
			}
			if rhs < -1e-9 {
				return nil
			}
			rows = append(rows, row{coef, math.Max(rhs, 0)})
		}
	}
	for i := 0; i < n; i++ {
		coef := make([]float64, n)
		coef[i] = 1
		rows = append(rows, row{coef, hi[i] - lo[i]})
	}
	m := len(rows)
	A := mat.NewDense(m, n+m, nil)
	b := make([]float64, m)
	c := make([]float64, n+m)
	for i := 0; i < n; i++ {
		c[i] = -v[i]
	}
	basic := make([]int, m)
	for k, rw := range rows {
		// Scale each capacity row to order 1 for the simplex's tolerances.
		scale := 1.0
		for _, a := range rw.coef {
			scale = math.Max(scale, a)
		}
		for i, a := range rw.coef {
			A.Set(k, i, a/scale)
		}
		A.Set(k, n+k, 1)
		b[k] = rw.rhs / scale
		basic[k] = n + k
	}
	_, y, err := lp.Simplex(c, A, b, 1e-9, basic)
	if err != nil {
		d.LPFailures++
		return nil
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = lo[i] + y[i]
	}
	return x
}

// Events implements framework.EnqueueExtensions: its admission follows
// a plan over time (slots, prices, reallocations on arrivals and
// completions), so a job it holds is asked again every cycle.
func (*Dorm) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (*Dorm) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }
