package scoreboard

import (
	"context"
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/workload"
)

// Sigmas are the estimate boards' spreads (docs/scoreboard-plan.md,
// "Run-time estimates"): each job's estimate is its run time times
// exp(sigma*Z). 0.5: within a factor of 1.65 for two jobs in three (a
// model fitted to history); 1.0: within a factor of 2.7 (a user's guess).
var Sigmas = []float64{0.5, 1.0}

// LAS is the row the estimate boards judge against drover's default
// (SRSF since these boards decided it, by Decide's rule): drover with the
// least-attained BE order, the default before.
const LAS = "drover:order=las"

// EstimateCandidates are the rows judged on each estimate board, each in
// drover's place (JudgeAs): drover (SRSF) and LAS.
var EstimateCandidates = []string{Drover, LAS}

// withEstimates is setup with each job's run-time estimate drawn at sigma
// from its own stream (workload.DrawEstimates with the run's seed): the
// policies read the estimates, the simulator runs the true work. With
// sigma > 0 the rows get a "sigma" parameter; sigma 0 changes nothing.
func withEstimates(setup experiment.Setup, sigma float64) experiment.Setup {
	jobs := setup.Jobs
	setup.Jobs = func(seed uint64) ([]*cluster.Job, error) {
		js, err := jobs(seed)
		if err != nil {
			return nil, err
		}
		workload.DrawEstimates(js, sigma, seed)
		return js, nil
	}
	if sigma == 0 {
		return setup
	}
	p := map[string]string{}
	for k, v := range setup.Params {
		p[k] = v
	}
	p["sigma"] = fmt.Sprint(sigma)
	setup.Params = p
	return setup
}

func estimatesExperiment() experiment.Experiment {
	return experiment.Experiment{Name: "scoreboard-estimates",
		Description: "issue 24's run-time estimate boards (docs/scoreboard-plan.md, \"Run-time estimates\"): the scoreboard's 8 regimes, presets and rows with every job's run-time estimate drawn as its run time times exp(sigma*Z) (Z from the job's own stream) at sigma 0.5 and 1.0; policies (SRSF, LRTP victims, payoff, ...) read the estimates, the simulator runs the truth; verdicts per board for drover (SRSF, the default these boards decided) and drover:order=las, and the plan's decision rule on whether SRSF stays the default",
		Run:         RunEstimates}
}

// RunEstimates runs the estimate boards and applies the plan's decision
// rule.
func RunEstimates(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	rep := &experiment.Report{Experiment: "scoreboard-estimates", Seed: env.Seed, Columns: Columns}
	var boards [][]boardVerdicts
	for _, sigma := range Sigmas {
		b, err := runBoard(ctx, env, "scoreboard-estimates", sigma, EstimateCandidates)
		if err != nil {
			return nil, fmt.Errorf("sigma %g: %w", sigma, err)
		}
		rep.Results = append(rep.Results, b.rows...)
		rep.Charts = append(rep.Charts, b.charts...)
		if len(boards) == 0 {
			rep.Notes = append(rep.Notes, b.notes...)
		}
		for _, vs := range b.verdicts {
			for _, n := range vs.notes() {
				rep.Notes = append(rep.Notes, fmt.Sprintf("sigma %g: %s", sigma, n))
			}
		}
		boards = append(boards, b.verdicts)
	}
	rep.Notes = append(rep.Notes, Decide(Sigmas, boards),
		"te_slowdown_p95 and be_jct_mean_s are seed means with *_ci95 the half-width of a 95% t-interval over seeds; unfinished: jobs neither completed nor rejected when the run ended; the sigma column is the estimate board")
	return rep, nil
}

// Decide is the plan's decision rule, as a note: SRSF is drover's
// default only if on every estimate board SRSF (drover, since the rule
// made it the default; drover:order=srsf when the boards first ran) (a)
// meets the target on at least as many regimes as the least-attained
// order (drover:order=las) and (b) is strictly best on at least 4 of the
// 8. boards[i] are the verdicts at sigmas[i], one list per
// EstimateCandidates entry.
func Decide(sigmas []float64, boards [][]boardVerdicts) string {
	pass := true
	s := ""
	for i, b := range boards {
		sm, sb := b[0].Count()
		lm, lb := b[1].Count()
		need := (len(b[0]) + 1) / 2
		ok := sm >= lm && sb >= need
		pass = pass && ok
		s += fmt.Sprintf("; sigma %g: drover (SRSF) met %d, strictly best %d; %s met %d, strictly best %d (SRSF needs met >= %d and strictly best >= %d): %s",
			sigmas[i], sm, sb, LAS, lm, lb, lm, need, map[bool]string{true: "passes", false: "fails"}[ok])
	}
	if pass {
		return "decision rule (docs/scoreboard-plan.md): SRSF stays the default" + s
	}
	return "decision rule (docs/scoreboard-plan.md): SRSF fails, least attained (order=las) should be the default" + s
}
