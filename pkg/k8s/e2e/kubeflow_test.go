package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// operatorDir is where hack/testbin/operator.sh caches the Kubeflow
// training-operator: $DROVER_TRAINING_OPERATOR, else the default cache.
func operatorDir() string {
	return testbinDir("DROVER_TRAINING_OPERATOR", "training-operator-1.9.2-sp-0.33.5")
}

// The operator's cert rotator waits for its certificates in this fixed
// directory (pkg/cert in training-operator v1.9.2), which a kubelet would
// fill from the Secret; the test fills it, holding a lock so that two
// test runs on one machine do not overwrite each other's certificates.
const operatorCertDir = "/tmp/k8s-webhook-server/serving-certs"

// startOperator runs the real training-operator against the test API
// server with --gang-scheduler-name=drover and the PyTorchJob, TFJob and
// MPIJob (kubeflow.org/v1) controllers, after creating what it needs
// on a bare API server: its namespace (MY_POD_NAMESPACE), an empty
// webhook Secret, a ValidatingWebhookConfiguration without webhooks, and
// the certificate files its rotator waits for.
func startOperator(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	var crds []string
	for _, kind := range []string{"pytorchjobs", "tfjobs", "mpijobs"} {
		crds = append(crds, filepath.Join(dir, "crds", "kubeflow.org_"+kind+".yaml"))
	}
	if _, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{Paths: crds, MaxTime: 2 * time.Minute}); err != nil {
		t.Fatalf("installing the PyTorchJob, TFJob and MPIJob CRDs: %v", err)
	}
	lock, err := os.OpenFile("/tmp/drover-e2e-training-operator.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); lock.Close() })
	_ = os.RemoveAll(operatorCertDir)

	ns := "kubeflow-e2e"
	_ = cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "training-operator-webhook-cert", Namespace: ns}}
	_ = cl.Delete(ctx, secret)
	if err := cl.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validator.training-operator.kubeflow.org"}}
	_ = cl.Delete(ctx, vwc)
	if err := cl.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	kubeconfig := writeKubeconfig(t, restCfg)
	port := freePort(t)
	logPath := filepath.Join(tmp, "operator.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "training-operator"), "--kubeconfig", kubeconfig,
		"--gang-scheduler-name=drover", "--enable-scheme=pytorchjob", "--enable-scheme=tfjob", "--enable-scheme=mpijob",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-server-port="+strconv.Itoa(port),
		"--zap-log-level=info")
	cmd.Env = append(os.Environ(), "MY_POD_NAMESPACE="+ns, "TMPDIR=/tmp")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 6000 {
					b = b[len(b)-6000:]
				}
				t.Logf("training-operator log (tail):\n%s", b)
			}
		}
	})
	// Copy the rotated certificates where the operator's rotator and
	// webhook server look for them.
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := &corev1.Secret{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(secret), s); err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 {
			if err := os.MkdirAll(operatorCertDir, 0o755); err != nil {
				t.Fatal(err)
			}
			for k, v := range s.Data {
				if err := os.WriteFile(filepath.Join(operatorCertDir, k), v, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operator did not write its webhook certificates into the Secret within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pytorchJob is an unmodified PyTorchJob: a master and workers, each
// replica requesting one GPU.
func pytorchJob(ns, name string, workers int) *unstructured.Unstructured {
	replica := func(n int) map[string]any {
		return map[string]any{"replicas": int64(n), "restartPolicy": "OnFailure", "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "pytorch", "image": "pytorch:latest", "resources": map[string]any{
				"requests": map[string]any{"cpu": "1", "nvidia.com/gpu": "1"}, "limits": map[string]any{"nvidia.com/gpu": "1"}}}}}}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replica(1), "Worker": replica(workers)}},
	}}
	return u
}

// TestKubeflowPyTorchJobGang runs the real Kubeflow training-operator
// v1.9.2 with --gang-scheduler-name=drover and an unmodified PyTorchJob
// of 1 master + 2 workers: while only two of its pods fit, none is bound;
// then the three are bound together and run; a TE TrainingJob that needs
// the whole cluster makes fitgpp preempt the whole gang (every pod
// deleted, the PodGroup's preemption count 1); the operator recreates the
// pods, which queue again as the same job and are bound together once the
// TE job is done. Skipped when `make testbin-operator` has not cached the
// operator.
func TestKubeflowPyTorchJobGang(t *testing.T) {
	dir := operatorDir()
	if _, err := os.Stat(filepath.Join(dir, "training-operator")); err != nil {
		skipUnlessCI(t, "the training-operator is not cached in %s (run `make testbin-operator`): %v", dir, err)
	}
	tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 10})
	startOperator(t, dir)
	tc.startScheduler("fitgpp", nil)
	ctx := context.Background()

	// One node's two GPUs are taken: the gang's three GPUs do not fit.
	tc.create(tc.job("blocker", v1alpha1.ClassBE, 3600, group{name: "worker", replicas: 1, cpu: "1", gpu: "2"}))
	tc.waitPhase("blocker", v1alpha1.PhaseRunning, 20*time.Second)
	if err := cl.Create(ctx, pytorchJob(tc.ns, "pt", 2)); err != nil {
		t.Fatalf("creating the PyTorchJob: %v", err)
	}
	tc.eventually("the operator's PodGroup and 3 pods", 60*time.Second, func() (bool, string) {
		pg := &schedv1alpha1.PodGroup{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: "pt"}, pg); err != nil {
			return false, err.Error()
		}
		nodes := tc.gangNodes("pt")
		return pg.Spec.MinMember == 3 && len(nodes) == 3, fmt.Sprintf("minMember %d pods %v", pg.Spec.MinMember, nodes)
	})
	var l corev1.PodList
	_ = cl.List(ctx, &l, client.InNamespace(tc.ns), client.MatchingLabels{k8s.LabelPodGroup: "pt"})
	for _, p := range l.Items {
		if p.Spec.SchedulerName != "drover" {
			t.Fatalf("operator pod %s has schedulerName %q", p.Name, p.Spec.SchedulerName)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for name, n := range tc.gangNodes("pt") {
			if n != "" {
				t.Fatalf("pod %s bound to %s while only two of the gang's three pods fit", name, n)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tc.deleteJob("blocker")
	bound := func(what string) map[string]string {
		var nodes map[string]string
		tc.eventually(what, 60*time.Second, func() (bool, string) {
			nodes = tc.gangNodes("pt")
			n := 0
			for _, node := range nodes {
				if node != "" {
					n++
				}
			}
			return n == 3 && len(nodes) == 3, fmt.Sprint(nodes)
		})
		return nodes
	}
	first := bound("the gang bound together")
	t.Logf("gang bound: %v", first)
	tc.eventually("the gang's pods Running", 30*time.Second, func() (bool, string) {
		running := 0
		var l corev1.PodList
		_ = cl.List(ctx, &l, client.InNamespace(tc.ns), client.MatchingLabels{k8s.LabelPodGroup: "pt"})
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == 3, fmt.Sprintf("%d running", running)
	})

	// A TE job needing all four GPUs: fitgpp preempts the whole gang.
	tc.create(tc.job("te", v1alpha1.ClassTE, 30, group{name: "worker", replicas: 2, cpu: "1", gpu: "2"}))
	tc.eventually("the gang preempted", 60*time.Second, func() (bool, string) {
		pg := &schedv1alpha1.PodGroup{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: "pt"}, pg); err != nil {
			return false, err.Error()
		}
		return pg.Annotations[k8s.AnnotationPreemptions] == "1", fmt.Sprintf("annotations %v", pg.Annotations)
	})
	tc.waitPhase("te", v1alpha1.PhaseRunning, 60*time.Second)
	for name, n := range tc.gangNodes("pt") {
		if n != "" {
			t.Errorf("gang pod %s bound to %s while the TE job runs", name, n)
		}
		if _, old := first[name]; old {
			// The operator may reuse pod names; a live pod of that name
			// must be a new, unbound one.
			p := tc.pod(name)
			if p.Spec.NodeName != "" {
				t.Errorf("pod %s survived the preemption on %s", name, p.Spec.NodeName)
			}
		}
	}
	t.Logf("while the TE job runs: %v", tc.gangNodes("pt"))
	tc.waitPhase("te", v1alpha1.PhaseSucceeded, 90*time.Second)
	again := bound("the recreated gang bound together again")
	pg := &schedv1alpha1.PodGroup{}
	_ = cl.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: "pt"}, pg)
	var uids []string
	var l2 corev1.PodList
	_ = cl.List(ctx, &l2, client.InNamespace(tc.ns), client.MatchingLabels{k8s.LabelPodGroup: "pt"})
	for _, p := range l2.Items {
		uids = append(uids, p.Name+"="+string(p.UID)[:8]+"@"+p.Spec.NodeName)
	}
	t.Logf("gang bound again: %v; pods %v; PodGroup status %+v annotations %v", again, uids, pg.Status, pg.Annotations)
	if ok, msg := tc.waitEvent("pt", "Preempted"); !ok {
		t.Errorf("no Preempted event on the PodGroup: %s", msg)
	}
}

// TestKubeflowGangContract is TestGangContract's rows that need the real
// training-operator v1.9.2 (--gang-scheduler-name=drover, which fills the
// PodGroup's minMember and minResources itself). Skipped when `make
// testbin-operator` has not cached the operator.
func TestKubeflowGangContract(t *testing.T) {
	dir := operatorDir()
	if _, err := os.Stat(filepath.Join(dir, "training-operator")); err != nil {
		skipUnlessCI(t, "the training-operator is not cached in %s (run `make testbin-operator`): %v", dir, err)
	}
	startOperator(t, dir)
	ctx := context.Background()

	// A running PyTorchJob (1 master + 3 workers, minMember 4 and
	// minResources 4 GPUs from the operator) loses a worker; the operator
	// recreates it and the new pod is bound next to the three running
	// ones, the PodGroup Running again. Source: coscheduling core.go
	// Permit (bound pods count towards minMember); issue 29's report.
	t.Run("lost worker recreated by the operator", func(t *testing.T) {
		tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 10})
		tc.startScheduler("k8s-default", nil)
		if err := cl.Create(ctx, pytorchJob(tc.ns, "pt", 3)); err != nil {
			t.Fatalf("creating the PyTorchJob: %v", err)
		}
		tc.waitBound("pt", 4, 60*time.Second)
		tc.eventually("PodGroup Running 4", 30*time.Second, func() (bool, string) {
			pg, s := tc.pgStatus("pt")
			return pg.Status.Phase == schedv1alpha1.PodGroupRunning && pg.Status.Running == 4, s
		})
		lost := tc.pod("pt-worker-1")
		deletePod(t, lost)
		tc.eventually("the operator's new pt-worker-1 bound", 60*time.Second, func() (bool, string) {
			p := &corev1.Pod{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(lost), p); err != nil {
				return false, err.Error()
			}
			return p.UID != lost.UID && p.Spec.NodeName != "", fmt.Sprintf("uid %s node %q", p.UID, p.Spec.NodeName)
		})
		tc.waitBound("pt", 4, 10*time.Second)
		tc.eventually("PodGroup Running 4 again", 30*time.Second, func() (bool, string) {
			pg, s := tc.pgStatus("pt")
			return pg.Status.Phase == schedv1alpha1.PodGroupRunning && pg.Status.Running == 4, s
		})
	})

	// An elastic PyTorchJob: 1 master + 3 workers with
	// runPolicy.schedulingPolicy.minAvailable 2 (the PodGroup's
	// minMember), room for 3: 3 are bound, the fourth once room frees.
	// Source: Volcano job_scheduling.go "Schedule Multiple Jobs" (Min 2 of
	// Rep); coscheduling core.go Permit.
	t.Run("minAvailable 2 of 4", func(t *testing.T) {
		tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 10})
		tc.startScheduler("k8s-default", nil)
		tc.blocker("1")
		job := pytorchJob(tc.ns, "el", 3)
		if err := unstructured.SetNestedField(job.Object, int64(2), "spec", "runPolicy", "schedulingPolicy", "minAvailable"); err != nil {
			t.Fatal(err)
		}
		if err := cl.Create(ctx, job); err != nil {
			t.Fatalf("creating the PyTorchJob: %v", err)
		}
		tc.eventually("the operator's PodGroup of minMember 2", 60*time.Second, func() (bool, string) {
			pg, s := tc.pgStatus("el")
			return pg.Spec.MinMember == 2, fmt.Sprintf("minMember %d; %s", pg.Spec.MinMember, s)
		})
		tc.waitBound("el", 3, 60*time.Second)
		tc.stayBound("el", 3, 2*time.Second)
		tc.deleteJob("blocker")
		tc.waitBound("el", 4, 30*time.Second)
	})
}

// kubeflowJob is an unmodified kubeflow.org/v1 job of kind with the given
// replica spec field and replicas per type, each replica requesting one
// CPU and gpu GPUs.
func kubeflowJob(ns, name, kind, specField string, replicas map[string]int, gpu map[string]string) *unstructured.Unstructured {
	specs := map[string]any{}
	for rtype, n := range replicas {
		req := map[string]any{"cpu": "1"}
		lim := map[string]any{}
		if g := gpu[rtype]; g != "" && g != "0" {
			req["nvidia.com/gpu"], lim["nvidia.com/gpu"] = g, g
		}
		container := strings.ToLower(kind)
		if kind == "TFJob" {
			container = "tensorflow"
		}
		specs[rtype] = map[string]any{"replicas": int64(n), "restartPolicy": "OnFailure", "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": container, "image": "trainer:latest", "resources": map[string]any{"requests": req, "limits": lim}}}}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{specField: specs},
	}}
}

// TestKubeflowTFJobAndMPIJobGangs: the same operator's TFJob (chief, ps,
// workers) and MPIJob v1 (launcher and workers; the launcher's
// kubectl-delivery init container asks for ephemeral storage) become
// PodGroup gangs: while the whole gang does not fit none of its pods is
// bound, then all are, together. Skipped when the operator is not cached.
func TestKubeflowTFJobAndMPIJobGangs(t *testing.T) {
	dir := operatorDir()
	if _, err := os.Stat(filepath.Join(dir, "training-operator")); err != nil {
		skipUnlessCI(t, "the training-operator is not cached in %s (run `make testbin-operator`): %v", dir, err)
	}
	startOperator(t, dir)
	ctx := context.Background()
	for _, row := range []struct {
		kind, field string
		replicas    map[string]int
		gpu         map[string]string
		pods        int
	}{
		{"TFJob", "tfReplicaSpecs", map[string]int{"Chief": 1, "PS": 1, "Worker": 2}, map[string]string{"Chief": "1", "Worker": "1"}, 4},
		{"MPIJob", "mpiReplicaSpecs", map[string]int{"Launcher": 1, "Worker": 3}, map[string]string{"Worker": "1"}, 4},
	} {
		t.Run(row.kind, func(t *testing.T) {
			tc := newCluster(t, 2, "8", "2", standin.Config{TimeScale: 10,
				Capacity: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}})
			tc.startScheduler("k8s-default", nil)
			tc.blocker("2") // 2 GPUs of 4 left: the gang needs 3
			name := strings.ToLower(row.kind)
			if err := cl.Create(ctx, kubeflowJob(tc.ns, name, row.kind, row.field, row.replicas, row.gpu)); err != nil {
				t.Fatalf("creating the %s: %v", row.kind, err)
			}
			tc.eventually("the operator's PodGroup and pods", 60*time.Second, func() (bool, string) {
				pg, s := tc.pgStatus(name)
				return pg.Spec.MinMember == int32(row.pods) && len(tc.gangNodes(name)) == row.pods,
					fmt.Sprintf("minMember %d pods %v; %s", pg.Spec.MinMember, tc.gangNodes(name), s)
			})
			tc.stayBound(name, 0, 2*time.Second)
			tc.deleteJob("blocker")
			tc.waitBound(name, row.pods, 30*time.Second)
			t.Logf("%s gang bound: %v", row.kind, tc.gangNodes(name))
		})
	}
}
