package k8s

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

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

// drover_jobs counts every TrainingJob by phase and class, zeros included.
func TestObserveJobs(t *testing.T) {
	jobs := []v1alpha1.TrainingJob{testJob("a", t0, 1, "1", "0"), testJob("b", t0, 1, "1", "0"), testJob("c", t0, 1, "1", "0")}
	jobs[1].Status.Phase = v1alpha1.PhaseSucceeded
	jobs[2].Spec.Class = v1alpha1.ClassTE
	jobs[2].Status.Phase = v1alpha1.PhaseRunning
	jobs[2].Status.Placement = []v1alpha1.Assignment{{Group: "worker", Node: "n", Count: 1}}
	w := &view.World{Nodes: []corev1.Node{testNode("n", "8", "0", true)}, Jobs: jobs}
	e := New(Config{}, nil, nil, nil, nil, logr.Discard())
	e.w.M = apply.NewMetrics(prometheus.NewRegistry())
	e.observeJobs(w, view.Build(w, t0, view.Options{DefaultDuration: 100}))
	for _, c := range []struct {
		phase, class string
		want         float64
	}{{"Pending", "BE", 1}, {"Succeeded", "BE", 1}, {"Running", "TE", 1}, {"Running", "BE", 0}, {"Failed", "TE", 0}} {
		if got := value(t, e.w.M.Jobs.WithLabelValues(c.phase, c.class)); got != c.want {
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
