package scoreboard

import (
	"context"
	"fmt"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/metrics"
)

// TEWaitRegimes are the regimes the TE-wait diagnosis runs on: those on
// which drover missed its TE target when it was written (heavytail,
// gangs) or with the SRSF order (philly-heavy; drover:order=srsf, now
// drover's default).
var TEWaitRegimes = []string{"heavytail", "gangs", "philly-heavy"}

// TEWaitSpecs are the rows of the TE-wait diagnosis: drover, the presets
// with the best TE p95 on those regimes, the opt-in SRSF BE order and
// drover's TE-protecting variants.
var TEWaitSpecs = []string{"drover", "lrtp:p=inf", "tiresias", "drover:order=las", "drover:hol=true", "drover:reserve=true",
	"drover:reserve=true;reserve_q=0.5", "drover:reserve=true;reserve_h=1"}

// Wait buckets of a TE job (its first start minus its submit time). The
// regimes schedule on a 60 s tick, so a trial that finds room starts at
// the first cycle after it arrives (FirstCycle: wait <= one tick); one
// that preempts starts when its victims' 60 s grace period has run out,
// a cycle later (OneGrace: wait <= two ticks); the rest wait longer.
const (
	FirstCycle = 60.0
	OneGrace   = 120.0
)

// TEWaitColumns are the diagnosis' columns.
var TEWaitColumns = []string{"te_jobs", "te_slowdown_p95", "wait_first_cycle", "wait_one_grace", "wait_longer", "wait_p50_s", "wait_p95_s", "wait_max_s",
	"tail_jobs", "tail_work_mean_s", "tail_wait_mean_s", "tail_gpus_mean", "tail_one_grace", "preemptions", "be_jct_mean_s"}

// TEWait is one row's TE wait distribution over a set of runs.
type TEWait struct {
	// Jobs is the mean number of completed TE jobs per run; FirstCycle,
	// OneGrace and Longer are the shares of them in each wait bucket
	// (pooled over runs); WaitP50, WaitP95 and WaitMax the pooled wait
	// quantiles and maximum in seconds.
	Jobs, FirstCycle, OneGrace, Longer, WaitP50, WaitP95, WaitMax float64
	// The tail is the TE jobs whose slowdown is at or above their run's
	// TE p95 slowdown (the trials that make the p95): TailJobs their mean
	// count per run, and their mean work, wait and GPUs, and the share of
	// them that waited about one grace period.
	TailJobs, TailWork, TailWait, TailGPUs, TailOneGrace float64
}

// MeasureTEWait is the TE wait distribution of runs (each a run of the
// same spec on one seed): the completed TE jobs' waits, bucketed, and the
// trials at or above each run's TE p95 slowdown.
func MeasureTEWait(runs []experiment.Run) TEWait {
	var w TEWait
	var waits []float64
	var tail []*metrics.JobRecord
	for _, run := range runs {
		var slow []float64
		var te []*metrics.JobRecord
		for i := range run.Result.Records {
			r := &run.Result.Records[i]
			if r.Class != cluster.ClassTE || !r.Finished() {
				continue
			}
			te = append(te, r)
			slow = append(slow, r.Slowdown())
			wait := r.FirstStart - r.Submit
			waits = append(waits, wait)
			switch {
			case wait <= FirstCycle:
				w.FirstCycle++
			case wait <= OneGrace:
				w.OneGrace++
			default:
				w.Longer++
			}
		}
		p95 := metrics.Percentile(slow, 95)
		for i, r := range te {
			if slow[i] >= p95 {
				tail = append(tail, r)
			}
		}
	}
	n := float64(len(waits))
	if n == 0 {
		return w
	}
	w.Jobs = n / float64(len(runs))
	w.FirstCycle, w.OneGrace, w.Longer = w.FirstCycle/n, w.OneGrace/n, w.Longer/n
	w.WaitP50, w.WaitP95, w.WaitMax = metrics.Percentile(waits, 50), metrics.Percentile(waits, 95), slices.Max(waits)
	w.TailJobs = float64(len(tail)) / float64(len(runs))
	for _, r := range tail {
		wait := r.FirstStart - r.Submit
		w.TailWork += r.Work
		w.TailWait += wait
		w.TailGPUs += float64(r.GPUs)
		if wait > FirstCycle && wait <= OneGrace {
			w.TailOneGrace++
		}
	}
	k := float64(len(tail))
	w.TailWork, w.TailWait, w.TailGPUs, w.TailOneGrace = w.TailWork/k, w.TailWait/k, w.TailGPUs/k, w.TailOneGrace/k
	return w
}

// teWaitExperiment is the TE-wait diagnosis of issue 24: why drover's TE
// p95 slowdown trails lrtp:p=inf's on heavytail and gangs.
func teWaitExperiment() experiment.Experiment {
	return experiment.Experiment{Name: "scoreboard-tewait",
		Description: "issue 24's TE-wait diagnosis on the scoreboard regimes drover missed its TE target on (heavytail, gangs, philly-heavy): for drover, lrtp:p=inf, tiresias, drover:order=las and drover's TE-protecting variants, the share of TE trials that start at the first cycle (<= 60 s, one tick), wait about one grace period (<= 120 s) or longer, wait quantiles, and the trials that make the TE p95 (at or above each run's p95 slowdown: their work, wait, GPUs)",
		Run:         RunTEWait}
}

// RunTEWait runs the TE-wait diagnosis.
func RunTEWait(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	rep := &experiment.Report{Experiment: "scoreboard-tewait", Seed: env.Seed, Columns: TEWaitColumns}
	for _, r := range Regimes() {
		if !slices.Contains(TEWaitRegimes, r.Name) {
			continue
		}
		setup, err := r.Setup(env)
		if err != nil {
			return nil, err
		}
		seeds := env.SeedCount(r.size(env).Seeds)
		rows, runs, err := experiment.RunPolicies(ctx, env, "scoreboard-tewait "+r.Name, setup, TEWaitSpecs, seeds)
		if err != nil {
			return nil, fmt.Errorf("regime %s: %w", r.Name, err)
		}
		for i := range rows {
			w := MeasureTEWait(runs[i*seeds : (i+1)*seeds])
			m := rows[i].Metrics
			for k, v := range map[string]float64{"te_jobs": w.Jobs, "wait_first_cycle": w.FirstCycle, "wait_one_grace": w.OneGrace, "wait_longer": w.Longer,
				"wait_p50_s": w.WaitP50, "wait_p95_s": w.WaitP95, "wait_max_s": w.WaitMax, "tail_jobs": w.TailJobs, "tail_work_mean_s": w.TailWork,
				"tail_wait_mean_s": w.TailWait, "tail_gpus_mean": w.TailGPUs, "tail_one_grace": w.TailOneGrace} {
				m[k] = v
			}
		}
		rep.Results = append(rep.Results, rows...)
		note, _ := describe(r, env)
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s (%d seeds): %s", r.Name, seeds, note))
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("waits pooled over seeds: first cycle <= %g s (one tick: the trial found room), one grace <= %g s (it preempted and waited out a 60 s grace period), longer above; tail: the TE jobs at or above their run's TE p95 slowdown, per run", FirstCycle, OneGrace))
	return rep, nil
}
