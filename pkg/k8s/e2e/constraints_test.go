package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// taintNode adds a label and a taint to a stand-in node.
func (tc *testCluster) taintNode(i int, labels map[string]string, taints ...corev1.Taint) {
	tc.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: tc.kube.NodeName(i)}, n); err != nil {
		tc.t.Fatal(err)
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = append(n.Spec.Taints, taints...)
	if err := cl.Update(ctx, n); err != nil {
		tc.t.Fatal(err)
	}
}

// deleteJob deletes a TrainingJob and its pods (envtest runs no garbage
// collector to follow the owner references).
func (tc *testCluster) deleteJob(name string) {
	tc.t.Helper()
	ctx := context.Background()
	if err := cl.Delete(ctx, tc.get(name)); err != nil {
		tc.t.Fatal(err)
	}
	if err := cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelJob: name}); err != nil {
		tc.t.Fatal(err)
	}
}

// optInPod is an opted-in plain pod requesting gpu GPUs.
func (tc *testCluster) optInPod(name, gpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns, Labels: map[string]string{v1alpha1.OptInLabel: "BE"}},
		Spec: corev1.PodSpec{SchedulerName: "drover", Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), k8s.GPUResource: resource.MustParse(gpu)},
				Limits: corev1.ResourceList{k8s.GPUResource: resource.MustParse(gpu)}}}}}}
}

func (tc *testCluster) pod(name string) *corev1.Pod {
	tc.t.Helper()
	p := &corev1.Pod{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: tc.ns, Name: name}, p); err != nil {
		tc.t.Fatalf("getting pod %s: %v", name, err)
	}
	return p
}

func podScheduled(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestNodeConstraints: node-0 is a dedicated pool (label pool=team-a,
// taint dedicated=team-a:NoSchedule), node-1 is shared. A TrainingJob and
// an opted-in pod without the toleration never go to the pool, even while
// it is idle and they wait; the team's job (nodeSelector and toleration)
// goes only there; a job selecting a pool no node has is Unschedulable
// with the reason, gets PodScheduled=False, and is never bound. The short
// job runs to Succeeded with the Succeeded condition and the Replicas
// column filled.
func TestNodeConstraints(t *testing.T) {
	tc := newCluster(t, 2, "8", "4", standin.Config{TimeScale: 20})
	tc.taintNode(0, map[string]string{"pool": "team-a"}, corev1.Taint{Key: "dedicated", Value: "team-a", Effect: corev1.TaintEffectNoSchedule})
	// k8s-default: no head-of-line blocking, so the team's job is tried
	// while the shared jobs wait.
	tc.startScheduler("k8s-default", nil)
	pool, shared := tc.kube.NodeName(0), tc.kube.NodeName(1)

	shared1 := tc.job("shared-1", v1alpha1.ClassBE, 3600, group{name: "worker", replicas: 1, cpu: "1", gpu: "4"})
	team := tc.job("team", v1alpha1.ClassBE, 20, group{name: "worker", replicas: 2, cpu: "1", gpu: "2"})
	spec := &team.Spec.ReplicaGroups[0].Template.Spec
	spec.NodeSelector = map[string]string{"pool": "team-a"}
	spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "team-a", Effect: corev1.TaintEffectNoSchedule}}
	lost := tc.job("lost", v1alpha1.ClassBE, 20, group{name: "worker", replicas: 1, cpu: "1", gpu: "1"})
	lost.Spec.ReplicaGroups[0].Template.Spec.NodeSelector = map[string]string{"pool": "team-b"}
	tc.create(shared1)
	tc.waitPhase("shared-1", v1alpha1.PhaseRunning, 20*time.Second)
	// The shared node is full now: these must wait, not take the idle pool.
	tc.create(tc.job("shared-2", v1alpha1.ClassBE, 20, group{name: "worker", replicas: 1, cpu: "1", gpu: "1"}), tc.optInPod("plain", "1"), team, lost)

	tc.waitPhase("team", v1alpha1.PhaseSucceeded, 60*time.Second)
	for _, p := range tc.pods("team") {
		if p.Spec.NodeName != pool {
			t.Errorf("team pod %s ran on %s, off its pool", p.Name, p.Spec.NodeName)
		}
	}
	tj := tc.get("team")
	if c := meta.FindStatusCondition(tj.Status.Conditions, v1alpha1.ConditionSucceeded); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("team: Succeeded condition %+v", c)
	}
	// Watch for a while: nothing without the toleration is ever on the pool.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, name := range []string{"shared-2"} {
			for _, p := range tc.pods(name) {
				if p.Spec.NodeName == pool {
					t.Fatalf("%s pod %s bound to the tainted pool", name, p.Name)
				}
			}
		}
		if p := tc.pod("plain"); p.Spec.NodeName == pool {
			t.Fatalf("opted-in pod bound to the tainted pool")
		}
		if len(tc.pods("lost")) > 0 {
			t.Fatalf("the job no node accepts got pods")
		}
		time.Sleep(100 * time.Millisecond)
	}
	tc.eventually("shared-2 waiting with its replicas and queue position", 30*time.Second, func() (bool, string) {
		tj := tc.get("shared-2")
		return tj.Status.Phase == v1alpha1.PhasePending && tj.Status.ReplicaSummary == "0/1" && tj.Status.QueuePosition != nil,
			fmt.Sprintf("phase %s replicas %q queue %v reason %q", tj.Status.Phase, tj.Status.ReplicaSummary, tj.Status.QueuePosition, tj.Status.Reason)
	})
	tc.eventually("lost reported Unschedulable", 10*time.Second, func() (bool, string) {
		tj := tc.get("lost")
		return strings.HasPrefix(tj.Status.Reason, "Unschedulable:") && strings.Contains(tj.Status.Reason, "didn't match Pod's node affinity/selector") &&
			strings.Contains(tj.Status.Reason, "untolerated taint {dedicated: team-a}"), tj.Status.Reason
	})
	// The waiting opted-in pod tells cluster-autoscaler why it waits.
	tc.eventually("PodScheduled=False on the waiting pod", 10*time.Second, func() (bool, string) {
		c := podScheduled(tc.pod("plain"))
		if c == nil {
			return false, "no condition"
		}
		return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message != "", fmt.Sprintf("%+v", *c)
	})
	// Once the shared node frees, the waiting work runs there.
	tc.deleteJob("shared-1")
	tc.waitPhase("shared-2", v1alpha1.PhaseSucceeded, 60*time.Second)
	for _, p := range tc.pods("shared-2") {
		if p.Spec.NodeName != shared {
			t.Errorf("shared-2 ran on %s", p.Spec.NodeName)
		}
	}
	tc.eventually("plain pod bound to the shared node", 20*time.Second, func() (bool, string) {
		n := tc.pod("plain").Spec.NodeName
		return n == shared, "node " + n
	})
}

// TestSchedulingGates: a pod with a scheduling gate is not bound (and
// carries PodScheduled=False, reason SchedulingGated) until the gate is
// removed; then it is bound.
func TestSchedulingGates(t *testing.T) {
	tc := newCluster(t, 1, "8", "4", standin.Config{})
	tc.startScheduler("fifo", nil)
	p := tc.optInPod("gated", "1")
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
	tc.create(p)
	tc.eventually("PodScheduled=False SchedulingGated", 10*time.Second, func() (bool, string) {
		c := podScheduled(tc.pod("gated"))
		if c == nil {
			return false, "no condition"
		}
		return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated && strings.Contains(c.Message, "example.com/quota"), fmt.Sprintf("%+v", *c)
	})
	time.Sleep(time.Second)
	if n := tc.pod("gated").Spec.NodeName; n != "" {
		t.Fatalf("gated pod bound to %s", n)
	}
	got := tc.pod("gated")
	got.Spec.SchedulingGates = nil
	if err := cl.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	tc.eventually("pod bound once its gate is removed", 20*time.Second, func() (bool, string) {
		n := tc.pod("gated").Spec.NodeName
		return n == tc.kube.NodeName(0), "node " + n
	})
}

// gangPod is one pod of a PodGroup gang, as an operator would create it.
func (tc *testCluster) gangPod(pg, rtype string, i int, gpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", pg, rtype, i), Namespace: tc.ns,
		Labels: map[string]string{k8s.LabelPodGroup: pg, k8s.LabelReplicaType: rtype}},
		Spec: corev1.PodSpec{SchedulerName: "drover", Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), k8s.GPUResource: resource.MustParse(gpu)},
				Limits: corev1.ResourceList{k8s.GPUResource: resource.MustParse(gpu)}}}}}}
}

// gangNodes returns the nodes of the PodGroup's pods (empty for unbound).
func (tc *testCluster) gangNodes(pg string) map[string]string {
	tc.t.Helper()
	var l corev1.PodList
	if err := cl.List(context.Background(), &l, client.InNamespace(tc.ns), client.MatchingLabels{k8s.LabelPodGroup: pg}); err != nil {
		tc.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// TestPodGroupGang: pods joined by a scheduler-plugins PodGroup are held
// until minMember of them exist, never bound partially when only some
// fit, then bound together; the PodGroup's status follows.
func TestPodGroupGang(t *testing.T) {
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("fifo", nil)
	ctx := context.Background()
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pt", Namespace: tc.ns}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 3}}
	tc.create(pg)
	// Two GPUs are taken: three 1-GPU pods do not fit in the two left.
	tc.create(tc.job("blocker", v1alpha1.ClassBE, 3600, group{name: "worker", replicas: 1, cpu: "1", gpu: "2"}))
	tc.waitPhase("blocker", v1alpha1.PhaseRunning, 20*time.Second)
	tc.create(tc.gangPod("pt", "master", 0, "1"), tc.gangPod("pt", "worker", 0, "1"))
	tc.eventually("PodGroup reason: waiting for members", 10*time.Second, func() (bool, string) {
		got := &schedv1alpha1.PodGroup{}
		_ = cl.Get(ctx, client.ObjectKeyFromObject(pg), got)
		return got.Annotations[k8s.AnnotationReason] == "waiting for the gang's pods: 2 of minMember 3 exist" && got.Status.Phase == schedv1alpha1.PodGroupPending,
			fmt.Sprintf("%q %s", got.Annotations[k8s.AnnotationReason], got.Status.Phase)
	})
	tc.create(tc.gangPod("pt", "worker", 1, "1"))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for name, n := range tc.gangNodes("pt") {
			if n != "" {
				t.Fatalf("pod %s of the gang bound to %s while the whole gang does not fit", name, n)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := podScheduled(tc.pod("pt-master-0"))
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
		t.Errorf("waiting gang pod: PodScheduled %+v", c)
	}
	tc.deleteJob("blocker")
	tc.eventually("the gang bound together", 30*time.Second, func() (bool, string) {
		nodes := tc.gangNodes("pt")
		bound := 0
		for _, n := range nodes {
			if n != "" {
				bound++
			}
		}
		return bound == 3, fmt.Sprint(nodes)
	})
	tc.eventually("PodGroup Running", 10*time.Second, func() (bool, string) {
		got := &schedv1alpha1.PodGroup{}
		_ = cl.Get(ctx, client.ObjectKeyFromObject(pg), got)
		return got.Status.Phase == schedv1alpha1.PodGroupRunning && got.Status.Running == 3, fmt.Sprintf("%+v", got.Status)
	})
	if ok, msg := tc.waitEvent("pt", "Scheduled"); !ok {
		t.Errorf("no Scheduled event on the PodGroup: %s", msg)
	}
}
