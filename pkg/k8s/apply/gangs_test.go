package apply

import (
	"testing"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// podGroupPhase settles where scheduler-plugins v0.33.5's PodGroup
// controller does, one reconcile after another.
func TestPodGroupPhase(t *testing.T) {
	for _, tc := range []struct {
		name         string
		from         schedv1alpha1.PodGroupPhase
		min          int32
		pods         int
		run, ok, bad int32
		want         schedv1alpha1.PodGroupPhase
	}{
		{"new, too few pods", "", 3, 2, 0, 0, 0, schedv1alpha1.PodGroupPending},
		{"new, enough pods, none running", "", 3, 3, 0, 0, 0, schedv1alpha1.PodGroupScheduling},
		{"all running", schedv1alpha1.PodGroupScheduling, 3, 3, 3, 0, 0, schedv1alpha1.PodGroupRunning},
		{"one succeeded, the rest running", schedv1alpha1.PodGroupRunning, 3, 3, 2, 1, 0, schedv1alpha1.PodGroupRunning},
		{"one failed, the rest running", schedv1alpha1.PodGroupRunning, 3, 3, 2, 0, 1, schedv1alpha1.PodGroupFailed},
		{"one failed, the rest not started", schedv1alpha1.PodGroupScheduling, 3, 3, 0, 0, 1, schedv1alpha1.PodGroupScheduling},
		{"all succeeded", schedv1alpha1.PodGroupRunning, 3, 3, 0, 3, 0, schedv1alpha1.PodGroupFinished},
		{"a member lost", schedv1alpha1.PodGroupRunning, 3, 2, 2, 0, 0, schedv1alpha1.PodGroupPending},
		{"Failed is final", schedv1alpha1.PodGroupFailed, 3, 3, 3, 0, 0, schedv1alpha1.PodGroupFailed},
		{"Finished is final", schedv1alpha1.PodGroupFinished, 3, 3, 3, 0, 0, schedv1alpha1.PodGroupFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := &schedv1alpha1.PodGroup{Spec: schedv1alpha1.PodGroupSpec{MinMember: tc.min}, Status: schedv1alpha1.PodGroupStatus{Phase: tc.from}}
			if got := podGroupPhase(pg, tc.pods, tc.run, tc.ok, tc.bad); got != tc.want {
				t.Errorf("phase %q, want %q", got, tc.want)
			}
		})
	}
}
