// Package oasis implements OASiS (Bao, Peng, Wu, Li: "Online Job Scheduling
// in Distributed Machine Learning Clusters", INFOCOM 2018): online
// primal-dual admission of parameter-server training jobs under
// exponential resource prices, with a per-job schedule of worker and
// parameter-server counts per time slot found by a dynamic program over the
// per-slot workload and a greedy cheapest-server fill. The package also
// holds the paper's comparison policies (FIFO and DRF with fixed or fair
// counts, the risk-reward heuristic RRH, and Dorm), the parameter-server
// job model and speed model, a synthetic workload in the paper's setting,
// and an exact offline optimum for small instances.
//
// Job model (Sec. III of the paper). A job i has E epochs over N data
// chunks of M mini-batches; one mini-batch costs a worker
// tau + 2e/b seconds (compute, then gradients out and parameters back at
// the worker's bandwidth b). So the job needs E*N*M*(tau+2e/b)
// worker-seconds in all, at most N workers at a time, enough parameter
// servers that their bandwidth B covers the workers' (ps*B >= w*b) and no
// more parameter servers than workers. Group 0 of the job is "worker",
// group 1 is "ps"; worker servers and PS servers are node pools with
// cluster.Node.Role "worker" and "ps".
package oasis

import (
	"fmt"
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Group indices of a parameter-server job.
const (
	GWorker = 0
	GPS     = 1
)

// Node roles of the two server pools.
const (
	RoleWorker = "worker"
	RolePS     = "ps"
)

// MiniBatchSeconds is the time one worker spends on one mini-batch at
// worker bandwidth bw (MB/s): compute plus sending gradients and receiving
// parameters.
func MiniBatchSeconds(p *cluster.PSParams, bw float64) float64 {
	return p.MiniBatchTime + 2*p.GradientMB/bw
}

// WorkerSeconds is the total worker time a job needs (the left-hand side
// of the paper's constraint (2) in seconds).
func WorkerSeconds(p *cluster.PSParams) float64 {
	return float64(p.Epochs) * float64(p.Chunks) * float64(p.MiniBatches) * MiniBatchSeconds(p, p.WorkerBW)
}

// EstimatedWorkerSlots is WorkerSlots of the worker time the scheduler is
// told: the paper assumes each job's parameters (hence its run time)
// known; a production scheduler has them as stated, so the worker time
// carries the run-time estimate's error (cluster.Job.EstimateScale, 1
// wherever no estimate was drawn).
func EstimatedWorkerSlots(j *cluster.Job, slot float64) int {
	return int(math.Ceil(WorkerSeconds(j.PS)*j.EstimateScale()/slot - 1e-9))
}

// WorkerSlots is the number of worker-slots (one worker for one slot of
// the given length) the job needs. It is the unit of OASiS's dynamic
// program: the paper distributes the workload in data chunks over slots,
// but a slot's cost depends only on its worker count, so a workload that
// is not a whole number of worker-slots is dominated by the next whole
// number and the two programs have the same optimum.
func WorkerSlots(p *cluster.PSParams, slot float64) int {
	return int(math.Ceil(WorkerSeconds(p)/slot - 1e-9))
}

// PSFor is the number of parameter servers w workers need: enough
// bandwidth (constraint (6)); ok is false when that exceeds w (constraint
// (7)) or w exceeds the chunk count (constraint (3)).
func PSFor(p *cluster.PSParams, w int) (ps int, ok bool) {
	if w <= 0 {
		return 0, true
	}
	ps = int(math.Ceil(float64(w)*p.WorkerBW/p.PSBW - 1e-9))
	if ps < 1 {
		ps = 1
	}
	return ps, ps <= w && w <= p.Chunks
}

// Speed is the simulator's speed model of a parameter-server job. With w
// workers and s parameter servers the job trains min(w, N) workers'
// worth of mini-batches; when the parameter servers' bandwidth s*B is
// below the workers' w*b, each worker's share of it, s*B/w, replaces b in
// the communication time. No parameter server, or no worker, means no
// progress. Speed 1 is the job's requested worker count with enough
// parameter servers, which is what Job.Work is measured at.
type Speed struct{}

var _ cluster.SpeedModel = Speed{}

// Speed implements cluster.SpeedModel.
func (Speed) Speed(j *cluster.Job, counts []int, _ int) float64 {
	p := j.PS
	if p == nil || len(counts) < 2 {
		return cluster.DefaultSpeed{}.Speed(j, counts, 0)
	}
	w, s := counts[GWorker], counts[GPS]
	if w <= 0 || s <= 0 {
		return 0
	}
	we := min(w, p.Chunks)
	bw := math.Min(p.WorkerBW, float64(s)*p.PSBW/float64(we))
	full := float64(j.Groups[GWorker].Replicas) / MiniBatchSeconds(p, p.WorkerBW)
	return float64(we) / MiniBatchSeconds(p, bw) / full
}

// CheckJob reports why a job cannot be scheduled as a parameter-server job.
func CheckJob(j *cluster.Job) error {
	switch {
	case j.PS == nil:
		return fmt.Errorf("job %s: ps: missing parameter-server parameters", j.ID)
	case len(j.Groups) != 2 || j.Groups[GWorker].Name != RoleWorker || j.Groups[GPS].Name != RolePS:
		return fmt.Errorf("job %s: groups: want [worker ps]", j.ID)
	case j.PS.Epochs <= 0 || j.PS.Chunks <= 0 || j.PS.MiniBatches <= 0:
		return fmt.Errorf("job %s: ps.epochs/chunks/mini_batches: must be positive", j.ID)
	case j.PS.MiniBatchTime < 0 || j.PS.GradientMB < 0 || j.PS.WorkerBW <= 0 || j.PS.PSBW <= 0:
		return fmt.Errorf("job %s: ps.mini_batch_time/gradient/bandwidth: out of range", j.ID)
	}
	return nil
}

// utility returns the job's utility at completion time jct (0 without a
// utility function).
func utility(j *cluster.Job, jct float64) float64 {
	if j.Utility == nil {
		return 0
	}
	return j.Utility.Value(jct)
}
