package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/plugins"
)

// A two-group job is placed as a gang: every replica pod gets a Binding to
// the node in the job's status placement, and the job runs to completion
// with its progress reported through the pod annotation.
func TestGangPlacementByBinding(t *testing.T) {
	tc := newCluster(t, 3, "8", "4", standin.Config{TimeScale: 10})
	tc.startScheduler("fifo", nil)
	tj := tc.job("gang", v1alpha1.ClassBE, 20,
		group{name: "worker", replicas: 3, cpu: "4", gpu: "4"},
		group{name: "ps", replicas: 1, cpu: "2", gpu: "0"})
	tj.Spec.Progress = &v1alpha1.ProgressSpec{Metric: "loss", LowerIsBetter: true}
	tc.create(tj)
	// Running, or already Succeeded: the job runs 2 s of wall time, which
	// a loaded machine's polls may miss (a cold CI run did); the status
	// keeps the placement and the pods stay, so both phases show it.
	var got *v1alpha1.TrainingJob
	tc.eventually("gang placed", 20*time.Second, func() (bool, string) {
		got = tc.get("gang")
		ph := got.Status.Phase
		return ph == v1alpha1.PhaseRunning || ph == v1alpha1.PhaseSucceeded, fmt.Sprintf("phase %s reason %q", ph, got.Status.Reason)
	})
	pods := tc.pods("gang")
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 4", len(pods))
	}
	want := map[string]int32{}
	for _, a := range got.Status.Placement {
		want[a.Group+"@"+a.Node] += a.Count
	}
	for _, p := range pods {
		if p.Spec.SchedulerName != "drover" {
			t.Errorf("pod %s: schedulerName %q", p.Name, p.Spec.SchedulerName)
		}
		if p.Spec.NodeName == "" || p.Spec.NodeName != p.Annotations[v1alpha1.AnnotationNode] {
			t.Errorf("pod %s bound to %q, assigned %q", p.Name, p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationNode])
		}
		want[p.Labels[v1alpha1.LabelGroup]+"@"+p.Spec.NodeName]--
	}
	for k, n := range want {
		if n != 0 {
			t.Errorf("placement %s: %d pods missing (negative: extra)", k, n)
		}
	}
	if ok, msg := tc.waitEvent("gang", "Admitted"); !ok {
		t.Errorf("no Admitted event: %s", msg)
	}
	done := tc.waitPhase("gang", v1alpha1.PhaseSucceeded, 30*time.Second)
	if done.Status.Progress == nil || done.Status.Progress.Fraction != 1 {
		t.Errorf("progress %+v, want fraction 1", done.Status.Progress)
	}
	if len(done.Status.Evals) < 2 {
		t.Errorf("%d eval samples in status, want the reported metric history", len(done.Status.Evals))
	}
	// The trainer reports several times a second: the history read back
	// from the API server keeps each report's own time (whole seconds, as
	// metav1.Time stores, would give several samples one time, and SpeCon
	// the value a second late).
	for i := 1; i < len(done.Status.Evals); i++ {
		if a, b := done.Status.Evals[i-1].Time, done.Status.Evals[i].Time; !b.After(a.Time) {
			t.Errorf("eval %d at %s, not after eval %d at %s", i, b.Format(time.RFC3339Nano), i-1, a.Format(time.RFC3339Nano))
		}
	}
}

// The API server refuses invalid TrainingJobs with a message naming the
// field (OpenAPI and CEL rules from the Go markers), among them issue 24's
// bounds on utility and estimatedDurationSeconds (also checks, as
// "ordinary-utility", that a job a user would write is accepted).
func TestInvalidTrainingJobRefused(t *testing.T) {
	tc := newCluster(t, 0, "1", "0", standin.Config{})
	withUtility := func(dur int64, u v1alpha1.Utility) func(*v1alpha1.TrainingJob) {
		return func(j *v1alpha1.TrainingJob) { j.Spec.EstimatedDurationSeconds, j.Spec.Utility = &dur, &u }
	}
	cases := []struct {
		name string
		mod  func(*v1alpha1.TrainingJob)
		want string
		// and, when set, must be in the error too.
		and string
	}{
		{"min-above-max", func(j *v1alpha1.TrainingJob) {
			lo, hi := int32(4), int32(2)
			j.Spec.ReplicaGroups[0].MinReplicas, j.Spec.ReplicaGroups[0].MaxReplicas = &lo, &hi
		}, "minReplicas must be <= maxReplicas", ""},
		{"replicas-above-max", func(j *v1alpha1.TrainingJob) {
			hi := int32(1)
			j.Spec.ReplicaGroups[0].MaxReplicas = &hi
		}, "replicas must be <= maxReplicas", ""},
		{"bad-class", func(j *v1alpha1.TrainingJob) { j.Spec.Class = "XX" }, "spec.class", ""},
		{"no-groups", func(j *v1alpha1.TrainingJob) { j.Spec.ReplicaGroups = nil }, "spec.replicaGroups", ""},
		{"negative-grace", func(j *v1alpha1.TrainingJob) { g := int64(-1); j.Spec.GracePeriodSeconds = &g }, "spec.gracePeriodSeconds", ""},
		{"utility-short-duration", withUtility(1, v1alpha1.Utility{Weight: 100}),
			"spec.estimatedDurationSeconds", "estimatedDurationSeconds must be at least 60 when utility is set"},
		{"duration-over-a-year", withUtility(31536001, v1alpha1.Utility{Weight: 100}), "spec.estimatedDurationSeconds", "31536000"},
		{"utility-weight-too-large", withUtility(600, v1alpha1.Utility{Weight: 1e7}), "spec.utility.weight", "less than or equal to 1000000"},
		{"utility-decay-too-large", withUtility(600, v1alpha1.Utility{Weight: 1, Decay: 2}), "spec.utility.decay", ""},
		{"utility-target-over-a-year", withUtility(600, v1alpha1.Utility{Weight: 1, TargetSeconds: 4e7}), "spec.utility.targetSeconds", ""},
		{"ordinary-utility", withUtility(60, v1alpha1.Utility{Weight: 1e6, Decay: 1, TargetSeconds: 31536000}), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := tc.job(c.name, v1alpha1.ClassBE, 10, group{name: "worker", replicas: 2, cpu: "1", gpu: "0"})
			c.mod(j)
			err := cl.Create(context.Background(), j)
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid job refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid job accepted")
			}
			for _, w := range []string{c.want, c.and} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A TE job arriving on a full cluster makes FitGpp preempt a BE job: the
// BE pods are deleted with the job's grace period (the trainer writes a
// checkpoint), the job is Suspended and requeued at the head, and it
// resumes from its checkpoint once the TE job is done.
func TestFitGppPreemptsWithGraceAndResumes(t *testing.T) {
	requirePolicy(t, "fitgpp")
	tc := newCluster(t, 1, "8", "4", standin.Config{TimeScale: 5, CheckpointDelay: 300 * time.Millisecond})
	tc.startScheduler("fitgpp", nil)
	be := tc.job("be", v1alpha1.ClassBE, 40, group{name: "worker", replicas: 1, cpu: "4", gpu: "4"})
	grace := int64(5)
	be.Spec.GracePeriodSeconds = &grace
	tc.create(be)
	tc.waitPhase("be", v1alpha1.PhaseRunning, 20*time.Second)
	tc.eventually("be progress", 20*time.Second, func() (bool, string) {
		p := tc.get("be").Status.Progress
		return p != nil && p.Fraction > 0.1, fmt.Sprintf("%+v", p)
	})
	te := tc.job("te", v1alpha1.ClassTE, 5, group{name: "worker", replicas: 1, cpu: "4", gpu: "4"})
	tc.create(te)
	sus := tc.waitPhase("be", v1alpha1.PhaseSuspended, 20*time.Second)
	if sus.Status.Preemptions != 1 || sus.Status.RequeuedAt == nil {
		t.Errorf("suspended job: preemptions %d requeuedAt %v", sus.Status.Preemptions, sus.Status.RequeuedAt)
	}
	if ok, msg := tc.waitEvent("be", "Preempted"); !ok || !strings.Contains(msg, "te") {
		t.Errorf("Preempted event naming the TE job: %v %s", ok, msg)
	}
	// The BE pod got its grace period: deletion deadline = now + 5 s.
	for _, p := range tc.pods("be") {
		if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds != grace {
			t.Errorf("pod %s deleted with grace %d, want %d", p.Name, *p.DeletionGracePeriodSeconds, grace)
		}
	}
	tc.waitPhase("te", v1alpha1.PhaseSucceeded, 30*time.Second)
	res := tc.waitPhase("be", v1alpha1.PhaseRunning, 20*time.Second)
	if res.Status.Attempt < 2 {
		t.Errorf("resumed job attempt %d, want >= 2", res.Status.Attempt)
	}
	var resumed bool
	for _, p := range tc.pods("be") {
		if p.DeletionTimestamp == nil && p.Annotations[v1alpha1.AnnotationResume] != "" {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("resumed pods carry no %s hint", v1alpha1.AnnotationResume)
	}
	tc.waitPhase("be", v1alpha1.PhaseSucceeded, 40*time.Second)
}

// The scheduler is killed in the middle of a cycle (after some of its API
// writes); a new one rebuilds everything from the API server and finishes
// the job without losing it or binding a replica twice.
func TestRestartMidCycle(t *testing.T) {
	tc := newCluster(t, 4, "8", "4", standin.Config{TimeScale: 1})
	// Both schedulers run with leader election, as a two-replica
	// deployment does: the second becomes leader once the first is gone.
	tc.tune = func(c *k8s.Config) { c.LeaderElection = true }
	var writes atomic.Int32
	crashed := make(chan struct{})
	var once atomic.Bool
	tc.startScheduler("fifo", func(op string) error {
		// Let the status write and the first pod through, then die
		// between creating a pod and binding it.
		n := writes.Add(1)
		if n > 3 && strings.HasPrefix(op, "bind") {
			if once.CompareAndSwap(false, true) {
				close(crashed)
			}
			return k8s.ErrFault
		}
		return nil
	})
	var names []string
	for i := range 3 {
		name := fmt.Sprintf("r%d", i)
		names = append(names, name)
		tc.create(tc.job(name, v1alpha1.ClassBE, 600, group{name: "worker", replicas: 2, cpu: "3", gpu: "1"}))
	}
	select {
	case <-crashed:
	case <-time.After(20 * time.Second):
		t.Fatal("the fault never fired")
	}
	tc.stopScheduler()
	var unbound int
	for _, n := range names {
		for _, p := range tc.pods(n) {
			if p.Spec.NodeName == "" {
				unbound++
			}
		}
	}
	if unbound == 0 {
		t.Errorf("the crash left no pod created but unbound; the test does not exercise the restart")
	}
	tc.startScheduler("fifo", nil)
	for _, n := range names {
		tc.waitPhase(n, v1alpha1.PhaseRunning, 20*time.Second)
	}
	// Let a few more cycles run, then check each replica exists once.
	time.Sleep(500 * time.Millisecond)
	for _, n := range names {
		tj := tc.get(n)
		pods := tc.pods(n)
		if len(pods) != 2 {
			t.Errorf("job %s has %d pods, want 2", n, len(pods))
		}
		for _, p := range pods {
			if p.Spec.NodeName != p.Annotations[v1alpha1.AnnotationNode] {
				t.Errorf("pod %s bound to %s, assigned %s", p.Name, p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationNode])
			}
		}
		if tj.Status.Attempt != 1 {
			t.Errorf("job %s attempt %d after the restart, want 1 (started once)", n, tj.Status.Attempt)
		}
	}
	// Capacity: 4 nodes × 8 CPU; 3 jobs × 2 × 3 CPU: no node over capacity.
	assertNoOvercommit(t, tc)
}

// assertNoOvercommit checks that the pods bound to each node fit it.
func assertNoOvercommit(t *testing.T, tc *testCluster) {
	t.Helper()
	var pods corev1.PodList
	if err := cl.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	used := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			used[p.Spec.NodeName] += k8s.PodDemand(&p.Spec)[0]
		}
	}
	for n, u := range used {
		if strings.HasPrefix(n, tc.ns) && u > 8000 {
			t.Errorf("node %s: %d millicores bound, capacity 8000", n, u)
		}
	}
}

// A pod that stays terminating past its grace period is reported with a
// Warning Event and a condition, and the job is requeued without waiting
// for it.
func TestStuckTerminationReported(t *testing.T) {
	requirePolicy(t, "fitgpp")
	tc := newCluster(t, 2, "8", "4", standin.Config{TimeScale: 1})
	tc.startScheduler("fitgpp", nil)
	be := tc.job("stuck", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 1, cpu: "8", gpu: "4"})
	g := int64(1)
	be.Spec.GracePeriodSeconds = &g
	be.Spec.ReplicaGroups[0].Template.Annotations = map[string]string{standin.AnnotationStuck: "true"}
	tc.create(be)
	tc.waitPhase("stuck", v1alpha1.PhaseRunning, 20*time.Second)
	filler := tc.job("filler", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 1, cpu: "8", gpu: "4"})
	tc.create(filler)
	tc.waitPhase("filler", v1alpha1.PhaseRunning, 20*time.Second)
	tc.create(tc.job("urgent", v1alpha1.ClassTE, 600, group{name: "worker", replicas: 1, cpu: "8", gpu: "4"}))
	tc.eventually("TerminationStuck event", 20*time.Second, func() (bool, string) {
		a, m1 := tc.hasEvent("stuck", "TerminationStuck")
		b, m2 := tc.hasEvent("filler", "TerminationStuck")
		return a || b, m1 + " / " + m2
	})
}

func requirePolicy(t *testing.T, name string) {
	t.Helper()
	if _, err := registryNew(name); err != nil {
		t.Fatalf("policy %s is not registered: %v", name, err)
	}
}

func registryNew(name string) (any, error) {
	reg, err := plugins.Policies()
	if err != nil {
		return nil, err
	}
	return reg.New(name)
}

// A plain pod (as a Kubernetes Job or a Kubeflow PyTorchJob creates) opts
// in with the drover.dev/schedule label and schedulerName drover: drover
// places it as a one-replica job and binds it; a pod for another scheduler
// is left alone.
func TestOptInPlainPod(t *testing.T) {
	tc := newCluster(t, 1, "8", "4", standin.Config{})
	tc.startScheduler("fifo", nil)
	mk := func(name, scheduler string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns, Labels: map[string]string{v1alpha1.OptInLabel: "BE"}},
			Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c", Image: "x",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}
	}
	tc.create(mk("plain", "drover"), mk("other", "default-scheduler"))
	tc.eventually("plain pod bound", 20*time.Second, func() (bool, string) {
		p := &corev1.Pod{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: tc.ns, Name: "plain"}, p); err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == tc.kube.NodeName(0), "node " + p.Spec.NodeName
	})
	time.Sleep(300 * time.Millisecond)
	p := &corev1.Pod{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: tc.ns, Name: "other"}, p); err != nil || p.Spec.NodeName != "" {
		t.Errorf("pod for another scheduler bound to %q (%v)", p.Spec.NodeName, err)
	}
}
