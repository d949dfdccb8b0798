package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// TestGangContract holds drover's PodGroup gangs to the promises of the
// peers whose PodGroups Kubeflow operators create: scheduler-plugins
// v0.33.5 coscheduling (sigs.k8s.io/scheduler-plugins
// test/integration/coscheduling_test.go, and its pkg/coscheduling/core and
// pkg/controllers/podgroup_controller.go where the contract is code) and
// Volcano v1.10.0's gang e2e (volcano.sh/volcano
// test/e2e/schedulingbase/job_scheduling.go). Each row names its source.
// The scheduler runs k8s-default (kube-scheduler's priority sort and node
// scoring), the profile those suites run coscheduling in.
func TestGangContract(t *testing.T) {
	for _, row := range []struct {
		name, source string
		run          func(t *testing.T)
	}{
		{"lost member replaced", "coscheduling core.go Permit (assigned pods count towards minMember); Volcano job_scheduling.go \"Gang scheduling: Full Occupied\" (a running gang keeps running)", lostMemberReplaced},
		{"minMember 2 of 4", "Volcano job_scheduling.go \"Schedule Multiple Jobs\" (Min 2 of Rep); coscheduling core.go Permit", minMemberBelowPods},
		{"minResources above free room", "coscheduling_test.go TestCoschedulingPlugin \"... pgs have min resources\"; core.go PreFilter/CheckClusterResource", minResourcesAboveFree},
		{"pods before their PodGroup", "coscheduling core.go Permit: PodGroupNotFound", podsBeforePodGroup},
		{"CRD installed after start", "issue 29: the chart installs the PodGroup CRD after drover; coscheduling's Permit PodGroupNotFound", crdAfterStart},
		{"PodGroup status on Succeeded and Failed", "podgroup_controller.go Reconcile; Volcano job_scheduling.go \"PodGroup's Phase with k8s Job in Completed\"", podGroupStatus},
		{"a plain pod next to a waiting gang", "coscheduling_test.go TestCoschedulingPlugin \"equal priority, not sequentially pg1 not meet min and 3 regular pods\"", plainPodNextToGang},
		{"two gangs interleaved", "coscheduling_test.go TestCoschedulingPlugin \"equal priority, not sequentially pg1 meet min and pg2 not meet min\"", twoGangsInterleaved},
		{"priority between gangs", "coscheduling_test.go TestCoschedulingPlugin \"different priority, not sequentially pg1 meet min and pg2 meet min\"", priorityBetweenGangs},
	} {
		t.Run(row.name, func(t *testing.T) {
			t.Logf("source: %s", row.source)
			row.run(t)
		})
	}
}

// member is pod i of replica type rtype of PodGroup pg, requesting one
// CPU and gpu GPUs, as an operator creates it.
func (tc *testCluster) member(pg, rtype string, i int, gpu string) *corev1.Pod {
	return tc.gangPod(pg, rtype, i, gpu)
}

func (tc *testCluster) podGroup(name string, minMember int32, minResources corev1.ResourceList) *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: minMember, MinResources: minResources}}
}

// bound counts the PodGroup's pods bound to a node (not terminating).
func (tc *testCluster) bound(pg string) (int, map[string]string) {
	nodes := tc.gangNodes(pg)
	n := 0
	for _, node := range nodes {
		if node != "" {
			n++
		}
	}
	return n, nodes
}

// waitBound waits until exactly want of the PodGroup's pods are bound.
func (tc *testCluster) waitBound(pg string, want int, timeout time.Duration) {
	tc.t.Helper()
	tc.eventually(fmt.Sprintf("%d pods of %s bound", want, pg), timeout, func() (bool, string) {
		n, nodes := tc.bound(pg)
		return n == want, fmt.Sprint(nodes)
	})
}

// stayBound checks for d that no more than max of the PodGroup's pods
// are ever bound.
func (tc *testCluster) stayBound(pg string, most int, d time.Duration) {
	tc.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n, nodes := tc.bound(pg); n > most {
			tc.t.Fatalf("%d pods of %s bound, at most %d may be: %v", n, pg, most, nodes)
		}
	}
}

func (tc *testCluster) pgStatus(name string) (*schedv1alpha1.PodGroup, string) {
	pg := &schedv1alpha1.PodGroup{}
	_ = cl.Get(context.Background(), client.ObjectKey{Namespace: tc.ns, Name: name}, pg)
	return pg, fmt.Sprintf("phase %q running %d succeeded %d failed %d reason %q", pg.Status.Phase, pg.Status.Running,
		pg.Status.Succeeded, pg.Status.Failed, pg.Annotations[k8s.AnnotationReason])
}

// blocker runs a TrainingJob holding gpu GPUs on one node.
func (tc *testCluster) blocker(gpu string) {
	tc.t.Helper()
	tc.create(tc.job("blocker", v1alpha1.ClassBE, 36000, group{name: "worker", replicas: 1, cpu: "1", gpu: gpu}))
	tc.waitPhase("blocker", v1alpha1.PhaseRunning, 20*time.Second)
}

func deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := cl.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cl.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not gone: %v", p.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lostMemberReplaced: a running gang (minMember 4) loses one member, then
// two, each recreated by "the operator" (a new pod of the same name): the
// new pods are bound next to the running ones.
func lostMemberReplaced(t *testing.T) {
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.create(tc.podGroup("pt", 4, nil))
	pods := []*corev1.Pod{tc.member("pt", "master", 0, "1"), tc.member("pt", "worker", 0, "1"), tc.member("pt", "worker", 1, "1"), tc.member("pt", "worker", 2, "1")}
	for _, p := range pods {
		tc.create(p.DeepCopy())
	}
	tc.waitBound("pt", 4, 20*time.Second)
	tc.eventually("PodGroup Running", 10*time.Second, func() (bool, string) {
		pg, s := tc.pgStatus("pt")
		return pg.Status.Phase == schedv1alpha1.PodGroupRunning && pg.Status.Running == 4, s
	})
	// One lost: 3 bound of minMember 4, the new pod binds alone.
	deletePod(t, pods[2])
	tc.create(pods[2].DeepCopy())
	tc.waitBound("pt", 4, 15*time.Second)
	// Two lost: 2 bound, the two new pods bind together.
	deletePod(t, pods[1])
	deletePod(t, pods[3])
	tc.create(pods[1].DeepCopy(), pods[3].DeepCopy())
	tc.waitBound("pt", 4, 15*time.Second)
	tc.eventually("PodGroup Running 4", 10*time.Second, func() (bool, string) {
		pg, s := tc.pgStatus("pt")
		return pg.Status.Phase == schedv1alpha1.PodGroupRunning && pg.Status.Running == 4, s
	})
}

// minMemberBelowPods: minMember 2 of 4 pods with room for 3 binds 3 (at
// least minMember, up to the room), the fourth once room frees.
func minMemberBelowPods(t *testing.T) {
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.blocker("1")
	tc.create(tc.podGroup("el", 2, nil))
	tc.create(tc.member("el", "worker", 0, "1"), tc.member("el", "worker", 1, "1"), tc.member("el", "worker", 2, "1"), tc.member("el", "worker", 3, "1"))
	tc.waitBound("el", 3, 20*time.Second)
	tc.stayBound("el", 3, 2*time.Second)
	_, nodes := tc.bound("el")
	for name, n := range nodes {
		if n != "" {
			continue
		}
		c := podScheduled(tc.pod(name))
		if c == nil || c.Status != corev1.ConditionFalse {
			t.Errorf("unbound pod %s: PodScheduled %+v, want False with a reason", name, c)
		}
	}
	tc.deleteJob("blocker")
	tc.waitBound("el", 4, 20*time.Second)
}

// minResourcesAboveFree: minResources of 6 GPUs with 4 free (4 held by
// another job, of 8) bind nothing, though the gang's 2 pods would fit;
// once the room frees, the gang is bound.
func minResourcesAboveFree(t *testing.T) {
	tc := newCluster(t, 2, "8", "4", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.blocker("4")
	tc.create(tc.podGroup("mr", 2, corev1.ResourceList{k8s.GPUResource: resource.MustParse("6")}))
	tc.create(tc.member("mr", "worker", 0, "1"), tc.member("mr", "worker", 1, "1"))
	tc.eventually("the PodGroup says why", 10*time.Second, func() (bool, string) {
		pg, s := tc.pgStatus("mr")
		return strings.Contains(pg.Annotations[k8s.AnnotationReason], "minResources"), s
	})
	tc.stayBound("mr", 0, 2*time.Second)
	tc.deleteJob("blocker")
	tc.waitBound("mr", 2, 20*time.Second)
}

// podsBeforePodGroup: labelled pods whose PodGroup does not exist yet are
// not bound (PodGroupNotFound on each, condition and Event); once it is
// created, the gang is bound whole.
func podsBeforePodGroup(t *testing.T) {
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.create(tc.member("late", "master", 0, "1"), tc.member("late", "worker", 0, "1"), tc.member("late", "worker", 1, "1"))
	tc.eventually("PodGroupNotFound on the pods", 10*time.Second, func() (bool, string) {
		c := podScheduled(tc.pod("late-worker-1"))
		return c != nil && c.Status == corev1.ConditionFalse && strings.HasPrefix(c.Message, k8s.ReasonPodGroupNotFound), fmt.Sprintf("%+v", c)
	})
	if ok, msg := tc.waitEvent("late-master-0", k8s.ReasonPodGroupNotFound); !ok {
		t.Errorf("no PodGroupNotFound event on the pod: %s", msg)
	}
	tc.stayBound("late", 0, 2*time.Second)
	tc.create(tc.podGroup("late", 3, nil))
	tc.waitBound("late", 3, 15*time.Second)
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

const podGroupCRDName = "podgroups.scheduling.x-k8s.io"

// installPodGroupCRD installs the PodGroup CRD (again) and waits until it
// is served.
func installPodGroupCRD(t *testing.T) {
	t.Helper()
	path, err := podGroupCRD()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{Paths: []string{path}, MaxTime: time.Minute}); err != nil {
		t.Fatalf("installing the PodGroup CRD: %v", err)
	}
}

// crdAfterStart: drover starts with no PodGroup CRD (the chart's order);
// an MPIJob-like gang's 4 pods (launcher and 3 workers) then wait as
// PodGroupNotFound, none bound alone; once the CRD and the PodGroup are
// created the gang is bound whole, within seconds.
func crdAfterStart(t *testing.T) {
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName(podGroupCRDName)
	if err := cl.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	// Whatever happens, the next tests get their CRD back.
	t.Cleanup(func() { installPodGroupCRD(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cl.Get(ctx, client.ObjectKey{Name: podGroupCRDName}, crd)
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PodGroup CRD is not gone: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.create(tc.member("mpi", "launcher", 0, "0"), tc.member("mpi", "worker", 0, "1"), tc.member("mpi", "worker", 1, "1"), tc.member("mpi", "worker", 2, "1"))
	tc.eventually("PodGroupNotFound on the pods", 10*time.Second, func() (bool, string) {
		c := podScheduled(tc.pod("mpi-worker-0"))
		return c != nil && strings.HasPrefix(c.Message, k8s.ReasonPodGroupNotFound), fmt.Sprintf("%+v", c)
	})
	tc.stayBound("mpi", 0, 2*time.Second)
	installPodGroupCRD(t)
	start := time.Now()
	tc.create(tc.podGroup("mpi", 4, nil))
	tc.waitBound("mpi", 4, 20*time.Second)
	t.Logf("gang bound %.1f s after the CRD and PodGroup were created", time.Since(start).Seconds())
}

// setPhase sets a pod's phase as its kubelet would.
func setPhase(t *testing.T, p *corev1.Pod, phase corev1.PodPhase) {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		got := &corev1.Pod{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		got.Status.Phase = phase
		err := cl.Status().Update(ctx, got)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	t.Fatalf("setting pod %s %s: conflicts", p.Name, phase)
}

// podGroupStatus: with one member Succeeded and the rest running the
// PodGroup is Running (succeeded + running >= minMember); one member
// Failed makes it Failed, and Failed stays.
func podGroupStatus(t *testing.T) {
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.create(tc.podGroup("st", 3, nil))
	pods := []*corev1.Pod{tc.member("st", "master", 0, "1"), tc.member("st", "worker", 0, "1"), tc.member("st", "worker", 1, "1")}
	for _, p := range pods {
		tc.create(p.DeepCopy())
	}
	tc.waitBound("st", 3, 20*time.Second)
	tc.eventually("PodGroup Running 3", 10*time.Second, func() (bool, string) {
		pg, s := tc.pgStatus("st")
		return pg.Status.Phase == schedv1alpha1.PodGroupRunning && pg.Status.Running == 3, s
	})
	setPhase(t, pods[1], corev1.PodSucceeded)
	tc.eventually("PodGroup Running with 1 Succeeded", 10*time.Second, func() (bool, string) {
		pg, s := tc.pgStatus("st")
		return pg.Status.Phase == schedv1alpha1.PodGroupRunning && pg.Status.Succeeded == 1 && pg.Status.Running == 2, s
	})
	// Nothing is bound in the finished pod's place.
	tc.stayBound("st", 3, time.Second)
	setPhase(t, pods[2], corev1.PodFailed)
	tc.eventually("PodGroup Failed", 10*time.Second, func() (bool, string) {
		pg, s := tc.pgStatus("st")
		return pg.Status.Phase == schedv1alpha1.PodGroupFailed && pg.Status.Failed == 1, s
	})
	time.Sleep(time.Second)
	if pg, s := tc.pgStatus("st"); pg.Status.Phase != schedv1alpha1.PodGroupFailed {
		t.Errorf("Failed did not stay: %s", s)
	}
}

// plainPod is a pod naming drover as its scheduler, without the
// drover.dev/schedule label.
func (tc *testCluster) plainPod(name, gpu string) *corev1.Pod {
	p := tc.member("x", "pod", 0, gpu)
	p.Name = name
	p.Labels = map[string]string{"app": "plain"}
	return p
}

// plainPodNextToGang: a gang waiting for its members (3 of minMember 4)
// binds nothing, and plain pods with drover's schedulerName (no opt-in
// label) are bound next to it.
func plainPodNextToGang(t *testing.T) {
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.create(tc.podGroup("w", 4, nil))
	tc.create(tc.member("w", "worker", 0, "1"), tc.plainPod("plain-a", "1"), tc.member("w", "worker", 1, "1"),
		tc.plainPod("plain-b", "1"), tc.member("w", "worker", 2, "1"))
	tc.eventually("the plain pods bound", 15*time.Second, func() (bool, string) {
		a, b := tc.pod("plain-a").Spec.NodeName, tc.pod("plain-b").Spec.NodeName
		return a != "" && b != "", a + " " + b
	})
	tc.stayBound("w", 0, 2*time.Second)
	if ok, msg := tc.waitEvent("plain-a", "Scheduled"); !ok {
		t.Errorf("no Scheduled event on the plain pod: %s", msg)
	}
}

// twoGangsInterleaved: pods of two gangs created interleaved, 6 GPUs for
// 7 pods: the first gang (3) is bound whole, the second (minMember 4)
// not at all.
func twoGangsInterleaved(t *testing.T) {
	tc := newCluster(t, 2, "8", "3", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.create(tc.podGroup("pg1", 3, nil), tc.podGroup("pg2", 4, nil))
	tc.create(tc.member("pg1", "worker", 0, "1"), tc.member("pg2", "worker", 0, "1"), tc.member("pg1", "worker", 1, "1"),
		tc.member("pg2", "worker", 1, "1"), tc.member("pg1", "worker", 2, "1"), tc.member("pg2", "worker", 2, "1"), tc.member("pg2", "worker", 3, "1"))
	tc.waitBound("pg1", 3, 20*time.Second)
	tc.stayBound("pg2", 0, 3*time.Second)
	if n, _ := tc.bound("pg1"); n != 3 {
		t.Errorf("pg1: %d bound, want 3", n)
	}
}

// priorityBetweenGangs: two gangs, each needing all the room, wait behind
// a job holding it; when it ends, the higher-priority gang is bound (the
// one created later), the other not at all.
func priorityBetweenGangs(t *testing.T) {
	ctx := context.Background()
	for name, v := range map[string]int32{"e2e-gang-mid": 100, "e2e-gang-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
		if err := cl.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tc := newCluster(t, 1, "8", "3", standin.Config{TimeScale: 20})
	tc.startScheduler("k8s-default", nil)
	tc.blocker("1")
	tc.create(tc.podGroup("mid", 3, nil), tc.podGroup("high", 3, nil))
	var pods []client.Object
	for i := range 3 {
		m := tc.member("mid", "worker", i, "1")
		m.Spec.PriorityClassName = "e2e-gang-mid"
		h := tc.member("high", "worker", i, "1")
		h.Spec.PriorityClassName = "e2e-gang-high"
		pods = append(pods, m, h)
	}
	tc.create(pods...)
	tc.stayBound("mid", 0, time.Second)
	tc.stayBound("high", 0, time.Second)
	tc.deleteJob("blocker")
	tc.waitBound("high", 3, 20*time.Second)
	tc.stayBound("mid", 0, 2*time.Second)
}
