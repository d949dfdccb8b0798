package experiment

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/sim"
)

// Setup describes one simulated scenario for RunPolicies.
type Setup struct {
	// Nodes of the cluster for a seed.
	Nodes func(seed uint64) []cluster.Node
	// Jobs of the workload for a seed. Called once per policy and seed so
	// that no run sees another's job objects.
	Jobs func(seed uint64) ([]*cluster.Job, error)
	// Config of the simulator; Seed is filled in per run.
	Config sim.Config
	// Recorder, when set, makes a recorder for each run: it watches the
	// run through sim.Config.Observe and its metrics join the run's.
	Recorder func(seed uint64, nodes []cluster.Node) Recorder
	// Params are the scenario's parameters (e.g. an arrival pattern),
	// added to every row and to the run labels.
	Params map[string]string
}

// Recorder watches one simulation run and derives metrics from it that the
// standard summary does not have (replica counts over time, say).
type Recorder interface {
	Observe(t float64, kind sim.Observed, js *cluster.JobState, detail string)
	Metrics(res *sim.Result) map[string]float64
}

// Run is the result of one policy on one seed.
type Run struct {
	Policy string
	// Label tells apart two runs of one policy with different parameters
	// (charts and per-job files are keyed by it): the spec, made safe for
	// file names.
	Label  string
	Seed   uint64
	Result *sim.Result
	// Recorder is the run's recorder, nil unless Setup.Recorder is set.
	Recorder Recorder
}

// RunPolicies runs every policy spec on every seed and returns one row per
// policy with metrics averaged over seeds, plus all individual runs (in
// spec order, seeds consecutive). The runs go through Parallel, so they
// use every core and the result does not depend on how many do.
func RunPolicies(ctx context.Context, env *Env, label string, setup Setup, specs []string, seeds int) ([]Row, []Run, error) {
	type result struct {
		run     Run
		metrics map[string]float64
	}
	res, err := Parallel(ctx, env, label, len(specs)*seeds, func(ctx context.Context, i int, report func(done, total int)) (result, error) {
		spec, seed := specs[i/seeds], env.Seed+uint64(i%seeds)
		p, err := env.Policies.New(spec)
		if err != nil {
			return result{}, err
		}
		jobs, err := setup.Jobs(seed)
		if err != nil {
			return result{}, err
		}
		cfg := setup.Config
		cfg.Seed = seed
		nodes := setup.Nodes(seed)
		var rec Recorder
		if setup.Recorder != nil {
			rec = setup.Recorder(seed, nodes)
			cfg.Observe = rec.Observe
		}
		cfg.OnProgress = report
		s, err := sim.New(cfg, nodes, jobs, p)
		if err != nil {
			return result{}, fmt.Errorf("%s: %w", spec, err)
		}
		res, err := s.Run(ctx)
		if err != nil {
			return result{}, fmt.Errorf("%s seed %d: %w", spec, seed, err)
		}
		m := res.Metrics()
		if rec != nil {
			for k, v := range rec.Metrics(res) {
				m[k] = v
			}
		}
		return result{run: Run{Policy: p.Name(), Label: specLabel(spec, setup.Params), Seed: seed, Result: res, Recorder: rec}, metrics: m}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	var rows []Row
	runs := make([]Run, len(res))
	for si, spec := range specs {
		var ms, rej, unf []map[string]float64
		name := spec
		for k := range seeds {
			r := res[si*seeds+k]
			runs[si*seeds+k] = r.run
			ms = append(ms, r.metrics)
			name = r.run.Policy
			rj, uf := countReasons(r.run.Result.Records)
			rej, unf = append(rej, rj), append(unf, uf)
		}
		row := Row{Policy: name, Metrics: MeanMetrics(ms), Rejected: meanCounts(rej, seeds), Unfinished: meanCounts(unf, seeds)}
		if spec != name {
			_, params, _ := policy.ParseSpec(spec)
			row.Params = params
		}
		for k, v := range setup.Params {
			if row.Params == nil {
				row.Params = map[string]string{}
			}
			row.Params[k] = v
		}
		rows = append(rows, row)
	}
	return rows, runs, nil
}

// JCTCDF builds a chart of the JCT CDF of the first seed of each policy.
func JCTCDF(title string, runs []Run) ChartFile {
	c := &chart.Line{Title: title, XLabel: "job completion time (s, log scale)", YLabel: "fraction of jobs", LogX: true}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Label] {
			continue
		}
		seen[r.Label] = true
		var jct []float64
		for _, rec := range r.Result.Records {
			if rec.Finished() {
				jct = append(jct, rec.JCT())
			}
		}
		x, y := chart.CDF(metrics.Sorted(jct))
		c.Series = append(c.Series, chart.Series{Name: r.Label, X: x, Y: y})
	}
	return ChartFile{File: "jct-cdf.svg", Line: c}
}

// UtilChart plots GPU utilisation over time of the first seed of each
// policy.
func UtilChart(title string, runs []Run) ChartFile {
	c := &chart.Line{Title: title, XLabel: "time (h)", YLabel: "GPU allocation", Step: true}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Label] {
			continue
		}
		seen[r.Label] = true
		s := chart.Series{Name: r.Label}
		for _, p := range r.Result.Stats.GPUUtilSeries {
			s.X = append(s.X, p.T/3600)
			s.Y = append(s.Y, p.Value)
		}
		c.Series = append(c.Series, s)
	}
	return ChartFile{File: "gpu-util.svg", Line: c}
}

// JobTables returns the per-job records of the first seed of each policy.
func JobTables(runs []Run) []JobTable {
	var out []JobTable
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Label] {
			continue
		}
		seen[r.Label] = true
		out = append(out, JobTable{Name: "jobs-" + r.Label + "-seed" + strconv.FormatUint(r.Seed, 10), Records: r.Result.Records})
	}
	return out
}

// specLabel joins a policy spec and scenario parameters into a name safe
// for files and legends: "fitgpp:lambda=0.5;p=2" becomes
// "fitgpp-lambda-0.5-p-2", and with {arrivals: together} appended
// "-together" (parameter values in key order).
func specLabel(spec string, params map[string]string) string {
	l := strings.NewReplacer(":", "-", ";", "-", "=", "-", "/", "-", " ", "").Replace(spec)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l += "-" + params[k]
	}
	return l
}
