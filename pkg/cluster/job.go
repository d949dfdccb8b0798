// Package cluster holds drover's model of a cluster: nodes, training jobs
// with their replica groups, placements, the runtime state of each job, and
// the read-only Snapshot that policies decide from.
//
// The package is shared by both executors (the simulator and the Kubernetes
// controller) and by every policy, so it imports nothing that talks to a
// cluster. Times are float64 seconds since the start of the run: every model
// in the source papers is written in seconds, and float arithmetic on one
// architecture is deterministic, which the simulator relies on.
package cluster

import (
	"errors"
	"fmt"
	"math"

	"github.com/drover-sched/drover/pkg/resource"
)

// Class separates trial-and-error jobs, which want a quick answer, from
// best-effort jobs, which want throughput (FitGpp's two classes).
type Class uint8

// Job classes. ClassUnknown is the zero value so that a job whose class was
// never set can be told apart from a best-effort one.
const (
	ClassUnknown Class = iota
	ClassTE
	ClassBE
)

func (c Class) String() string {
	switch c {
	case ClassTE:
		return "TE"
	case ClassBE:
		return "BE"
	default:
		return "unknown"
	}
}

// ParseClass accepts TE or BE in any case.
func ParseClass(s string) (Class, error) {
	switch s {
	case "TE", "te":
		return ClassTE, nil
	case "BE", "be":
		return ClassBE, nil
	}
	return ClassUnknown, fmt.Errorf("unknown job class %q (want TE or BE)", s)
}

// ReplicaGroup is one kind of replica of a job, such as its workers or its
// parameter servers. All replicas of a group are identical.
type ReplicaGroup struct {
	// Name is the role, e.g. "worker" or "ps".
	Name string
	// Demand is what one replica requests; capacity accounting uses it.
	Demand resource.Vector
	// Usage is what one replica would consume when alone on a node. When it
	// is zero it equals Demand. A node whose summed Usage exceeds its
	// capacity slows every job on it (see Contention): this is how the
	// simulator models SpeCon's containers, which request little CPU but use
	// a whole node when they can.
	Usage resource.Vector
	// Replicas is the requested count; Min and Max bound elastic resizing.
	// A fixed-size group has Min == Max == Replicas.
	Replicas, Min, Max int
	// Constraint restricts the nodes a replica may run on (nodeSelector,
	// node affinity, tolerations); nil means none, and then only roles and
	// hard taints restrict it. Placement, every policy through it, and the
	// validator honour it (placement.Eligible).
	Constraint NodeConstraint
}

// EffectiveUsage returns Usage, or Demand when Usage is unset.
func (g *ReplicaGroup) EffectiveUsage() resource.Vector {
	if g.Usage.IsZero() {
		return g.Demand
	}
	return g.Usage
}

// Job is the immutable specification of a training job: what the user
// submitted plus the simulator's ground truth about how long it runs.
type Job struct {
	ID     string
	Class  Class
	Tenant string // owner for fairness (DRF); Philly's virtual cluster
	Model  string // model type, e.g. "vae"; selects curves and speed models
	// Priority: higher runs first where a policy honours priorities.
	Priority int
	// Submit is the arrival time in seconds.
	Submit float64
	// Groups are the replica groups; the first is the one that does the
	// training work (workers) by convention.
	Groups []ReplicaGroup
	// Work is the job's run time in seconds on an idle cluster at its
	// requested replica counts. Slowdown divides JCT by it. It is the
	// executor's truth: the simulator runs it and measures by it. A policy
	// reads the run time through EstimatedWork and
	// JobState.EstimatedRemaining, never Work (pkg/plugins' TestNoOracle).
	Work float64
	// Estimate is the run time the scheduler is told (seconds, as Work),
	// which a policy reads through EstimatedWork. 0 means the scheduler
	// is told Work exactly: every simulator workload is, unless an
	// experiment draws estimates (workload.DrawEstimates), and on
	// Kubernetes Work itself is what the user stated (so a 0 there too).
	// The zero value keeps every run that draws no estimate identical to
	// one before estimates existed.
	Estimate float64
	// NoEstimate is set when nobody stated a run time (a TrainingJob
	// without spec.estimatedDurationSeconds): Work and EstimatedWork then
	// hold the executor's default duration, a number for the policies
	// that cannot do without one (payoff, LRTP's victims), and a policy
	// that can should not trust it (SRSF orders such a job by its attained
	// service instead).
	NoEstimate bool
	// GracePeriod is how long the job may keep running after it is told to
	// stop, to checkpoint. Seconds.
	GracePeriod float64
	// CheckpointCost and RestoreCost are the seconds a migration pauses the
	// job for; RescaleCost pauses it on every resize.
	CheckpointCost, RestoreCost, RescaleCost float64
	// Utility values the job's completion; nil means none.
	Utility Utility
	// Speed maps replica counts and spread to speed; nil means DefaultSpeed.
	Speed SpeedModel
	// Eval is the evaluation-function (loss) curve over progress; nil when
	// the job reports none.
	Eval EvalCurve
	// Seed makes per-job noise reproducible.
	Seed uint64
	// PS carries parameter-server job parameters for OASiS; nil otherwise.
	PS *PSParams
}

// EstimatedWork is the run time the scheduler is told: Estimate, or Work
// when the estimate is 0 (exact). Policies read it instead of Work.
func (j *Job) EstimatedWork() float64 {
	if j.Estimate > 0 {
		return j.Estimate
	}
	return j.Work
}

// EstimateScale is the factor by which the estimate states the run time
// (Estimate over Work; 1 when the estimate is exact). It is for a policy
// whose own model derives a run time from other stated parameters
// (OASiS's parameter-server model, from epochs, chunks and mini-batch
// time), so that those parameters carry the same error as the stated run
// time: the simulator's workloads set them exact.
func (j *Job) EstimateScale() float64 {
	if j.Estimate <= 0 || j.Estimate == j.Work {
		return 1
	}
	return j.Estimate / j.Work
}

// PSParams describes a parameter-server training job in OASiS's terms.
type PSParams struct {
	Epochs        int     // E_i
	Chunks        int     // N_i data chunks
	MiniBatches   int     // M_i mini-batches per chunk
	MiniBatchTime float64 // tau_i seconds
	GradientMB    float64 // e_i
	WorkerBW      float64 // b_i, MB/s
	PSBW          float64 // B_i, MB/s
	// Sensitivity is the utility class OASiS's experiments report by:
	// "insensitive", "sensitive" or "critical" (sigmoid decay 0, small,
	// large); "" when unset.
	Sensitivity string
}

// Demand returns the total demand of the job at the given replica counts.
func (j *Job) Demand(counts []int) resource.Vector {
	var v resource.Vector
	for i := range j.Groups {
		v = v.Add(j.Groups[i].Demand.Scale(int64(counts[i])))
	}
	return v
}

// RequestedCounts returns the requested replica count of every group.
func (j *Job) RequestedCounts() []int {
	c := make([]int, len(j.Groups))
	for i := range j.Groups {
		c[i] = j.Groups[i].Replicas
	}
	return c
}

// RequestedDemand is the demand at the requested counts (Demand of
// RequestedCounts, without building the counts: queue sorts call it per
// comparison).
func (j *Job) RequestedDemand() resource.Vector {
	var v resource.Vector
	for i := range j.Groups {
		v = v.Add(j.Groups[i].Demand.Scale(int64(j.Groups[i].Replicas)))
	}
	return v
}

// SpeedAt returns the job's speed (work seconds per second) with the given
// counts on the given number of distinct nodes, before contention.
func (j *Job) SpeedAt(counts []int, nodes int) float64 {
	if j.Speed != nil {
		return j.Speed.Speed(j, counts, nodes)
	}
	return DefaultSpeed{}.Speed(j, counts, nodes)
}

// Validate checks the specification. Errors name the job and the field.
func (j *Job) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("job %s: %s: %s", j.ID, field, fmt.Sprintf(format, a...)))
	}
	if j.ID == "" {
		bad("id", "empty")
	}
	if !finite(j.Submit) || j.Submit < 0 {
		bad("submit", "%v is not a time >= 0", j.Submit)
	}
	if !finite(j.Work) || j.Work <= 0 {
		bad("work", "%v is not a positive duration", j.Work)
	}
	if !finite(j.Estimate) || j.Estimate < 0 {
		bad("estimate", "%v is not a duration >= 0 (0: Work is known)", j.Estimate)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"grace_period", j.GracePeriod}, {"checkpoint_cost", j.CheckpointCost}, {"restore_cost", j.RestoreCost}, {"rescale_cost", j.RescaleCost}} {
		if !finite(f.v) || f.v < 0 {
			bad(f.name, "%v is below 0", f.v)
		}
	}
	if len(j.Groups) == 0 {
		bad("groups", "no replica groups")
	}
	for i := range j.Groups {
		g := &j.Groups[i]
		name := fmt.Sprintf("groups[%s]", g.Name)
		switch {
		case g.Max <= 0:
			bad(name+".max_replicas", "%d is not positive", g.Max)
		case g.Min < 0:
			bad(name+".min_replicas", "%d is negative", g.Min)
		case g.Min > g.Max:
			bad(name+".min_replicas", "%d is above max_replicas %d", g.Min, g.Max)
		case g.Replicas < g.Min || g.Replicas > g.Max:
			bad(name+".replicas", "%d is outside [%d, %d]", g.Replicas, g.Min, g.Max)
		}
		if g.Demand.AnyNegative() || g.Usage.AnyNegative() {
			bad(name+".demand", "negative component in %v", g.Demand)
		}
		if g.Demand.IsZero() {
			bad(name+".demand", "is zero")
		}
	}
	return errors.Join(errs...)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
