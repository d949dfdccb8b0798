package workload

import (
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/rng"
)

// EstimateStream names the random stream a job's run-time estimate is
// drawn from: rng.New(seed, EstimateStream+job ID).
const EstimateStream = "estimate/"

// Estimate is the run-time estimate of a job of run time work, ID id, in
// the run of the given seed: work times exp(sigma*Z), Z a standard normal
// drawn from the job's own stream (seed, id). A job's estimate therefore
// never depends on which other jobs the workload has, or on their order
// (docs/scoreboard-plan.md, "Run-time estimates"). The error is
// log-normal: the median estimate is the truth, and two estimates in
// three are within a factor exp(sigma) of it.
func Estimate(work, sigma float64, seed uint64, id string) float64 {
	z := rng.New(seed, EstimateStream+id).NormFloat64()
	return work * math.Exp(sigma*z)
}

// DrawEstimates sets each job's Estimate (the run time the scheduler is
// told) to Estimate(Work, sigma, seed, ID). The jobs must be the run's
// own (every workload builder makes fresh ones per run). With sigma 0 it
// changes nothing: Estimate stays 0, the scheduler is told the exact run
// time, and a run is the same as one that never drew estimates.
func DrawEstimates(jobs []*cluster.Job, sigma float64, seed uint64) {
	if sigma == 0 {
		return
	}
	for _, j := range jobs {
		j.Estimate = Estimate(j.Work, sigma, seed, j.ID)
	}
}
