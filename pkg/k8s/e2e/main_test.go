// Package e2e runs drover's scheduler against a real kube-apiserver and
// etcd (controller-runtime's envtest with the binaries that
// hack/testbin/build.sh builds from Go modules), with the stand-in kubelet
// playing nodes and trainers.
package e2e

import (
	"context"

	"flag"
	"fmt"
	"github.com/go-logr/logr/funcr"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/plugins"
)

var (
	restCfg *rest.Config
	cl      client.Client
	envCfg  *envtest.Environment
)

// podGroupCRD is scheduler-plugins' PodGroup CRD, from the module drover
// imports its API types from (so it is in the module cache whenever this
// test builds).
func podGroupCRD() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m sigs.k8s.io/scheduler-plugins: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "scheduling.x-k8s.io_podgroups.yaml")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if testing.Short() {
			fmt.Println("SKIP pkg/k8s/e2e: KUBEBUILDER_ASSETS is unset and -short is set; run `make test` (or export KUBEBUILDER_ASSETS=$(hack/testbin/build.sh | tail -1)) for the API-server tests")
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "FAIL pkg/k8s/e2e: KUBEBUILDER_ASSETS is unset. These tests need a real kube-apiserver and etcd:\n"+
			"  export KUBEBUILDER_ASSETS=$(hack/testbin/build.sh | tail -1)\nor run `make test`; use -short to skip them.")
		os.Exit(1)
	}
	if os.Getenv("DROVER_E2E_LOG") != "" {
		ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1}))
	}
	crds := []string{filepath.Join("..", "..", "..", "config", "crd")}
	if pg, err := podGroupCRD(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL pkg/k8s/e2e: the PodGroup CRD:", err)
		os.Exit(1)
	} else {
		crds = append(crds, pg)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
	}
	var err error
	restCfg, err = env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL pkg/k8s/e2e: starting envtest:", err)
		os.Exit(1)
	}
	// An interrupted run must not leave etcd and kube-apiserver behind.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		_ = env.Stop()
		os.Exit(1)
	}()
	restCfg.QPS, restCfg.Burst = 500, 1000
	cl, err = client.New(restCfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL pkg/k8s/e2e: client:", err)
		os.Exit(1)
	}
	envCfg = env
	for _, ns := range []string{"drover-system"} {
		_ = cl.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// cluster is one test's world: a namespace, stand-in nodes and a running
// scheduler.
type testCluster struct {
	t     testing.TB
	ns    string
	kube  *standin.Kubelet
	ex    *k8s.Executor
	stop  context.CancelFunc
	done  chan struct{}
	cfg   k8s.Config
	nodes int
	// tune, when set, adjusts the scheduler config before it starts.
	tune func(*k8s.Config)
	// rest, when set, is the scheduler's connection to the API server
	// instead of restCfg (a test puts a faulty proxy in between).
	rest *rest.Config
	// onCycle, when set, is installed as the executor's OnCycle hook.
	onCycle func(*k8s.CycleResult)
	// stopKubelet stops the stand-in kubelet and waits until it is
	// stopped; it may be called more than once.
	stopKubelet func()
}

var nsCount int

// newCluster creates a namespace and n stand-in nodes with the given
// capacity (cpu cores, gpus), and starts the stand-in kubelet.
func newCluster(t testing.TB, n int, cpu, gpu string, sc standin.Config) *testCluster {
	t.Helper()
	nsCount++
	tc := &testCluster{t: t, ns: fmt.Sprintf("e2e-%d", nsCount), nodes: n}
	ctx := context.Background()
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}); err != nil {
		t.Fatal(err)
	}
	sc.Nodes = n
	sc.Prefix = tc.ns + "-node"
	extra := sc.Capacity // more resources a test's nodes have (ephemeral-storage)
	sc.Capacity = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"),
		k8s.GPUResource: resource.MustParse(gpu), corev1.ResourcePods: resource.MustParse("110"),
	}
	for name, q := range extra {
		sc.Capacity[name] = q
	}
	if sc.Tick == 0 {
		sc.Tick = 50 * time.Millisecond
	}
	tc.kube = standin.New(cl, sc)
	if err := tc.kube.RegisterNodes(ctx); err != nil {
		t.Fatal(err)
	}
	kctx, kstop := context.WithCancel(ctx)
	kdone := make(chan struct{})
	go func() {
		defer close(kdone)
		_ = tc.kube.Run(kctx)
	}()
	tc.stopKubelet = func() {
		kstop()
		<-kdone
	}
	t.Cleanup(func() {
		tc.stopScheduler()
		kstop()
		tc.cleanup()
	})
	return tc
}

// cleanup removes what the test created so the next test sees a clean
// cluster (envtest runs no garbage collector or namespace controller).
func (tc *testCluster) cleanup() {
	ctx := context.Background()
	zero := int64(0)
	_ = cl.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, client.InNamespace(tc.ns))
	_ = cl.DeleteAllOf(ctx, &schedv1alpha1.PodGroup{}, client.InNamespace(tc.ns))
	_ = cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(tc.ns), client.GracePeriodSeconds(zero))
	_ = cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("drover-system"), client.GracePeriodSeconds(zero))
	_ = cl.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace("drover-system"))
	for i := range tc.nodes {
		_ = cl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.kube.NodeName(i)}})
	}
}

// startScheduler starts the scheduler (manager, informers, executor) with
// the given policy. fault, when set, is installed as the executor's fault
// hook.
func (tc *testCluster) startScheduler(policySpec string, fault func(string) error) {
	tc.t.Helper()
	cfg := k8s.Config{Policy: policySpec, Namespace: tc.ns, MetricsAddr: "0", HealthAddr: "0"}
	cfg.Period.Duration = 100 * time.Millisecond
	cfg.StuckAfter.Duration = 2 * time.Second
	// Status lags the trainers' reports by at most 2 s rather than the
	// default 10 s, as the period is 100 ms rather than 1 s.
	cfg.ProgressPeriod.Duration = 2 * time.Second
	if tc.tune != nil {
		tc.tune(&cfg)
	}
	cfg.Defaults()
	tc.cfg = cfg
	reg, err := plugins.Policies()
	if err != nil {
		tc.t.Fatal(err)
	}
	if err := reg.Add(testPolicies()...); err != nil {
		tc.t.Fatal(err)
	}
	rc := restCfg
	if tc.rest != nil {
		rc = tc.rest
	}
	mgr, ex, err := k8s.NewManager(rc, cfg, reg)
	if err != nil {
		tc.t.Fatal(err)
	}
	ex.Fault = fault
	ex.OnCycle = tc.onCycle
	tc.ex = ex
	ctx, stop := context.WithCancel(context.Background())
	tc.stop = stop
	tc.done = make(chan struct{})
	go func() {
		defer close(tc.done)
		if err := mgr.Start(ctx); err != nil {
			tc.t.Errorf("manager: %v", err)
		}
	}()
}

func (tc *testCluster) stopScheduler() {
	if tc.stop != nil {
		tc.stop()
		<-tc.done
		tc.stop = nil
	}
}

// group describes a replica group for job().
type group struct {
	name          string
	replicas      int32
	min, max      int32
	cpu, gpu, mem string
}

// job builds a TrainingJob.
func (tc *testCluster) job(name string, class v1alpha1.JobClass, dur int64, groups ...group) *v1alpha1.TrainingJob {
	tj := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns},
		Spec: v1alpha1.TrainingJobSpec{Class: class, EstimatedDurationSeconds: &dur}}
	for _, g := range groups {
		rg := v1alpha1.ReplicaGroup{Name: g.name, Replicas: g.replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "trainer", Image: "trainer:latest", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(g.cpu), k8s.GPUResource: resource.MustParse(g.gpu),
					corev1.ResourceMemory: resource.MustParse(orDefault(g.mem, "1Gi"))},
				Limits: corev1.ResourceList{k8s.GPUResource: resource.MustParse(g.gpu)}}}}}}}
		if g.min > 0 {
			rg.MinReplicas = &g.min
		}
		if g.max > 0 {
			rg.MaxReplicas = &g.max
		}
		tj.Spec.ReplicaGroups = append(tj.Spec.ReplicaGroups, rg)
	}
	return tj
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (tc *testCluster) create(objs ...client.Object) {
	tc.t.Helper()
	for _, o := range objs {
		if err := cl.Create(context.Background(), o); err != nil {
			tc.t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

func (tc *testCluster) get(name string) *v1alpha1.TrainingJob {
	tc.t.Helper()
	tj := &v1alpha1.TrainingJob{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: tc.ns, Name: name}, tj); err != nil {
		tc.t.Fatalf("getting %s: %v", name, err)
	}
	return tj
}

// pods lists the job's replica pods.
func (tc *testCluster) pods(job string) []corev1.Pod {
	tc.t.Helper()
	var l corev1.PodList
	if err := cl.List(context.Background(), &l, client.InNamespace(tc.ns), client.MatchingLabels{v1alpha1.LabelJob: job}); err != nil {
		tc.t.Fatal(err)
	}
	return l.Items
}

// eventually polls cond until it holds or the timeout passes.
func (tc *testCluster) eventually(what string, timeout time.Duration, cond func() (bool, string)) {
	tc.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	tc.dump()
	tc.t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
}

// waitPhase waits for a job to reach a phase.
func (tc *testCluster) waitPhase(name string, phase v1alpha1.TrainingJobPhase, timeout time.Duration) *v1alpha1.TrainingJob {
	tc.t.Helper()
	var tj *v1alpha1.TrainingJob
	tc.eventually(name+" "+string(phase), timeout, func() (bool, string) {
		tj = tc.get(name)
		return tj.Status.Phase == phase, fmt.Sprintf("phase %s reason %q", tj.Status.Phase, tj.Status.Reason)
	})
	return tj
}

// events returns the reasons of the Events recorded on a job.
func (tc *testCluster) events(name string) []corev1.Event {
	tc.t.Helper()
	var l corev1.EventList
	if err := cl.List(context.Background(), &l, client.InNamespace(tc.ns)); err != nil {
		tc.t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func (tc *testCluster) hasEvent(name, reason string) (bool, string) {
	var got []string
	for _, e := range tc.events(name) {
		if e.Reason == reason {
			return true, e.Message
		}
		got = append(got, e.Reason)
	}
	return false, fmt.Sprintf("events %v", got)
}

// waitEvent is hasEvent for assertions: the scheduler's event recorder
// writes Events asynchronously, so an Event for a decision already visible
// in the job's status may land a moment later. It polls for up to 15 s.
func (tc *testCluster) waitEvent(name, reason string) (bool, string) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, msg := tc.hasEvent(name, reason)
		if ok || time.Now().After(deadline) {
			return ok, msg
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dump logs the jobs and pods of the test, to debug a timeout.
func (tc *testCluster) dump() {
	var jobs v1alpha1.TrainingJobList
	_ = cl.List(context.Background(), &jobs, client.InNamespace(tc.ns))
	for _, j := range jobs.Items {
		tc.t.Logf("job %s: phase %s attempt %d placement %v reason %q progress %+v", j.Name, j.Status.Phase, j.Status.Attempt, j.Status.Placement, j.Status.Reason, j.Status.Progress)
	}
	var pods corev1.PodList
	_ = cl.List(context.Background(), &pods, client.InNamespace(tc.ns))
	for _, p := range pods.Items {
		tc.t.Logf("pod %s: node %q phase %s deleting %v report %s", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, p.Annotations[v1alpha1.AnnotationReport])
	}
}
