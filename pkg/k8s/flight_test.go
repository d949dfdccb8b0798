package k8s

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/plugins"
)

// Run's cycles do not wait for their starts' pod creations and Bindings
// (issue 17 item 13: busy cycles far over the period, waiting on round
// trips), and the cycles that follow while those are in flight act on no
// stale view: the started jobs are read placed (their capacity charged,
// so a third job that does not fit is not started), their pods are not
// created again and no job is started twice. On the code before
// pipelining every cycle waited for its pods: the first cycle never
// returned while pod creation was held.
func TestPipelinedStartsNotRepeated(t *testing.T) {
	node := testNode("n1", "8", "2", true)
	a, b, c := testJob("a", t0, 1, "1", "1"), testJob("b", t0.Add(time.Second), 1, "1", "1"), testJob("c", t0.Add(2*time.Second), 1, "1", "1")
	release := make(chan struct{})
	var mu sync.Mutex
	creates := map[string]int{}
	admitted := map[string]int{}
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&node, &a, &b, &c).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if p, ok := obj.(*corev1.Pod); ok {
					mu.Lock()
					creates[p.Labels[v1alpha1.LabelJob]]++
					mu.Unlock()
					<-release
				}
				return cl.Create(ctx, obj, opts...)
			},
			SubResourceCreate: bindFake,
			SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if tj, ok := obj.(*v1alpha1.TrainingJob); ok && tj.Status.Phase == v1alpha1.PhaseAdmitted {
					mu.Lock()
					admitted[tj.Name]++
					mu.Unlock()
				}
				return cl.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := reg.New("fifo")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{}
	cfg.Defaults()
	e := New(cfg, cl, nil, nil, pol, logr.Discard())
	e.Now = func() time.Time { return t0.Add(time.Minute) }
	e.Origin = t0
	ctx := context.Background()
	var released sync.Once
	defer func() {
		released.Do(func() { close(release) })
		e.drain()
	}()
	for i := range 3 {
		done := make(chan error, 1)
		go func() {
			_, err := e.runCycle(ctx, true)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("cycle %d: %v", i+1, err)
			}
		case <-time.After(time.Minute): // a hang guard, not a measurement
			t.Fatalf("cycle %d did not return while its starts' pods were being created: the cycle waits for them", i+1)
		}
	}
	mu.Lock()
	if creates["a"] != 1 || creates["b"] != 1 || creates["c"] != 0 || admitted["a"] != 1 || admitted["b"] != 1 || admitted["c"] != 0 {
		t.Errorf("with the pods in flight over 3 cycles: pod creates %v, Admitted status writes %v; want a and b once each, c never (it does not fit)", creates, admitted)
	}
	mu.Unlock()
	released.Do(func() { close(release) })
	e.drain()
	if _, err := e.runCycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	e.drain()
	var pods corev1.PodList
	if err := cl.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	bound := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "n1" {
			bound[p.Labels[v1alpha1.LabelJob]]++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pods.Items) != 2 || bound["a"] != 1 || bound["b"] != 1 || creates["a"] != 1 || creates["b"] != 1 {
		t.Errorf("after the creations went through: %d pods, bound per job %v, creates %v; want a's and b's pod, bound, created once each", len(pods.Items), bound, creates)
	}
}
