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
	"k8s.io/client-go/tools/record"
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
	e := fifoExecutor(t, cl)
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
	// The pod creations run on the flight's workers: wait until both have
	// reached the held create (a hang guard, not a measurement), then
	// check that nothing was created or admitted twice.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		reached := creates["a"] > 0 && creates["b"] > 0
		mu.Unlock()
		if reached || time.Now().After(deadline) {
			break
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

// A pipelined cycle does not wait for the status write that records a
// job's end, yet decides on the capacity the job freed: with that write
// held, the cycle returns and starts the job waiting for the node; the
// end is written once, and the next cycle reads the job ended. On the
// code before, the cycle waited for the write (the hang guard fails).
func TestPipelinedEndWrite(t *testing.T) {
	node := testNode("n1", "8", "1", true)
	done, next := testJob("done", t0, 1, "1", "1"), testJob("next", t0.Add(time.Second), 1, "1", "1")
	done.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1,
		Placement: []v1alpha1.Assignment{{Group: "worker", Node: "n1", Count: 1}}}
	pod := replicaPod("done", "worker", "n1", "1", nil)
	pod.Name = PodName("done", "worker", 1, 0)
	pod.Status.Phase = corev1.PodSucceeded
	release := make(chan struct{})
	var mu sync.Mutex
	ends := 0
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&node, &done, &next, &pod).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceCreate: bindFake,
			SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if tj, ok := obj.(*v1alpha1.TrainingJob); ok && tj.Status.Phase == v1alpha1.PhaseSucceeded {
					mu.Lock()
					ends++
					mu.Unlock()
					<-release
				}
				return cl.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	e := fifoExecutor(t, cl)
	ctx := context.Background()
	var released sync.Once
	defer func() {
		released.Do(func() { close(release) })
		e.drain()
	}()
	ret := make(chan *CycleResult, 1)
	go func() {
		res, err := e.runCycle(ctx, true)
		if err != nil {
			t.Errorf("cycle: %v", err)
		}
		ret <- res
	}()
	var res *CycleResult
	select {
	case res = <-ret:
	case <-time.After(time.Minute): // a hang guard, not a measurement
		t.Fatal("the cycle did not return while the write of a job's end was held: it waits for it")
	}
	if len(res.Actions) != 1 || res.Actions[0].Target() != "ns/next" {
		t.Errorf("actions %v: want next started on the GPU done freed", res.Actions)
	}
	released.Do(func() { close(release) })
	e.drain()
	if _, err := e.runCycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	e.drain()
	got := &v1alpha1.TrainingJob{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "done"}, got); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ends != 1 || got.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("%d writes of done's end, phase %s; want one, Succeeded", ends, got.Status.Phase)
	}
}

// fifoExecutor is an executor with the default config and the fifo
// preset on client cl, its clock a minute after t0.
func fifoExecutor(t *testing.T, cl client.Client) *Executor {
	return testExecutor(t, cl, "fifo", Config{}, nil)
}

// testExecutor is an executor of the preset spec on cl with cfg
// (defaulted), its clock a minute past t0; rec may be nil.
func testExecutor(t *testing.T, cl client.Client, spec string, cfg Config, rec record.EventRecorder) *Executor {
	t.Helper()
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := reg.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Defaults()
	e := New(cfg, cl, nil, rec, pol, logr.Discard())
	e.Now = func() time.Time { return t0.Add(time.Minute) }
	e.Origin = t0
	return e
}
