package k8s

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
)

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
			m := newMetrics(prometheus.NewRegistry())
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

// drover_jobs counts every TrainingJob by phase and class, zeros included.
func TestObserveJobs(t *testing.T) {
	jobs := []v1alpha1.TrainingJob{testJob("a", t0, 1, "1", "0"), testJob("b", t0, 1, "1", "0"), testJob("c", t0, 1, "1", "0")}
	jobs[1].Status.Phase = v1alpha1.PhaseSucceeded
	jobs[2].Spec.Class = v1alpha1.ClassTE
	jobs[2].Status.Phase = v1alpha1.PhaseRunning
	jobs[2].Status.Placement = []v1alpha1.Assignment{{Group: "worker", Node: "n", Count: 1}}
	w := &view.World{Nodes: []corev1.Node{testNode("n", "8", "0", true)}, Jobs: jobs}
	e := New(Config{}, nil, nil, nil, nil, logr.Discard())
	e.m = newMetrics(prometheus.NewRegistry())
	e.observeJobs(w, view.Build(w, t0, view.Options{DefaultDuration: 100}))
	for _, c := range []struct {
		phase, class string
		want         float64
	}{{"Pending", "BE", 1}, {"Succeeded", "BE", 1}, {"Running", "TE", 1}, {"Running", "BE", 0}, {"Failed", "TE", 0}} {
		if got := value(t, e.m.Jobs.WithLabelValues(c.phase, c.class)); got != c.want {
			t.Errorf("drover_jobs{phase=%s,class=%s} = %v, want %v", c.phase, c.class, got, c.want)
		}
	}
}

// The queue lists preempted jobs first (most recent first), then arrival
// order; positions go to the head of it only, rewritten at most every
// period and only where they changed.
func TestQueueAndPositions(t *testing.T) {
	var jobs []v1alpha1.TrainingJob
	for i, name := range []string{"old", "mid", "new", "late"} {
		jobs = append(jobs, testJob(name, t0.Add(time.Duration(i)*time.Second), 1, "4", "0"))
	}
	r1, r2 := metav1.NewTime(t0.Add(time.Minute)), metav1.NewTime(t0.Add(2*time.Minute))
	jobs[2].Status.Phase, jobs[2].Status.RequeuedAt, jobs[2].Status.Preemptions = v1alpha1.PhaseSuspended, &r1, 1
	jobs[3].Status.Phase, jobs[3].Status.RequeuedAt, jobs[3].Status.Preemptions = v1alpha1.PhaseSuspended, &r2, 1
	jobs[0].Status.Reason = "no node has 4 CPUs free"
	objs := make([]client.Object, len(jobs))
	for i := range jobs {
		objs[i] = &jobs[i]
	}
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.TrainingJob{}).Build()
	read := func() *view.World {
		var l v1alpha1.TrainingJobList
		if err := cl.List(context.Background(), &l); err != nil {
			t.Fatal(err)
		}
		return &view.World{Jobs: l.Items}
	}
	v := view.Build(read(), t0.Add(time.Hour), view.Options{DefaultDuration: 100})
	var order []string
	for _, q := range v.Queue() {
		order = append(order, q.Name)
	}
	if got := strings.Join(order, " "); got != "late new old mid" {
		t.Fatalf("queue %s, want late new old mid", got)
	}
	if q := v.Queue()[2]; q.Reason != "no node has 4 CPUs free" || q.Position != 3 || q.Phase != "Pending" || q.Kind != "TrainingJob" {
		t.Errorf("entry %+v", q)
	}

	two := 2
	cfg := Config{QueuePositions: &two}
	cfg.Defaults()
	e := New(cfg, cl, nil, nil, nil, logr.Discard())
	now := t0.Add(time.Hour)
	e.Now = func() time.Time { return now }
	positions := func() map[string]int32 {
		out := map[string]int32{}
		for _, tj := range read().Jobs {
			if p := tj.Status.QueuePosition; p != nil {
				out[tj.Name] = *p
			}
		}
		return out
	}
	if err := e.publishQueue(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	if got := positions(); len(got) != 2 || got["late"] != 1 || got["new"] != 2 {
		t.Fatalf("positions %v, want late 1 and new 2 only", got)
	}
	// "late" starts: within the period nothing is rewritten; after it, the
	// window moves and the job that left it loses its position.
	v = view.Build(read(), now, view.Options{DefaultDuration: 100})
	v.Jobs["ns/late"].St.Phase = cluster.Running
	now = now.Add(time.Second)
	if err := e.publishQueue(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	if got := positions(); got["late"] != 1 {
		t.Fatalf("rewritten within the period: %v", got)
	}
	now = now.Add(cfg.QueuePositionPeriod.Duration)
	if err := e.publishQueue(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	if got := positions(); len(got) != 2 || got["new"] != 1 || got["old"] != 2 {
		t.Fatalf("positions %v, want new 1 and old 2", got)
	}
}

// deployConfig returns the scheduler config of deploy/drover.yaml (the
// chart rendered with its default values).
func deployConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/drover.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err == nil && cm.Kind == "ConfigMap" && cm.Data["config.yaml"] != "" {
			return cm.Data["config.yaml"]
		}
	}
	t.Fatal("deploy/drover.yaml has no ConfigMap with config.yaml")
	return ""
}
