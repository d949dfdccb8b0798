// Package oasis defines the experiments of the OASiS reproduction
// (pkg/oasis): the total-utility sweep over job counts (the paper's Fig. 4),
// completion minus target time (Fig. 5), the performance ratio against the
// exact offline optimum (Fig. 6) and the price bounds given as estimates
// (Fig. 7).
package oasis

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/sim"
)

// Experiments returns the OASiS experiments.
func Experiments() []experiment.Experiment {
	return []experiment.Experiment{
		{Name: "oasis", Description: "OASiS vs FIFO, DRF, RRH, Dorm: total utility as the job count grows from ample to scarce resources (paper Fig. 4)", Run: sweep},
		{Name: "oasis-deadline", Description: "OASiS and baselines: actual minus target completion time of time-sensitive and time-critical jobs (paper Fig. 5)", Run: deadline},
		{Name: "oasis-ratio", Description: "OASiS performance ratio (exact offline optimum / OASiS) for 10 jobs over cluster sizes and priority ranges (paper Fig. 6)", Run: ratio},
		{Name: "oasis-estimate", Description: "OASiS with its price bounds U and L given as 50%..150% of their true values (paper Fig. 7)", Run: estimate},
	}
}

// Compared maps the paper's scheme names to registered policies. fifo and
// drf name package baseline's general policies, so the parameter-server
// versions are ps-fifo and ps-drf.
var Compared = []struct{ Label, Policy string }{
	{"OASiS", "oasis"}, {"FIFO", "ps-fifo"}, {"DRF", "ps-drf"}, {"RRH", "rrh"}, {"Dorm", "dorm"},
}

// diagnostic is an extra row of the oasis sweep, not one of the paper's
// schemes: OASiS with its L floored at 1e-4 of the largest U instead of
// 1e-12. The paper's L (a job's utility at the horizon) vanishes for
// time-critical sigmoids, which makes prices nearly flat until a server is
// almost full; this row shows what a larger L changes (docs/oasis.md).
var diagnostic = struct{ Label, Suffix string }{"OASiS-L1e-4", ";lfloor=1e-4"}

// scale is the cluster and timespan of the utility experiments.
type scale struct {
	workers, pss, slots int
	jobs                []int
	seeds               int
}

func fullScale(env *experiment.Env) scale {
	if env.Quick {
		return scale{workers: 10, pss: 5, slots: 30, jobs: []int{20, 60, 120}, seeds: env.SeedCount(1)}
	}
	return scale{workers: 40, pss: 20, slots: 100, jobs: []int{100, 200, 400, 600, 800}, seeds: env.SeedCount(3)}
}

// spec returns the registry spec of a policy in a setting: OASiS gets the
// true price bounds of the seed's workload (the paper assumes they are
// known), scaled by est.
func spec(policy string, st oasis.Setting, b oasis.Bounds, est float64) string {
	if policy != "oasis" {
		return policy
	}
	s := fmt.Sprintf("oasis:slot=%g;slots=%d;%s", st.Slot, st.Slots, b.String())
	if est != 1 {
		s += ";scale=" + strconv.FormatFloat(est, 'g', -1, 64)
	}
	return s
}

// run is one policy on one seed of a setting.
func run(ctx context.Context, env *experiment.Env, st oasis.Setting, seed uint64, pspec string) (*sim.Result, []*cluster.Job, error) {
	p, err := env.Policies.New(pspec)
	if err != nil {
		return nil, nil, err
	}
	jobs := st.Generate(seed)
	s, err := sim.New(sim.Config{Seed: seed, Tick: st.Slot, Horizon: st.Slot * float64(st.Slots)}, st.Nodes(seed), jobs, p)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pspec, err)
	}
	res, err := s.Run(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s seed %d: %w", pspec, seed, err)
	}
	return res, jobs, nil
}

// measure adds the OASiS keys to a run's metrics: admitted, and the mean
// actual minus target completion (sigmoid g3) of finished time-sensitive
// and time-critical jobs, together and per class.
func measure(res *sim.Result, jobs []*cluster.Job) map[string]float64 {
	m := res.Metrics()
	m["admitted"] = m["jobs"] - m["rejected"]
	var all, sens, crit []float64
	for i, r := range res.Records {
		j := jobs[i]
		sg, ok := j.Utility.(cluster.Sigmoid)
		if !r.Finished() || !ok || j.PS == nil {
			continue
		}
		d := r.JCT() - sg.G3
		switch j.PS.Sensitivity {
		case "sensitive":
			sens = append(sens, d)
			all = append(all, d)
		case "critical":
			crit = append(crit, d)
			all = append(all, d)
		}
	}
	m["deadline_miss_mean_s"] = metrics.Mean(all)
	m["deadline_miss_sensitive_mean_s"] = metrics.Mean(sens)
	m["deadline_miss_critical_mean_s"] = metrics.Mean(crit)
	m["deadline_miss_sensitive_sd_s"] = sd(sens)
	m["deadline_miss_critical_sd_s"] = sd(crit)
	low := 0.0
	for i, r := range res.Records {
		if sg, ok := jobs[i].Utility.(cluster.Sigmoid); ok && r.Finished() && r.Utility < 0.1*sg.G1 {
			low++
		}
	}
	// jobs that ran to completion but earned under a tenth of their
	// priority: resources spent for little utility
	m["low_value_completed"] = low
	return m
}

func sd(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mu := metrics.Mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - mu) * (x - mu)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}

// compare runs the five schemes over seeds of a setting and returns one
// row per scheme (metrics averaged over seeds).
func compare(ctx context.Context, env *experiment.Env, st oasis.Setting, seeds int, params map[string]string, diag bool) ([]experiment.Row, error) {
	schemes := Compared
	if diag {
		schemes = append(slices.Clone(Compared), struct{ Label, Policy string }{diagnostic.Label, "oasis"})
	}
	label := fmt.Sprintf("%d jobs", st.Jobs)
	bounds, err := experiment.Parallel(ctx, env, label+" bounds", seeds, func(_ context.Context, k int, _ func(int, int)) (oasis.Bounds, error) {
		seed := env.Seed + uint64(k)
		return oasis.ComputeBounds(st.Generate(seed), st.Nodes(seed), st.Slot, st.Slots), nil
	})
	if err != nil {
		return nil, err
	}
	// Seeds outer, schemes inner, as the metrics are averaged below.
	runs, err := experiment.Parallel(ctx, env, label, seeds*len(schemes), func(ctx context.Context, t int, _ func(int, int)) (map[string]float64, error) {
		k, c := t/len(schemes), schemes[t%len(schemes)]
		ps := spec(c.Policy, st, bounds[k], 1)
		if c.Label == diagnostic.Label {
			ps += diagnostic.Suffix
		}
		res, jobs, err := run(ctx, env, st, env.Seed+uint64(k), ps)
		if err != nil {
			return nil, err
		}
		return measure(res, jobs), nil
	})
	if err != nil {
		return nil, err
	}
	ms := make([][]map[string]float64, len(schemes))
	for t, m := range runs {
		ms[t%len(schemes)] = append(ms[t%len(schemes)], m)
	}
	var rows []experiment.Row
	for i, c := range schemes {
		p := map[string]string{"policy_name": c.Policy}
		for k, v := range params {
			p[k] = v
		}
		rows = append(rows, experiment.Row{Policy: c.Label, Params: p, Metrics: experiment.MeanMetrics(ms[i])})
	}
	return rows, nil
}

func settingNote(st oasis.Setting) string {
	return fmt.Sprintf("%d worker servers (EC2 C4 + GPUs), %d PS servers (P2/G3), %d slots of %g s; arrivals Poisson over the first %.0f%%; classes %.0f/%.0f/%.0f%% insensitive/sensitive/critical; g1 in [%g, %g]",
		st.WorkerServers, st.PSServers, st.Slots, st.Slot, 100*st.ArrivalSpan, 100*st.Insensitive, 100*st.Sensitive,
		100*(1-st.Insensitive-st.Sensitive), st.PriorityLo, st.PriorityHi)
}

const mapping = "rows use the paper's names; registered policies: OASiS=oasis, FIFO=ps-fifo, DRF=ps-drf, RRH=rrh, Dorm=dorm (see params.policy_name)"

func sweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	var rows []experiment.Row
	var st oasis.Setting
	for _, n := range sc.jobs {
		st = oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots)
		r, err := compare(ctx, env, st, sc.seeds, map[string]string{"jobs": strconv.Itoa(n)}, true)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return &experiment.Report{Experiment: "oasis", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "admitted", "rejected", "completed", "low_value_completed", "deadline_miss_mean_s", "gpu_util", "resizes"},
		Notes: []string{settingNote(st), mapping, "utility_total sums sigmoid utilities of jobs finished within the timespan",
			"OASiS-L1e-4 is a diagnostic, not a paper scheme: OASiS with L floored at 1e-4 of the largest U (default 1e-12)"}}, nil
}

func deadline(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	n := sc.jobs[len(sc.jobs)/2]
	st := oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots)
	rows, err := compare(ctx, env, st, sc.seeds, map[string]string{"jobs": strconv.Itoa(n)}, false)
	if err != nil {
		return nil, err
	}
	return &experiment.Report{Experiment: "oasis-deadline", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"deadline_miss_mean_s", "deadline_miss_sensitive_mean_s", "deadline_miss_sensitive_sd_s",
			"deadline_miss_critical_mean_s", "deadline_miss_critical_sd_s", "completed", "utility_total"},
		Notes: []string{settingNote(st), mapping, "deadline_miss = completion time minus the sigmoid's target g3, over finished time-sensitive and time-critical jobs"}}, nil
}

func ratio(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	servers := []int{3, 6, 9}
	ranges := []float64{2, 10, 100}
	seeds := env.SeedCount(5)
	if env.Quick {
		servers, ranges, seeds = []int{6}, []float64{2, 100}, env.SeedCount(2)
	}
	var rows []experiment.Row
	var st oasis.Setting
	// Every (servers, range, seed) instance at once: servers outer, seeds
	// inner, as the rows below take them.
	per := len(ranges) * seeds
	all, err := experiment.Parallel(ctx, env, "oasis-ratio", len(servers)*per, func(ctx context.Context, t int, _ func(int, int)) (map[string]float64, error) {
		srv, hi, seed := servers[t/per], ranges[t%per/seeds], env.Seed+uint64(t%seeds)
		st := oasis.RatioSetting(srv, hi)
		jobs, nodes := st.Generate(seed), st.Nodes(seed)
		b := oasis.ComputeBounds(jobs, nodes, st.Slot, st.Slots)
		pol, err := oasis.New(oasis.Config{Slot: st.Slot, Slots: st.Slots, Eta: 1, Bounds: &b})
		if err != nil {
			return nil, err
		}
		s, err := sim.New(sim.Config{Seed: seed, Tick: st.Slot, Horizon: st.Slot * float64(st.Slots)}, nodes, jobs, oasis.NewPolicy(oasis.OASiSProfile(pol)))
		if err != nil {
			return nil, err
		}
		res, err := s.Run(ctx)
		if err != nil {
			return nil, err
		}
		off := &oasis.Offline{Slot: st.Slot, Slots: st.Slots, Incumbent: pol.PlannedUtility}
		opt, err := off.Solve(jobs, nodes)
		if err != nil {
			return nil, fmt.Errorf("oasis-ratio servers=%d g1<=%g seed %d: %w", srv, hi, seed, err)
		}
		m := measure(res, jobs)
		m["utility_opt"] = opt
		m["utility_oasis_planned"] = pol.PlannedUtility
		m["performance_ratio"] = opt / pol.PlannedUtility
		m["offline_states"] = float64(off.States)
		m["u_over_l"] = maxU(b) / math.Min(b.LW, b.LP)
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	for si, srv := range servers {
		for ri, hi := range ranges {
			st = oasis.RatioSetting(srv, hi)
			i := si*per + ri*seeds
			ms := all[i : i+seeds]
			row := experiment.Row{Policy: "OASiS", Params: map[string]string{"servers": strconv.Itoa(srv), "g1_max": strconv.FormatFloat(hi, 'g', -1, 64)},
				Metrics: experiment.MeanMetrics(ms)}
			worst := 0.0
			for _, m := range ms {
				worst = math.Max(worst, m["performance_ratio"])
			}
			row.Metrics["performance_ratio_max"] = worst
			rows = append(rows, row)
		}
	}
	return &experiment.Report{Experiment: "oasis-ratio", Seed: env.Seed, Seeds: seeds, Results: rows,
		Columns: []string{"performance_ratio", "performance_ratio_max", "utility_opt", "utility_oasis_planned", "admitted", "u_over_l", "offline_states"},
		Notes: []string{fmt.Sprintf("10 jobs per instance, N 1-3, E %d-%d, %d slots of %g s, arrivals over the first %.0f%%; servers split 2:1 workers:PS; g1 in [1, g1_max]; classes as in oasis",
			st.EpochsLo, st.EpochsHi, st.Slots, st.Slot, 100*st.ArrivalSpan),
			"performance_ratio = exact offline optimum / OASiS, both with utility at the end of the completion slot (the simulated utility_total is at the actual finish, slightly higher); mean over seeds, performance_ratio_max the worst seed"}}, nil
}

func maxU(b oasis.Bounds) float64 {
	m := 0.0
	for r := range b.UW {
		m = math.Max(m, math.Max(b.UW[r], b.UP[r]))
	}
	return m
}

func estimate(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	counts := []int{sc.jobs[1], sc.jobs[len(sc.jobs)-1]}
	ests := []float64{0.5, 0.75, 1, 1.25, 1.5}
	if env.Quick {
		ests = []float64{0.5, 1, 1.5}
	}
	var rows []experiment.Row
	var st oasis.Setting
	// Every (count, estimate, seed) run at once, in the order of the rows.
	per := len(ests) * sc.seeds
	all, err := experiment.Parallel(ctx, env, "oasis-estimate", len(counts)*per, func(ctx context.Context, t int, _ func(int, int)) (map[string]float64, error) {
		st := oasis.DefaultSetting(counts[t/per], sc.workers, sc.pss, sc.slots)
		e, seed := ests[t%per/sc.seeds], env.Seed+uint64(t%sc.seeds)
		b := oasis.ComputeBounds(st.Generate(seed), st.Nodes(seed), st.Slot, st.Slots)
		res, jobs, err := run(ctx, env, st, seed, spec("oasis", st, b, e))
		if err != nil {
			return nil, err
		}
		return measure(res, jobs), nil
	})
	if err != nil {
		return nil, err
	}
	for ni, n := range counts {
		st = oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots)
		for ei, e := range ests {
			i := ni*per + ei*sc.seeds
			rows = append(rows, experiment.Row{Policy: "OASiS", Params: map[string]string{"jobs": strconv.Itoa(n), "estimate": strconv.FormatFloat(e, 'g', -1, 64)},
				Metrics: experiment.MeanMetrics(all[i : i+sc.seeds])})
		}
	}
	return &experiment.Report{Experiment: "oasis-estimate", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "admitted", "rejected", "deadline_miss_mean_s"},
		Notes:   []string{settingNote(st), "estimate = the factor applied to both U (every resource, both pools) and L"}}, nil
}
