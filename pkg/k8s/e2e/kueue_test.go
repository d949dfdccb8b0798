package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/k8s"
)

// kueueDir is where hack/testbin/kueue.sh caches Kueue's controller
// manager: $DROVER_KUEUE, else the default cache.
func kueueDir() string { return testbinDir("DROVER_KUEUE", "kueue-0.14.0") }

// kueueNamespace is Kueue's own namespace in the test (its config's
// namespace): it holds the webhook Secret its cert rotator fills.
const kueueNamespace = "kueue-e2e"

// startKueue runs Kueue's real controller manager against the test API
// server, managing PyTorchJobs only, and waits until it is ready.
//
// Kueue's webhooks are served but not registered: the test creates no
// Mutating/ValidatingWebhookConfiguration, as the API server could not
// reach a webhook behind a Service name. Jobs are therefore created the
// way Kueue's mutating webhook would leave them: suspended, with the
// queue-name label; Kueue's job reconciler then creates their Workloads,
// admits them and unsuspends them. Kueue's internal cert manager stays on
// (with it off, v0.14.0 reads its metrics certificate from the fixed
// /etc/kueue/metrics/certs and exits without it): it fills an empty
// Secret the test creates, and the test copies the certificate into the
// webhook server's directory, as a kubelet would mount the Secret.
// VisibilityOnDemand (an aggregated API server on a fixed port),
// MultiKueue and TopologyAwareScheduling are turned off; leader election
// too.
func startKueue(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	crds, err := filepath.Glob(filepath.Join(dir, "crds", "kueue.x-k8s.io_*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no Kueue CRDs in %s/crds (%v)", dir, err)
	}
	if _, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{Paths: crds, MaxTime: 2 * time.Minute}); err != nil {
		t.Fatalf("installing Kueue's CRDs: %v", err)
	}
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kueue-webhook-server-cert", Namespace: kueueNamespace}}
	_ = cl.Delete(ctx, secret)
	if err := cl.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	kubeconfig := writeKubeconfig(t, restCfg)
	certDir := filepath.Join(tmp, "certs")
	healthPort, webhookPort := freePort(t), freePort(t)
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
featureGates:
  VisibilityOnDemand: false
  MultiKueue: false
  TopologyAwareScheduling: false
integrations:
  frameworks:
  - kubeflow.org/pytorchjob
`, kueueNamespace, healthPort, webhookPort, certDir)
	configPath := filepath.Join(tmp, "kueue.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(tmp, "kueue.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "kueue"), "--config", configPath, "--zap-log-level=2")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("kueue log (tail):\n%s", b)
			}
		}
	})
	failed := func(format string, args ...any) {
		t.Helper()
		b, _ := os.ReadFile(logPath)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Fatalf(format+"\nkueue log (tail):\n%s", append(args, b)...)
	}
	deadline := time.Now().Add(90 * time.Second)
	copied := false
	for {
		select {
		case err := <-exited:
			exited <- err
			failed("kueue exited: %v", err)
		default:
		}
		if !copied {
			s := &corev1.Secret{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(secret), s); err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 {
				if err := os.MkdirAll(certDir, 0o755); err != nil {
					t.Fatal(err)
				}
				for k, v := range s.Data {
					if err := os.WriteFile(filepath.Join(certDir, k), v, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				copied = true
			}
		} else if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			failed("kueue not ready within 90 s (certificates copied: %v)", copied)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kueueObject builds a kueue.x-k8s.io/v1beta1 object.
func kueueObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// clusterQueue is a team's ClusterQueue in the cohort: its namespace's
// jobs only, nominalGPU GPUs (and 8 CPUs) of the flavor, borrowing from
// the cohort unlimited, and reclaiming its nominal quota from borrowers.
func clusterQueue(name, cohort, ns, flavor string, nominalGPU int64) *unstructured.Unstructured {
	return kueueObject("ClusterQueue", "", name, map[string]any{
		"cohort": cohort,
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{
			corev1.LabelMetadataName: ns}},
		"preemption": map[string]any{"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", string(k8s.GPUResource)},
			"flavors": []any{map[string]any{"name": flavor, "resources": []any{
				map[string]any{"name": "cpu", "nominalQuota": "8"},
				map[string]any{"name": string(k8s.GPUResource), "nominalQuota": strconv.FormatInt(nominalGPU, 10)},
			}}},
		}},
	})
}

// queuedPyTorchJob is pytorchJob (a master and workers, one GPU each) as
// Kueue's mutating webhook would leave it: suspended, with its queue.
func queuedPyTorchJob(ns, name, queue string, workers int) *unstructured.Unstructured {
	u := pytorchJob(ns, name, workers)
	u.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": queue})
	_ = unstructured.SetNestedField(u.Object, true, "spec", "runPolicy", "suspend")
	return u
}

// workloadOf returns the Kueue Workload owned by the PyTorchJob, or nil.
func workloadOf(t *testing.T, ns, job string) *unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("kueue.x-k8s.io/v1beta1")
	l.SetKind("WorkloadList")
	if err := cl.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		for _, o := range l.Items[i].GetOwnerReferences() {
			if o.Kind == "PyTorchJob" && o.Name == job {
				return &l.Items[i]
			}
		}
	}
	return nil
}

// condition returns the status of an object's status condition ("" when
// absent) and its reason.
func condition(u *unstructured.Unstructured, typ string) (status, reason string) {
	if u == nil {
		return "", ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// suspended reports spec.runPolicy.suspend of a PyTorchJob.
func suspended(t *testing.T, ns, name string) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kubeflow.org/v1")
	u.SetKind("PyTorchJob")
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedBool(u.Object, "spec", "runPolicy", "suspend")
	return s
}

// gpuUsage returns a ClusterQueue's GPU usage of a flavor from its status:
// total and borrowed.
func gpuUsage(t *testing.T, cq, flavor string) (total, borrowed string) {
	t.Helper()
	u := kueueObject("ClusterQueue", "", cq, nil)
	if err := cl.Get(context.Background(), client.ObjectKey{Name: cq}, u); err != nil {
		t.Fatal(err)
	}
	usage, _, _ := unstructured.NestedSlice(u.Object, "status", "flavorsUsage")
	for _, f := range usage {
		fm, _ := f.(map[string]any)
		if fm["name"] != flavor {
			continue
		}
		rs, _ := fm["resources"].([]any)
		for _, r := range rs {
			rm, _ := r.(map[string]any)
			if rm["name"] == string(k8s.GPUResource) {
				total, _ = rm["total"].(string)
				borrowed, _ = rm["borrowed"].(string)
			}
		}
	}
	return total, borrowed
}

// gangWatch samples the gangs' pods every 50 ms while the test runs and
// records violations: a pod on a node outside the flavor, or a gang
// partly bound (some but not all of its PodGroup's minMember pods bound)
// for more than a second, which binding a gang or deleting one never
// takes.
type gangWatch struct {
	mu         sync.Mutex
	violations []string
	partial    map[string]time.Time
	bound      map[string]int // the most pods of a gang seen bound at once
}

func (w *gangWatch) run(ctx context.Context, namespaces []string, allowed map[string]bool) {
	w.partial, w.bound = map[string]time.Time{}, map[string]int{}
	for ctx.Err() == nil {
		for _, ns := range namespaces {
			var pgs schedv1alpha1.PodGroupList
			var pods corev1.PodList
			if cl.List(ctx, &pgs, client.InNamespace(ns)) != nil || cl.List(ctx, &pods, client.InNamespace(ns)) != nil {
				continue
			}
			boundOf := map[string]int{}
			for _, p := range pods.Items {
				pg := p.Labels[k8s.LabelPodGroup]
				if pg == "" || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
					continue
				}
				boundOf[pg]++
				if !allowed[p.Spec.NodeName] {
					w.add(fmt.Sprintf("pod %s/%s bound to %s, outside the flavor's nodes", ns, p.Name, p.Spec.NodeName))
				}
			}
			w.mu.Lock()
			for _, pg := range pgs.Items {
				key := ns + "/" + pg.Name
				n := boundOf[pg.Name]
				w.bound[key] = max(w.bound[key], n)
				if n > 0 && n < int(pg.Spec.MinMember) {
					if _, ok := w.partial[key]; !ok {
						w.partial[key] = time.Now()
					} else if time.Since(w.partial[key]) > time.Second {
						w.violations = append(w.violations, fmt.Sprintf("gang %s partly bound (%d of %d) for over 1 s", key, n, pg.Spec.MinMember))
						w.partial[key] = time.Now()
					}
				} else {
					delete(w.partial, key)
				}
			}
			w.mu.Unlock()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *gangWatch) add(v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.violations, v) {
		w.violations = append(w.violations, v)
	}
}

func (w *gangWatch) report() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// TestKueueInFront runs Kueue v0.14.0 in front of drover, with the real
// training-operator v1.9.2 (--gang-scheduler-name=drover, so each
// PyTorchJob's pods form a PodGroup gang). Two teams have a ClusterQueue
// each (2 GPUs nominal) in one cohort, over a ResourceFlavor that injects
// a nodeSelector (pool=kueue) and a toleration for the pool's taint; the
// cluster has two such nodes of 2 GPUs and a third, untainted one outside
// the flavor and first in node order, where a pod placed without the
// flavor's selector lands (checked by removing the flavor's nodeLabels:
// the test then fails). Each PyTorchJob (master + worker, 1 GPU each) is created
// suspended with its LocalQueue label.
//
// Kueue admits team A's first job within quota; drover binds its gang
// whole on the pool, with the flavor's selector and toleration on every
// pod. Team A's second job borrows team B's idle quota (the ClusterQueue
// reports 2 GPUs borrowed) and is bound too. Team B's job then reclaims:
// Kueue preempts one of team A's jobs, which is suspended again and whose
// pods and PodGroup the operator deletes; drover binds team B's gang once they are
// gone. Throughout, no pod runs outside the flavor's nodes and no gang
// stays partly bound. Skipped when `make testbin-kueue` or `make
// testbin-operator` has not cached the binaries.
func TestKueueInFront(t *testing.T) {
	kdir, odir := kueueDir(), operatorDir()
	if _, err := os.Stat(filepath.Join(kdir, "kueue")); err != nil {
		skipUnlessCI(t, "Kueue is not cached in %s (run `make testbin-kueue`): %v", kdir, err)
	}
	if _, err := os.Stat(filepath.Join(odir, "training-operator")); err != nil {
		skipUnlessCI(t, "the training-operator is not cached in %s (run `make testbin-operator`): %v", odir, err)
	}
	ctx := context.Background()
	tc := newCluster(t, 3, "8", "2", standin.Config{TimeScale: 10})
	nsA, nsB := tc.ns, tc.ns+"-b"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}}); err != nil {
		t.Fatal(err)
	}
	taint := corev1.Taint{Key: "drover.dev/kueue-pool", Effect: corev1.TaintEffectNoSchedule}
	// Node 0, first in every node order, is outside the flavor: a pod
	// placed without the flavor's selector would land there.
	tc.taintNode(1, map[string]string{"pool": "kueue"}, taint)
	tc.taintNode(2, map[string]string{"pool": "kueue"}, taint)
	pool := map[string]bool{tc.kube.NodeName(1): true, tc.kube.NodeName(2): true}

	startOperator(t, odir)
	startKueue(t, kdir)
	tc.tune = func(c *k8s.Config) { c.Namespace, c.Namespaces = "", []string{nsA, nsB} }
	tc.startScheduler("fifo", nil)

	prefix := tc.ns + "-"
	flavor := prefix + "pool"
	objs := []client.Object{
		kueueObject("ResourceFlavor", "", flavor, map[string]any{
			"nodeLabels":  map[string]any{"pool": "kueue"},
			"tolerations": []any{map[string]any{"key": taint.Key, "operator": "Exists", "effect": string(taint.Effect)}},
		}),
		clusterQueue(prefix+"team-a", prefix+"cohort", nsA, flavor, 2),
		clusterQueue(prefix+"team-b", prefix+"cohort", nsB, flavor, 2),
		kueueObject("LocalQueue", nsA, "team-a", map[string]any{"clusterQueue": prefix + "team-a"}),
		kueueObject("LocalQueue", nsB, "team-b", map[string]any{"clusterQueue": prefix + "team-b"}),
	}
	t.Cleanup(func() {
		for _, ns := range []string{nsA, nsB} {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("kubeflow.org/v1")
			l.SetKind("PyTorchJobList")
			if cl.List(ctx, l, client.InNamespace(ns)) == nil {
				for i := range l.Items {
					_ = cl.Delete(ctx, &l.Items[i])
				}
			}
			_ = cl.DeleteAllOf(ctx, &schedv1alpha1.PodGroup{}, client.InNamespace(ns))
			_ = cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		}
		for _, o := range slices.Backward(objs) {
			_ = cl.Delete(ctx, o)
		}
	})
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	for _, cq := range []string{prefix + "team-a", prefix + "team-b"} {
		tc.eventually("ClusterQueue "+cq+" Active", 30*time.Second, func() (bool, string) {
			u := kueueObject("ClusterQueue", "", cq, nil)
			if err := cl.Get(ctx, client.ObjectKey{Name: cq}, u); err != nil {
				return false, err.Error()
			}
			s, r := condition(u, "Active")
			return s == "True", s + " " + r
		})
	}

	wctx, wstop := context.WithCancel(ctx)
	watch := &gangWatch{}
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); watch.run(wctx, []string{nsA, nsB}, pool) }()
	defer func() { wstop(); <-watchDone }()

	// admittedTo waits until Kueue has admitted the job's Workload into cq
	// and unsuspended the job.
	admittedTo := func(ns, job, cq string) {
		t.Helper()
		tc.eventually(job+" admitted to "+cq, 60*time.Second, func() (bool, string) {
			wl := workloadOf(t, ns, job)
			if wl == nil {
				return false, "no Workload yet"
			}
			s, r := condition(wl, "Admitted")
			got, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue")
			return s == "True" && got == cq && !suspended(t, ns, job), fmt.Sprintf("Admitted=%s (%s) clusterQueue %q suspend %v", s, r, got, suspended(t, ns, job))
		})
	}
	// boundWhole waits until the job's gang (master + workers) is bound,
	// and checks each pod carries the flavor's selector and toleration.
	boundWhole := func(ns, job string, size int) map[string]string {
		t.Helper()
		var nodes map[string]string
		tc.eventually(job+"'s gang bound whole", 60*time.Second, func() (bool, string) {
			var l corev1.PodList
			if err := cl.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{k8s.LabelPodGroup: job}); err != nil {
				return false, err.Error()
			}
			nodes = map[string]string{}
			n := 0
			for _, p := range l.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				nodes[p.Name] = p.Spec.NodeName
				if p.Spec.NodeName != "" {
					n++
				}
			}
			return n == size && len(nodes) == size, fmt.Sprint(nodes)
		})
		var l corev1.PodList
		_ = cl.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{k8s.LabelPodGroup: job})
		for _, p := range l.Items {
			if p.Spec.SchedulerName != "drover" {
				t.Errorf("pod %s: schedulerName %q, want drover", p.Name, p.Spec.SchedulerName)
			}
			if p.Spec.NodeSelector["pool"] != "kueue" {
				t.Errorf("pod %s: nodeSelector %v lacks the flavor's pool=kueue", p.Name, p.Spec.NodeSelector)
			}
			if !slices.ContainsFunc(p.Spec.Tolerations, func(tl corev1.Toleration) bool { return tl.Key == taint.Key }) {
				t.Errorf("pod %s: tolerations %v lack the flavor's %s", p.Name, p.Spec.Tolerations, taint.Key)
			}
			if !pool[p.Spec.NodeName] {
				t.Errorf("pod %s bound to %s, outside the flavor's nodes", p.Name, p.Spec.NodeName)
			}
		}
		return nodes
	}

	// usageIs waits until the ClusterQueue's status reports the GPU usage
	// of the flavor (Kueue updates it a moment after admitting).
	usageIs := func(what, cq, total, borrowed string) {
		t.Helper()
		tc.eventually(what+": GPU usage total "+total+" borrowed "+borrowed, 30*time.Second, func() (bool, string) {
			gotT, gotB := gpuUsage(t, cq, flavor)
			if gotB == "" {
				gotB = "0"
			}
			return gotT == total && gotB == borrowed, fmt.Sprintf("total %q borrowed %q", gotT, gotB)
		})
	}

	// Team A's first job: within quota.
	if err := cl.Create(ctx, queuedPyTorchJob(nsA, "a1", "team-a", 1)); err != nil {
		t.Fatalf("creating a1: %v", err)
	}
	admittedTo(nsA, "a1", prefix+"team-a")
	t.Logf("a1 bound: %v", boundWhole(nsA, "a1", 2))
	usageIs("team-a after a1", prefix+"team-a", "2", "0")

	// Team A's second job borrows team B's idle quota.
	if err := cl.Create(ctx, queuedPyTorchJob(nsA, "a2", "team-a", 1)); err != nil {
		t.Fatalf("creating a2: %v", err)
	}
	admittedTo(nsA, "a2", prefix+"team-a")
	t.Logf("a2 bound: %v", boundWhole(nsA, "a2", 2))
	usageIs("team-a after a2 (borrowing team B's idle quota)", prefix+"team-a", "4", "2")

	// Team B reclaims its quota: Kueue preempts one of team A's jobs.
	if err := cl.Create(ctx, queuedPyTorchJob(nsB, "b1", "team-b", 1)); err != nil {
		t.Fatalf("creating b1: %v", err)
	}
	var victim string
	tc.eventually("one of team A's jobs preempted and suspended", 60*time.Second, func() (bool, string) {
		var msg []string
		for _, j := range []string{"a1", "a2"} {
			s, r := condition(workloadOf(t, nsA, j), "Evicted")
			msg = append(msg, fmt.Sprintf("%s: Evicted=%s (%s) suspend %v", j, s, r, suspended(t, nsA, j)))
			if s == "True" && r == "Preempted" && suspended(t, nsA, j) {
				victim = j
				return true, ""
			}
		}
		return false, strings.Join(msg, "; ")
	})
	tc.eventually(victim+"'s pods gone", 60*time.Second, func() (bool, string) {
		nodes := map[string]string{}
		var l corev1.PodList
		_ = cl.List(ctx, &l, client.InNamespace(nsA), client.MatchingLabels{k8s.LabelPodGroup: victim})
		for _, p := range l.Items {
			nodes[p.Name] = p.Spec.NodeName
		}
		return len(nodes) == 0, fmt.Sprint(nodes)
	})
	// The operator deletes a suspended job's PodGroup too, and with it
	// drover's preemption count (docs/kubernetes.md relies on this).
	tc.eventually(victim+"'s PodGroup deleted", 30*time.Second, func() (bool, string) {
		err := cl.Get(ctx, client.ObjectKey{Namespace: nsA, Name: victim}, &schedv1alpha1.PodGroup{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
	admittedTo(nsB, "b1", prefix+"team-b")
	t.Logf("b1 bound: %v (preempted: %s)", boundWhole(nsB, "b1", 2), victim)
	survivor := map[string]string{"a1": "a2", "a2": "a1"}[victim]
	if s, _ := condition(workloadOf(t, nsA, survivor), "Admitted"); s != "True" || suspended(t, nsA, survivor) {
		t.Errorf("%s: Admitted=%s suspend %v after the reclaim, want still admitted", survivor, s, suspended(t, nsA, survivor))
	}
	boundWhole(nsA, survivor, 2)
	// The preempted job waits, suspended, without pods.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if !suspended(t, nsA, victim) {
			t.Fatalf("%s unsuspended while team B uses its quota", victim)
		}
		if n := len(tc.gangNodesIn(nsA, victim)); n != 0 {
			t.Fatalf("%s has %d pods while suspended", victim, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, cq := range []string{"team-a", "team-b"} {
		usageIs(cq+" after the reclaim", prefix+cq, "2", "0")
	}

	wstop()
	<-watchDone
	watch.mu.Lock()
	var gangs []string
	for k, n := range watch.bound {
		gangs = append(gangs, fmt.Sprintf("%s:%d", k, n))
	}
	watch.mu.Unlock()
	sort.Strings(gangs)
	t.Logf("gangs (most pods bound at once): %v", gangs)
	for _, v := range watch.report() {
		t.Error(v)
	}
}

// gangNodesIn is gangNodes for a namespace other than the test's.
func (tc *testCluster) gangNodesIn(ns, pg string) map[string]string {
	tc.t.Helper()
	var l corev1.PodList
	if err := cl.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{k8s.LabelPodGroup: pg}); err != nil {
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
