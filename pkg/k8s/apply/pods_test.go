package apply

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// TestDeferProgress: a status that differs from the cached one only in
// phase Admitted to Running, running replica counts and progress waits (deferred)
// until the oldest unwritten change is ProgressPeriod old; any other
// difference is written at once; an equal status has nothing to write and
// defers nothing.
func TestDeferProgress(t *testing.T) {
	base := func() *v1alpha1.TrainingJobStatus {
		return &v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Reason: "started", Tenant: "a",
			Replicas: []v1alpha1.GroupStatus{{Name: "worker", Desired: 4, Running: 3}}, ProgressCategory: "learning",
			Progress: &v1alpha1.ProgressStatus{Fraction: 0.25}, StartTime: &metav1.Time{Time: t0}}
	}
	for _, tc := range []struct {
		name     string
		edit     func(*v1alpha1.TrainingJobStatus)
		later    time.Duration // when a second, equal call comes
		first    bool          // deferred (or nothing to write) at once
		deferred bool          // an unwritten change is kept
		second   bool          // the same call again after later
		bare     bool          // cur has no replica counts yet (a job just started)
	}{
		{"equal", func(*v1alpha1.TrainingJobStatus) {}, time.Minute, true, false, true, false},
		{"progress, young", func(s *v1alpha1.TrainingJobStatus) { s.Progress = &v1alpha1.ProgressStatus{Fraction: 0.5} }, time.Second, true, true, true, false},
		{"progress, old", func(s *v1alpha1.TrainingJobStatus) { s.Progress = &v1alpha1.ProgressStatus{Fraction: 0.5} }, time.Minute, true, true, false, false},
		{"running replicas", func(s *v1alpha1.TrainingJobStatus) { s.Replicas[0].Running++ }, time.Second, true, true, true, false},
		{"desired replicas (a resize)", func(s *v1alpha1.TrainingJobStatus) { s.Replicas[0].Desired-- }, time.Second, false, false, false, false},
		{"first counts", func(*v1alpha1.TrainingJobStatus) {}, time.Second, true, true, true, true},
		{"a group more", func(s *v1alpha1.TrainingJobStatus) { s.Replicas = append(s.Replicas, v1alpha1.GroupStatus{Name: "ps"}) }, time.Second, false, false, false, false},
		{"evals", func(s *v1alpha1.TrainingJobStatus) { s.Evals = []v1alpha1.EvalSample{{}} }, time.Second, true, true, true, false},
		{"category", func(s *v1alpha1.TrainingJobStatus) { s.ProgressCategory = "converged" }, time.Second, true, true, true, false},
		{"reason", func(s *v1alpha1.TrainingJobStatus) { s.Reason = "other" }, time.Second, false, false, false, false},
		{"start time", func(s *v1alpha1.TrainingJobStatus) { s.StartTime = &metav1.Time{Time: t0.Add(time.Second)} }, time.Second, false, false, false, false},
		{"phase to succeeded", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseSucceeded }, time.Second, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			w := New(Config{ProgressPeriod: 30 * time.Second}, nil, nil, nil, nil, "test")
			w.Now = func() time.Time { return now }
			cur, next := base(), base()
			if tc.bare {
				cur.Replicas = nil
			}
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
