package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// karpenterDir is where hack/testbin/karpenter.sh links the autoscaling
// parts: $DROVER_KARPENTER, else the default cache.
func karpenterDir() string {
	return testbinDir("DROVER_KARPENTER", "autoscaler-k8s-1.34.4-karpenter-1.6.0")
}

// requireKarpenter skips the test while the parts are not cached.
func requireKarpenter(t *testing.T) string {
	t.Helper()
	dir := karpenterDir()
	for _, f := range []string{"kube-controller-manager", "kube-scheduler", "karpenter-kwok", "crds/karpenter.sh_nodepools.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			skipUnlessCI(t, "Karpenter loop: %s is not cached (%v); run `make testbin-karpenter` (hack/testbin/karpenter.sh) or set DROVER_KARPENTER", f, err)
		}
	}
	return dir
}

// karpenterPool is the NodePool the test's Karpenter provisions from; the
// stand-in kubelet plays its nodes.
const karpenterPool = "drover"

// karpenterKubeReserved is what Karpenter's kwok provider subtracts from an
// instance type's resources for the kubelet (v1.6.0,
// kwok/cloudprovider/helpers.go): a node's allocatable is its resources
// less this. drover's catalogue describes allocatable (what pods can
// request), so the types given to Karpenter are the catalogue plus this.
var karpenterKubeReserved = corev1.ResourceList{
	corev1.ResourceCPU: apiresource.MustParse("100m"), corev1.ResourceMemory: apiresource.MustParse("10Mi")}

// gpuCatalog is drover's catalogue for the test: two g4dn types at their
// on-demand prices (pkg/embed/aws.csv), GPUs cut to keep the test small.
func gpuCatalog() []k8s.InstanceType {
	rl := func(cpu, mem, gpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse(cpu), corev1.ResourceMemory: apiresource.MustParse(mem),
			k8s.GPUResource: apiresource.MustParse(gpu)}
	}
	return []k8s.InstanceType{
		{Name: "g4dn.xlarge", PricePerHour: 0.526, Capacity: rl("4", "16Gi", "1")},
		{Name: "g4dn.12xlarge", PricePerHour: 3.912, Capacity: rl("48", "192Gi", "4")},
	}
}

// karpenterInstanceTypes writes the catalogue in the kwok provider's
// instance-types format (INSTANCE_TYPES_FILE_PATH): one on-demand offering
// per type in one zone, resources = catalogue capacity + kube-reserved.
func karpenterInstanceTypes(t *testing.T, cat []k8s.InstanceType) string {
	t.Helper()
	type req struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type offering struct {
		Price        float64
		Available    bool
		Requirements []req
	}
	type itype struct {
		Name             string              `json:"name"`
		Offerings        []offering          `json:"offerings"`
		Architecture     string              `json:"architecture"`
		OperatingSystems []string            `json:"operatingSystems"`
		Resources        corev1.ResourceList `json:"resources"`
	}
	var out []itype
	for _, it := range cat {
		res := it.Capacity.DeepCopy()
		for name, q := range karpenterKubeReserved {
			v := res[name]
			v.Add(q)
			res[name] = v
		}
		res[corev1.ResourcePods] = apiresource.MustParse("110")
		out = append(out, itype{Name: it.Name, Architecture: "amd64", OperatingSystems: []string{"linux"}, Resources: res,
			Offerings: []offering{{Price: it.PricePerHour, Available: true, Requirements: []req{
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"test-zone-a"}}}}}})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "instance-types.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// process runs one binary of the test's control plane, logging to a file
// whose tail is printed when the test fails.
func startProcess(t *testing.T, name string, env []string, bin string, args ...string) (logPath string, exited <-chan error) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch
		logf.Close()
		if t.Failed() || os.Getenv("DROVER_E2E_LOG") != "" {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 6000 {
					b = b[len(b)-6000:]
				}
				t.Logf("%s log (tail):\n%s", name, b)
			}
		}
	})
	return logPath, ch
}

var (
	nodePoolGVK  = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}
	nodeClaimGVK = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaimList"}
	nodeClassGVK = schema.GroupVersionKind{Group: "karpenter.kwok.sh", Version: "v1alpha1", Kind: "KWOKNodeClass"}
)

// autoscalerOptions are the real loop's settings.
type autoscalerOptions struct {
	// launchDelay is the kwok provider's NodeRegistrationDelay: how long
	// a NodeClaim's launch takes before its Node exists.
	launchDelay time.Duration
	// consolidateAfter is the NodePool's: how long a node stays empty
	// before Karpenter removes it.
	consolidateAfter time.Duration
}

// startAutoscaler runs, beside the test API server, the parts of a cluster
// that turn drover's placeholders into nodes: kube-controller-manager (its
// deployment, replicaset and garbage-collector controllers: placeholder
// Deployments become pods), kube-scheduler (binds placeholder pods, and
// marks those that fit nowhere PodScheduled=False, Unschedulable) and
// Karpenter with its kwok cloud provider (pending, unschedulable pods
// become NodeClaims and Node objects of the catalogue's types; empty nodes
// are consolidated away). Karpenter's CRDs, a KWOKNodeClass (marked Ready,
// the status a cloud provider's node-class controller would set; v1.6.0's
// kwok provider has none) and a NodePool limited to the catalogue's types,
// on-demand, consolidating empty nodes only, are created. The stand-in
// kubelet must adopt the pool's nodes (standin.Config.Adopt), as kwok's
// node controller would.
func startAutoscaler(t *testing.T, dir string, cat []k8s.InstanceType, o autoscalerOptions) {
	t.Helper()
	ctx := context.Background()
	crds, err := filepath.Glob(filepath.Join(dir, "crds", "*.yaml"))
	if err != nil || len(crds) < 3 {
		t.Fatalf("Karpenter's CRDs in %s/crds: %v %v", dir, crds, err)
	}
	if _, err := envtest.InstallCRDs(restCfg, envtest.CRDInstallOptions{Paths: crds, MaxTime: 2 * time.Minute}); err != nil {
		t.Fatalf("installing Karpenter's CRDs: %v", err)
	}
	kubeconfig := writeKubeconfig(t, restCfg)

	nc := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "default"},
		"spec": map[string]any{"nodeRegistrationDelay": o.launchDelay.String()}}}
	nc.SetGroupVersionKind(nodeClassGVK)
	if err := cl.Create(ctx, nc); err != nil {
		t.Fatalf("creating the KWOKNodeClass: %v", err)
	}
	nc.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready",
		"message": "", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": nc.GetGeneration()}}}
	if err := cl.Status().Update(ctx, nc); err != nil {
		t.Fatalf("marking the KWOKNodeClass ready: %v", err)
	}
	var names []any
	for _, it := range cat {
		names = append(names, it.Name)
	}
	np := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": karpenterPool},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
				"expireAfter":  "Never",
				"requirements": []any{
					map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": "In", "values": names},
					map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
				}}},
			"disruption": map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": o.consolidateAfter.String(),
				"budgets": []any{map[string]any{"nodes": "100%"}}},
		}}}
	np.SetGroupVersionKind(nodePoolGVK)
	if err := cl.Create(ctx, np); err != nil {
		t.Fatalf("creating the NodePool: %v", err)
	}
	t.Cleanup(func() { cleanupAutoscaler(t) })

	startProcess(t, "kube-controller-manager", nil, filepath.Join(dir, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers=deployment-controller,replicaset-controller,garbage-collector-controller")
	startProcess(t, "kube-scheduler", nil, filepath.Join(dir, "kube-scheduler"),
		"--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0")
	health := freePort(t)
	logPath, exited := startProcess(t, "karpenter", []string{"KUBECONFIG=" + kubeconfig,
		"INSTANCE_TYPES_FILE_PATH=" + karpenterInstanceTypes(t, cat),
		"DISABLE_LEADER_ELECTION=true", "LOG_LEVEL=debug",
		fmt.Sprintf("METRICS_PORT=%d", freePort(t)), fmt.Sprintf("HEALTH_PROBE_PORT=%d", health),
		"BATCH_IDLE_DURATION=1s", "BATCH_MAX_DURATION=3s"},
		filepath.Join(dir, "karpenter-kwok"))
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("karpenter exited: %v\n%s", err, b)
		default:
		}
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("karpenter not ready within 90 s:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cleanupAutoscaler removes the NodePool, node class, NodeClaims and the
// pool's nodes, finalizers included (Karpenter may be stopped already).
func cleanupAutoscaler(t *testing.T) {
	ctx := context.Background()
	strip := func(o client.Object) {
		if len(o.GetFinalizers()) > 0 {
			o.SetFinalizers(nil)
			_ = cl.Update(ctx, o)
		}
		_ = cl.Delete(ctx, o)
	}
	var ncs unstructured.UnstructuredList
	ncs.SetGroupVersionKind(nodeClaimGVK)
	if err := cl.List(ctx, &ncs); err == nil {
		for i := range ncs.Items {
			strip(&ncs.Items[i])
		}
	}
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes, client.HasLabels{"karpenter.sh/nodepool"}); err == nil {
		for i := range nodes.Items {
			strip(&nodes.Items[i])
		}
	}
	np := &unstructured.Unstructured{}
	np.SetGroupVersionKind(nodePoolGVK)
	np.SetName(karpenterPool)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(np), np); err == nil {
		strip(np)
	}
	nc := &unstructured.Unstructured{}
	nc.SetGroupVersionKind(nodeClassGVK)
	nc.SetName("default")
	if err := cl.Get(ctx, client.ObjectKeyFromObject(nc), nc); err == nil {
		strip(nc)
	}
}

// loopWatch polls the cluster and records what the autoscaling loop did.
type loopWatch struct {
	mu sync.Mutex
	// nodes seen in the pool: creation time, type, allocatable; gone
	// records those seen and then deleted.
	created map[string]time.Time
	typ     map[string]string
	alloc   map[string]corev1.ResourceList
	gone    map[string]bool
	goneAt  map[string]time.Time
	peak    int
	// placeholders: the held pods seen PodScheduled=False/Unschedulable,
	// the nodes a placeholder pod was bound to (first time).
	heldUnschedulable map[string]bool
	phOnNode          map[string]time.Time
	// jobPods: job pod -> node, the node's problems at the first sight of
	// the binding (not Ready, a taint the pod does not tolerate), and the
	// time seen.
	jobNode map[string]string
	jobSeen map[string]time.Time
	// bound: any pod (job or placeholder) -> first sight of it bound;
	// onNode: the live pods on each node at the last poll.
	bound  map[string]time.Time
	onNode map[string][]string
	// lastAll is what job and placeholder pods request per node at the
	// last poll.
	lastAll  map[string]corev1.ResourceList
	problems []string
	// overcommits lists nodes whose job pods alone request more than the
	// node allocates; phOvercommits those where placeholders make it so
	// (two schedulers bind to one node).
	overcommits, phOvercommits []string
}

func newLoopWatch() *loopWatch {
	return &loopWatch{created: map[string]time.Time{}, typ: map[string]string{}, alloc: map[string]corev1.ResourceList{},
		gone: map[string]bool{}, goneAt: map[string]time.Time{}, heldUnschedulable: map[string]bool{}, phOnNode: map[string]time.Time{},
		jobNode: map[string]string{}, jobSeen: map[string]time.Time{}, bound: map[string]time.Time{}}
}

func (w *loopWatch) run(ctx context.Context, ns string) {
	for ctx.Err() == nil {
		w.poll(ctx, ns)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func podRequests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			v := out[name]
			v.Add(q)
			out[name] = v
		}
	}
	return out
}

func exceeds(used, alloc corev1.ResourceList) string {
	for name, q := range used {
		a, ok := alloc[name]
		if !ok || q.Cmp(a) > 0 {
			return fmt.Sprintf("%s %s > %s", name, q.String(), a.String())
		}
	}
	return ""
}

func (w *loopWatch) poll(ctx context.Context, ns string) {
	var nodes corev1.NodeList
	var pods, phPods corev1.PodList
	if cl.List(ctx, &nodes, client.HasLabels{"karpenter.sh/nodepool"}) != nil ||
		cl.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{v1alpha1.LabelJob}) != nil ||
		cl.List(ctx, &phPods, client.InNamespace("drover-system"), client.HasLabels{v1alpha1.LabelPlaceholder}) != nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	byName := map[string]*corev1.Node{}
	alive := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		byName[n.Name] = n
		if _, ok := w.created[n.Name]; !ok {
			w.created[n.Name] = n.CreationTimestamp.Time
			w.typ[n.Name] = n.Labels[corev1.LabelInstanceTypeStable]
		}
		if len(n.Status.Allocatable) > 0 {
			w.alloc[n.Name] = n.Status.Allocatable
		}
		if n.DeletionTimestamp == nil {
			alive++
		}
	}
	w.peak = max(w.peak, alive)
	for name := range w.created {
		if byName[name] == nil && !w.gone[name] {
			w.gone[name] = true
			w.goneAt[name] = now
		}
	}
	jobUse, allUse := map[string]corev1.ResourceList{}, map[string]corev1.ResourceList{}
	w.onNode = map[string][]string{}
	add := func(m map[string]corev1.ResourceList, node string, r corev1.ResourceList) {
		if m[node] == nil {
			m[node] = corev1.ResourceList{}
		}
		for name, q := range r {
			v := m[node][name]
			v.Add(q)
			m[node][name] = v
		}
	}
	for i := range phPods.Items {
		p := &phPods.Items[i]
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				w.heldUnschedulable[p.Name] = true
			}
		}
		if p.Spec.NodeName != "" && byName[p.Spec.NodeName] != nil {
			if _, ok := w.phOnNode[p.Spec.NodeName]; !ok {
				w.phOnNode[p.Spec.NodeName] = now
			}
			if _, ok := w.bound[p.Name]; !ok {
				w.bound[p.Name] = now
			}
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				add(allUse, p.Spec.NodeName, podRequests(p))
				w.onNode[p.Spec.NodeName] = append(w.onNode[p.Spec.NodeName], p.Name)
			}
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" {
			continue
		}
		if _, ok := w.jobNode[p.Name]; !ok {
			w.jobNode[p.Name] = p.Spec.NodeName
			w.jobSeen[p.Name] = now
			n := byName[p.Spec.NodeName]
			switch {
			case n == nil:
				w.problems = append(w.problems, fmt.Sprintf("%s bound to %s, not a node of the pool", p.Name, p.Spec.NodeName))
			default:
				for _, tn := range n.Spec.Taints {
					if (tn.Effect == corev1.TaintEffectNoSchedule || tn.Effect == corev1.TaintEffectNoExecute) &&
						!slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(&tn) }) {
						w.problems = append(w.problems, fmt.Sprintf("%s bound to %s, which has the taint %s:%s", p.Name, n.Name, tn.Key, tn.Effect))
					}
				}
			}
		}
		if _, ok := w.bound[p.Name]; !ok {
			w.bound[p.Name] = now
		}
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			add(jobUse, p.Spec.NodeName, podRequests(p))
			add(allUse, p.Spec.NodeName, podRequests(p))
			w.onNode[p.Spec.NodeName] = append(w.onNode[p.Spec.NodeName], p.Name)
		}
	}
	for node, used := range jobUse {
		if why := exceeds(used, w.alloc[node]); why != "" && !slices.Contains(w.overcommits, node+": "+why) {
			w.overcommits = append(w.overcommits, node+": "+why)
		}
	}
	w.lastAll = allUse
	for node, used := range allUse {
		if why := exceeds(used, w.alloc[node]); why != "" {
			var who []string
			for _, pod := range w.onNode[node] {
				who = append(who, fmt.Sprintf("%s (bound at %s)", pod, w.bound[pod].Format("15:04:05.0")))
			}
			w.phOvercommits = append(w.phOvercommits, fmt.Sprintf("%s at %s: %s; pods %v", node, now.Format("15:04:05.0"), why, who))
		}
	}
}

// alive counts the pool's nodes seen and not gone.
func (w *loopWatch) alive() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.created) - len(w.gone)
}

// rampJob is the test's TrainingJob shape: one replica of 3 CPUs, 8Gi and
// one GPU, which only a g4dn.xlarge holds cheapest.
func (tc *testCluster) rampJob(name string, dur int64) *v1alpha1.TrainingJob {
	return tc.job(name, v1alpha1.ClassBE, dur, group{name: "worker", replicas: 1, cpu: "3", gpu: "1", mem: "8Gi"})
}

// rampWaves is the demand ramp: jobs submitted per wave, rampGap apart
// (internal/exp/autoscale DefaultRampOptions replays it in the simulator).
var rampWaves = []int{1, 2, 3}

const (
	rampGap = 20 * time.Second
	// rampHorizon is the window the node-hours and cost are counted over,
	// from the first submission (the simulator's Horizon).
	rampHorizon = 160 * time.Second
)

// figures sums up the real loop as the simulator reports it: pending time
// (first sight of a job's pod bound minus its submission), node-hours and
// cost of the pool's nodes within rampHorizon of start, cost per job.
// The caller holds w.mu.
func (w *loopWatch) figures(start time.Time, submitted map[string]time.Time, cat []k8s.InstanceType) string {
	var pend []float64
	for pod, seen := range w.jobSeen {
		job := pod[:strings.Index(pod, "-worker")]
		if sub, ok := submitted[job]; ok {
			pend = append(pend, seen.Sub(sub).Seconds())
		}
	}
	if len(pend) == 0 {
		return "no job pod seen bound"
	}
	sort.Float64s(pend)
	mean := 0.0
	for _, p := range pend {
		mean += p / float64(len(pend))
	}
	end := start.Add(rampHorizon)
	price := map[string]float64{}
	for _, it := range cat {
		price[it.Name] = it.PricePerHour
	}
	var nodeSec, cost float64
	for name, c := range w.created {
		gone := end
		if g, ok := w.goneAt[name]; ok && g.Before(end) {
			gone = g
		}
		from := c
		if from.Before(start) {
			from = start
		}
		if d := gone.Sub(from).Seconds(); d > 0 {
			nodeSec += d
			cost += d / 3600 * price[w.typ[name]]
		}
	}
	p95 := 0.0
	if len(pend) > 0 {
		p95 = pend[min(len(pend)-1, int(float64(len(pend))*0.95))]
	}
	return fmt.Sprintf("jobs %d, pending mean %.2f s (max %.2f, p95 %.2f), nodes %d, node_hours %.4f (%.0f node-s), cost $%.4f, cost per job $%.5f within %v",
		len(pend), mean, pend[len(pend)-1], p95, len(w.created), nodeSec/3600, nodeSec, cost, cost/float64(max(1, len(pend))), rampHorizon)
}

// TestKarpenterLoop runs the predictive autoscaling loop of paper 004 on the
// real API server with real parts around drover: the `predictive` profile
// (ladder) with a two-type catalogue, kube-controller-manager turning its
// placeholder Deployments into pods, kube-scheduler marking the held ones
// Unschedulable, Karpenter's kwok provider adding nodes of the catalogue's
// types for them, and the stand-in kubelet registering those nodes.
// A ramp of TrainingJobs in three waves then lands on nodes that
// placeholders asked for before the jobs were submitted, evicting
// placeholders; after the jobs end, the nodes left empty are consolidated
// away. No job pod is bound to a node that is not the pool's, that
// carries a taint it does not tolerate, or that its pods overfill; a
// placeholder bound beside a job where both do not fit (kube-scheduler and
// drover binding to a joining node at once) does not stay there.
func TestKarpenterLoop(t *testing.T) {
	dir := requireKarpenter(t)
	requirePolicy(t, "predictive")
	cat := gpuCatalog()
	tc := newCluster(t, 0, "1", "0", standin.Config{TimeScale: 20,
		Adopt: func(n *corev1.Node) bool { return n.Labels["karpenter.sh/nodepool"] == karpenterPool }})
	startAutoscaler(t, dir, cat, autoscalerOptions{launchDelay: 2 * time.Second, consolidateAfter: 5 * time.Second})
	tc.tune = func(c *k8s.Config) { c.Catalog = cat }
	w := newLoopWatch()
	wctx, wstop := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() { defer close(wdone); w.run(wctx, tc.ns) }()
	t.Cleanup(func() { wstop(); <-wdone })
	tc.startScheduler("predictive:model=ladder;tick=1", nil)

	submitted := map[string]time.Time{}
	start := time.Now()
	n := 0
	for wave, count := range rampWaves {
		time.Sleep(time.Until(start.Add(time.Duration(wave) * rampGap)))
		for range count {
			n++
			name := fmt.Sprintf("ramp-%d", n)
			submitted[name] = time.Now()
			// 1,200 s of training: 60 s wall at time scale 20, so the
			// waves overlap and the demand grows.
			tc.create(tc.rampJob(name, 1200))
		}
		t.Logf("wave %d (%d jobs) submitted at %.1f s; pool nodes alive: %d", wave+1, count, time.Since(start).Seconds(), w.alive())
	}
	for i := 1; i <= n; i++ {
		tc.waitPhase(fmt.Sprintf("ramp-%d", i), v1alpha1.PhaseRunning, 3*time.Minute)
	}

	// The loop, as recorded.
	w.mu.Lock()
	ahead := 0
	for pod, node := range w.jobNode {
		job := pod[:strings.Index(pod, "-worker")]
		created, ok := w.created[node]
		if !ok {
			continue
		}
		_, phFirst := w.phOnNode[node]
		t.Logf("%s on %s (%s), node created %s the job was submitted; placeholder there first: %v", pod, node, w.typ[node],
			map[bool]string{true: "before", false: "after"}[created.Before(submitted[job])], phFirst)
		if created.Before(submitted[job]) && phFirst {
			ahead++
		}
		// Karpenter packs the pods of one batch onto one NodeClaim and
		// launches the cheapest type that holds them all, so two pending
		// 1-GPU placeholders may become one g4dn.12xlarge: any catalogue
		// type is right; overfilling is checked below.
		if !slices.ContainsFunc(cat, func(it k8s.InstanceType) bool { return it.Name == w.typ[node] }) {
			t.Errorf("%s landed on %s of type %q, not a catalogue type", pod, node, w.typ[node])
		}
	}
	if len(w.heldUnschedulable) == 0 {
		t.Error("no placeholder pod was ever PodScheduled=False, Unschedulable: the autoscaler had nothing to act on")
	}
	if len(w.phOnNode) == 0 {
		t.Error("no placeholder pod was ever bound to a node of the pool")
	}
	if ahead == 0 {
		t.Error("no job landed on a node that a placeholder held before the job was submitted: the loop never provisioned ahead of demand")
	}
	for _, p := range w.problems {
		t.Error(p)
	}
	for _, o := range w.overcommits {
		t.Errorf("job pods overfill %s", o)
	}
	// Two binders (drover for jobs, kube-scheduler for placeholders) can
	// both fill a node: logged, with the polls that saw it (100 ms apart).
	for i, o := range w.phOvercommits {
		if i < 4 || i >= len(w.phOvercommits)-4 {
			t.Logf("job and placeholder pods at once overfill %s", o)
		}
	}
	t.Logf("%d polls saw a node overfilled by job and placeholder pods together", len(w.phOvercommits))
	// Such an overfill must not last: drover makes the placeholder yield
	// (before it did, the placeholder stayed, asked for no node, and the
	// ramp's jobs waited 41 s on average instead of 4).
	for node, used := range w.lastAll {
		if why := exceeds(used, w.alloc[node]); why != "" {
			t.Errorf("at the end of the ramp %s is still overfilled by job and placeholder pods: %s", node, why)
		}
	}
	t.Logf("placeholder pods seen Unschedulable: %d; nodes with a placeholder: %d; jobs on nodes provisioned ahead: %d of %d; peak nodes %d",
		len(w.heldUnschedulable), len(w.phOnNode), ahead, len(w.jobNode), w.peak)
	peak := w.peak
	w.mu.Unlock()

	// The jobs end; the placeholders shrink to the ladder's floor and the
	// nodes left empty are removed by Karpenter's consolidation.
	for i := 1; i <= n; i++ {
		tc.waitPhase(fmt.Sprintf("ramp-%d", i), v1alpha1.PhaseSucceeded, 4*time.Minute)
	}
	tc.eventually("empty nodes consolidated away", 3*time.Minute, func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.gone) > 0 && len(w.created)-len(w.gone) < peak, fmt.Sprintf("%d of %d nodes gone, peak %d", len(w.gone), len(w.created), peak)
	})
	w.mu.Lock()
	t.Logf("real loop (docs/autoscale.md, against `drover sim -e autoscale-karpenter`): %s", w.figures(start, submitted, cat))
	var gone []string
	for name := range w.gone {
		gone = append(gone, name)
	}
	sort.Strings(gone)
	t.Logf("consolidated: %v (peak %d, alive %d)", gone, peak, len(w.created)-len(w.gone))
	w.mu.Unlock()
}

// TestKarpenterReactive runs the first wave of the same ramp under
// `reactive` (no placeholders) with the same parts, and records what a
// real node autoscaler sees of it: nothing. A waiting TrainingJob has no
// pods (drover creates its replicas once it places them), so no pod is
// ever Unschedulable, Karpenter never adds a node, and the job waits. The
// simulator's reactive autoscaler does see pending jobs; a real one needs
// placeholders (or opted-in pods, which drover marks Unschedulable).
func TestKarpenterReactive(t *testing.T) {
	dir := requireKarpenter(t)
	cat := gpuCatalog()
	tc := newCluster(t, 0, "1", "0", standin.Config{TimeScale: 20,
		Adopt: func(n *corev1.Node) bool { return n.Labels["karpenter.sh/nodepool"] == karpenterPool }})
	startAutoscaler(t, dir, cat, autoscalerOptions{launchDelay: 2 * time.Second, consolidateAfter: 5 * time.Second})
	tc.tune = func(c *k8s.Config) { c.Catalog = cat }
	tc.startScheduler("reactive", nil)
	tc.create(tc.rampJob("ramp-1", 1200))
	// Long enough for Karpenter's batching (3 s), the launch delay (2 s)
	// and the stand-in to register a node, several times over.
	time.Sleep(20 * time.Second)
	var ncs unstructured.UnstructuredList
	ncs.SetGroupVersionKind(nodeClaimGVK)
	if err := cl.List(context.Background(), &ncs); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	tj := tc.get("ramp-1")
	t.Logf("reactive after 20 s: phase %q, reason %q, pods %d, NodeClaims %d", tj.Status.Phase, tj.Status.Reason, len(tc.pods("ramp-1")), len(ncs.Items))
	if len(ncs.Items) != 0 {
		t.Errorf("Karpenter made %d NodeClaims for a job that has no pods", len(ncs.Items))
	}
	if tj.Status.Phase == v1alpha1.PhaseRunning || len(tc.pods("ramp-1")) != 0 {
		t.Errorf("ramp-1 is %s with %d pods on a cluster without nodes", tj.Status.Phase, len(tc.pods("ramp-1")))
	}

}
