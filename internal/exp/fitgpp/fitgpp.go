// Package fitgpp defines the experiments of the FitGpp paper (shared/papers/
// 002): the synthetic comparison of FIFO, LRTP, RAND and FitGpp (Tables 1
// to 4), the sensitivity sweeps of Figs. 4 to 7 and the real-trace run
// (Table 5) on the Philly trace. docs/fitgpp.md compares the results with
// the paper's.
package fitgpp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	fg "github.com/drover-sched/drover/pkg/fitgpp"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// Experiments returns the FitGpp experiments.
func Experiments() []experiment.Experiment {
	return []experiment.Experiment{
		{Name: "fitgpp", Description: "FitGpp paper, Tables 1-4: 84 nodes x (32 CPU, 256 GB, 8 GPU), 30% TE, FIFO load 2.0, fifo and lrtp/rand/fitgpp at P=1 and p=inf, plus fitgpp:preempt=false and strict TE priority (fitgpp:preempt=false;strict=true), 8 seeds",
			Run: compare},
		{Name: "fitgpp-lambda", Description: "FitGpp paper, Fig. 4: TE and BE slowdown against lambda", Run: lambdaSweep},
		{Name: "fitgpp-p", Description: "FitGpp paper, Fig. 5: TE and BE slowdown against P, the cap on preemptions per job", Run: pSweep},
		{Name: "fitgpp-te-share", Description: "FitGpp paper, Fig. 6: p95 slowdown against the share of TE jobs, every policy", Run: teShareSweep},
		{Name: "fitgpp-te-work", Description: "ablation, not in the paper: BE slowdown against the TE share of the work (te_work 0.05-0.5) under fifo, fitgpp, fitgpp:preempt=false and strict TE priority (" + StrictSpec + "), 8 seeds", Run: teWorkSweep},
		{Name: "fitgpp-gp-scale", Description: "FitGpp paper, Fig. 7: p95 slowdown with grace periods scaled x1, x2, x4, x8", Run: gpScaleSweep},
		{Name: "fitgpp-grace-model", Description: "ablation: the fitgpp setup (8 seeds) with grace periods x1 and x8, a victim making no progress during its grace period (the simulator's default, the paper's suspension processing) vs progressing through it (sim.Config.ProgressDuringGrace)",
			Run: graceModel},
		{Name: "fitgpp-te-demand", Description: "calibration of the TE demand: LRTP's preemption events per job (paper, Table 3: 0.096) against the TE demand scale (TE CPU, memory and GPU means and sds = scale x BE's), the fitgpp setup, 8 seeds",
			Run: teDemandSweep},
		{Name: "fitgpp-philly", Description: "FitGpp paper, Table 5, on the Philly trace: all 82,247 jobs, TE = ran <= 300 s, BE grace periods drawn as in the synthetic setup, 80 nodes of 8 GPUs",
			Run: philly},
	}
}

// Columns shown for the main comparison.
var mainColumns = []string{"te_slowdown_p50", "te_slowdown_p95", "te_slowdown_p99", "be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99",
	"preemption_events_per_job", "preempting_te_per_job", "victims_per_preempting_te",
	"preempted_frac", "preempted_once_frac", "preempted_twice_frac", "preempted_thrice_frac",
	"suspended_wait_p50_min", "suspended_wait_p75_min", "suspended_wait_p95_min", "suspended_wait_p99_min",
	"reschedule_interval_p50_min", "reschedule_interval_p95_min", "gpu_util"}

// Policies of the main comparison: the paper's four at its P = 1, the
// three preemptive ones without a cap (p=inf: Table 4 counts jobs
// preempted 2 and 3 times under every policy, so it is the uncapped run),
// and the ablation that serves TE jobs first without preempting, which
// separates the gain of the ordering from the gain (or cost) of
// preemption.
//
// The last row is strict TE priority (issue 26): no preemption, and no BE
// job starts while a TE job waits, so BE jobs pay the whole cost of
// serving TE jobs first; preempt=false lets BE jobs start ahead of a TE
// job that does not fit.
var mainPolicies = []string{"fifo", "lrtp", "rand", "fitgpp", "lrtp:p=inf", "rand:p=inf", "fitgpp:p=inf", "fitgpp:preempt=false", StrictSpec}

// StrictSpec is the strict TE priority ablation.
const StrictSpec = "fitgpp:preempt=false;strict=true"

// scale returns the parameters and seed count for env: the paper's scale,
// or a small one with env.Quick.
func scale(env *experiment.Env, fullSeeds int) (p0 Params, seeds int, note string) {
	p := DefaultParams()
	seeds = env.SeedCount(fullSeeds)
	if env.Quick {
		p.Nodes, p.Jobs = 12, 600
		seeds = env.SeedCount(2)
		return p, seeds, "quick: 12 nodes, 600 jobs per seed"
	}
	return p, seeds, ""
}

// runSet runs specs on the synthetic workload of p and adds the per-job
// metrics the paper reports to each row.
func runSet(ctx context.Context, env *experiment.Env, label string, p Params, specs []string, seeds int) ([]experiment.Row, []experiment.Run, error) {
	return runSetGrace(ctx, env, label, p, specs, seeds, false)
}

// runSetGrace is runSet with the simulator's grace-period model chosen:
// progress=true lets a victim keep training through its grace period
// (sim.Config.ProgressDuringGrace); the default, false, holds its
// resources without progress.
func runSetGrace(ctx context.Context, env *experiment.Env, label string, p Params, specs []string, seeds int, progress bool) ([]experiment.Row, []experiment.Run, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", label, err)
	}
	setup := experiment.Setup{
		Nodes: func(uint64) []cluster.Node { return p.ClusterNodes() },
		Jobs: func(seed uint64) ([]*cluster.Job, error) {
			jobs, err := Generate(seed, p)
			if err != nil {
				return nil, err
			}
			return jobs, fg.ValidateJobs(jobs)
		},
		Config:   sim.Config{Tick: p.Tick, ProgressDuringGrace: progress},
		Recorder: func(uint64, []cluster.Node) experiment.Recorder { return &preemptRecorder{by: map[string]int{}} },
	}
	rows, runs, err := experiment.RunPolicies(ctx, env, label, setup, specs, seeds)
	if err != nil {
		return nil, nil, err
	}
	addRecordMetrics(rows, runs, seeds)
	return rows, runs, nil
}

// addRecordMetrics adds the preemption-count fractions and re-scheduling
// interval percentiles, computed per run from the job records and averaged
// over seeds. RunPolicies returns the runs of row i at runs[i*seeds:].
//
// It also adds the spread over seeds of the slowdowns the docs compare:
// <key>_ci95, the half-width of the 95% confidence interval of the mean
// over seeds, for the keys in ciKeys; and, when the first row is fifo,
// be_p50_vs_fifo and be_p95_vs_fifo with their _ci95 (the change of the
// seed-mean against fifo's, paired by seed, experiment.ChangeCI95).
func addRecordMetrics(rows []experiment.Row, runs []experiment.Run, seeds int) {
	perSeed := func(i int, key string) []float64 {
		xs := make([]float64, seeds)
		for k, r := range runs[i*seeds : (i+1)*seeds] {
			xs[k] = r.Result.Metrics()[key]
		}
		return xs
	}
	for i := range rows {
		var ms []map[string]float64
		for _, r := range runs[i*seeds : (i+1)*seeds] {
			ms = append(ms, RecordMetrics(r.Result.Records, r.Result.Final))
		}
		for k, v := range experiment.MeanMetrics(ms) {
			rows[i].Metrics[k] = v
		}
		for _, k := range ciKeys {
			_, h := experiment.MeanCI95(perSeed(i, k))
			experiment.PutCI95(rows[i].Metrics, k+"_ci95", h)
		}
		if i > 0 && rows[0].Policy == "fifo" && len(rows[0].Params) == 0 {
			for _, k := range []string{"p50", "p95"} {
				c, h := experiment.ChangeCI95(perSeed(0, "be_slowdown_"+k), perSeed(i, "be_slowdown_"+k))
				rows[i].Metrics["be_"+k+"_vs_fifo"] = c
				experiment.PutCI95(rows[i].Metrics, "be_"+k+"_vs_fifo_ci95", h)
			}
		}
	}
}

// ciKeys are the slowdowns whose confidence intervals every row reports.
var ciKeys = []string{"te_slowdown_p95", "be_slowdown_p50", "be_slowdown_p95"}

// RecordMetrics computes, from per-job records and the jobs' final states
// (in the same order, as sim.Result has them):
//   - preemption_events_per_job: preemption events over all jobs, the
//     statistic of the paper's Table 3 (for every policy it equals the sum
//     over k of k x Table 4: LRTP 6.3 + 2 x 1.2 + 3 x 0.34 = 9.7%);
//   - the fraction of jobs preempted at least once (preempted_frac,
//     distinct jobs) and exactly once, twice and three times (of all jobs,
//     as Table 4);
//   - percentiles in minutes of suspended_wait, from the suspension to the
//     restart (JobRecord.RescheduleDelays): the wait of a job "placed back
//     on the top of the queue", which is "re-scheduled without much delay"
//     (Sec. 3.1), the paper's Table 2 interval;
//   - and of reschedule_interval, from the preemption (the Preempt action)
//     to the restart: the victim's grace period plus suspended_wait (the
//     first reading of Table 2, kept for comparison; these policies give
//     every victim exactly its GracePeriod).
func RecordMetrics(recs []metrics.JobRecord, final []*cluster.JobState) map[string]float64 {
	m := map[string]float64{}
	var any, once, twice, thrice, events float64
	var intervals, waits []float64
	for i := range recs {
		switch recs[i].Preemptions {
		case 0:
		case 1:
			once++
		case 2:
			twice++
		case 3:
			thrice++
		}
		if recs[i].Preemptions > 0 {
			any++
		}
		events += float64(recs[i].Preemptions)
		grace := 0.0
		if i < len(final) && final[i].Job.ID == recs[i].ID {
			grace = final[i].Job.GracePeriod
		}
		for _, d := range recs[i].RescheduleDelays {
			waits = append(waits, d/60)
			intervals = append(intervals, (d+grace)/60)
		}
	}
	n := float64(len(recs))
	if n == 0 {
		n = 1
	}
	m["preempted_frac"] = any / n
	m["preemption_events_per_job"] = events / n
	m["preempted_once_frac"] = once / n
	m["preempted_twice_frac"] = twice / n
	m["preempted_thrice_frac"] = thrice / n
	si, sw := metrics.Sorted(intervals), metrics.Sorted(waits)
	for _, q := range []int{50, 75, 95, 99} {
		m["reschedule_interval_p"+strconv.Itoa(q)+"_min"] = metrics.PercentileSorted(si, float64(q))
		m["suspended_wait_p"+strconv.Itoa(q)+"_min"] = metrics.PercentileSorted(sw, float64(q))
	}
	return m
}

// preemptRecorder counts, from the simulator's preempt events ("by=<TE
// job>" in the detail), how many TE jobs preempted and how many victims
// each took:
//   - preempting_te_per_job: TE jobs that preempted at least once, over
//     all jobs (so that preemption_events_per_job = preempting_te_per_job
//     x victims_per_preempting_te);
//   - victims_per_preempting_te: preemption events per such TE job.
type preemptRecorder struct{ by map[string]int }

func (r *preemptRecorder) Observe(_ float64, kind sim.Observed, _ *cluster.JobState, detail string) {
	if kind != "preempt" {
		return
	}
	for _, f := range strings.Fields(detail) {
		if id, ok := strings.CutPrefix(f, "by="); ok {
			r.by[id]++
			return
		}
	}
}

func (r *preemptRecorder) Metrics(res *sim.Result) map[string]float64 {
	return PreemptorMetrics(r.by, len(res.Records))
}

// PreemptorMetrics turns victims counted per preempting TE job into the
// preemptRecorder's metrics for a run of n jobs.
func PreemptorMetrics(by map[string]int, n int) map[string]float64 {
	events := 0
	for _, v := range by {
		events += v
	}
	m := map[string]float64{"preempting_te_per_job": 0, "victims_per_preempting_te": 0}
	if n > 0 {
		m["preempting_te_per_job"] = float64(len(by)) / float64(n)
	}
	if len(by) > 0 {
		m["victims_per_preempting_te"] = float64(events) / float64(len(by))
	}
	return m
}

func compare(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 8)
	rows, runs, err := runSet(ctx, env, "fitgpp", p, mainPolicies, seeds)
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("%d nodes x (%v), %d jobs per seed, %.0f%% TE, FIFO load %.1f, a cycle every %g s; distributions in internal/exp/fitgpp DefaultParams",
		p.Nodes, p.Node, p.Jobs, p.TEShare*100, p.Load, p.Tick)}
	if quick != "" {
		notes = append(notes, quick)
	}
	fifo := rows[0].Metrics
	for _, r := range rows[1:] {
		if t3, ok := PaperTable3[r.Policy]; ok && r.Params["preempt"] == "" {
			notes = append(notes, fmt.Sprintf("%s%s: %.4f preemption events per job (paper, Table 3: %.4f), %.4f of jobs preempted at least once",
				r.Policy, paramStr(r.Params), r.Metrics["preemption_events_per_job"], t3, r.Metrics["preempted_frac"]))
		}
	}
	for _, r := range rows[1:] {
		notes = append(notes, fmt.Sprintf("%s%s vs fifo: TE p95 slowdown %+.1f%%, BE p50 %+.1f%%, BE p95 %+.1f%%", r.Policy, paramStr(r.Params),
			100*experiment.Change(fifo["te_slowdown_p95"], r.Metrics["te_slowdown_p95"]),
			100*experiment.Change(fifo["be_slowdown_p50"], r.Metrics["be_slowdown_p50"]),
			100*experiment.Change(fifo["be_slowdown_p95"], r.Metrics["be_slowdown_p95"])))
	}
	return &experiment.Report{Experiment: "fitgpp", Seed: env.Seed, Seeds: seeds, Results: rows, Columns: mainColumns, Notes: notes,
		Jobs: experiment.JobTables(runs),
		Charts: []experiment.ChartFile{slowdownCDF("TE slowdown CDF (Fig. 3)", "slowdown-te-cdf.svg", cluster.ClassTE, runs, seeds, rows),
			slowdownCDF("BE slowdown CDF (Fig. 3)", "slowdown-be-cdf.svg", cluster.ClassBE, runs, seeds, rows)}}, nil
}

// PaperTable3 is the paper's Table 3 as preemption events per job (the
// sum over k of k x Table 4 agrees for every policy: LRTP 0.0972, RAND
// 0.0982, FitGpp 0.0063).
var PaperTable3 = map[string]float64{"lrtp": 0.096, "rand": 0.097, "fitgpp": 0.0063}

func paramStr(p map[string]string) string {
	if len(p) == 0 {
		return ""
	}
	s := ""
	for _, k := range []string{"lambda", "p", "preempt", "strict"} {
		if v, ok := p[k]; ok {
			if s != "" {
				s += ";"
			}
			s += k + "=" + v
		}
	}
	return "(" + s + ")"
}

// slowdownCDF plots the slowdown CDF of one class for the first seed of
// each row.
func slowdownCDF(title, file string, class cluster.Class, runs []experiment.Run, seeds int, rows []experiment.Row) experiment.ChartFile {
	c := &chart.Line{Title: title, XLabel: "slowdown (log scale)", YLabel: "fraction of jobs", LogX: true}
	for i, row := range rows {
		var xs []float64
		for _, rec := range runs[i*seeds].Result.Records {
			if rec.Finished() && rec.Class == class {
				xs = append(xs, rec.Slowdown())
			}
		}
		x, y := chart.CDF(metrics.Sorted(xs))
		c.Series = append(c.Series, chart.Series{Name: row.Policy + paramStr(row.Params), X: x, Y: y})
	}
	return experiment.ChartFile{File: file, Line: c}
}

// sweepPoint is one x value of a sweep: its label, the workload and the
// policy specs to run there.
type sweepPoint struct {
	label string
	x     float64
	p     Params
	specs []string
}

// series names a line of a sweep chart: a metric of the rows of one spec.
type series struct {
	spec, metric string
	dashed       bool
}

// sweepColumns are the table columns of the sweeps; the one-policy sweeps
// (lambda, P) add how many jobs were preempted twice, which P bounds.
var sweepColumns = []string{"te_slowdown_p50", "te_slowdown_p95", "te_slowdown_p99", "be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99",
	"preemption_events_per_job", "suspended_wait_p50_min", "suspended_wait_p95_min"}

var oneSpecColumns = []string{"te_slowdown_p50", "te_slowdown_p95", "te_slowdown_p99", "be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99",
	"preemption_events_per_job", "preempted_frac", "preempted_twice_frac", "suspended_wait_p50_min", "suspended_wait_p95_min"}

// sweep runs every point, tags rows with key=label, and charts the named
// series against x. A series with a spec follows that spec's rows; one
// without follows the metric across points whose spec changes with x (a
// one-spec sweep such as lambda or P).
func sweep(ctx context.Context, env *experiment.Env, name, key, xlabel string, points []sweepPoint, seeds int, lines []series, notes, columns []string) (*experiment.Report, error) {
	var all []experiment.Row
	xy := map[series][][2]float64{}
	for _, pt := range points {
		rows, _, err := runSet(ctx, env, name+" "+key+"="+pt.label, pt.p, pt.specs, seeds)
		if err != nil {
			return nil, err
		}
		for i, r := range rows {
			if r.Params == nil {
				r.Params = map[string]string{}
			}
			r.Params[key] = pt.label
			all = append(all, r)
			for _, l := range lines {
				if l.spec == "" || l.spec == pt.specs[i] {
					xy[l] = append(xy[l], [2]float64{pt.x, r.Metrics[l.metric]})
				}
			}
		}
	}
	c := &chart.Line{Title: name, XLabel: xlabel, YLabel: "slowdown"}
	for _, l := range lines {
		s := chart.Series{Name: strings.TrimSpace(l.spec + " " + l.metric), Dashed: l.dashed}
		for _, v := range xy[l] {
			s.X = append(s.X, v[0])
			s.Y = append(s.Y, v[1])
		}
		c.Series = append(c.Series, s)
	}
	return &experiment.Report{Experiment: name, Seed: env.Seed, Seeds: seeds, Results: all, Notes: notes, Columns: columns,
		Charts: []experiment.ChartFile{{File: name + ".svg", Line: c}}}, nil
}

func sweepNotes(p Params, quick string, seeds int) []string {
	n := []string{fmt.Sprintf("%d nodes, %d jobs per seed, %d seeds; otherwise the fitgpp experiment's setup", p.Nodes, p.Jobs, seeds)}
	if quick != "" {
		n = append(n, quick)
	}
	return n
}

// Lambdas swept by fitgpp-lambda.
var Lambdas = []float64{0, 0.25, 0.5, 1, 2, 4, 8}

func lambdaSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 4)
	var pts []sweepPoint
	for _, l := range Lambdas {
		s := strconv.FormatFloat(l, 'g', -1, 64)
		pts = append(pts, sweepPoint{label: s, x: l, p: p, specs: []string{"fitgpp:lambda=" + s}})
	}
	return sweep(ctx, env, "fitgpp-lambda", "lambda", "lambda", pts, seeds, slowdownLines(), sweepNotes(p, quick, seeds), oneSpecColumns)
}

// slowdownLines are the series of a one-policy sweep: the TE (solid) and
// BE (dashed) slowdown percentiles.
func slowdownLines() []series {
	var lines []series
	for _, m := range []string{"te_slowdown_p50", "te_slowdown_p95", "te_slowdown_p99", "be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99"} {
		lines = append(lines, series{metric: m, dashed: m[:2] == "be"})
	}
	return lines
}

// Ps swept by fitgpp-p; the chart puts them at x = 1, 2, ... in order.
var Ps = []string{"1", "2", "3", "5", "inf"}

func pSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 4)
	var pts []sweepPoint
	for i, v := range Ps {
		pts = append(pts, sweepPoint{label: v, x: float64(i + 1), p: p, specs: []string{"fitgpp:p=" + v}})
	}
	notes := append(sweepNotes(p, quick, seeds), "chart x axis: 1, 2, 3, 4, 5 stand for P = 1, 2, 3, 5, inf")
	return sweep(ctx, env, "fitgpp-p", "p", "P (5 = inf)", pts, seeds, slowdownLines(), notes, oneSpecColumns)
}

// TEShares swept by fitgpp-te-share.
var TEShares = []float64{0.1, 0.2, 0.3, 0.4, 0.5}

var sweepPolicies = []string{"fifo", "lrtp", "rand", "fitgpp"}

func teShareSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 2)
	var pts []sweepPoint
	for _, s := range TEShares {
		q := p
		q.TEShare = s
		pts = append(pts, sweepPoint{label: strconv.FormatFloat(s, 'g', -1, 64), x: s, p: q, specs: sweepPolicies})
	}
	var lines []series
	for _, sp := range sweepPolicies {
		lines = append(lines, series{spec: sp, metric: "te_slowdown_p95"}, series{spec: sp, metric: "be_slowdown_p95", dashed: true})
	}
	return sweep(ctx, env, "fitgpp-te-share", "te_share", "share of TE jobs", pts, seeds, lines, sweepNotes(p, quick, seeds), sweepColumns)
}

// TEWorks swept by fitgpp-te-work: TE jobs' share of the work (run time x
// dominant share), the knob Params.TEWork.
var TEWorks = []float64{0.05, 0.1, 0.2, 0.3, 0.5}

// teWorkPolicies are FIFO, FitGpp and the two ablations that serve TE jobs
// first without preempting (BE jobs may start ahead of a TE job that does
// not fit, or not).
var teWorkPolicies = []string{"fifo", "fitgpp", "fitgpp:preempt=false", StrictSpec}

// teWorkColumns are fitgpp-te-work's table columns.
var teWorkColumns = []string{"te_work_share", "te_slowdown_p95", "be_slowdown_p50", "be_slowdown_p50_ci95", "be_p50_vs_fifo", "be_p50_vs_fifo_ci95",
	"be_slowdown_p95", "be_p95_vs_fifo", "be_p95_vs_fifo_ci95", "preemption_events_per_job", "gpu_util"}

func teWorkSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 8)
	var pts []sweepPoint
	for _, s := range TEWorks {
		q := p
		q.TEWork = s
		pts = append(pts, sweepPoint{label: strconv.FormatFloat(s, 'g', -1, 64), x: s, p: q, specs: teWorkPolicies})
	}
	var lines []series
	for _, sp := range teWorkPolicies {
		lines = append(lines, series{spec: sp, metric: "be_slowdown_p50", dashed: true})
	}
	notes := append(sweepNotes(p, quick, seeds),
		fmt.Sprintf("te_work: expected share of the work (run time x dominant share of a node) from TE jobs, set through the share of TE jobs (Params.TEWork); the default workload (%.0f%% TE jobs) has %.3f", p.TEShare*100, defaultWorkShare(p)),
		"te_work_share: the share measured on the generated jobs (mean over seeds); be_p50_vs_fifo, be_p95_vs_fifo: change of the BE slowdown against fifo at the same point, _ci95 the half-width of its 95% interval over the paired seeds",
		"fitgpp:preempt=false: TE jobs first, no preemption, BE jobs start ahead of a TE job that does not fit; "+StrictSpec+": no BE job starts while a TE job waits")
	rep, err := sweep(ctx, env, "fitgpp-te-work", "te_work", "TE share of the work", pts, seeds, lines, notes, teWorkColumns)
	if err != nil {
		return nil, err
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		w, err := strconv.ParseFloat(r.Params["te_work"], 64)
		if err != nil {
			return nil, fmt.Errorf("fitgpp-te-work: row %v: %w", r.Params, err)
		}
		q := p
		q.TEWork = w
		share, err := meanWorkShare(q, seeds, env.Seed)
		if err != nil {
			return nil, err
		}
		r.Metrics["te_work_share"] = share
	}
	return rep, nil
}

// defaultWorkShare is the expected TE share of the work of p at its share
// of TE jobs.
func defaultWorkShare(p Params) float64 {
	wt, wb := MeanWork(p.TE, p.Node), MeanWork(p.BE, p.Node)
	return p.TEShare * wt / (p.TEShare*wt + (1-p.TEShare)*wb)
}

// meanWorkShare is the TE share of the work of the generated jobs,
// averaged over the seeds.
func meanWorkShare(p Params, seeds int, first uint64) (float64, error) {
	sum := 0.0
	for k := range seeds {
		jobs, err := Generate(first+uint64(k), p)
		if err != nil {
			return 0, err
		}
		sum += WorkShare(jobs, p.Node)
	}
	return sum / float64(seeds), nil
}

// GPScales swept by fitgpp-gp-scale, and the large lambda compared there.
var (
	GPScales    = []float64{1, 2, 4, 8}
	LargeLambda = "4"
)

func gpScaleSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 2)
	specs := []string{"lrtp", "rand", "fitgpp", "fitgpp:lambda=" + LargeLambda}
	var pts []sweepPoint
	for _, s := range GPScales {
		q := p
		q.GraceScale = s
		pts = append(pts, sweepPoint{label: strconv.FormatFloat(s, 'g', -1, 64), x: s, p: q, specs: specs})
	}
	var lines []series
	for _, sp := range specs {
		lines = append(lines, series{spec: sp, metric: "te_slowdown_p95"}, series{spec: sp, metric: "be_slowdown_p95", dashed: true})
	}
	notes := append(sweepNotes(p, quick, seeds), fmt.Sprintf("grace periods: mean, sd and truncation of N(%g, %g) in [%g, %g] s multiplied by the scale",
		p.Grace.Mean, p.Grace.SD, p.Grace.Lo, p.Grace.Hi))
	return sweep(ctx, env, "fitgpp-gp-scale", "gp_scale", "grace-period scale", pts, seeds, lines, notes, sweepColumns)
}

// TEDemandScales swept by fitgpp-te-demand: the TE demand distributions
// are BE's with means and sds multiplied by the scale (ClassDist.ScaleDemand);
// 1 is the first reading (TE demands equal to BE demands).
var TEDemandScales = []float64{0.25, 0.5, 0.75, 0.78, 0.8, 1}

// teDemandSpecs are the policies of the calibration: LRTP at the paper's
// P = 1 (the target) and uncapped (Table 4's runs).
var teDemandSpecs = []string{"lrtp", "lrtp:p=inf"}

// teDemandSweep is the calibration behind DefaultParams' TE demand: the
// paper's TE jobs are "small-scale experiments" whose demand distributions
// it fitted separately from BE's (lost in the text copy), and the one
// statistic it gives that pins their size without being FitGpp's result is
// how often LRTP preempts (Table 3: 9.6 preemption events per 100 jobs).
func teDemandSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 8)
	var pts []sweepPoint
	notes := sweepNotes(p, quick, seeds)
	for _, f := range TEDemandScales {
		q := p
		q.TE = p.BE.ScaleDemand(f)
		q.TE.Run = p.TE.Run
		fs := strconv.FormatFloat(f, 'g', -1, 64)
		pts = append(pts, sweepPoint{label: fs, x: f, p: q, specs: teDemandSpecs})
		d, err := demandMeans(env.Seed, q)
		if err != nil {
			return nil, err
		}
		notes = append(notes, fmt.Sprintf("te_demand_scale %s: TE jobs of seed %d ask on average %.2f GPUs, %.1f cores, %.0f GiB (BE: %.2f, %.1f, %.0f)",
			fs, env.Seed, d[0], d[1], d[2], d[3], d[4], d[5]))
	}
	var lines []series
	for _, sp := range teDemandSpecs {
		lines = append(lines, series{spec: sp, metric: "preemption_events_per_job"})
	}
	notes = append(notes, fmt.Sprintf("target (paper, Table 3, LRTP): 0.096 preemption events per job; default te_demand_scale %g", TEDemandScale))
	rep, err := sweep(ctx, env, "fitgpp-te-demand", "te_demand_scale", "TE demand scale (x BE's means and sds)", pts, seeds, lines, notes,
		[]string{"preemption_events_per_job", "preempted_frac", "te_slowdown_p95", "be_slowdown_p50", "be_slowdown_p95", "suspended_wait_p50_min"})
	if err != nil {
		return nil, err
	}
	rep.Charts[0].Line.YLabel = "preemption events per job"
	return rep, nil
}

// demandMeans returns the mean GPU, CPU and memory (GiB) demand of the TE
// and then the BE jobs of one seed's workload.
func demandMeans(seed uint64, p Params) ([6]float64, error) {
	var out [6]float64
	jobs, err := Generate(seed, p)
	if err != nil {
		return out, err
	}
	var n [2]float64
	for _, j := range jobs {
		k := 0
		if j.Class == cluster.ClassBE {
			k = 1
		}
		d := j.RequestedDemand()
		n[k]++
		out[3*k] += float64(d[resource.GPU])
		out[3*k+1] += float64(d[resource.CPU]) / 1000
		out[3*k+2] += float64(d[resource.Memory]) / (1 << 30)
	}
	for k := range n {
		for i := 0; i < 3; i++ {
			if n[k] > 0 {
				out[3*k+i] /= n[k]
			}
		}
	}
	return out, nil
}

// Grace models compared by fitgpp-grace-model, and the grace-period
// scales they are compared at (x8 is where a victim's lost grace period
// weighs most).
var (
	GraceModels      = []string{"no-progress", "progress"}
	GraceModelScales = []float64{1, 8}
	// graceModelPolicies are the preemptive policies; FIFO never
	// preempts, so it runs once, as the reference.
	graceModelPolicies = []string{"lrtp", "rand", "fitgpp"}
)

// graceModel is the ablation behind docs/fitgpp.md's explanation of the BE
// slowdowns: the main setup with the victims' grace periods spent without
// progress (the simulator's default: suspension processing, as in the
// paper) or training (sim.Config.ProgressDuringGrace, the model of the
// first version of this reproduction), at grace-period scales 1 and 8.
// Rows are tagged grace_model and gp_scale; the FIFO row is the same under
// every model and scale, since it never preempts.
func graceModel(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	p, seeds, quick := scale(env, 8)
	fifo, _, err := runSet(ctx, env, "fitgpp-grace-model fifo", p, []string{"fifo"}, seeds)
	if err != nil {
		return nil, err
	}
	fifo[0].Params = map[string]string{"grace_model": "any", "gp_scale": "any"}
	all := []experiment.Row{fifo[0]}
	byKey := map[string]map[string]float64{}
	c := &chart.Line{Title: "fitgpp-grace-model: BE p95 slowdown (solid: no progress during grace; dashed: progress)",
		XLabel: "grace-period scale", YLabel: "BE p95 slowdown"}
	for gi, gm := range GraceModels {
		xy := map[string][][2]float64{}
		for _, sc := range GraceModelScales {
			q := p
			q.GraceScale = sc
			scs := strconv.FormatFloat(sc, 'g', -1, 64)
			rows, _, err := runSetGrace(ctx, env, "fitgpp-grace-model "+gm+" gp_scale="+scs, q, graceModelPolicies, seeds, gm == "progress")
			if err != nil {
				return nil, err
			}
			for i, r := range rows {
				r.Params = map[string]string{"grace_model": gm, "gp_scale": scs}
				all = append(all, r)
				byKey[graceModelPolicies[i]+"|"+gm+"|"+scs] = r.Metrics
				xy[graceModelPolicies[i]] = append(xy[graceModelPolicies[i]], [2]float64{sc, r.Metrics["be_slowdown_p95"]})
			}
		}
		for _, sp := range graceModelPolicies {
			s := chart.Series{Name: sp + " " + gm, Dashed: gi == 1}
			for _, v := range xy[sp] {
				s.X, s.Y = append(s.X, v[0]), append(s.Y, v[1])
			}
			c.Series = append(c.Series, s)
		}
	}
	notes := sweepNotes(p, quick, seeds)
	notes = append(notes, "no-progress: a victim holds its resources through its grace period without training (simulator default); progress: it keeps training (sim.Config.ProgressDuringGrace)")
	f := fifo[0].Metrics
	for _, scs := range []string{"1", "8"} {
		for _, sp := range graceModelPolicies {
			np, pr := byKey[sp+"|no-progress|"+scs], byKey[sp+"|progress|"+scs]
			if np == nil || pr == nil {
				continue
			}
			notes = append(notes, fmt.Sprintf("gp x%s %s: BE p50 vs fifo %+.1f%% (no progress) / %+.1f%% (progress), BE p95 vs fifo %+.1f%% / %+.1f%%",
				scs, sp,
				100*experiment.Change(f["be_slowdown_p50"], np["be_slowdown_p50"]), 100*experiment.Change(f["be_slowdown_p50"], pr["be_slowdown_p50"]),
				100*experiment.Change(f["be_slowdown_p95"], np["be_slowdown_p95"]), 100*experiment.Change(f["be_slowdown_p95"], pr["be_slowdown_p95"])))
		}
	}
	return &experiment.Report{Experiment: "fitgpp-grace-model", Seed: env.Seed, Seeds: seeds, Results: all, Notes: notes,
		Columns: []string{"te_slowdown_p95", "be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99", "be_slowdown_mean",
			"preemption_events_per_job", "preempted_frac", "suspended_wait_p50_min", "suspended_wait_p95_min", "gpu_util"},
		Charts: []experiment.ChartFile{{File: "fitgpp-grace-model.svg", Line: c}}}, nil
}

// The Philly run replays the whole trace (PhillySkip and PhillyJobs select
// a slice; 0 and 0 is all 82,247 jobs) on PhillyNodes nodes of 8 GPUs.
// 80 nodes (640 GPUs) gives real contention: the trace keeps 374 GPUs busy
// on average but arrives in bursts, and under FIFO the median TE job waits
// over a thousand times its run time. At 96 nodes FIFO's median slowdowns
// are near 1 and preemption hardly matters; at 256 (the baseline philly
// experiment's size) nothing ever queues. The four runs take about 30 s.
const (
	PhillySkip  = 0
	PhillyJobs  = 0
	PhillyNodes = 80
)

func philly(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	po := workload.DefaultPhillyOptions()
	po.Skip, po.Limit = PhillySkip, PhillyJobs
	nodes := PhillyNodes
	seeds := env.SeedCount(1)
	if env.Quick {
		po.Limit, nodes = 1500, 8
	}
	base, err := workload.LoadPhilly(env.PhillyPath, po)
	if err != nil {
		return nil, fmt.Errorf("fitgpp-philly: %w", err)
	}
	if err := fg.ValidateJobs(base); err != nil {
		return nil, fmt.Errorf("fitgpp-philly: %w", err)
	}
	gp := DefaultParams().Grace
	node := workload.PhillyNode(po)
	setup := experiment.Setup{
		Nodes: func(uint64) []cluster.Node {
			out := make([]cluster.Node, nodes)
			for i := range out {
				out[i] = cluster.Node{Name: fmt.Sprintf("node-%d", i), InstanceType: "philly", Capacity: node}
			}
			return out
		},
		Jobs:   func(seed uint64) ([]*cluster.Job, error) { return PhillyGrace(base, gp, seed), nil },
		Config: sim.Config{Tick: 60},
	}
	specs := []string{"fifo", "lrtp", "rand", "fitgpp"}
	rows, runs, err := experiment.RunPolicies(ctx, env, "fitgpp-philly", setup, specs, seeds)
	if err != nil {
		return nil, err
	}
	addRecordMetrics(rows, runs, seeds)
	te := 0
	for _, j := range base {
		if j.Class == cluster.ClassTE {
			te++
		}
	}
	notes := []string{fmt.Sprintf("Philly trace jobs %d..%d by submit time (%d jobs, %.1f%% TE = ran <= %g s) on %d nodes x (%v); BE grace periods drawn from N(%g, %g) in [%g, %g] s per seed, as the paper did for its trace",
		po.Skip, po.Skip+len(base)-1, len(base), 100*float64(te)/float64(len(base)), po.TEMaxDuration, nodes, node, gp.Mean, gp.SD, gp.Lo, gp.Hi),
		"Microsoft Philly cluster trace, Jeon et al., USENIX ATC 2019 (CC BY 4.0)"}
	if env.Quick {
		notes = append(notes, "quick: 1500 jobs on 8 nodes")
	}
	return &experiment.Report{Experiment: "fitgpp-philly", Seed: env.Seed, Seeds: seeds, Results: rows, Columns: mainColumns, Notes: notes,
		Jobs: experiment.JobTables(runs),
		Charts: []experiment.ChartFile{slowdownCDF("TE slowdown CDF, Philly (Fig. 8)", "slowdown-te-cdf.svg", cluster.ClassTE, runs, seeds, rows),
			slowdownCDF("BE slowdown CDF, Philly (Fig. 8)", "slowdown-be-cdf.svg", cluster.ClassBE, runs, seeds, rows)}}, nil
}

// PhillyGrace returns copies of the trace's jobs with BE grace periods
// drawn from gp (the trace has none; the paper sampled its synthetic
// distribution too). TE jobs keep a zero grace period.
func PhillyGrace(base []*cluster.Job, gp Dist, seed uint64) []*cluster.Job {
	r := rng.New(seed, "fitgpp-philly-grace")
	out := make([]*cluster.Job, len(base))
	for i, j := range base {
		c := *j
		if c.Class == cluster.ClassBE {
			c.GracePeriod = gp.draw(r)
		}
		out[i] = &c
	}
	return out
}
