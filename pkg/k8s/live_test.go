package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/report"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
)

// The live indexes: what a cycle reads of each object.
func TestLiveIndexValues(t *testing.T) {
	pod := func(phase corev1.PodPhase, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{SchedulerName: "drover"},
			Status: corev1.PodStatus{Phase: phase}}
	}
	job := map[string]string{v1alpha1.LabelJob: "j"}
	gang := map[string]string{view.LabelPodGroup: "g"}
	now := metav1.Now()
	tj := func(phase v1alpha1.TrainingJobPhase, deleting *metav1.Time) *v1alpha1.TrainingJob {
		return &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: deleting}, Status: v1alpha1.TrainingJobStatus{Phase: phase}}
	}
	got := []string{
		podState(pod(corev1.PodRunning, job), "drover"),
		podState(pod(corev1.PodPending, nil), "drover"),
		podState(pod(corev1.PodSucceeded, job), "drover"),
		podState(pod(corev1.PodFailed, job), "drover"),
		podState(pod(corev1.PodSucceeded, gang), "drover"),
		podState(pod(corev1.PodSucceeded, gang), "other"),
		podState(pod(corev1.PodSucceeded, nil), "drover"),
		jobLive(tj("", nil)),
		jobLive(tj(v1alpha1.PhaseRunning, nil)),
		jobLive(tj(v1alpha1.PhaseSuspended, nil)),
		jobLive(tj(v1alpha1.PhaseSucceeded, nil)),
		jobLive(tj(v1alpha1.PhaseRejected, nil)),
		jobLive(tj(v1alpha1.PhaseRunning, &now)),
	}
	want := []string{
		"live", "live", "done/j", "done/j", "live", "done", "done",
		"true", "true", "true", "false", "false", "false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index values (-want +got):\n%s", diff)
	}
}

// finishedJobs follows the informer's events: a job counts once it is
// finished, moves with its phase, and is forgotten when deleted.
func TestFinishedJobs(t *testing.T) {
	f := newFinishedJobs("ns")
	h := f.handler()
	mk := func(ns, name string, phase v1alpha1.TrainingJobPhase) *v1alpha1.TrainingJob {
		return &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE}, Status: v1alpha1.TrainingJobStatus{Phase: phase}}
	}
	h.OnAdd(mk("ns", "a", v1alpha1.PhaseRunning), false)
	h.OnAdd(mk("ns", "b", v1alpha1.PhaseSucceeded), false)
	h.OnAdd(mk("other", "c", v1alpha1.PhaseSucceeded), false)
	h.OnUpdate(nil, mk("ns", "a", v1alpha1.PhaseFailed))
	h.OnUpdate(nil, mk("ns", "a", v1alpha1.PhaseFailed))
	n, in := f.counts([]string{"ns/a", "ns/x"})
	want := map[phaseClass]int{{"Succeeded", "BE"}: 1, {"Failed", "BE"}: 1}
	if diff := cmp.Diff(want, n, cmp.AllowUnexported(phaseClass{})); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"ns/a": true}, in); diff != "" {
		t.Errorf("counted keys (-want +got):\n%s", diff)
	}
	h.OnDelete(mk("ns", "b", v1alpha1.PhaseSucceeded))
	n, _ = f.counts(nil)
	if diff := cmp.Diff(map[phaseClass]int{{"Succeeded", "BE"}: 0, {"Failed", "BE"}: 1}, n, cmp.AllowUnexported(phaseClass{})); diff != "" {
		t.Errorf("after a delete, counts (-want +got):\n%s", diff)
	}
}

// seenPolicy records what the snapshot says of each running job.
type seenPolicy struct{ seen []string }

func (p *seenPolicy) Name() string { return "seen" }
func (p *seenPolicy) Schedule(s *cluster.Snapshot) []policy.Action {
	for _, js := range s.Running {
		p.seen = append(p.seen, fmt.Sprintf("%s %v rate>0=%v left=%.0f evals=%d", js.Job.ID, js.Phase, js.Rate > 0, js.WorkLeft, len(js.Evals)))
	}
	return nil
}

// A running job's trainer reports every cycle; with ProgressPeriod the
// executor writes the job's status once per period (the move to Running
// and the progress together), while the policy sees the same snapshots
// as when every report is written. With no period (the old behaviour)
// each cycle with a new report writes.
func TestProgressWrittenOncePerPeriod(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		// writes after each of the cycles at t0+2s, +5s, +8s, +13s
		writes []int
	}{
		{0, []int{1, 2, 3, 4}},
		{10 * time.Second, []int{0, 0, 0, 1}},
	} {
		t.Run(fmt.Sprint(c.period), func(t *testing.T) {
			n, j := testNode("n", "8", "4", true), testJob("j", t0, 1, "2", "1")
			metric := "loss"
			j.Spec.Progress = &v1alpha1.ProgressSpec{Metric: metric}
			work := int64(100)
			j.Spec.EstimatedDurationSeconds = &work
			j.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseAdmitted, Attempt: 1, Tenant: "ns", // as the start wrote it
				Placement: []v1alpha1.Assignment{{Group: "worker", Node: "n", Count: 1}}}
			p := replicaPod("j", "worker", "n", "1", nil)
			p.Name = PodName("j", "worker", 1, 0)
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(&j, v1alpha1.GroupVersion.WithKind("TrainingJob"))}
			writes := 0
			cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&n, &j, &p).WithStatusSubresource(&v1alpha1.TrainingJob{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
					writes++
					return c.SubResource(sub).Update(ctx, o, opts...)
				}}).Build()
			cfg := Config{}
			cfg.Defaults()
			cfg.ProgressPeriod.Duration = c.period
			pol := &seenPolicy{}
			e := New(cfg, cl, nil, nil, pol, logr.Discard())
			e.Origin = t0
			ctx := context.Background()
			var got []int
			for i, at := range []time.Duration{2 * time.Second, 5 * time.Second, 8 * time.Second, 13 * time.Second} {
				// The trainer reports progress 0.1, 0.2, ... just before the cycle.
				m := 1.0 / float64(i+1)
				r, err := json.Marshal(report.Report{Progress: 0.1 * float64(i+1), Metric: &m, Time: t0.Add(at - time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				cur := &corev1.Pod{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(&p), cur); err != nil {
					t.Fatal(err)
				}
				cur.Annotations[v1alpha1.AnnotationReport] = string(r)
				if err := cl.Update(ctx, cur); err != nil {
					t.Fatal(err)
				}
				e.Now = func() time.Time { return t0.Add(at) }
				if _, err := e.Cycle(ctx); err != nil {
					t.Fatal(err)
				}
				got = append(got, writes)
			}
			if diff := cmp.Diff(c.writes, got); diff != "" {
				t.Errorf("status writes after each cycle (-want +got):\n%s", diff)
			}
			// The snapshots are the same with and without the period: the
			// first cycle's is rebuilt after the move to Running; later ones
			// show the report copied in the cycle before (the snapshot is
			// built before a cycle copies reports), written or not.
			want := []string{
				"ns/j Running rate>0=true left=90 evals=1",
				"ns/j Running rate>0=true left=90 evals=1",
				"ns/j Running rate>0=true left=80 evals=2",
				"ns/j Running rate>0=true left=70 evals=3",
			}
			if diff := cmp.Diff(want, pol.seen); diff != "" {
				t.Errorf("snapshots (-want +got):\n%s", diff)
			}
			// And the API server has it all after the last write.
			tj := &v1alpha1.TrainingJob{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(&j), tj); err != nil {
				t.Fatal(err)
			}
			if tj.Status.Phase != v1alpha1.PhaseRunning || tj.Status.Progress == nil || tj.Status.Progress.Fraction != 0.4 || len(tj.Status.Evals) != 4 {
				t.Errorf("status after the last cycle: phase %s progress %+v, %d evals; want Running, 0.4, 4", tj.Status.Phase, tj.Status.Progress, len(tj.Status.Evals))
			}
		})
	}
}
