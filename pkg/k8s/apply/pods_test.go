package apply

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// TestDeferProgress: a status that differs from the cached one only in
// phase Admitted to Running, replica counts and progress waits (deferred)
// until the oldest unwritten change is ProgressPeriod old; any other
// difference is written at once; an equal status has nothing to write and
// defers nothing.
func TestDeferProgress(t *testing.T) {
	base := func() *v1alpha1.TrainingJobStatus {
		return &v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Reason: "started", Tenant: "a",
			Replicas: []v1alpha1.GroupStatus{{Name: "worker"}}, ProgressCategory: "learning",
			Progress: &v1alpha1.ProgressStatus{Fraction: 0.25}, StartTime: &metav1.Time{Time: t0}}
	}
	for _, tc := range []struct {
		name     string
		edit     func(*v1alpha1.TrainingJobStatus)
		later    time.Duration // when a second, equal call comes
		first    bool          // deferred (or nothing to write) at once
		deferred bool          // an unwritten change is kept
		second   bool          // the same call again after later
	}{
		{"equal", func(*v1alpha1.TrainingJobStatus) {}, time.Minute, true, false, true},
		{"progress, young", func(s *v1alpha1.TrainingJobStatus) { s.Progress = &v1alpha1.ProgressStatus{Fraction: 0.5} }, time.Second, true, true, true},
		{"progress, old", func(s *v1alpha1.TrainingJobStatus) { s.Progress = &v1alpha1.ProgressStatus{Fraction: 0.5} }, time.Minute, true, true, false},
		{"replicas", func(s *v1alpha1.TrainingJobStatus) { s.Replicas = append(s.Replicas, v1alpha1.GroupStatus{Name: "ps"}) }, time.Second, true, true, true},
		{"evals", func(s *v1alpha1.TrainingJobStatus) { s.Evals = []v1alpha1.EvalSample{{}} }, time.Second, true, true, true},
		{"category", func(s *v1alpha1.TrainingJobStatus) { s.ProgressCategory = "converged" }, time.Second, true, true, true},
		{"reason", func(s *v1alpha1.TrainingJobStatus) { s.Reason = "other" }, time.Second, false, false, false},
		{"start time", func(s *v1alpha1.TrainingJobStatus) { s.StartTime = &metav1.Time{Time: t0.Add(time.Second)} }, time.Second, false, false, false},
		{"phase to succeeded", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseSucceeded }, time.Second, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			w := New(Config{ProgressPeriod: 30 * time.Second}, nil, nil, nil, nil, "test")
			w.Now = func() time.Time { return now }
			cur, next := base(), base()
			tc.edit(next)
			if got := w.DeferProgress("ns/j", next, cur); got != tc.first {
				t.Errorf("first call = %v, want %v", got, tc.first)
			}
			if got := w.progress["ns/j"] != nil; got != tc.deferred {
				t.Errorf("an unwritten change kept = %v, want %v", got, tc.deferred)
			}
			now = now.Add(tc.later)
			if got := w.DeferProgress("ns/j", next, cur); got != tc.second {
				t.Errorf("after %v = %v, want %v", tc.later, got, tc.second)
			}
		})
	}
}
