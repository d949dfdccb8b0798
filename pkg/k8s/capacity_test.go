package k8s

// Tests of issue 17 items 5, 6 and 7: capacity held by nothing. They use
// string literals for reasons and condition types (not the constants) so
// that the same file runs against the code from before the fix.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/validate"
)

// tjB builds TrainingJobs: one worker group requesting 1 CPU.
type tjB struct{ tj v1alpha1.TrainingJob }

func mkTJ(ns, name string, after time.Duration) *tjB {
	return &tjB{v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(t0.Add(after)),
		UID: types.UID("uid-" + ns + "-" + name)},
		Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE, ReplicaGroups: []v1alpha1.ReplicaGroup{{Name: "worker", Replicas: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}}}}}}
}

// replicas sets the worker count and its minimum (elastic when lo < n).
func (b *tjB) replicas(n, lo int32) *tjB {
	g := &b.tj.Spec.ReplicaGroups[0]
	g.Replicas = n
	if lo != n {
		g.MinReplicas, g.MaxReplicas = &lo, &n
	}
	return b
}

func (b *tjB) req(r corev1.ResourceName, q string) *tjB {
	b.tj.Spec.ReplicaGroups[0].Template.Spec.Containers[0].Resources.Requests[r] = resource.MustParse(q)
	return b
}

// limit sets a limit only (requests default to it, as the API server does
// for a pod).
func (b *tjB) limit(r corev1.ResourceName, q string) *tjB {
	c := &b.tj.Spec.ReplicaGroups[0].Template.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[r] = resource.MustParse(q)
	return b
}

func (b *tjB) obj() *v1alpha1.TrainingJob { j := b.tj; return &j }

func (b *nodeB) alloc(r corev1.ResourceName, q string) *nodeB {
	b.n.Status.Allocatable[r] = resource.MustParse(q)
	return b
}

func (b *podB) req(r corev1.ResourceName, q string) *podB {
	b.p.Spec.Containers[0].Resources.Requests[r] = resource.MustParse(q)
	return b
}

func (b *podB) inNS(ns string) *podB { b.p.Namespace = ns; return b }

// foreign is a running pod of another scheduler bound to node, requesting
// 100m CPU (and whatever req adds).
func foreign(name, node string) *podB {
	b := mkPod(name).node(node)
	b.p.Namespace = "other"
	b.p.Spec.SchedulerName = "default-scheduler"
	b.p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	b.p.Status.Phase = corev1.PodRunning
	return b
}

func quota(ns, name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

// harness runs executor cycles on a fake client. refuse, when set, is
// asked before every pod create and may refuse it as an API server's
// admission would.
type harness struct {
	t   *testing.T
	cl  client.Client
	e   *Executor
	rec *record.FakeRecorder
	now time.Time
	// creates counts pod creations tried. Starts run concurrently: mu
	// guards it and the refuse callback.
	mu      sync.Mutex
	creates int
}

func newHarness(t *testing.T, pol string, refuse func(*corev1.Pod) error, objs ...client.Object) *harness {
	t.Helper()
	h := &harness{t: t, rec: record.NewFakeRecorder(1000), now: t0.Add(time.Minute)}
	h.cl = fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake,
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if p, ok := obj.(*corev1.Pod); ok {
					h.mu.Lock()
					h.creates++
					var err error
					if refuse != nil {
						err = refuse(p)
					}
					h.mu.Unlock()
					if err != nil {
						return err
					}
				}
				return c.Create(ctx, obj, opts...)
			}}).Build()
	off := 0
	h.e = testExecutor(t, h.cl, pol, Config{QueuePositions: &off}, h.rec)
	h.e.Now = func() time.Time { return h.now }
	return h
}

// cycle runs one cycle; API errors are logged, not fatal (a refused pod
// on the code before the fix is one).
func (h *harness) cycle() *CycleResult {
	h.t.Helper()
	res, err := h.e.Cycle(context.Background())
	if err != nil {
		h.t.Logf("cycle: %v", err)
	}
	return res
}

func (h *harness) job(ns, name string) *v1alpha1.TrainingJob {
	h.t.Helper()
	tj := &v1alpha1.TrainingJob{}
	if err := h.cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tj); err != nil {
		h.t.Fatal(err)
	}
	return tj
}

// bound returns "ns/pod@node" for every replica pod (drover's, with the
// job label) and opted-in pod that is bound, sorted.
func (h *harness) bound() []string {
	h.t.Helper()
	var l corev1.PodList
	if err := h.cl.List(context.Background(), &l); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		if p.Spec.SchedulerName == "drover" && p.Spec.NodeName != "" && p.Labels[v1alpha1.LabelPlaceholder] == "" {
			out = append(out, p.Namespace+"/"+p.Name+"@"+p.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

// podsOn counts the pods bound to each node, any scheduler's.
func (h *harness) podsOn() map[string]int {
	var l corev1.PodList
	if err := h.cl.List(context.Background(), &l); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range l.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

// events drains the recorder: "Type Reason message" lines.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// condition returns "Status Reason" of the job's condition typ, or "".
func condition(tj *v1alpha1.TrainingJob, typ string) string {
	c := meta.FindStatusCondition(tj.Status.Conditions, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + " " + c.Reason
}

func objs[T client.Object](xs ...T) []client.Object {
	out := make([]client.Object, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func ptr[T any](x T) *T { return &x }

// Item 7: a node's allocatable pods and extended resources are limits too,
// whoever's pods fill them. fifo places on the most allocated node that
// fits, so before the fix it chose the node whose pod slots or extended
// resources were used up by another scheduler's pods.
func TestFitCountsPodsAndExtendedResources(t *testing.T) {
	const fpga = corev1.ResourceName("example.com/fpga")
	full := func(node string, n int) []client.Object {
		var out []client.Object
		for i := range n {
			p := foreign(fmt.Sprintf("%s-other-%d", node, i), node).obj()
			out = append(out, &p)
		}
		return out
	}
	cases := []struct {
		name  string
		nodes []*nodeB
		pods  []client.Object
		jobs  []*tjB
		want  []string // bound pods
	}{{
		name:  "a node whose pod slots another scheduler's pods fill takes no replica",
		nodes: []*nodeB{mkNode("busy").alloc(corev1.ResourcePods, "3"), mkNode("idle").alloc(corev1.ResourcePods, "110")},
		pods:  full("busy", 3),
		jobs:  []*tjB{mkTJ("ns", "a", 0)},
		want:  []string{"ns/a-worker-a1-0@idle"},
	}, {
		name:  "a gang of 3 does not go where 2 pod slots are left",
		nodes: []*nodeB{mkNode("busy").alloc(corev1.ResourcePods, "4"), mkNode("idle").alloc(corev1.ResourcePods, "110")},
		pods:  full("busy", 2),
		jobs:  []*tjB{mkTJ("ns", "a", 0).replicas(3, 3)},
		// The policy's ledger does not count pods: it chose busy, the
		// start was refused, and the next snapshot offers busy only to
		// placements of at most 2 pods (Crowded); nothing is bound over
		// busy's 4 pods.
		want: []string{"ns/a-worker-a1-0@idle", "ns/a-worker-a1-1@idle", "ns/a-worker-a1-2@idle"},
	}, {
		name:  "150 pods for a node of 110 (here 15 for 11): the rest go elsewhere",
		nodes: []*nodeB{mkNode("packed").alloc(corev1.ResourcePods, "11"), mkNode("spare").alloc(corev1.ResourcePods, "110")},
		pods:  full("packed", 1),
		jobs:  many(15),
		want:  manyBound(15, 10, "packed", "spare"),
	}, {
		name: "an extended resource used up elsewhere",
		nodes: []*nodeB{mkNode("fpga-busy").alloc(fpga, "2").alloc(corev1.ResourcePods, "110"),
			mkNode("fpga-idle").alloc(fpga, "2").alloc(corev1.ResourcePods, "110")},
		pods: []client.Object{ptr(foreign("other", "fpga-busy").req(fpga, "2").obj())},
		jobs: []*tjB{mkTJ("ns", "a", 0).req(fpga, "1")},
		want: []string{"ns/a-worker-a1-0@fpga-idle"},
	}, {
		name:  "an extended resource given as a limit only",
		nodes: []*nodeB{mkNode("fpga-busy").alloc(fpga, "2"), mkNode("fpga-idle").alloc(fpga, "2")},
		pods:  []client.Object{ptr(foreign("other", "fpga-busy").req(fpga, "2").obj())},
		jobs:  []*tjB{mkTJ("ns", "a", 0).limit(fpga, "1")},
		want:  []string{"ns/a-worker-a1-0@fpga-idle"},
	}, {
		name:  "ephemeral-storage (in the vector before the fix too)",
		nodes: []*nodeB{mkNode("disk-busy").alloc(corev1.ResourceEphemeralStorage, "10Gi"), mkNode("disk-idle").alloc(corev1.ResourceEphemeralStorage, "10Gi")},
		pods:  []client.Object{ptr(foreign("other", "disk-busy").req(corev1.ResourceEphemeralStorage, "8Gi").obj())},
		jobs:  []*tjB{mkTJ("ns", "a", 0).req(corev1.ResourceEphemeralStorage, "4Gi")},
		want:  []string{"ns/a-worker-a1-0@disk-idle"},
	}, {
		name:  "an opted-in pod counts a slot",
		nodes: []*nodeB{mkNode("busy").alloc(corev1.ResourcePods, "1"), mkNode("idle").alloc(corev1.ResourcePods, "110")},
		pods:  []client.Object{ptr(mkPod("plain").label(v1alpha1.OptInLabel, "BE").node("busy").obj()), ptr(mkPod("new").label(v1alpha1.OptInLabel, "BE").created(t0.Add(time.Second)).obj())},
		want:  []string{"ns/new@idle", "ns/plain@busy"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var os []client.Object
			caps := map[string]int64{}
			for _, n := range c.nodes {
				nd := n.obj()
				os = append(os, &nd)
				if q, ok := nd.Status.Allocatable[corev1.ResourcePods]; ok {
					caps[nd.Name] = q.Value()
				}
			}
			for _, j := range c.jobs {
				os = append(os, j.obj())
			}
			h := newHarness(t, "fifo", nil, append(os, c.pods...)...)
			for range 3 {
				h.cycle()
			}
			if d := cmp.Diff(c.want, h.bound()); d != "" {
				t.Errorf("bound pods (-want +got):\n%s", d)
			}
			for node, n := range h.podsOn() {
				if c, ok := caps[node]; ok && int64(n) > c {
					t.Errorf("node %s runs %d pods, allocatable %d", node, n, c)
				}
			}
		})
	}
}

// many is n single-replica jobs of 100m CPU, in name order.
func many(n int) []*tjB {
	var out []*tjB
	for i := range n {
		out = append(out, mkTJ("ns", fmt.Sprintf("j%02d", i), time.Duration(i)*time.Second).req(corev1.ResourceCPU, "100m"))
	}
	return out
}

// manyBound is where fifo binds many(n): the first k on first, the rest
// on second.
func manyBound(n, k int, first, second string) []string {
	var out []string
	for i := range n {
		node := first
		if i >= k {
			node = second
		}
		out = append(out, fmt.Sprintf("ns/j%02d-worker-a1-0@%s", i, node))
	}
	return out
}

// Item 7, the validator's part: a placement over a node's pods or
// extended resources is refused with the reason, and the cycle's earlier
// starts count; placeholder pods' slots are free for a real job.
func TestValidatorRefusesOverPodsAndExtended(t *testing.T) {
	const fpga = corev1.ResourceName("example.com/fpga")
	nodes := []corev1.Node{mkNode("n0").alloc(corev1.ResourcePods, "4").obj(), mkNode("n1").alloc(corev1.ResourcePods, "110").obj(),
		mkNode("n2").alloc(corev1.ResourcePods, "110").alloc(fpga, "2").obj()}
	ph := mkPod("ph").node("n0").label(v1alpha1.LabelPlaceholder, "p").obj()
	pods := []corev1.Pod{foreign("o1", "n0").obj(), foreign("o2", "n0").obj(), ph}
	jobs := []v1alpha1.TrainingJob{*mkTJ("ns", "two", 0).replicas(2, 2).obj(), *mkTJ("ns", "one", time.Second).obj(),
		*mkTJ("ns", "fpga", 2*time.Second).req(fpga, "3").obj(), *mkTJ("ns", "fpga1", 3*time.Second).req(fpga, "1").obj(),
		*mkTJ("ns", "fpga2", 4*time.Second).req(fpga, "2").obj()}
	at := func(n ...int) cluster.Placement {
		p := cluster.Placement{}
		for _, i := range n {
			p = append(p, cluster.Assignment{Node: i})
		}
		return p
	}
	v := view.Build(&view.World{Nodes: nodes, Pods: pods, Jobs: jobs}, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	a := apply.NewCycle(nil, v, nil)
	type step struct {
		job  string
		p    cluster.Placement
		want string
	}
	steps := []step{
		// n0: 4 slots, 2 other pods, 1 placeholder (free for a real job).
		{"ns/two", at(0, 0), ""},
		{"ns/one", at(0), "over capacity on node n0: Too many pods: 1 more, 4 of 4 allocatable in use"},
		{"ns/one", at(1), ""},
		// n1 has no FPGA: its node constraint refuses it.
		{"ns/fpga1", at(1), "node n1 refuses group worker: Insufficient example.com/fpga"},
		// n2's 2 FPGAs were free when the cycle began; the first start
		// takes one, so the cycle's ledger refuses 2 more.
		{"ns/fpga1", at(2), ""},
		{"ns/fpga2", at(2), "over capacity on node n2: Insufficient example.com/fpga: needs 2, 1 of 2 allocatable in use"},
	}
	for _, s := range steps {
		js := a.Job(s.job)
		// Through the shared validator, as the executor checks a Start.
		err := validate.Check(a, policy.Start{Job: s.job, Placement: s.p})
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			a.Take(js.Job, s.p, 1)
			js.Phase = cluster.Running
		}
		if got != s.want {
			t.Errorf("%s on %v: %q, want %q", s.job, s.p, got, s.want)
		}
	}
	// 3 FPGAs per replica: no node has them; held, not queued.
	if _, why := v.Held(); !strings.Contains(why["ns/fpga"], "Insufficient example.com/fpga") {
		t.Errorf("ns/fpga held for %q", why["ns/fpga"])
	}
}

// Item 6: a job that could not start even on the empty cluster is held out
// of the queue as Unschedulable (condition, reason, Warning Event) and
// does not block the jobs behind it under a head-of-line policy.
func TestImpossibleJobDoesNotBlockTheQueue(t *testing.T) {
	var nodes []client.Object
	for i := range 4 { // 16 GPUs
		nodes = append(nodes, ptr(mkNode(fmt.Sprintf("n%d", i)).obj()))
	}
	cases := []struct {
		name   string
		head   *tjB
		reason string // prefix of the head's status.reason
	}{
		{"8 GPUs per replica on nodes of 4", mkTJ("ns", "head", 0).req(view.GPUResource, "8"),
			"Unschedulable: no node can ever run a worker replica (cpu=1 gpu=8): 0/4 nodes are available: 4 Insufficient gpu"},
		{"a 1024-replica gang on 16 GPUs", mkTJ("ns", "head", 0).replicas(1024, 1024).req(view.GPUResource, "1"),
			"Unschedulable: group worker needs at least 1024 replicas of cpu=1 gpu=1; the 4 node(s) that may run them hold 16 even when empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			small := mkTJ("ns", "small", time.Second).req(view.GPUResource, "1")
			h := newHarness(t, "fifo", nil, append(nodes, c.head.obj(), small.obj())...)
			h.cycle()
			h.cycle()
			if d := cmp.Diff([]string{"ns/small-worker-a1-0@n0"}, h.bound()); d != "" {
				t.Errorf("bound (-want +got):\n%s", d)
			}
			head := h.job("ns", "head")
			if !strings.HasPrefix(head.Status.Reason, c.reason) || head.Status.Phase != v1alpha1.PhasePending {
				t.Errorf("head: phase %s reason %q, want Pending %q", head.Status.Phase, head.Status.Reason, c.reason)
			}
			if got := condition(head, "Unschedulable"); got != "True Unschedulable" {
				t.Errorf("head's Unschedulable condition %q", got)
			}
			if ev := h.events(); !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "Warning Unschedulable "+c.reason) }) {
				t.Errorf("no Warning Unschedulable event in %q", ev)
			}
		})
	}
}

// Item 6: what "impossible" means. Judged against the nodes there are now
// (each empty), cordoned ones included, re-examined every cycle; a
// catalogue type an autoscaler could add makes nothing impossible.
func TestBuildHoldsImpossibleJobs(t *testing.T) {
	nodes := func(n int, gpu string) []corev1.Node {
		var out []corev1.Node
		for i := range n {
			out = append(out, testNode(fmt.Sprintf("n%02d", i), "16", gpu, true))
		}
		return out
	}
	cordoned := nodes(4, "4")
	cordoned[3].Spec.Unschedulable = true
	big := cluster.InstanceType{Name: "big", Capacity: view.Vector(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), view.GPUResource: resource.MustParse("8")})}
	twoGroups := mkTJ("ns", "j", 0).replicas(3, 3).req(view.GPUResource, "4").obj()
	ps := twoGroups.Spec.ReplicaGroups[0]
	ps.Name, ps.Replicas = "ps", 2
	twoGroups.Spec.ReplicaGroups = append(twoGroups.Spec.ReplicaGroups, ps)
	cases := []struct {
		name    string
		nodes   []corev1.Node
		catalog []cluster.InstanceType
		job     *v1alpha1.TrainingJob
		held    string // prefix; "" for queued
	}{
		{"8 GPUs per replica on 50 nodes of 4", nodes(50, "4"), nil, mkTJ("ns", "j", 0).req(view.GPUResource, "8").obj(),
			"Unschedulable: no node can ever run a worker replica (cpu=1 gpu=8): 0/50 nodes are available: 50 Insufficient gpu"},
		{"1024 replicas of 1 GPU on 16 GPUs", nodes(4, "4"), nil, mkTJ("ns", "j", 0).replicas(1024, 1024).req(view.GPUResource, "1").obj(),
			"Unschedulable: group worker needs at least 1024 replicas of cpu=1 gpu=1; the 4 node(s) that may run them hold 16 even when empty"},
		{"16 replicas of 1 GPU on 16 GPUs, busy or not", nodes(4, "4"), nil, mkTJ("ns", "j", 0).replicas(16, 16).req(view.GPUResource, "1").obj(), ""},
		{"a cordoned node counts (it may come back)", cordoned, nil, mkTJ("ns", "j", 0).replicas(16, 16).req(view.GPUResource, "1").obj(), ""},
		{"elastic: the minimum is what must fit", nodes(4, "4"), nil, mkTJ("ns", "j", 0).replicas(1024, 8).req(view.GPUResource, "1").obj(), ""},
		{"a catalogue type an autoscaler may add", nodes(4, "4"), []cluster.InstanceType{big}, mkTJ("ns", "j", 0).replicas(1024, 1024).req(view.GPUResource, "1").obj(), ""},
		{"two groups on shared nodes", nodes(4, "4"), nil, twoGroups,
			"Unschedulable: the job's minimum replicas need cpu=5 gpu=20, more gpu than the nodes that may run them have even when empty (cpu=64 memory=256Gi gpu=16)"},
		{"pods per node bound replicas per node", []corev1.Node{mkNode("a").alloc(corev1.ResourcePods, "2").obj()}, nil,
			mkTJ("ns", "j", 0).replicas(3, 3).req(corev1.ResourceCPU, "100m").obj(),
			"Unschedulable: group worker needs at least 3 replicas of cpu=0.1; the 1 node(s) that may run them hold 2 even when empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := view.Build(&view.World{Nodes: c.nodes, Jobs: []v1alpha1.TrainingJob{*c.job}}, t0, view.Options{DefaultDuration: 100, Catalog: c.catalog})
			_, why := v.Held()
			got := why["ns/j"]
			if (c.held == "") != (got == "") || !strings.HasPrefix(got, c.held) {
				t.Errorf("held for %q, want %q", got, c.held)
			}
			if (got == "") != (v.Snap.Pending.Len() == 1) {
				t.Errorf("queue %v with reason %q", queueIDs(v), got)
			}
		})
	}
}

// Item 5: namespace ResourceQuota is admission, as in Kueue. Four 4-GPU
// jobs in a namespace whose GPU quota is 0 wait with the quota's reason
// and hold nothing; the other namespace's job starts. Before the fix the
// four were Admitted, their pods refused every cycle while their GPUs
// stayed charged, and team-b's job waited.
func TestQuotaAdmission(t *testing.T) {
	var os []client.Object
	for i := range 4 {
		os = append(os, ptr(mkNode(fmt.Sprintf("n%d", i)).obj()))
	}
	for i := range 4 {
		os = append(os, mkTJ("team-a", fmt.Sprintf("a%d", i), time.Duration(i)*time.Second).req(view.GPUResource, "4").obj())
	}
	os = append(os, mkTJ("team-b", "b", 10*time.Second).req(view.GPUResource, "4").obj())
	gpu := corev1.ResourceName("requests.nvidia.com/gpu")
	q := quota("team-a", "gpu", corev1.ResourceList{gpu: resource.MustParse("0")}, corev1.ResourceList{gpu: resource.MustParse("0")})
	// The fake client has no quota admission: refuse as the API server
	// would.
	refuse := func(p *corev1.Pod) error {
		if p.Namespace == "team-a" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name,
				errors.New("exceeded quota: gpu, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=0"))
		}
		return nil
	}
	h := newHarness(t, "fifo", refuse, append(os, q)...)
	for range 3 {
		h.cycle()
	}
	if d := cmp.Diff([]string{"team-b/b-worker-a1-0@n0"}, h.bound()); d != "" {
		t.Errorf("bound (-want +got):\n%s", d)
	}
	want := "QuotaExceeded: namespace team-a: exceeded quota: gpu, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=0"
	for i := range 4 {
		tj := h.job("team-a", fmt.Sprintf("a%d", i))
		got := fmt.Sprintf("%s %q %s placement=%v", tj.Status.Phase, tj.Status.Reason, condition(tj, "Unschedulable"), tj.Status.Placement)
		if w := fmt.Sprintf("Pending %q True QuotaExceeded placement=[]", want); got != w {
			t.Errorf("a%d: %s, want %s", i, got, w)
		}
	}
	if h.creates != 1 {
		t.Errorf("%d pod creations tried, want 1 (team-b's)", h.creates)
	}
	// Raising the quota lets them in, as far as it goes.
	q = &corev1.ResourceQuota{}
	if err := h.cl.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "gpu"}, q); err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[gpu] = resource.MustParse("8")
	if err := h.cl.Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, "fifo", nil, append(os, q)...)
	h2.cycle()
	if d := cmp.Diff([]string{"team-a/a0-worker-a1-0@n0", "team-a/a1-worker-a1-0@n1", "team-b/b-worker-a1-0@n2"}, h2.bound()); d != "" {
		t.Errorf("with 8 GPUs of quota, bound (-want +got):\n%s", d)
	}
}

// Item 5: a pod the API server refuses makes its job release what it
// holds and wait with the server's message (condition Admitted=False,
// Warning Event), or fail when the refusal cannot change (Pod Security,
// an invalid spec). The job behind it gets the room; a waiting job is
// retried after the backoff.
func TestRefusedPodsReleaseTheJob(t *testing.T) {
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(msg))
	}
	cases := []struct {
		name   string
		err    error
		phase  v1alpha1.TrainingJobPhase
		reason string // prefix of status.reason
		cond   string // the condition that says so
		event  string // prefix
	}{{
		name:   "a quota drover does not model (scoped)",
		err:    forbidden("exceeded quota: scoped, requested: pods=1, used: pods=5, limited: pods=5"),
		phase:  v1alpha1.PhasePending,
		reason: "QuotaExceeded: the API server refuses replica pod ns/big-worker-a1-",
		cond:   "Admitted=False QuotaExceeded",
		event:  "Warning QuotaExceeded the API server refuses replica pod ns/big-worker-a1-",
	}, {
		name:   "an admission webhook",
		err:    forbidden(`admission webhook "deny.example.com" denied the request: no GPUs on Fridays`),
		phase:  v1alpha1.PhasePending,
		reason: "PodRefused: the API server refuses replica pod ns/big-worker-a1-",
		cond:   "Admitted=False PodRefused",
		event:  "Warning PodRefused the API server refuses replica pod ns/big-worker-a1-",
	}, {
		name:   "Pod Security",
		err:    forbidden(`violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`),
		phase:  v1alpha1.PhaseFailed,
		reason: "PodSecurity: the API server refuses replica pod ns/big-worker-a1-",
		cond:   "Failed=True Failed",
		event:  "Warning Failed PodSecurity: the API server refuses replica pod ns/big-worker-a1-",
	}, {
		name:   "an invalid spec",
		err:    apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil),
		phase:  v1alpha1.PhaseFailed,
		reason: "InvalidPod: the API server refuses replica pod ns/big-worker-a1-",
		cond:   "Failed=True Failed",
		event:  "Warning Failed InvalidPod: the API server refuses replica pod ns/big-worker-a1-",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// big takes both nodes' GPUs; small waits behind it.
			big := mkTJ("ns", "big", 0).replicas(2, 2).req(view.GPUResource, "4").obj()
			small := mkTJ("ns", "small", time.Second).req(view.GPUResource, "4").obj()
			refuse := func(p *corev1.Pod) error {
				if strings.HasPrefix(p.Name, "big-") && strings.HasSuffix(p.Name, "-1") {
					return c.err // the second replica: the first was created
				}
				return nil
			}
			h := newHarness(t, "fifo", refuse, ptr(mkNode("n0").obj()), ptr(mkNode("n1").obj()), big, small)
			h.cycle()
			tj := h.job("ns", "big")
			cond := "Admitted=" + condition(tj, "Admitted")
			if f := condition(tj, "Failed"); f != "" {
				cond = "Failed=" + f
			}
			got := fmt.Sprintf("%s placement=%v", tj.Status.Phase, tj.Status.Placement)
			if want := fmt.Sprintf("%s placement=[]", c.phase); got != want || !strings.HasPrefix(tj.Status.Reason, c.reason) {
				t.Errorf("big: %s reason %q, want %s %q...", got, tj.Status.Reason, want, c.reason)
			}
			if !strings.Contains(tj.Status.Reason, c.err.Error()) {
				t.Errorf("big's reason %q lacks the server's message %q", tj.Status.Reason, c.err.Error())
			}
			if cond != c.cond {
				t.Errorf("big's condition %q, want %q", cond, c.cond)
			}
			if ev := h.events(); !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, c.event) }) {
				t.Errorf("no event %q in %q", c.event, ev)
			}
			// Nothing of big is left, and small starts in its room.
			h.cycle()
			h.cycle()
			if d := cmp.Diff([]string{"ns/small-worker-a1-0@n0"}, h.bound()); d != "" {
				t.Errorf("bound (-want +got):\n%s", d)
			}
			if c.phase == v1alpha1.PhasePending {
				// Held for the backoff, then offered again: with small
				// running there is no room, so it just waits.
				before := h.creates
				h.now = h.now.Add(10 * time.Second)
				h.cycle()
				if h.creates != before {
					t.Errorf("big retried within the backoff")
				}
			}
		})
	}
}

// Item 5: a refused job is retried once the backoff is over.
func TestRefusedJobRetriedAfterBackoff(t *testing.T) {
	refusing := true
	refuse := func(p *corev1.Pod) error {
		if refusing {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name, errors.New(`admission webhook "w" denied the request`))
		}
		return nil
	}
	h := newHarness(t, "fifo", refuse, ptr(mkNode("n0").obj()), mkTJ("ns", "a", 0).obj())
	h.cycle()
	if tj := h.job("ns", "a"); tj.Status.Phase != v1alpha1.PhasePending {
		t.Fatalf("phase %s after the refusal", tj.Status.Phase)
	}
	refusing = false
	h.now = h.now.Add(5 * time.Second)
	h.cycle()
	if len(h.bound()) != 0 {
		t.Fatalf("retried within the backoff: %v", h.bound())
	}
	h.now = h.now.Add(time.Minute)
	h.cycle()
	if d := cmp.Diff([]string{"ns/a-worker-a2-0@n0"}, h.bound()); d != "" {
		t.Errorf("after the backoff, bound (-want +got):\n%s", d)
	}
	if tj := h.job("ns", "a"); tj.Status.Phase != v1alpha1.PhaseAdmitted || condition(tj, "Admitted") != "True Placed" {
		t.Errorf("phase %s, Admitted %q", tj.Status.Phase, condition(tj, "Admitted"))
	}
}

// Item 5: an elastic job (1 to 4 workers of 1 GPU, asking for 4) under a
// GPU quota of 2 starts with the 2 workers the quota allows, and is not
// grown past it. Before the fix its 4 pods were created until the quota
// refused the third, and the job held its placement of 4.
func TestElasticJobWithinQuota(t *testing.T) {
	gpu := corev1.ResourceName("requests.nvidia.com/gpu")
	q := quota("ns", "gpu", corev1.ResourceList{gpu: resource.MustParse("2")}, corev1.ResourceList{gpu: resource.MustParse("0")})
	used := 0
	refuse := func(p *corev1.Pod) error { // the quota admission, on the fake client
		if used+1 > 2 {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name,
				fmt.Errorf("exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=%d, limited: requests.nvidia.com/gpu=2", used))
		}
		used++
		return nil
	}
	h := newHarness(t, "elastic", refuse, ptr(mkNode("n0").alloc(view.GPUResource, "8").obj()), q,
		mkTJ("ns", "e", 0).replicas(4, 1).req(view.GPUResource, "1").obj())
	for range 4 {
		h.cycle()
		// The quota controller's part: used follows the pods.
		cur := &corev1.ResourceQuota{}
		if err := h.cl.Get(context.Background(), client.ObjectKeyFromObject(q), cur); err != nil {
			t.Fatal(err)
		}
		cur.Status.Used[gpu] = *resource.NewQuantity(int64(used), resource.DecimalSI)
		if err := h.cl.Update(context.Background(), cur); err != nil { // no status subresource on the fake
			t.Fatal(err)
		}
	}
	tj := h.job("ns", "e")
	got := fmt.Sprintf("%s %v bound=%d", tj.Status.Phase, tj.Status.Placement, len(h.bound()))
	if want := "Admitted [{worker n0 2}] bound=2"; got != want {
		t.Errorf("elastic job: %s, want %s (reason %q)", got, want, tj.Status.Reason)
	}
}
