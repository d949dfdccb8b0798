package k8s

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// finishedPod is replica pod idx of job tj on node n1, finished in phase
// ph, with the bulk a real one carries (environment, annotations,
// conditions) and a trainer's last report.
func finishedPod(tj *v1alpha1.TrainingJob, idx int, ph corev1.PodPhase, exit int32) corev1.Pod {
	p := replicaPod(tj.Name, "worker", "n1", "1", nil)
	p.Name = PodName(tj.Name, "worker", 1, idx)
	p.UID = types.UID("uid-" + p.Name)
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tj, v1alpha1.GroupVersion.WithKind("TrainingJob"))}
	p.Annotations[v1alpha1.AnnotationReport] = `{"time":"2026-01-01T00:00:30Z","progress":1,"metric":0.5}`
	p.Spec.SchedulerName = "drover"
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "a long value that the scheduler never reads"}}
	p.Status = corev1.PodStatus{Phase: ph, Message: "done", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "trainer:1", ImageID: "sha256:abc",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed"}}}}}
	return p
}

// trimmed returns what the scheduler's cache keeps of o.
func trimmed[T any](t *testing.T, o T) T {
	t.Helper()
	out, err := trimFinished("drover")(o)
	if err != nil {
		t.Fatal(err)
	}
	return out.(T)
}

// The cache transform cuts finished TrainingJobs and their finished
// replica pods down (issue 17 item 13: memory per finished job), and
// what it keeps carries everything the scheduler reads of them: a cycle
// over a running job whose finished pods are trimmed builds the same
// snapshot, completes or fails the job with the same status, and the
// informer's handlers (report, index, drover_jobs count) see the same.
func TestTrimKeepsWhatTheSchedulerReads(t *testing.T) {
	node := testNode("n1", "8", "4", true)
	job := func(name string) *v1alpha1.TrainingJob {
		tj := testJob(name, t0, 2, "1", "1")
		tj.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...the whole spec...}"}
		tj.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1, StartTime: &metav1.Time{Time: t0},
			Placement: []v1alpha1.Assignment{{Group: "worker", Node: "n1", Count: 2}}}
		return &tj
	}
	ok, bad := job("ok"), job("bad")
	bad.Spec.Class = v1alpha1.ClassTE
	pods := []corev1.Pod{finishedPod(ok, 0, corev1.PodSucceeded, 0), finishedPod(ok, 1, corev1.PodSucceeded, 0), finishedPod(bad, 0, corev1.PodFailed, 3)}

	// What each trimmed object lost, and that unfinished ones keep all.
	for i := range pods {
		c := pods[i].DeepCopy()
		c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
		tp := trimmed(t, c)
		if len(tp.Spec.Containers) != 0 || len(tp.Status.Conditions) != 0 || tp.Status.PodIP != "" || tp.ManagedFields != nil {
			t.Errorf("finished pod %s not trimmed: %+v", tp.Name, tp)
		}
	}
	running := replicaPod("ok", "worker", "n1", "1", nil)
	if got := trimmed(t, running.DeepCopy()); !cmp.Equal(got.Spec, running.Spec) || !cmp.Equal(got.Status, running.Status) {
		t.Errorf("a running pod was trimmed: %s", cmp.Diff(running, *got))
	}
	if got := trimmed(t, ok.DeepCopy()); len(got.Spec.ReplicaGroups) != 1 {
		t.Errorf("a running job was trimmed: %+v", got.Spec)
	}

	// The cycle: the same snapshot, and the same status written.
	run := func(pods []corev1.Pod) (*cluster.Snapshot, map[string]v1alpha1.TrainingJobStatus) {
		objs := []client.Object{node.DeepCopy(), ok.DeepCopy(), bad.DeepCopy()}
		for i := range pods {
			objs = append(objs, pods[i].DeepCopy())
		}
		cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.TrainingJob{}).Build()
		cfg := Config{}
		cfg.Defaults()
		e := New(cfg, cl, nil, nil, &confPolicy{}, logr.Discard())
		e.Now = func() time.Time { return t0.Add(time.Minute) }
		e.Origin = t0
		w, err := e.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		snap := view.Build(w, e.Now(), view.Options{DefaultDuration: 100, StuckAfter: time.Minute, Origin: t0}).Snap
		if _, err := e.Cycle(context.Background()); err != nil {
			t.Fatal(err)
		}
		out := map[string]v1alpha1.TrainingJobStatus{}
		for _, name := range []string{"ok", "bad"} {
			tj := &v1alpha1.TrainingJob{}
			if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, tj); err != nil {
				t.Fatal(err)
			}
			out[name] = tj.Status
		}
		return snap, out
	}
	var cut []corev1.Pod
	for i := range pods {
		cut = append(cut, *trimmed(t, pods[i].DeepCopy()))
	}
	wantSnap, want := run(pods)
	gotSnap, got := run(cut)
	if d := cmp.Diff(seeSnapshot(wantSnap), seeSnapshot(gotSnap)); d != "" {
		t.Errorf("snapshot with trimmed finished pods (-whole +trimmed):\n%s", d)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("statuses written with trimmed finished pods (-whole +trimmed):\n%s", d)
	}
	if want["ok"].Phase != v1alpha1.PhaseSucceeded || want["bad"].Phase != v1alpha1.PhaseFailed {
		t.Fatalf("the cycle did not finish the jobs: %+v", want)
	}

	// The informer's handlers.
	for i := range pods {
		whole, cut := &pods[i], trimmed(t, pods[i].DeepCopy())
		if podState(whole, "drover") != podState(cut, "drover") {
			t.Errorf("pod %s index: %q whole, %q trimmed", whole.Name, podState(whole, "drover"), podState(cut, "drover"))
		}
		ew, et := New(Config{}, nil, nil, nil, nil, logr.Discard()), New(Config{}, nil, nil, nil, nil, logr.Discard())
		ew.Now, et.Now = func() time.Time { return t0.Add(time.Minute) }, func() time.Time { return t0.Add(time.Minute) }
		ew.ObserveReport(whole)
		et.ObserveReport(cut)
		if d := cmp.Diff(ew.reports.byJob, et.reports.byJob, cmp.AllowUnexported(observed{})); d != "" {
			t.Errorf("pod %s report (-whole +trimmed):\n%s", whole.Name, d)
		}
	}
	for _, name := range []string{"ok", "bad"} {
		whole := ok.DeepCopy()
		if name == "bad" {
			whole = bad.DeepCopy()
		}
		whole.Status = want[name]
		cut := trimmed(t, whole.DeepCopy())
		if len(cut.Spec.ReplicaGroups) != 0 || cut.Annotations != nil || cut.Status.Placement != nil || cut.Status.Conditions != nil {
			t.Errorf("finished job %s not trimmed: %+v", name, cut)
		}
		if jobLive(whole) != jobLive(cut) || apply.JobClass(whole) != apply.JobClass(cut) || cut.Status.Phase != whole.Status.Phase ||
			!cut.Status.CompletionTime.Equal(whole.Status.CompletionTime) || cut.UID != whole.UID {
			t.Errorf("finished job %s: live %s/%s, class %s/%s, phase %s/%s (whole/trimmed)", name, jobLive(whole), jobLive(cut),
				apply.JobClass(whole), apply.JobClass(cut), whole.Status.Phase, cut.Status.Phase)
		}
		fw, ft := newFinishedJobs(""), newFinishedJobs("")
		fw.update(whole, false)
		ft.update(cut, false)
		if d := cmp.Diff(fw.n, ft.n, cmp.AllowUnexported(phaseClass{})); d != "" {
			t.Errorf("drover_jobs count of %s (-whole +trimmed):\n%s", name, d)
		}
	}
}
