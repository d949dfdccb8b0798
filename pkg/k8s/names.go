package k8s

import "github.com/drover-sched/drover/pkg/k8s/apply"

// The names below moved to package apply (carrying out actions as API
// calls); they stay here so that callers of pkg/k8s (cmd/, the e2e tests)
// keep working.

// Metrics are the scheduler's Prometheus metrics (apply.Metrics).
type Metrics = apply.Metrics

// DefaultMetrics is apply.DefaultMetrics.
func DefaultMetrics() *Metrics { return apply.DefaultMetrics() }

// Preemption reasons, the reason label of drover_preemptions_total, and
// the ConfigMap of the scheduler clock's origin.
const (
	PreemptMakeRoom      = apply.PreemptMakeRoom
	PreemptPolicy        = apply.PreemptPolicy
	PreemptNodeLost      = apply.PreemptNodeLost
	PreemptInvalidStatus = apply.PreemptInvalidStatus
	ClockConfigMap       = apply.ClockConfigMap
)

// ErrFault is the error tests return from Executor.Fault.
var ErrFault = apply.ErrFault

// PlaceholderDeployment is apply.PlaceholderDeployment.
func PlaceholderDeployment(name string) string { return apply.PlaceholderDeployment(name) }

// PodName is apply.PodName.
func PodName(job, group string, attempt int32, idx int) string {
	return apply.PodName(job, group, attempt, idx)
}
