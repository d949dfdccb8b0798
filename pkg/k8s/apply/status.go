package apply

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// StatusEqual is Semantic.DeepEqual(a, b) for two TrainingJob statuses,
// written out: DeferProgress asks it of every waiting job every cycle, and
// the reflective walk was a seventh of a Kubernetes cycle on a long queue
// (pkg/k8s BenchmarkLongQueues, fifo on gangs). As Semantic does, it
// takes a nil slice or map for an empty one, compares metav1.Time by
// instant in UTC and v1alpha1.ReportTime by instant.
// TestStatusEqualIsSemantic keeps it complete: it changes every field of
// a status, nested ones too, and fails where the two disagree.
func StatusEqual(a, b *v1alpha1.TrainingJobStatus) bool {
	return a.Phase == b.Phase && a.Reason == b.Reason && a.Attempt == b.Attempt && a.Migrating == b.Migrating &&
		a.ReplicaSummary == b.ReplicaSummary && a.ProgressSummary == b.ProgressSummary &&
		a.ProgressCategory == b.ProgressCategory && a.Preemptions == b.Preemptions &&
		a.Migrations == b.Migrations && a.Resizes == b.Resizes && a.Tenant == b.Tenant &&
		slices.Equal(a.Placement, b.Placement) && slices.Equal(a.Replicas, b.Replicas) &&
		timeEqual(a.RequeuedAt, b.RequeuedAt) && timeEqual(a.StartTime, b.StartTime) &&
		timeEqual(a.CompletionTime, b.CompletionTime) && ptrEqual(a.QueuePosition, b.QueuePosition) &&
		progressEqual(a.Progress, b.Progress) && slices.EqualFunc(a.Evals, b.Evals, evalEqual) &&
		maps.Equal(a.PolicyLabels, b.PolicyLabels) && slices.EqualFunc(a.Conditions, b.Conditions, conditionEqual)
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// timeEqual is equality.Semantic's metav1.Time rule, through pointers.
func timeEqual(a, b *metav1.Time) bool {
	return a == b || a != nil && b != nil && a.UTC() == b.UTC()
}

func progressEqual(a, b *v1alpha1.ProgressStatus) bool {
	return a == b || a != nil && b != nil && a.Fraction == b.Fraction && ptrEqual(a.Metric, b.Metric) &&
		a.Checkpoint == b.Checkpoint && a.CheckpointFraction == b.CheckpointFraction && a.ReportedAt.Equal(b.ReportedAt.Time)
}

func evalEqual(a, b v1alpha1.EvalSample) bool { return a.Value == b.Value && a.Time.Equal(b.Time.Time) }

func conditionEqual(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.ObservedGeneration == b.ObservedGeneration &&
		a.LastTransitionTime.UTC() == b.LastTransitionTime.UTC() && a.Reason == b.Reason && a.Message == b.Message
}
