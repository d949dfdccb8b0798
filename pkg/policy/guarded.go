package policy

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Stage says where in a cycle a policy's code panicked.
type Stage string

// Stages of a Fault.
const (
	// StageJob: while deciding about one pending job (Admit, Size,
	// Filter, Score, Place, Preempt, Reserve). Fault.Job names it.
	StageJob Stage = "job"
	// StageRebalance and StageProvision: in a Rebalance or Provision
	// plugin, named by Fault.Plugin; no one job is to blame.
	StageRebalance Stage = "rebalance"
	StageProvision Stage = "provision"
	// StageCycle: anywhere else (ordering the queue, the runtime's own
	// bookkeeping, or a policy that is not Guarded).
	StageCycle Stage = "cycle"
)

// Fault is a panic of a policy's code that was contained instead of
// crashing the executor.
type Fault struct {
	Stage Stage
	// Job is the pending job being decided about (StageJob), else "".
	Job string
	// Plugin names the Rebalance or Provision plugin, else "".
	Plugin string
	// Value is the panic value, formatted; At the function and file:line
	// that panicked, when known.
	Value, At string
}

// Error describes the fault in one line.
func (f Fault) Error() string {
	where := string(f.Stage)
	switch {
	case f.Job != "":
		where += " " + f.Job
	case f.Plugin != "":
		where += " " + f.Plugin
	}
	s := fmt.Sprintf("policy panicked (%s): %s", where, f.Value)
	if f.At != "" {
		s += " at " + f.At
	}
	return s
}

// Guarded is implemented by a policy that can contain a panic of its own
// code (framework.Runtime). The Kubernetes executor calls it, so that a
// plugin that panics on one job's data (data a tenant may have shaped)
// costs that job, not the scheduler process; the simulator calls Schedule,
// where a panic is a bug to see.
type Guarded interface {
	Policy
	// ScheduleGuarded is Schedule with panics contained. A panic while
	// deciding about a pending job discards everything the cycle recorded
	// for that job, is reported as a StageJob Fault naming it, and the
	// cycle goes on with the next job; a panic in a Rebalance or Provision
	// plugin discards that plugin's actions of the cycle and the cycle
	// goes on; a panic elsewhere ends the cycle with the actions recorded
	// before it. The actions returned never hold part of a decision. After
	// a fault the policy drops what it caches between cycles, so the
	// next cycle starts afresh.
	ScheduleGuarded(s *cluster.Snapshot) ([]Action, []Fault)
}
