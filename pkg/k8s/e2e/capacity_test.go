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

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// TestCapacityHeldByNothing (issue 17, items 5 and 6) on a real API
// server, whose ResourceQuota and PodSecurity admission plugins are on
// (envtest disables only ServiceAccount). fifo, 4 nodes of 4 GPUs, jobs in
// four namespaces, in queue order:
//
//   - a 1,024-replica gang (1 GPU each) that no cluster of 16 GPUs could
//     run: held Unschedulable (condition, reason, Warning Event), no pods;
//     before the fix it held the head of the queue for ever;
//   - four 4-GPU jobs in a namespace whose GPU quota is 0: held
//     QuotaExceeded with the quota's numbers, no pod created; before the
//     fix they were Admitted with their GPUs charged and every pod refused;
//   - a job in a namespace with a scoped quota (pods: 0 for
//     NotTerminating pods), which drover does not model: its pod is
//     refused by the server, and the job releases its placement and waits
//     with the server's message;
//   - a job in a namespace enforcing the restricted Pod Security level,
//     whose template does not meet it: Failed with the server's message;
//   - a 4-GPU job in another namespace: it runs.
func TestCapacityHeldByNothing(t *testing.T) {
	tc := newCluster(t, 4, "16", "4", standin.Config{TimeScale: 1})
	tc.tune = func(c *k8s.Config) { c.Namespace = "" } // every namespace
	ctx := context.Background()
	quotaNS, otherNS, scopedNS, psaNS := tc.ns, tc.ns+"-b", tc.ns+"-scoped", tc.ns+"-psa"
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: otherNS}},
		{ObjectMeta: metav1.ObjectMeta{Name: scopedNS}},
		{ObjectMeta: metav1.ObjectMeta{Name: psaNS, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}},
	} {
		tc.create(ns)
		t.Cleanup(func() {
			_ = cl.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, client.InNamespace(ns.Name))
			_ = cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns.Name), client.GracePeriodSeconds(0))
		})
	}
	// Quotas, with the status the quota controller (not running here)
	// would give them: admission refuses everything under a quota whose
	// status is unknown.
	gpu := corev1.ResourceName("requests.nvidia.com/gpu")
	zero := resource.MustParse("0")
	for _, q := range []*corev1.ResourceQuota{
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: quotaNS}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{gpu: zero}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "scoped", Namespace: scopedNS}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: zero},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}},
	} {
		tc.create(q)
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{}}
		for r := range q.Spec.Hard {
			q.Status.Used[r] = zero
		}
		if err := cl.Status().Update(ctx, q); err != nil {
			t.Fatalf("quota %s status: %v", q.Name, err)
		}
	}
	in := func(ns string, tj *v1alpha1.TrainingJob) *v1alpha1.TrainingJob { tj.Namespace = ns; return tj }
	get := func(ns, name string) *v1alpha1.TrainingJob {
		tj := &v1alpha1.TrainingJob{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tj); err != nil {
			t.Fatal(err)
		}
		return tj
	}
	podsOf := func(ns, job string) int {
		var l corev1.PodList
		if err := cl.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelJob: job}); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	gang := func(name string, n int32) group {
		return group{name: "worker", replicas: n, cpu: "100m", gpu: "1", mem: "100Mi"}
	}
	four := group{name: "worker", replicas: 1, cpu: "1", gpu: "4"}

	tc.create(in(otherNS, tc.job("huge", v1alpha1.ClassBE, 60, gang("worker", 1024))))
	for i := range 4 {
		tc.create(tc.job(fmt.Sprintf("a%d", i), v1alpha1.ClassBE, 60, four))
	}
	tc.create(in(scopedNS, tc.job("scoped", v1alpha1.ClassBE, 60, group{name: "worker", replicas: 1, cpu: "1", gpu: "1"})))
	tc.create(in(psaNS, tc.job("psa", v1alpha1.ClassBE, 60, group{name: "worker", replicas: 1, cpu: "1", gpu: "0"})))
	tc.create(in(otherNS, tc.job("b", v1alpha1.ClassBE, 3600, four)))
	tc.startScheduler("fifo", nil)

	tc.eventually("b running", 30*time.Second, func() (bool, string) {
		tj := get(otherNS, "b")
		return tj.Status.Phase == v1alpha1.PhaseRunning, fmt.Sprintf("phase %s reason %q", tj.Status.Phase, tj.Status.Reason)
	})
	tc.eventually("psa failed by Pod Security", 20*time.Second, func() (bool, string) {
		tj := get(psaNS, "psa")
		return tj.Status.Phase == v1alpha1.PhaseFailed && strings.HasPrefix(tj.Status.Reason, "PodSecurity: ") &&
			strings.Contains(tj.Status.Reason, `violates PodSecurity "restricted:latest"`), fmt.Sprintf("phase %s reason %q", tj.Status.Phase, tj.Status.Reason)
	})
	tc.eventually("scoped released, waiting with the server's message", 20*time.Second, func() (bool, string) {
		tj := get(scopedNS, "scoped")
		c := meta.FindStatusCondition(tj.Status.Conditions, v1alpha1.ConditionAdmitted)
		ok := tj.Status.Phase == v1alpha1.PhasePending && len(tj.Status.Placement) == 0 && c != nil && c.Status == metav1.ConditionFalse &&
			c.Reason == "QuotaExceeded" && strings.Contains(c.Message, "exceeded quota: scoped")
		return ok, fmt.Sprintf("phase %s placement %v reason %q condition %+v", tj.Status.Phase, tj.Status.Placement, tj.Status.Reason, c)
	})
	unschedulable := func(ns, name, reason, prefix string) {
		t.Helper()
		tc.eventually(name+" held "+reason, 20*time.Second, func() (bool, string) {
			tj := get(ns, name)
			c := meta.FindStatusCondition(tj.Status.Conditions, "Unschedulable")
			ok := tj.Status.Phase == v1alpha1.PhasePending && strings.HasPrefix(tj.Status.Reason, prefix) &&
				c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
			return ok, fmt.Sprintf("phase %s reason %q condition %+v", tj.Status.Phase, tj.Status.Reason, c)
		})
	}
	unschedulable(otherNS, "huge", "Unschedulable", "Unschedulable: group worker needs at least 1024 replicas of cpu=0.1 memory=100Mi gpu=1; the 4 node(s) that may run them hold 16 even when empty")
	for i := range 4 {
		unschedulable(quotaNS, fmt.Sprintf("a%d", i), "QuotaExceeded",
			fmt.Sprintf("QuotaExceeded: namespace %s: exceeded quota: gpu, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=0", quotaNS))
	}
	// kubectl describe shows the Events.
	var l corev1.EventList
	if err := cl.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{otherNS + "/huge": "Unschedulable", quotaNS + "/a0": "QuotaExceeded", scopedNS + "/scoped": "QuotaExceeded", psaNS + "/psa": "Failed"}
	deadline := time.Now().Add(15 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		for _, e := range l.Items {
			k := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
			if r, ok := want[k]; ok && e.Reason == r && e.Type == corev1.EventTypeWarning {
				delete(want, k)
			}
		}
		time.Sleep(200 * time.Millisecond)
		if err := cl.List(ctx, &l); err != nil {
			t.Fatal(err)
		}
	}
	for k, r := range want {
		t.Errorf("no Warning %s Event on %s", r, k)
	}
	// Nothing holds capacity for a job that cannot run.
	for _, j := range []struct{ ns, name string }{{otherNS, "huge"}, {quotaNS, "a0"}, {quotaNS, "a1"}, {quotaNS, "a2"}, {quotaNS, "a3"}, {scopedNS, "scoped"}} {
		tc.eventually(j.name+" without pods", 10*time.Second, func() (bool, string) {
			n := podsOf(j.ns, j.name)
			return n == 0, fmt.Sprintf("%d pods", n)
		})
		if p := get(j.ns, j.name).Status.Placement; len(p) > 0 {
			t.Errorf("%s/%s holds placement %v", j.ns, j.name, p)
		}
	}
}

// TestElasticJobWithinQuota (issue 17, item 5): under a GPU quota of 2
// (the real quota admission, which counts each pod created), an elastic
// job of 1 to 4 one-GPU workers asking for 4 starts with 2 and runs; a
// job of the namespace created then waits QuotaExceeded. Before the fix the
// first was placed with 4, two pods refused, and its placement of 4 held.
func TestElasticJobWithinQuota(t *testing.T) {
	tc := newCluster(t, 1, "16", "8", standin.Config{TimeScale: 1})
	ctx := context.Background()
	gpu := corev1.ResourceName("requests.nvidia.com/gpu")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: tc.ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{gpu: resource.MustParse("2")}}}
	tc.create(q)
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{gpu: resource.MustParse("0")}}
	if err := cl.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	tc.create(tc.job("e", v1alpha1.ClassBE, 3600, group{name: "worker", replicas: 4, min: 1, max: 4, cpu: "1", gpu: "1"}))
	tc.startScheduler("elastic", nil)
	tj := tc.waitPhase("e", v1alpha1.PhaseRunning, 30*time.Second)
	if len(tj.Status.Placement) != 1 || tj.Status.Placement[0].Count != 2 {
		t.Errorf("placement %v, want 2 workers", tj.Status.Placement)
	}
	// A job created now finds the quota used up. (Created together, the
	// two would each have had their minimum reserved, and e 1 worker.)
	tc.create(tc.job("later", v1alpha1.ClassBE, 60, group{name: "worker", replicas: 1, cpu: "1", gpu: "1"}))
	tc.eventually("later held by the quota", 20*time.Second, func() (bool, string) {
		tj := tc.get("later")
		return strings.HasPrefix(tj.Status.Reason, "QuotaExceeded: namespace "+tc.ns+": exceeded quota: gpu"), tj.Status.Reason
	})
	// Watch a while: no scale-up past the quota, no pod refused.
	time.Sleep(2 * time.Second)
	if n := len(tc.pods("e")); n != 2 {
		t.Errorf("%d pods of e, want 2", n)
	}
	if ok, msg := tc.hasEvent("e", "QuotaExceeded"); ok {
		t.Errorf("a pod of e was refused: %s", msg)
	}
}
