package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/plugins"
)

// BenchmarkSideBySide binds the same pending pods on the same kwok nodes
// through the same API server with drover and with kube-scheduler v1.34.4,
// back to back, and prints pods bound per second for each and the ratio
// drover / kube-scheduler.
//
// For each node count (DROVER_BENCH_NODES, default 1000,5000) it creates
// the nodes once (kwok marks them Ready; no heartbeats, no leases, pods are
// not moved to Running, so the API server serves the schedulers alone),
// then runs DROVER_BENCH_REPS (3) repetitions of each scheduler,
// alternating which goes first. A run creates DROVER_BENCH_PODS (1000)
// identical pending single-replica pods with that scheduler's
// schedulerName, starts the scheduler (drover in this process, with the
// same manager as `drover scheduler`; kube-scheduler as its own process)
// and measures from the start to the last Binding, watched on the API
// server; then it stops the scheduler and deletes the pods. Both
// schedulers use the same credentials and the same client limits
// (DROVER_BENCH_QPS, default drover's 200, burst twice that;
// kube-scheduler's own default is 50/100). The policy is
// DROVER_BENCH_POLICY (default k8s-default: priority, arrival order,
// least-allocated spread, as kube-scheduler's default profile).
//
// Then drover alone binds gangs and TrainingJobs: DROVER_BENCH_PODS/4
// PodGroups (scheduler-plugins' coscheduling API, minMember 4) of 4 pods,
// bound all or none; DROVER_BENCH_PODS single-replica TrainingJobs (drover
// creates their pods itself: status write, pod create, Binding); and
// DROVER_BENCH_PODS/4 TrainingJobs of 4 workers. kube-scheduler has no
// gangs; compare these with its single pods.
//
// DROVER_BENCH_JOBS=0 skips the TrainingJob runs. DROVER_BENCH_PROFILE=dir
// writes a CPU profile of this process (drover, plus the benchmark's
// watch) for every drover run. DROVER_BENCH_KS_V sets kube-scheduler's
// log verbosity (1); its log is shown when a run fails.
//
// It needs DROVER_BENCH_ASSETS, the directory hack/testbin/bench.sh
// prints (kube-scheduler and kwok), and is skipped without it:
//
//	make bench-bind
func BenchmarkSideBySide(b *testing.B) {
	assets := os.Getenv("DROVER_BENCH_ASSETS")
	if assets == "" {
		b.Skip("DROVER_BENCH_ASSETS is unset: `make bench-bind` builds kube-scheduler and kwok (hack/testbin/bench.sh) and runs this")
	}
	bc := sideConfig(b)
	if os.Getenv("DROVER_E2E_LOG") == "" {
		ctrl.SetLogger(logr.Discard()) // the managers of the runs log nothing
	}
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, envCfg.KubeConfig, 0o600); err != nil {
		b.Fatal(err)
	}
	stopKwok := startKwok(b, filepath.Join(assets, "kwok"), kubeconfig, dir)
	defer stopKwok()
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("side by side: %d pods per run, %d repetitions, client qps %v burst %d, drover policy %s, %d CPUs\n",
		bc.pods, bc.reps, bc.qps, bc.burst, bc.policy, runtime.NumCPU())
	for _, nodes := range bc.nodes {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			nsCount++
			ns := fmt.Sprintf("side-%d", nsCount)
			if err := cl.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				b.Fatal(err)
			}
			prefix := ns + "-node"
			t0 := time.Now()
			createKwokNodes(b, prefix, nodes)
			b.Cleanup(func() { deleteKwokNodes(prefix, nodes) })
			fmt.Printf("nodes=%d: created and Ready (kwok) in %v, load %s\n", nodes, time.Since(t0).Round(time.Millisecond), loadavg())
			for range b.N {
				var dr, ks []float64
				for rep := range bc.reps {
					order := []string{"drover", "kube-scheduler"}
					if rep%2 == 1 {
						slices.Reverse(order)
					}
					for _, who := range order {
						var r sideRun
						if who == "drover" {
							r = runDrover(b, cs, ns, bc, singlePods, fmt.Sprintf("%s/drover-%d-%d.pprof", bc.profile, nodes, rep))
							dr = append(dr, r.rate)
						} else {
							r = runKubeScheduler(b, cs, ns, bc, filepath.Join(assets, "kube-scheduler"), kubeconfig, dir)
							ks = append(ks, r.rate)
						}
						fmt.Printf("nodes=%d rep=%d %-15s %5d pods bound in %7.2fs: %6.1f pods/s (first bind after %.2fs; load %s -> %s)\n",
							nodes, rep+1, who, r.pods, r.elapsed.Seconds(), r.rate, r.first.Seconds(), r.loadBefore, r.loadAfter)
					}
				}
				md, mk := median(dr), median(ks)
				fmt.Printf("nodes=%d single pods: drover %.1f pods/s (runs %s), kube-scheduler %.1f pods/s (runs %s): ratio drover/kube-scheduler %.2f\n",
					nodes, md, fmtRates(dr), mk, fmtRates(ks), md/mk)
				b.ReportMetric(md, "drover-pods/s")
				b.ReportMetric(mk, "kube-scheduler-pods/s")
				b.ReportMetric(md/mk, "ratio")
				kinds := []sideKind{podGroups, trainingJobs, gangJobs}
				if os.Getenv("DROVER_BENCH_JOBS") == "0" {
					kinds = nil
				}
				for _, kind := range kinds {
					var rates []float64
					var jobs []float64
					for rep := range bc.reps {
						r := runDrover(b, cs, ns, bc, kind, fmt.Sprintf("%s/drover-%s-%d-%d.pprof", bc.profile, kind, nodes, rep))
						rates = append(rates, r.rate)
						jobs = append(jobs, r.jobRate)
						fmt.Printf("nodes=%d rep=%d drover %-13s %5d pods of %d jobs bound in %7.2fs: %6.1f pods/s, %6.1f jobs/s (load %s -> %s)\n",
							nodes, rep+1, kind, r.pods, r.jobs, r.elapsed.Seconds(), r.rate, r.jobRate, r.loadBefore, r.loadAfter)
					}
					fmt.Printf("nodes=%d drover %s: %.1f pods/s, %.1f jobs/s (median of %s pods/s)\n", nodes, kind, median(rates), median(jobs), fmtRates(rates))
					b.ReportMetric(median(jobs), "drover-"+kind.String()+"-jobs/s")
				}
			}
		})
	}
}

// sideBench is the benchmark's configuration, from the environment.
type sideBench struct {
	nodes   []int
	pods    int
	reps    int
	qps     float32
	burst   int
	policy  string
	profile string
}

func sideConfig(b *testing.B) sideBench {
	bc := sideBench{nodes: []int{1000, 5000}, pods: 1000, reps: 3, qps: 200, burst: 400, policy: "k8s-default",
		profile: os.Getenv("DROVER_BENCH_PROFILE")}
	atoi := func(name string, def int) int {
		s := os.Getenv(name)
		if s == "" {
			return def
		}
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("%s=%q: want a positive integer", name, s)
		}
		return v
	}
	if s := os.Getenv("DROVER_BENCH_NODES"); s != "" {
		bc.nodes = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v <= 0 {
				b.Fatalf("DROVER_BENCH_NODES=%q: want positive integers separated by commas", s)
			}
			bc.nodes = append(bc.nodes, v)
		}
	}
	bc.pods = atoi("DROVER_BENCH_PODS", bc.pods)
	bc.reps = atoi("DROVER_BENCH_REPS", bc.reps)
	q := atoi("DROVER_BENCH_QPS", int(bc.qps))
	bc.qps, bc.burst = float32(q), 2*q
	if p := os.Getenv("DROVER_BENCH_POLICY"); p != "" {
		bc.policy = p
	}
	if bc.profile != "" {
		if err := os.MkdirAll(bc.profile, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return bc
}

// sideKind is what a drover run binds.
type sideKind int

const (
	singlePods   sideKind = iota // opted-in plain pods, as kube-scheduler's
	podGroups                    // PodGroups of 4 pods
	trainingJobs                 // single-replica TrainingJobs
	gangJobs                     // TrainingJobs of 4 workers
)

func (k sideKind) String() string {
	return [...]string{"pods", "podgroups-of-4", "trainingjobs", "tj-gangs-of-4"}[k]
}

// sideRun is one scheduler's run.
type sideRun struct {
	pods, jobs            int
	elapsed, first        time.Duration
	rate, jobRate         float64
	loadBefore, loadAfter string
}

// Pod requests: small, so that 5,000 fit on 1,000 nodes whatever the
// spread, and no GPU (kube-scheduler would need the extended resource on
// the nodes; it is there, but a plain CPU request keeps the two schedulers'
// filters comparable).
const sideCPU, sideMem = "100m", "128Mi"

func sidePod(ns, name, scheduler string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.OptInLabel: "BE", "bench": "side"}},
		Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(sideCPU), corev1.ResourceMemory: resource.MustParse(sideMem)}}}}},
	}
}

func sideJob(ns, name string, replicas int32) *v1alpha1.TrainingJob {
	dur := int64(3600)
	return &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE, EstimatedDurationSeconds: &dur,
			ReplicaGroups: []v1alpha1.ReplicaGroup{{Name: "worker", Replicas: replicas, Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"bench": "side"}}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "trainer", Image: "trainer", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sideCPU), corev1.ResourceMemory: resource.MustParse(sideMem)}}}}}}}}}}
}

// parallel runs f(0..n-1) on 16 goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// bindWatch counts the pods of a namespace bound since it started, from
// one watch on the API server.
type bindWatch struct {
	done   chan struct{}
	mu     sync.Mutex
	bound  map[string]time.Time
	want   int
	closed bool
}

// watchBindings starts watching the pods of ns (from resourceVersion rv,
// taken after the pods were created) and closes done once want pods have a
// node.
func watchBindings(b *testing.B, cs kubernetes.Interface, ns, rv string, want int) *bindWatch {
	w, err := cs.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{ResourceVersion: rv, LabelSelector: "bench=side"})
	if err != nil {
		b.Fatal(err)
	}
	bw := &bindWatch{done: make(chan struct{}), bound: map[string]time.Time{}, want: want}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.Spec.NodeName == "" {
				continue
			}
			now := time.Now()
			bw.mu.Lock()
			if _, seen := bw.bound[p.Name]; !seen {
				bw.bound[p.Name] = now
			}
			n := len(bw.bound)
			if n >= bw.want && !bw.closed {
				bw.closed = true
				close(bw.done)
			}
			bw.mu.Unlock()
			if n >= bw.want {
				return
			}
		}
	}()
	return bw
}

// wait waits for every binding; it gives up when no pod was bound for
// stall. It returns the first and last binding times.
func (bw *bindWatch) wait(stall time.Duration) (first, last time.Time, err error) {
	seen, since := -1, time.Now()
	for done := false; !done; {
		select {
		case <-bw.done:
			done = true
		case <-time.After(time.Second):
			bw.mu.Lock()
			n := len(bw.bound)
			bw.mu.Unlock()
			if n != seen {
				seen, since = n, time.Now()
			} else if time.Since(since) > stall {
				return first, last, fmt.Errorf("only %d of %d pods bound, none for %v", n, bw.want, stall)
			}
		}
	}
	bw.mu.Lock()
	defer bw.mu.Unlock()
	for _, t := range bw.bound {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last, nil
}

// createSidePods creates n pending pods for scheduler and returns the
// resourceVersion to watch from.
func createSidePods(b *testing.B, ns string, n int, scheduler string) string {
	if err := parallel(n, func(i int) error {
		return cl.Create(context.Background(), sidePod(ns, fmt.Sprintf("p%05d", i), scheduler))
	}); err != nil {
		b.Fatal(err)
	}
	var l corev1.PodList
	if err := cl.List(context.Background(), &l, client.InNamespace(ns), client.Limit(1)); err != nil {
		b.Fatal(err)
	}
	return l.ResourceVersion
}

// clearNamespace deletes the run's pods and TrainingJobs and waits until
// the pods are gone.
func clearNamespace(b *testing.B, ns string) {
	ctx := context.Background()
	_ = cl.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, client.InNamespace(ns))
	_ = cl.DeleteAllOf(ctx, &schedv1alpha1.PodGroup{}, client.InNamespace(ns))
	if err := cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var l corev1.PodList
		if err := cl.List(ctx, &l, client.InNamespace(ns), client.Limit(1)); err != nil {
			b.Fatal(err)
		}
		var jl v1alpha1.TrainingJobList
		if err := cl.List(ctx, &jl, client.InNamespace(ns), client.Limit(1)); err != nil {
			b.Fatal(err)
		}
		if len(l.Items) == 0 && len(jl.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("namespace %s: pods or jobs still there after 5 minutes", ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runDrover binds with drover's scheduler in this process.
func runDrover(b *testing.B, cs kubernetes.Interface, ns string, bc sideBench, kind sideKind, profile string) sideRun {
	ctx := context.Background()
	r := sideRun{}
	var rv string
	switch kind {
	case singlePods:
		r.pods, r.jobs = bc.pods, bc.pods
		rv = createSidePods(b, ns, bc.pods, "drover")
	case podGroups:
		r.jobs = bc.pods / 4
		r.pods = 4 * r.jobs
		if err := parallel(r.jobs, func(i int) error {
			name := fmt.Sprintf("g%05d", i)
			pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 4}}
			if err := cl.Create(ctx, pg); err != nil {
				return err
			}
			for k := range 4 {
				p := sidePod(ns, fmt.Sprintf("%s-%d", name, k), "drover")
				delete(p.Labels, v1alpha1.OptInLabel)
				p.Labels[k8s.LabelPodGroup] = name
				if err := cl.Create(ctx, p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		var l corev1.PodList
		if err := cl.List(ctx, &l, client.InNamespace(ns), client.Limit(1)); err != nil {
			b.Fatal(err)
		}
		rv = l.ResourceVersion
	default:
		replicas := int32(1)
		if kind == gangJobs {
			replicas = 4
		}
		r.jobs = bc.pods / int(replicas)
		r.pods = r.jobs * int(replicas)
		if err := parallel(r.jobs, func(i int) error {
			return cl.Create(ctx, sideJob(ns, fmt.Sprintf("j%05d", i), replicas))
		}); err != nil {
			b.Fatal(err)
		}
		var l corev1.PodList
		if err := cl.List(ctx, &l, client.InNamespace(ns), client.Limit(1)); err != nil {
			b.Fatal(err)
		}
		rv = l.ResourceVersion
	}
	bw := watchBindings(b, cs, ns, rv, r.pods)
	cfg := k8s.Config{Policy: bc.policy, Namespace: ns, MetricsAddr: "0", HealthAddr: "0", ClientQPS: bc.qps, ClientBurst: bc.burst}
	cfg.Defaults()
	reg, err := plugins.Policies()
	if err != nil {
		b.Fatal(err)
	}
	r.loadBefore = loadavg()
	if bc.profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	mgr, _, err := k8s.NewManager(restCfg, cfg, reg)
	if err != nil {
		b.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			b.Errorf("manager: %v", err)
		}
	}()
	first, last, werr := bw.wait(2 * time.Minute)
	if bc.profile != "" {
		pprof.StopCPUProfile()
	}
	r.loadAfter = loadavg()
	stop()
	<-done
	if werr != nil {
		b.Fatalf("drover (%s): %v", kind, werr)
	}
	r.finish(start, first, last)
	clearNamespace(b, ns)
	return r
}

func (r *sideRun) finish(start, first, last time.Time) {
	r.elapsed = last.Sub(start)
	r.first = first.Sub(start)
	r.rate = float64(r.pods) / r.elapsed.Seconds()
	r.jobRate = float64(r.jobs) / r.elapsed.Seconds()
}

// runKubeScheduler binds with kube-scheduler as its own process.
func runKubeScheduler(b *testing.B, cs kubernetes.Interface, ns string, bc sideBench, bin, kubeconfig, dir string) sideRun {
	r := sideRun{pods: bc.pods, jobs: bc.pods}
	rv := createSidePods(b, ns, bc.pods, "default-scheduler")
	bw := watchBindings(b, cs, ns, rv, r.pods)
	conf := filepath.Join(dir, "kube-scheduler.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %v
  burst: %d
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
`, kubeconfig, bc.qps, bc.burst), 0o600); err != nil {
		b.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "kube-scheduler.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config="+conf, "--secure-port=0", "--v="+orDefault(os.Getenv("DROVER_BENCH_KS_V"), "1"))
	cmd.Stdout, cmd.Stderr = logf, logf
	r.loadBefore = loadavg()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var first, last time.Time
	var werr error
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		first, last, werr = bw.wait(2 * time.Minute)
	}()
	select {
	case <-waited:
		if werr != nil {
			_ = cmd.Process.Kill()
			b.Fatalf("kube-scheduler: %v; its log ends:\n%s", werr, tail(logf.Name(), 40))
		}
	case err := <-exited:
		b.Fatalf("kube-scheduler exited before binding every pod: %v; its log ends:\n%s", err, tail(logf.Name(), 40))
	}
	r.loadAfter = loadavg()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	r.finish(start, first, last)
	clearNamespace(b, ns)
	return r
}

// kwokStages is kwok's node-initialize stage (kwok's own
// kustomize/stage/node/fast, shortened): a node it manages becomes Ready
// with the capacity it was created with. No heartbeat stage and no pod
// stages: the nodes cost the API server nothing during a run.
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type  | Quote}}
      {{ end }}
      addresses:
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ NodeName | Quote }}
        type: Hostname
      allocatable:
      {{ YAML .status.allocatable 1 }}
      capacity:
      {{ YAML .status.capacity 1 }}
      phase: Running
`

// kwokAnnotation marks the nodes kwok manages.
const kwokAnnotation = "kwok.x-k8s.io/node"

// startKwok runs kwok on the nodes annotated kwokAnnotation=fake and
// returns a function that stops it.
func startKwok(b *testing.B, bin, kubeconfig, dir string) func() {
	conf := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(conf, []byte(kwokStages), 0o600); err != nil {
		b.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--config="+conf,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+kwokAnnotation+"=fake",
		"--node-lease-duration-seconds=0", "--cidr=10.0.0.1/16", "--node-ip=10.1.0.1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logf.Close()
	}
}

// createKwokNodes creates n nodes for kwok (32 CPU, 256 GiB, 8 GPUs, 110
// pods) and waits until kwok has made them all Ready.
func createKwokNodes(b *testing.B, prefix string, n int) {
	ctx := context.Background()
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		k8s.GPUResource: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}
	if err := parallel(n, func(i int) error {
		name := fmt.Sprintf("%s-%05d", prefix, i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kwokAnnotation: "fake"},
			Labels: map[string]string{corev1.LabelHostname: name, "type": "kwok"}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity}}
		return cl.Create(ctx, node)
	}); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var l corev1.NodeList
		if err := cl.List(ctx, &l, client.MatchingLabels{"type": "kwok"}); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for i := range l.Items {
			if strings.HasPrefix(l.Items[i].Name, prefix) && nodeIsReady(&l.Items[i]) {
				ready++
			}
		}
		if ready >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d kwok nodes Ready after 10 minutes", ready, n)
		}
		time.Sleep(time.Second)
	}
	// The API server's TaintNodesByCondition admission taints every new
	// node not-ready; the node lifecycle controller, which envtest does
	// not run, lifts it once the node is Ready. kube-scheduler honours it
	// (drover does not evaluate taints).
	if err := parallel(n, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i)}}
		return cl.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":null}}`)))
	}); err != nil {
		b.Fatal(err)
	}
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deleteKwokNodes(prefix string, n int) {
	_ = parallel(n, func(i int) error {
		_ = cl.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i)}})
		return nil
	})
}

// loadavg is the 1-minute load average and the number of CPUs.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRates(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(parts, ", ")
}
