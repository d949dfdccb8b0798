// Package oasis defines the experiments of the OASiS reproduction
// (pkg/oasis): the total-utility sweep over job counts (the paper's Fig. 4),
// completion minus target time (Fig. 5), the performance ratio against the
// exact offline optimum (Fig. 6) and the price bounds given as estimates
// (Fig. 7).
package oasis

import (
	"context"
	"fmt"
	"maps"
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
		{Name: "oasis", Description: "OASiS vs FIFO, DRF, RRH, Dorm: total utility as the job count grows from ample to scarce resources (paper Fig. 4), under the default reading and the earlier one", Run: sweep},
		{Name: "oasis-deadline", Description: "OASiS and baselines: actual minus target completion time of time-sensitive and time-critical jobs (paper Fig. 5), under both readings", Run: deadline},
		{Name: "oasis-ratio", Description: "OASiS performance ratio (exact offline optimum / OASiS) for 10 jobs over cluster sizes and priority ranges (paper Fig. 6), under both readings", Run: ratio},
		{Name: "oasis-estimate", Description: "OASiS with its price bounds U and L given as 50%..150% of their true values (paper Fig. 7), under both readings", Run: estimate},
		{Name: "oasis-lfloor", Description: "OASiS with L floored at 1e-12..1e-2 of the largest U, at the scarcest job count, under both readings", Run: lfloor},
		{Name: "oasis-readings", Description: "the two readings the paper leaves open, crossed: utility decay g2 drawn per timespan or per slot x RRH starting admitted jobs in arrival order or by value (skipping), OASiS vs FIFO, DRF, RRH, Dorm at 600 and 800 jobs, U per unit of resource", Run: readingsGrid},
		{Name: "oasis-rrh", Description: "RRH's start order (arrival, the default; value, backfilling; the paper names none) and admission threshold (0, 0.1, 0.3) at the scarcest job count, under both readings", Run: rrhSweep},
	}
}

// Compared maps the paper's scheme names to registered policies. fifo and
// drf name package baseline's general policies, so the parameter-server
// versions are ps-fifo and ps-drf. RRH's policy depends on the reading
// (Reading.RRH).
var Compared = []struct{ Label, Policy string }{
	{"OASiS", "oasis"}, {"FIFO", "ps-fifo"}, {"DRF", "ps-drf"}, {"RRH", "rrh"}, {"Dorm", "dorm"},
}

// variant is an extra row of the default reading's sweep, not one of the
// paper's schemes: RRH starting jobs by value density and skipping those
// that do not fit, the stronger variant the earlier reading used.
var variant = struct{ Label, Policy string }{"RRH-value", "rrh:order=value"}

// Reading is one interpretation of the paper where its text allows (or
// lost) more than one. The experiments run both, so that the doc can put
// the earlier reading's figures beside the paper's.
type Reading struct {
	Name string
	// U is how the price bound U is normalised (oasis.UReading).
	U oasis.UReading
	// Earlier uses the earlier utility ranges (oasis.Setting.EarlierUtility).
	Earlier bool
	// RRH is the registry spec of the RRH scheme.
	RRH string
}

// Readings: the default (U per unit of resource, decay per timespan so
// that L is the jobs' own, RRH in arrival order) and the earlier one (U
// per unit of resource-slot, decay per slot with L at its floor, RRH by
// value density with skipping).
var Readings = []Reading{
	{Name: "default", U: oasis.UPerResource, RRH: "rrh"},
	{Name: "earlier", U: oasis.UPerResourceSlot, Earlier: true, RRH: "rrh:order=value"},
}

// setting applies the reading's utility ranges to st.
func (rd Reading) setting(st oasis.Setting) oasis.Setting {
	if rd.Earlier {
		return st.EarlierUtility()
	}
	return st
}

// bounds are the true price bounds of a seed's workload under the reading.
func (rd Reading) bounds(st oasis.Setting, seed uint64) oasis.Bounds {
	return oasis.ComputeBoundsAs(st.Generate(seed), st.Nodes(seed), st.Slot, st.Slots, rd.U)
}

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

// compare runs the five schemes (and, under the default reading with
// variant set, the RRH-value row) over seeds of a setting under a reading
// and returns one row per scheme (metrics averaged over seeds). OASiS rows
// also get u_over_l, the spread of its price functions.
func compare(ctx context.Context, env *experiment.Env, rd Reading, st oasis.Setting, seeds int, params map[string]string, withVariant bool) ([]experiment.Row, error) {
	st = rd.setting(st)
	schemes := slices.Clone(Compared)
	for i := range schemes {
		if schemes[i].Label == "RRH" {
			schemes[i].Policy = rd.RRH
		}
	}
	if withVariant && rd.RRH != variant.Policy {
		schemes = append(schemes, variant)
	}
	ms := make([][]map[string]float64, len(schemes))
	for k := 0; k < seeds; k++ {
		seed := env.Seed + uint64(k)
		b := rd.bounds(st, seed)
		for i, c := range schemes {
			res, jobs, err := run(ctx, env, st, seed, spec(c.Policy, st, b, 1))
			if err != nil {
				return nil, err
			}
			m := measure(res, jobs)
			if c.Policy == "oasis" {
				m["u_over_l"] = b.UOverL()
			}
			ms[i] = append(ms[i], m)
			if env.Progress != nil {
				env.Progress(fmt.Sprintf("%s, %d jobs", rd.Name, st.Jobs), k*len(schemes)+i+1, seeds*len(schemes))
			}
		}
	}
	var rows []experiment.Row
	for i, c := range schemes {
		p := map[string]string{"policy_name": c.Policy, "reading": rd.Name}
		for k, v := range params {
			p[k] = v
		}
		m := experiment.MeanMetrics(ms[i])
		u := make([]float64, len(ms[i]))
		for k, x := range ms[i] {
			u[k] = x["utility_total"]
		}
		_, h := experiment.MeanCI95(u)
		experiment.PutCI95(m, "utility_total_ci95", h)
		rows = append(rows, experiment.Row{Policy: c.Label, Params: p, Metrics: m})
	}
	return rows, nil
}

// Decays are the two readings of the sigmoid's decay g2: per timespan
// (oasis.DefaultSetting) or per slot (oasis.Setting.EarlierUtility).
var Decays = []string{"timespan", "slot"}

// RRHOrders are the two readings of RRH's start order: arrival (no
// skipping) and value (utility per resource-second, skipping what does
// not fit).
var RRHOrders = []string{"arrival", "value"}

// readingsGrid crosses the decay readings with RRH's start order at the
// scarce job counts (600 and 800; 60 and 120 with --quick), every scheme,
// U per unit of resource in all four. Rows carry decay and rrh_order; the
// OASiS, FIFO, DRF and Dorm rows of a decay are the same runs under both
// orders (only RRH depends on the order).
func readingsGrid(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	jobs := []int{600, 800}
	if env.Quick {
		jobs = []int{60, 120}
	}
	var rows []experiment.Row
	for _, n := range jobs {
		for _, decay := range Decays {
			rd := Reading{Name: "decay=" + decay, U: oasis.UPerResource, Earlier: decay == "slot", RRH: "rrh"}
			r, err := compare(ctx, env, rd, oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots), sc.seeds, map[string]string{"jobs": strconv.Itoa(n)}, true)
			if err != nil {
				return nil, err
			}
			for _, order := range RRHOrders {
				rrh := map[string]string{"arrival": "rrh", "value": variant.Policy}[order]
				for _, row := range r {
					if row.Policy == "RRH" || row.Policy == variant.Label {
						if row.Params["policy_name"] != rrh {
							continue
						}
						row.Policy = "RRH"
					}
					p := maps.Clone(row.Params)
					delete(p, "reading")
					p["decay"], p["rrh_order"] = decay, order
					rows = append(rows, experiment.Row{Policy: row.Policy, Params: p, Metrics: maps.Clone(row.Metrics)})
				}
			}
		}
	}
	return &experiment.Report{Experiment: "oasis-readings", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "utility_total_ci95", "admitted", "completed", "deadline_miss_mean_s", "gpu_util"},
		Notes: []string{settingNote(oasis.DefaultSetting(jobs[0], sc.workers, sc.pss, sc.slots)), mapping,
			"decay=timespan: g2 0.7-3.5 (sensitive) and 3.5-7 (critical) per timespan; decay=slot: 0.1-0.5 and 2-5 per slot (L at its 1e-12 floor); U per unit of resource (Appendix A) in both",
			"rrh_order=arrival: admitted jobs start in arrival order, a job that does not fit holding those behind it (rrh); rrh_order=value: by expected utility per resource-second, skipping jobs that do not fit (rrh:order=value); OASiS, FIFO, DRF and Dorm do not depend on it (the same runs under both orders)",
			"utility_total_ci95: half-width of the 95% confidence interval of the mean over seeds"}}, nil
}

func settingNote(st oasis.Setting) string {
	return fmt.Sprintf("%d worker servers (EC2 C4 + GPUs), %d PS servers (P2/G3), %d slots of %g s; arrivals Poisson over the first %.0f%%; classes %.0f/%.0f/%.0f%% insensitive/sensitive/critical; g1 in [%g, %g]",
		st.WorkerServers, st.PSServers, st.Slots, st.Slot, 100*st.ArrivalSpan, 100*st.Insensitive, 100*st.Sensitive,
		100*(1-st.Insensitive-st.Sensitive), st.PriorityLo, st.PriorityHi)
}

const (
	mapping      = "rows use the paper's names; registered policies: OASiS=oasis, FIFO=ps-fifo, DRF=ps-drf, RRH=rrh, Dorm=dorm (see params.policy_name)"
	readingsNote = "reading=default (drover's choices where the text is silent; see docs/oasis.md): U per unit of resource (Appendix A), g2 0.7-3.5 (sensitive) and 3.5-7 (critical) per timespan so that L is the jobs' own, RRH in arrival order (rrh); reading=earlier: U per unit of resource-slot (oasis:ubound=resource-slot), g2 0.1-0.5 and 2-5 per slot with L at its 1e-12 floor, RRH by value density skipping what does not fit (rrh:order=value)"
)

func sweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	var rows []experiment.Row
	var st oasis.Setting
	for _, n := range sc.jobs {
		st = oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots)
		for _, rd := range Readings {
			r, err := compare(ctx, env, rd, st, sc.seeds, map[string]string{"jobs": strconv.Itoa(n)}, true)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r...)
		}
	}
	return &experiment.Report{Experiment: "oasis", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "admitted", "rejected", "completed", "low_value_completed", "deadline_miss_mean_s", "gpu_util", "u_over_l"},
		Notes: []string{settingNote(st), mapping, readingsNote, "utility_total sums sigmoid utilities of jobs finished within the timespan",
			"RRH-value is a labelled variant, not the paper's RRH: rrh:order=value under the default reading's workload"}}, nil
}

func deadline(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	n := sc.jobs[len(sc.jobs)/2]
	st := oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots)
	var rows []experiment.Row
	for _, rd := range Readings {
		r, err := compare(ctx, env, rd, st, sc.seeds, map[string]string{"jobs": strconv.Itoa(n)}, false)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return &experiment.Report{Experiment: "oasis-deadline", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"deadline_miss_mean_s", "deadline_miss_sensitive_mean_s", "deadline_miss_sensitive_sd_s",
			"deadline_miss_critical_mean_s", "deadline_miss_critical_sd_s", "completed", "utility_total"},
		Notes: []string{settingNote(st), mapping, readingsNote, "deadline_miss = completion time minus the sigmoid's target g3, over finished time-sensitive and time-critical jobs"}}, nil
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
	for _, rd := range Readings {
		for _, srv := range servers {
			for _, hi := range ranges {
				st = rd.setting(oasis.RatioSetting(srv, hi))
				var ms []map[string]float64
				for k := 0; k < seeds; k++ {
					seed := env.Seed + uint64(k)
					jobs, nodes := st.Generate(seed), st.Nodes(seed)
					b := oasis.ComputeBoundsAs(jobs, nodes, st.Slot, st.Slots, rd.U)
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
						return nil, fmt.Errorf("oasis-ratio %s servers=%d g1<=%g seed %d: %w", rd.Name, srv, hi, seed, err)
					}
					m := measure(res, jobs)
					m["utility_opt"] = opt
					m["utility_oasis_planned"] = pol.PlannedUtility
					m["performance_ratio"] = opt / pol.PlannedUtility
					m["offline_states"] = float64(off.States)
					m["u_over_l"] = b.UOverL()
					ms = append(ms, m)
				}
				row := experiment.Row{Policy: "OASiS", Params: map[string]string{"reading": rd.Name, "servers": strconv.Itoa(srv), "g1_max": strconv.FormatFloat(hi, 'g', -1, 64)},
					Metrics: experiment.MeanMetrics(ms)}
				worst := 0.0
				for _, m := range ms {
					worst = math.Max(worst, m["performance_ratio"])
				}
				row.Metrics["performance_ratio_max"] = worst
				rows = append(rows, row)
			}
		}
	}
	return &experiment.Report{Experiment: "oasis-ratio", Seed: env.Seed, Seeds: seeds, Results: rows,
		Columns: []string{"performance_ratio", "performance_ratio_max", "utility_opt", "utility_oasis_planned", "admitted", "u_over_l", "offline_states"},
		Notes: []string{fmt.Sprintf("10 jobs per instance, N 1-3, E %d-%d, %d slots of %g s, arrivals over the first %.0f%%; servers split 2:1 workers:PS; g1 in [1, g1_max]; classes as in oasis",
			st.EpochsLo, st.EpochsHi, st.Slots, st.Slot, 100*st.ArrivalSpan), readingsNote,
			"performance_ratio = exact offline optimum / OASiS, both with utility at the end of the completion slot (the simulated utility_total is at the actual finish, slightly higher); mean over seeds, performance_ratio_max the worst seed"}}, nil
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
	for _, rd := range Readings {
		for _, n := range counts {
			st = rd.setting(oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots))
			for _, e := range ests {
				var ms []map[string]float64
				for k := 0; k < sc.seeds; k++ {
					seed := env.Seed + uint64(k)
					res, jobs, err := run(ctx, env, st, seed, spec("oasis", st, rd.bounds(st, seed), e))
					if err != nil {
						return nil, err
					}
					ms = append(ms, measure(res, jobs))
				}
				rows = append(rows, experiment.Row{Policy: "OASiS", Params: map[string]string{"reading": rd.Name, "jobs": strconv.Itoa(n), "estimate": strconv.FormatFloat(e, 'g', -1, 64)},
					Metrics: experiment.MeanMetrics(ms)})
			}
		}
	}
	return &experiment.Report{Experiment: "oasis-estimate", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "admitted", "rejected", "low_value_completed", "deadline_miss_mean_s"},
		Notes:   []string{settingNote(st), readingsNote, "estimate = the factor applied to both U (every resource, both pools) and L"}}, nil
}

// Floors are the oasis-lfloor sweep's values of the oasis plugin's
// lfloor parameter.
var Floors = []float64{1e-12, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2}

// lfloor runs OASiS at the scarcest job count with L floored at each of
// Floors times the largest U. l_floored is the share of seeds in which the
// floor, not the jobs, set L; u_over_l is the spread of the prices used.
func lfloor(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	n := sc.jobs[len(sc.jobs)-1]
	var rows []experiment.Row
	var st oasis.Setting
	for _, rd := range Readings {
		st = rd.setting(oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots))
		for _, f := range Floors {
			var ms []map[string]float64
			for k := 0; k < sc.seeds; k++ {
				seed := env.Seed + uint64(k)
				jobs, nodes := st.Generate(seed), st.Nodes(seed)
				raw := oasis.ComputeBoundsFloor(jobs, nodes, st.Slot, st.Slots, rd.U, 0)
				used := oasis.ComputeBoundsFloor(jobs, nodes, st.Slot, st.Slots, rd.U, f)
				fs := strconv.FormatFloat(f, 'g', -1, 64)
				res, jobs, err := run(ctx, env, st, seed, spec("oasis", st, rd.bounds(st, seed), 1)+";lfloor="+fs)
				if err != nil {
					return nil, err
				}
				m := measure(res, jobs)
				m["u_over_l"] = used.UOverL()
				m["l_floored"] = 0
				if math.Min(raw.LW, raw.LP) < f*raw.MaxU() {
					m["l_floored"] = 1
				}
				// log10 of the jobs' own U/L (L may underflow to 0)
				m["log10_u_over_l_jobs"] = math.Log10(raw.MaxU()) - math.Log10(math.Max(math.Min(raw.LW, raw.LP), math.SmallestNonzeroFloat64))
				ms = append(ms, m)
			}
			rows = append(rows, experiment.Row{Policy: "OASiS", Params: map[string]string{"reading": rd.Name, "jobs": strconv.Itoa(n),
				"lfloor": strconv.FormatFloat(f, 'g', -1, 64)}, Metrics: experiment.MeanMetrics(ms)})
		}
	}
	return &experiment.Report{Experiment: "oasis-lfloor", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "admitted", "rejected", "low_value_completed", "l_floored", "u_over_l", "log10_u_over_l_jobs"},
		Notes: []string{settingNote(st), readingsNote,
			"lfloor: L = max(the jobs' L, lfloor * largest U) (oasis:lfloor=...); l_floored: share of seeds where the floor set L; u_over_l: largest U over the L used; log10_u_over_l_jobs: log10 of largest U over the jobs' own L"}}, nil
}

// rrhSweep runs RRH at the scarcest job count in both start orders and
// at three admission thresholds, under both readings' workloads.
func rrhSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	sc := fullScale(env)
	n := sc.jobs[len(sc.jobs)-1]
	var rows []experiment.Row
	var st oasis.Setting
	for _, rd := range Readings {
		st = rd.setting(oasis.DefaultSetting(n, sc.workers, sc.pss, sc.slots))
		for _, order := range oasis.RRHOrderNames {
			for _, th := range []string{"0", "0.1", "0.3"} {
				p := "rrh:order=" + order + ";threshold=" + th
				var ms []map[string]float64
				for k := 0; k < sc.seeds; k++ {
					res, jobs, err := run(ctx, env, st, env.Seed+uint64(k), p)
					if err != nil {
						return nil, err
					}
					ms = append(ms, measure(res, jobs))
				}
				rows = append(rows, experiment.Row{Policy: "RRH", Params: map[string]string{"reading": rd.Name, "jobs": strconv.Itoa(n),
					"order": order, "threshold": th, "policy_name": p}, Metrics: experiment.MeanMetrics(ms)})
			}
		}
	}
	return &experiment.Report{Experiment: "oasis-rrh", Seed: env.Seed, Seeds: sc.seeds, Results: rows,
		Columns: []string{"utility_total", "admitted", "rejected", "completed", "low_value_completed", "preemptions", "queue_delay_mean_s"},
		Notes: []string{settingNote(st), readingsNote,
			"order=arrival (the default; the paper names no order): admitted jobs start in arrival order, a job that does not fit holding those behind it; order=value: by expected utility per resource-second, skipping jobs that do not fit; threshold: admission needs gain - delay cost > threshold * g1"}}, nil
}
