package k8s

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// A new job's start costs one status write: Pending is not written first
// for a job started in the cycle that first sees it, and the replica counts
// the next cycle's reconcile would write go into the start's own write, so
// a second cycle before any pod runs writes nothing. A new job left
// pending gets one write that says Pending. Plain opted-in pods are bound
// by the cycle's workers like TrainingJob replicas.
func TestStartWritesStatusOnce(t *testing.T) {
	node := testNode("n1", "16", "8", true)
	gang := testJob("gang", t0, 3, "2", "1")
	single := testJob("single", t0.Add(time.Second), 1, "1", "0")
	tooBig := testJob("toobig", t0.Add(3*time.Second), 1, "32", "0")
	var pods []client.Object
	for _, name := range []string{"p1", "p2", "p3"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0.Add(2 * time.Second)),
			Labels: map[string]string{v1alpha1.OptInLabel: "BE"}},
			Spec: corev1.PodSpec{SchedulerName: "drover", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}})
	}
	var mu sync.Mutex
	writes := map[string]int{}
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(append(pods, &node, &gang, &single, &tooBig)...).
		WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake,
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				mu.Lock()
				writes[obj.GetName()]++
				mu.Unlock()
				return c.SubResource(sub).Update(ctx, obj, opts...)
			}}).Build()
	// No queue positions: their writes are bounded separately (queue.go)
	// and would count against the waiting job here.
	off := 0
	e := testExecutor(t, cl, "fifo", Config{QueuePositions: &off}, nil)
	for cycle := range 2 {
		if _, err := e.Cycle(context.Background()); err != nil {
			t.Fatalf("cycle %d: %v", cycle+1, err)
		}
	}
	for _, name := range []string{"gang", "single"} {
		if writes[name] != 1 {
			t.Errorf("job %s: %d status writes over two cycles, want 1 (the start)", name, writes[name])
		}
		tj := &v1alpha1.TrainingJob{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, tj); err != nil {
			t.Fatal(err)
		}
		want := int32(3)
		if name == "single" {
			want = 1
		}
		if len(tj.Status.Replicas) != 1 || tj.Status.Replicas[0] != (v1alpha1.GroupStatus{Name: "worker", Desired: want}) {
			t.Errorf("job %s: status.replicas %+v, want worker desired %d running 0", name, tj.Status.Replicas, want)
		}
	}
	tj := &v1alpha1.TrainingJob{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "toobig"}, tj); err != nil {
		t.Fatal(err)
	}
	if tj.Status.Phase != v1alpha1.PhasePending || writes["toobig"] != 1 {
		t.Errorf("job toobig: phase %q after %d status writes, want Pending after 1", tj.Status.Phase, writes["toobig"])
	}
	var l corev1.PodList
	if err := cl.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 3+3+1 {
		t.Errorf("%d pods, want 3 opted-in and 4 replicas", len(l.Items))
	}
	for _, p := range l.Items {
		if p.Spec.NodeName != "n1" {
			t.Errorf("pod %s bound to %q, want n1", p.Name, p.Spec.NodeName)
		}
	}
}
