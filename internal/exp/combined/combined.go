// Package combined holds the experiments of the `drover` profile: the
// mixed workload compared across every single-paper preset and the
// baselines (combined, combined-philly), and the ablation that switches
// each of drover's parts off in turn (combined-ablation).
package combined

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// Policies are compared by `combined`: drover, every single-paper preset,
// and the baselines. predictive runs on its base (k8s-default) with no
// instance catalogue on this fixed cluster, so its Provision plugin is
// inactive: see docs/combined.md.
var Policies = []string{"drover", "fitgpp", "specon", "elastic", "oasis", "predictive:base=k8s-default", "fifo", "k8s-default", "drf"}

// Ablation switches off one part of drover at a time.
var Ablation = []string{"drover", "drover:shrink=false", "drover:ccvictim=true", "drover:preempt=false",
	"drover:scaleup=false", "drover:specon=false", "drover:payoff=true"}

// Columns are the metrics the tables show.
var Columns = []string{"te_slowdown_p95", "be_jct_mean_s", "makespan_s", "utility_total", "gpu_util",
	"preemptions", "migrations", "resizes", "rejected", "cost"}

// spread lists the metrics whose standard deviation over seeds is reported
// (as KEY_sd).
var spread = []string{"te_slowdown_p95", "be_jct_mean_s", "makespan_s", "utility_total"}

// Experiments returns the combined experiments.
func Experiments() []experiment.Experiment {
	return []experiment.Experiment{
		{Name: "combined", Description: "the drover profile against every single-paper preset and the baselines on a mixed day (TE trials, elastic BE jobs with loss curves, PS jobs with deadlines, a daily cycle) on 14 GPU + 2 CPU nodes, 5 seeds",
			Run: func(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
				return run(ctx, env, "combined", synthetic, Policies)
			}},
		{Name: "combined-philly", Description: "the combined comparison on a representative day of the Philly trace on 48 GPU + 4 CPU nodes (GPUs and run times from the trace; elastic BE jobs, loss curves and deadlines added as in combined), 5 seeds",
			Run: func(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
				return run(ctx, env, "combined-philly", philly, Policies)
			}},
		{Name: "combined-ablation", Description: "the drover profile with each part switched off in turn (shrink, FitGpp preemption, scale-up, SpeCon) and converged-victim and payoff admission switched on on the combined workload, 5 seeds",
			Run: func(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
				return run(ctx, env, "combined-ablation", synthetic, Ablation)
			}},
	}
}

type scenario func(env *experiment.Env) (experiment.Setup, string, error)

// Cluster sizes: 14 GPU nodes (112 GPUs) and 2 CPU nodes; quick runs halve
// the GPU pool and cap the job count.
func sizes(env *experiment.Env) (workers, ps, maxJobs int) {
	if env.Quick {
		return 7, 1, 120
	}
	return 14, 2, 0
}

func synthetic(env *experiment.Env) (experiment.Setup, string, error) {
	w, ps, maxJobs := sizes(env)
	o := DefaultOptions(int64(w) * 8)
	o.MaxJobs = maxJobs
	return experiment.Setup{
		Nodes:  func(uint64) []cluster.Node { return Nodes(w, ps) },
		Jobs:   func(seed uint64) ([]*cluster.Job, error) { return Generate(seed, o), nil },
		Config: sim.Config{Tick: 30, SampleEvery: 60},
	}, fmt.Sprintf("%d GPU nodes x (64 cores, 512 GiB, 8 GPU) + %d CPU nodes for parameter servers; offered GPU load %.1f over one day with a ±%.0f%% daily cycle; %.0f%% TE trials, %.0f%% of BE jobs with a utility", w, ps, o.Load, 100*o.Swing, 100*o.TEShare, 100*o.UtilityShare), nil
}

func philly(env *experiment.Env) (experiment.Setup, string, error) {
	// A Philly day asks for about as many GPUs as the trace's cluster
	// averages (374 busy GPUs): 48 GPU nodes (384 GPUs) keep it near load
	// 1, like the synthetic day.
	w, ps, maxJobs := 48, 4, 0
	if env.Quick {
		w, ps, maxJobs = 8, 1, 150
	}
	po := workload.DefaultPhillyOptions()
	all, err := workload.LoadPhilly(env.PhillyPath, po)
	if err != nil {
		return experiment.Setup{}, "", err
	}
	day := PhillyDay(all, maxJobs)
	return experiment.Setup{
		Nodes:  func(uint64) []cluster.Node { return Nodes(w, ps) },
		Jobs:   func(seed uint64) ([]*cluster.Job, error) { return FromPhilly(seed, day), nil },
		Config: sim.Config{Tick: 30, SampleEvery: 60},
	}, fmt.Sprintf("%d GPU nodes + %d CPU nodes; %d Philly jobs of one day (the median by GPU demand of the days with at least 100 jobs), GPUs and run times from the trace", w, ps, len(day)), nil
}

func run(ctx context.Context, env *experiment.Env, name string, sc scenario, specs []string) (*experiment.Report, error) {
	setup, note, err := sc(env)
	if err != nil {
		return nil, err
	}
	seeds := env.SeedCount(5)
	rows, runs, err := experiment.RunPolicies(ctx, env, name, setup, specs, seeds)
	if err != nil {
		return nil, err
	}
	addSpread(rows, runs, specs, seeds)
	cols := slices.Clone(Columns)
	for _, k := range spread {
		cols = append(cols, k+"_sd")
	}
	return &experiment.Report{Experiment: name, Seed: env.Seed, Seeds: seeds, Results: rows, Columns: cols,
		Notes: []string{note, "TE p95 slowdown, BE mean JCT, makespan and utility are seed means; *_sd their standard deviation over seeds"},
		Jobs:  experiment.JobTables(runs),
		Charts: []experiment.ChartFile{
			ClassSlowdown("TE slowdown CDF, "+name, runs, cluster.ClassTE, "te-slowdown.svg"),
			ClassSlowdown("BE slowdown CDF, "+name, runs, cluster.ClassBE, "be-slowdown.svg"),
			experiment.UtilChart("GPU allocation, "+name, runs)}}, nil
}

// addSpread adds the standard deviation over seeds of the spread metrics.
// Runs come in spec order, seeds consecutive, as RunPolicies returns them.
func addSpread(rows []experiment.Row, runs []experiment.Run, specs []string, seeds int) {
	for i := range rows {
		for _, k := range spread {
			var xs []float64
			for _, r := range runs[i*seeds : (i+1)*seeds] {
				xs = append(xs, r.Result.Metrics()[k])
			}
			rows[i].Metrics[k+"_sd"] = stddev(xs)
		}
	}
}

func stddev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := metrics.Mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}

// ClassSlowdown charts the slowdown CDF of one class for the first seed of
// each profile.
func ClassSlowdown(title string, runs []experiment.Run, class cluster.Class, file string) experiment.ChartFile {
	c := &chart.Line{Title: title, XLabel: "slowdown (JCT / run time, log scale)", YLabel: "fraction of " + class.String() + " jobs", LogX: true}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Label] {
			continue
		}
		seen[r.Label] = true
		var xs []float64
		for _, rec := range r.Result.Records {
			if rec.Class == class && rec.Finished() {
				xs = append(xs, rec.Slowdown())
			}
		}
		x, y := chart.CDF(metrics.Sorted(xs))
		c.Series = append(c.Series, chart.Series{Name: r.Label, X: x, Y: y})
	}
	return experiment.ChartFile{File: file, Line: c}
}

// PhillyDay returns the Philly jobs submitted on a representative day:
// among the trace's days with at least 100 submissions, the one with the
// median GPU demand (GPU-seconds at requested sizes), shifted to start at
// 0; at most maxJobs of them when positive. The busiest day would measure
// an overload, the first days of the trace are nearly empty.
func PhillyDay(all []*cluster.Job, maxJobs int) []*cluster.Job {
	if len(all) == 0 {
		return nil
	}
	start := all[0].Submit
	type day struct {
		d    int
		n    int
		load float64
	}
	byDay := map[int]*day{}
	for _, j := range all {
		d := int((j.Submit - start) / Day)
		if byDay[d] == nil {
			byDay[d] = &day{d: d}
		}
		byDay[d].n++
		byDay[d].load += j.Work * float64(j.RequestedDemand()[resource.GPU])
	}
	var days []*day
	for _, x := range byDay {
		if x.n >= 100 {
			days = append(days, x)
		}
	}
	if len(days) == 0 {
		return nil
	}
	slices.SortFunc(days, func(a, b *day) int { return cmp.Or(cmp.Compare(a.load, b.load), cmp.Compare(a.d, b.d)) })
	t0 := start + float64(days[len(days)/2].d)*Day
	var out []*cluster.Job
	for _, j := range all {
		if j.Submit >= t0 && j.Submit < t0+Day {
			out = append(out, j)
			if maxJobs > 0 && len(out) >= maxJobs {
				break
			}
		}
	}
	return out
}

// FromPhilly turns a day of Philly jobs into the mixed workload's shape:
// GPUs, run times and the TE/BE split come from the trace; a BE job of g
// GPUs becomes g workers of 1 GPU (or g/8 of 8 above 8 GPUs), elastic
// from half to twice that (at most 16), with a loss curve; 30% of BE jobs
// get a utility as in Generate (without a parameter-server model, so the
// oasis preset rejects them and drover's payoff test decides them).
func FromPhilly(seed uint64, day []*cluster.Job) []*cluster.Job {
	r := rng.New(seed, "combined-philly")
	t0 := day[0].Submit
	out := make([]*cluster.Job, 0, len(day))
	for i, pj := range day {
		j := &cluster.Job{ID: pj.ID, Class: pj.Class, Tenant: pj.Tenant, Submit: math.Round(pj.Submit - t0), Work: pj.Work, Seed: seed*1_000_003 + uint64(i)}
		gpus := pj.RequestedDemand()[resource.GPU]
		per := int64(1)
		if gpus > 8 {
			per = 8
		}
		n := int(max(gpus/per, 1))
		d := resource.New(8*float64(per), 32*float64(per), per)
		if gpus == 0 {
			d = resource.New(8, 32, 0)
		}
		if j.Class == cluster.ClassTE {
			j.Groups = []cluster.ReplicaGroup{{Name: "worker", Demand: d, Replicas: n, Min: n, Max: n}}
		} else {
			j.Groups = []cluster.ReplicaGroup{{Name: "worker", Demand: d, Replicas: n, Min: max(1, n/2), Max: min(2*n, 16)}}
			j.GracePeriod = math.Round(rng.TruncNormal(r, 120, 60, 0, 300))
			j.CheckpointCost, j.RestoreCost, j.RescaleCost = 30, 30, 10
			m := specModels[r.IntN(len(specModels))]
			j.Model, j.Eval = m.Name, m.Curve
			if r.Float64() < 0.3 {
				g2 := []float64{0, 0.3 / 3600, 3.0 / 3600}[r.IntN(3)]
				j.Utility = cluster.Sigmoid{G1: 1 + 9*r.Float64(), G2: g2, G3: (1.5 + 2.5*r.Float64()) * j.Work}
			}
		}
		out = append(out, j)
	}
	return out
}

// Label for docs: the policy specs, comma-separated.
func Label(specs []string) string { return strings.Join(specs, ", ") }
