package apply

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testJob is a TrainingJob of one worker group.
func testJob(name string, created time.Time, replicas int32, cpu, gpu string) v1alpha1.TrainingJob {
	return v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created)},
		Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE, ReplicaGroups: []v1alpha1.ReplicaGroup{{Name: "worker", Replicas: replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), view.GPUResource: resource.MustParse(gpu)}}}}}}}}}}
}

// Each status write is counted by what it changed, whichever code path
// made it.
func TestTransitionCounts(t *testing.T) {
	requeued := metav1.NewTime(t0.Add(time.Minute))
	now := t0.Add(5 * time.Minute)
	place := func(n int32) []v1alpha1.Assignment {
		return []v1alpha1.Assignment{{Group: "worker", Node: "a", Count: n}}
	}
	tests := []struct {
		name          string
		before, after func(*v1alpha1.TrainingJobStatus)
		class         v1alpha1.JobClass
		want          map[string]float64 // metric(labels) -> delta
		waited        float64            // observed wait, when one is
	}{
		{"first start", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhasePending },
			func(s *v1alpha1.TrainingJobStatus) {
				s.Phase, s.Placement, s.Attempt = v1alpha1.PhaseAdmitted, place(2), 1
			},
			v1alpha1.ClassTE, map[string]float64{"wait TE": 1}, 300},
		{"resumed after a preemption", func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.RequeuedAt = v1alpha1.PhaseSuspended, &requeued },
			func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Placement = v1alpha1.PhaseAdmitted, place(2) },
			v1alpha1.ClassBE, map[string]float64{"wait BE": 1}, 240},
		{"running is no start", func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Placement = v1alpha1.PhaseAdmitted, place(2) },
			func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Placement = v1alpha1.PhaseRunning, place(2) },
			v1alpha1.ClassBE, nil, 0},
		{"completed", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseRunning },
			func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseSucceeded },
			v1alpha1.ClassBE, map[string]float64{"completions BE": 1}, 0},
		{"failed", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseAdmitted },
			func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseFailed },
			v1alpha1.ClassTE, map[string]float64{"failures TE": 1}, 0},
		{"preempted for a TE job", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseRunning },
			func(s *v1alpha1.TrainingJobStatus) {
				s.Phase, s.Preemptions = v1alpha1.PhaseSuspended, 1
				s.Reason = preemptReason(policy.Preempt{Job: "ns/j", By: "ns/te", Reason: "fitgpp victim for TE job ns/te"})
			},
			v1alpha1.ClassBE, map[string]float64{"preemptions BE make-room": 1}, 0},
		{"preempted by the policy's plan", func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Preemptions = v1alpha1.PhaseRunning, 2 },
			func(s *v1alpha1.TrainingJobStatus) {
				s.Phase, s.Preemptions = v1alpha1.PhaseSuspended, 3
				s.Reason = preemptReason(policy.Preempt{Job: "ns/j", Reason: "schedule: no replicas this slot"})
			},
			v1alpha1.ClassBE, map[string]float64{"preemptions BE policy": 1}, 0},
		{"node lost", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseRunning },
			func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Reason = v1alpha1.PhaseSuspended, "node a is gone" },
			v1alpha1.ClassBE, map[string]float64{"preemptions BE node-lost": 1}, 0},
		{"migrated", func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Placement = v1alpha1.PhaseRunning, place(2) },
			func(s *v1alpha1.TrainingJobStatus) {
				s.Phase, s.Placement, s.Migrations = v1alpha1.PhaseAdmitted, place(2), 1
			},
			v1alpha1.ClassBE, map[string]float64{"migrations BE": 1}, 0},
		{"scaled up", func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Placement = v1alpha1.PhaseRunning, place(2) },
			func(s *v1alpha1.TrainingJobStatus) {
				s.Phase, s.Placement, s.Resizes = v1alpha1.PhaseRunning, place(4), 1
			},
			v1alpha1.ClassBE, map[string]float64{"resizes BE up": 1}, 0},
		{"scaled down", func(s *v1alpha1.TrainingJobStatus) { s.Phase, s.Placement = v1alpha1.PhaseRunning, place(4) },
			func(s *v1alpha1.TrainingJobStatus) {
				s.Phase, s.Placement, s.Resizes = v1alpha1.PhaseRunning, place(1), 1
			},
			v1alpha1.ClassBE, map[string]float64{"resizes BE down": 1}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			tj := testJob("j", t0, 2, "1", "0")
			tj.Spec.Class = tc.class
			tc.before(&tj.Status)
			before := markOf(&tj)
			tc.after(&tj.Status)
			m.transition(before, &tj, now)
			got := map[string]float64{}
			for _, c := range []string{"TE", "BE"} {
				h := m.WaitSeconds.WithLabelValues(c).(prometheus.Histogram)
				got["wait "+c] = histogramCount(t, h)
				if got["wait "+c] == 1 && histogramSum(t, h) != tc.waited {
					t.Errorf("waited %v, want %v", histogramSum(t, h), tc.waited)
				}
				got["completions "+c] = value(t, m.Completions.WithLabelValues(c))
				got["failures "+c] = value(t, m.Failures.WithLabelValues(c))
				got["migrations "+c] = value(t, m.Migrations.WithLabelValues(c))
				for _, r := range []string{PreemptMakeRoom, PreemptPolicy, PreemptNodeLost} {
					got["preemptions "+c+" "+r] = value(t, m.Preemptions.WithLabelValues(c, r))
				}
				for _, d := range []string{"up", "down", "same"} {
					got["resizes "+c+" "+d] = value(t, m.Resizes.WithLabelValues(c, d))
				}
			}
			for k, v := range got {
				if v != tc.want[k] {
					t.Errorf("%s = %v, want %v", k, v, tc.want[k])
				}
			}
		})
	}
}

// value reads a counter or gauge.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	m := &dtoMetric{}
	if err := c.Write(&m.Metric); err != nil {
		t.Fatal(err)
	}
	if g := m.Metric.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.Metric.GetCounter().GetValue()
}

func histogramCount(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	m := &dtoMetric{}
	if err := h.Write(&m.Metric); err != nil {
		t.Fatal(err)
	}
	return float64(m.Metric.GetHistogram().GetSampleCount())
}

func histogramSum(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	m := &dtoMetric{}
	if err := h.Write(&m.Metric); err != nil {
		t.Fatal(err)
	}
	return m.Metric.GetHistogram().GetSampleSum()
}

// preemptKind reads the reason preemptReason writes.
func TestPreemptKind(t *testing.T) {
	if k := preemptKind(preemptReason(policy.Preempt{Job: "a", By: "b", Reason: "x"})); k != PreemptMakeRoom {
		t.Errorf("with a beneficiary: %s", k)
	}
	if k := preemptKind(preemptReason(policy.Preempt{Job: "a", Reason: "x"})); k != PreemptPolicy {
		t.Errorf("without: %s", k)
	}
}

func TestDeriveStatus(t *testing.T) {
	pos := int32(3)
	tests := []struct {
		name    string
		set     func(*v1alpha1.TrainingJobStatus)
		summary string
		keepPos bool
	}{
		{"pending: the requested count", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhasePending }, "0/4", true},
		{"suspended keeps its position", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseSuspended }, "0/4", true},
		{"admitted: the placement", func(s *v1alpha1.TrainingJobStatus) {
			s.Phase, s.Placement = v1alpha1.PhaseAdmitted, []v1alpha1.Assignment{{Group: "worker", Node: "a", Count: 2}}
		}, "0/2", false},
		{"running: the groups' counts", func(s *v1alpha1.TrainingJobStatus) {
			s.Phase = v1alpha1.PhaseRunning
			s.Replicas = []v1alpha1.GroupStatus{{Name: "worker", Desired: 3, Running: 2}, {Name: "ps", Desired: 1, Running: 1}}
		}, "3/4", false},
		{"succeeded", func(s *v1alpha1.TrainingJobStatus) { s.Phase = v1alpha1.PhaseSucceeded }, "0/0", false},
	}
	for _, tc := range tests {
		tj := testJob("j", t0, 4, "1", "0")
		tj.Status.QueuePosition = &pos
		tc.set(&tj.Status)
		deriveStatus(&tj)
		if tj.Status.ReplicaSummary != tc.summary || (tj.Status.QueuePosition != nil) != tc.keepPos {
			t.Errorf("%s: summary %q position %v, want %q and kept=%v", tc.name, tj.Status.ReplicaSummary, tj.Status.QueuePosition, tc.summary, tc.keepPos)
		}
	}
}

// kubectl's Progress column is a whole percentage, rounded down, and
// empty before the first report; deriveStatus keeps it in step.
func TestProgressSummary(t *testing.T) {
	tests := []struct {
		name string
		p    *v1alpha1.ProgressStatus
		want string
	}{
		{"no report", nil, ""},
		{"start", &v1alpha1.ProgressStatus{Fraction: 0}, "0%"},
		{"float noise", &v1alpha1.ProgressStatus{Fraction: 0.41718750000000004}, "41%"},
		{"rounded down", &v1alpha1.ProgressStatus{Fraction: 0.999}, "99%"},
		{"exact tenths", &v1alpha1.ProgressStatus{Fraction: 0.29}, "29%"},
		{"done", &v1alpha1.ProgressStatus{Fraction: 1}, "100%"},
		{"out of range is clamped", &v1alpha1.ProgressStatus{Fraction: 7}, "100%"},
	}
	got := map[string]string{}
	want := map[string]string{}
	for _, tc := range tests {
		tj := testJob("j", t0, 1, "1", "0")
		tj.Status.Progress = tc.p
		deriveStatus(&tj)
		got[tc.name], want[tc.name] = tj.Status.ProgressSummary, tc.want
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("progress summary (-want +got):\n%s", d)
	}
}

type dtoMetric struct{ Metric dto.Metric }
