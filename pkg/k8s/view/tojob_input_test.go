package view

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// ToJob refuses quantities whose int64 conversion overflows, naming the
// field, instead of reading them as a negative or zero demand (issue 17
// item 10).
func TestToJobQuantityBounds(t *testing.T) {
	mem := func(replicas int32, q string) v1alpha1.TrainingJob {
		tj := testJob("j", t0, replicas, "1", "0")
		tj.Spec.ReplicaGroups[0].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(q)
		return tj
	}
	tests := []struct {
		name string
		tj   v1alpha1.TrainingJob
		want string // "" for valid
	}{
		{"ok", testJob("j", t0, 2, "4", "1"), ""},
		{"cpu 1e18", testJob("j", t0, 1, "1e18", "0"), "spec.replicaGroups[0].template.spec.containers[0].resources.requests.cpu: 1e18 is above the limit 1e+06"},
		{"memory 8Ei", mem(1, "8Ei"), "spec.replicaGroups[0].template.spec.containers[0].resources.requests.memory: 9223372036854775807 is above the limit 1.125899906842624e+15"},
		{"1Pi x 10000 replicas", mem(10000, "1Pi"), "spec.replicaGroups[0].template: memory demand 1125899906842624 x 10000 replicas overflows"},
		{"gpu 1e7", testJob("j", t0, 1, "1", "1e7"), "requests.nvidia.com/gpu: 10e6 is above the limit 1e+06"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := ToJob(&tc.tj, Options{DefaultDuration: 60, Origin: t0.Add(-time.Hour)})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q (job %+v)", err, tc.want, j)
			}
		})
	}
}

// FuzzToJob: whatever the quantities and counts of a TrainingJob, ToJob
// returns an error or a job whose demands are non-negative and whose
// replica counts times demands do not overflow.
func FuzzToJob(f *testing.F) {
	f.Add("1", "8Gi", "1", int32(2), int32(1), int32(4), "TE")
	f.Add("1e18", "1", "0", int32(1), int32(0), int32(0), "BE")
	f.Add("1", "8Ei", "0", int32(1024), int32(0), int32(0), "")
	f.Add("-1", "1", "1", int32(-1), int32(0), int32(0), "XX")
	f.Fuzz(func(t *testing.T, cpu, mem, gpu string, replicas, lo, hi int32, class string) {
		rl := corev1.ResourceList{}
		for name, s := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem, GPUResource: gpu} {
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return
			}
			rl[name] = q
		}
		tj := testJob("j", t0, replicas, "1", "0")
		tj.Spec.Class = v1alpha1.JobClass(class)
		g := &tj.Spec.ReplicaGroups[0]
		g.Template.Spec.Containers[0].Resources.Requests = rl
		if lo != 0 {
			g.MinReplicas = &lo
		}
		if hi != 0 {
			g.MaxReplicas = &hi
		}
		j, err := ToJob(&tj, Options{DefaultDuration: 60, Origin: t0})
		if err != nil {
			return
		}
		for _, grp := range j.Groups {
			if grp.Demand.AnyNegative() || grp.Demand.IsZero() {
				t.Fatalf("cpu=%q mem=%q gpu=%q: demand %v", cpu, mem, gpu, grp.Demand)
			}
			for _, v := range grp.Demand {
				if float64(v)*float64(grp.Max) > maxGroupDemand {
					t.Fatalf("demand %v x %d overflows", grp.Demand, grp.Max)
				}
			}
		}
	})
}

// A TrainingJob's stated run time is the job's Work and its estimate; one
// without estimatedDurationSeconds gets the default duration and says it
// has no estimate (NoEstimate), so SRSF keys it by attained service.
func TestToJobEstimate(t *testing.T) {
	stated := testJob("j", t0, 1, "1", "1")
	d := int64(7200)
	stated.Spec.EstimatedDurationSeconds = &d
	tests := []struct {
		name       string
		tj         v1alpha1.TrainingJob
		work       float64
		noEstimate bool
	}{
		{"stated", stated, 7200, false},
		{"unset", testJob("j", t0, 1, "1", "1"), 60, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := ToJob(&tc.tj, Options{DefaultDuration: 60, Origin: t0})
			if err != nil {
				t.Fatal(err)
			}
			if j.Work != tc.work || j.EstimatedWork() != tc.work || j.NoEstimate != tc.noEstimate {
				t.Errorf("Work %v, EstimatedWork %v, NoEstimate %v; want %v, %v, %v", j.Work, j.EstimatedWork(), j.NoEstimate, tc.work, tc.work, tc.noEstimate)
			}
		})
	}
}
