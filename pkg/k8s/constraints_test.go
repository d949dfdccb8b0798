package k8s

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// podB builds pods for these tests, in the style of kube-scheduler's
// st.MakePod().
type podB struct{ p corev1.Pod }

func mkPod(name string) *podB {
	return &podB{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0),
		Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{SchedulerName: "drover", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), view.GPUResource: resource.MustParse("1")}}}}}}}
}
func (b *podB) label(k, v string) *podB { b.p.Labels[k] = v; return b }
func (b *podB) created(t time.Time) *podB {
	b.p.CreationTimestamp = metav1.NewTime(t)
	return b
}
func (b *podB) gang(pg, rtype string) *podB {
	return b.label(view.LabelPodGroup, pg).label(view.LabelReplicaType, rtype)
}
func (b *podB) node(n string) *podB { b.p.Spec.NodeName = n; return b }
func (b *podB) selector(k, v string) *podB {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}
func (b *podB) tolerate(k string) *podB {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists})
	return b
}
func (b *podB) gate(name string) *podB {
	b.p.Spec.SchedulingGates = append(b.p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return b
}
func (b *podB) obj() corev1.Pod { return b.p }

// nodeB builds nodes.
type nodeB struct{ n corev1.Node }

func mkNode(name string) *nodeB { return &nodeB{testNode(name, "8", "4", true)} }
func (b *nodeB) label(k, v string) *nodeB {
	if b.n.Labels == nil {
		b.n.Labels = map[string]string{}
	}
	b.n.Labels[k] = v
	return b
}
func (b *nodeB) taint(k, v string, eff corev1.TaintEffect) *nodeB {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: k, Value: v, Effect: eff})
	return b
}
func (b *nodeB) obj() corev1.Node { return b.n }

func queueIDs(v *view.View) []string {
	var q []string
	for js := range v.Snap.Pending.All() {
		q = append(q, js.Job.ID)
	}
	return q
}

// The snapshot carries node labels and taints, each opted-in pod's and
// TrainingJob template's constraints, and keeps out of the queue (held,
// with the reason) pods with scheduling gates and jobs no node could ever
// accept.
func TestBuildConstraints(t *testing.T) {
	gpuTaint := corev1.TaintEffectNoSchedule
	tj := testJob("tj-pool", t0.Add(5*time.Second), 1, "1", "1")
	tj.Spec.ReplicaGroups[0].Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	tj.Spec.ReplicaGroups[0].Template.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
	tjGated := testJob("tj-gated", t0.Add(6*time.Second), 1, "1", "1")
	tjGated.Spec.ReplicaGroups[0].Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
	w := &view.World{
		Nodes: []corev1.Node{
			mkNode("gpu-0").label("pool", "gpu").taint("nvidia.com/gpu", "", gpuTaint).obj(),
			mkNode("cpu-0").label("pool", "cpu").obj(),
		},
		Jobs: []v1alpha1.TrainingJob{tj, tjGated},
		Pods: []corev1.Pod{
			mkPod("plain").label(v1alpha1.OptInLabel, "BE").created(t0.Add(1 * time.Second)).obj(),
			mkPod("pool").label(v1alpha1.OptInLabel, "BE").selector("pool", "gpu").tolerate("nvidia.com/gpu").created(t0.Add(2 * time.Second)).obj(),
			mkPod("nowhere").label(v1alpha1.OptInLabel, "BE").selector("pool", "tpu").created(t0.Add(3 * time.Second)).obj(),
			mkPod("gated").label(v1alpha1.OptInLabel, "BE").gate("example.com/wait").created(t0.Add(4 * time.Second)).obj(),
		},
	}
	v := view.Build(w, t0.Add(time.Minute), view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if d := cmp.Diff([]string{"pod:ns/plain", "pod:ns/pool", "ns/tj-pool"}, queueIDs(v)); d != "" {
		t.Errorf("queue (-want +got):\n%s", d)
	}
	ids, why := v.Held()
	if d := cmp.Diff([]string{"pod:ns/nowhere", "pod:ns/gated", "ns/tj-gated"}, ids); d != "" {
		t.Errorf("held (-want +got):\n%s", d)
	}
	for id, want := range map[string]string{
		"pod:ns/nowhere": "Unschedulable: no node can ever run a pod replica (cpu=1 gpu=1): 0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {nvidia.com/gpu: }",
		"pod:ns/gated":   "SchedulingGated: waiting for scheduling gates to be removed: example.com/wait",
		"ns/tj-gated":    "SchedulingGated: waiting for scheduling gates to be removed: example.com/quota",
	} {
		if why[id] != want {
			t.Errorf("%s held for %q, want %q", id, why[id], want)
		}
	}
	// Which nodes each queued job may use.
	gpu, cpu := v.Snap.Nodes[1], v.Snap.Nodes[0] // indexed by name: cpu-0, gpu-0
	want := map[string][2]bool{"pod:ns/plain": {false, true}, "pod:ns/pool": {true, false}, "ns/tj-pool": {true, false}}
	for js := range v.Snap.Pending.All() {
		got := [2]bool{placement.Eligible(gpu, js.Job, 0), placement.Eligible(cpu, js.Job, 0)}
		if got != want[js.Job.ID] {
			t.Errorf("%s eligible on (gpu-0, cpu-0) = %v, want %v", js.Job.ID, got, want[js.Job.ID])
		}
	}
	// The policy places every queued job where it may go.
	acts := baseline.NewFIFO(placement.Spread).Schedule(v.Snap)
	for _, a := range acts {
		s, ok := a.(policy.Start)
		if !ok {
			t.Errorf("action %v", a)
			continue
		}
		n := v.Snap.Nodes[s.Placement[0].Node].Name
		if want := map[string]string{"pod:ns/plain": "cpu-0", "pod:ns/pool": "gpu-0", "ns/tj-pool": "gpu-0"}[s.Job]; n != want {
			t.Errorf("%s placed on %s, want %s", s.Job, n, want)
		}
	}
	if len(acts) != 3 {
		t.Errorf("%d actions, want 3 starts", len(acts))
	}
}

// A cordoned node takes nothing: it is not ready for placement.
func TestBuildCordonedNode(t *testing.T) {
	cordoned := mkNode("a").obj()
	cordoned.Spec.Unschedulable = true
	w := &view.World{Nodes: []corev1.Node{cordoned, mkNode("b").obj()}, Pods: []corev1.Pod{mkPod("p").label(v1alpha1.OptInLabel, "BE").obj()}}
	v := view.Build(w, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if v.Snap.Nodes[0].Ready || !v.Snap.Nodes[1].Ready {
		t.Fatalf("ready: a %v b %v", v.Snap.Nodes[0].Ready, v.Snap.Nodes[1].Ready)
	}
	for _, a := range baseline.NewFIFO(placement.FirstFit).Schedule(v.Snap) {
		if s, ok := a.(policy.Start); ok && s.Placement[0].Node == 0 {
			t.Errorf("placed on the cordoned node: %v", a)
		}
	}
}

// A node whose labels or taints change resets the cached eligible sets.
func TestBuildEligibilityFollowsNodeChanges(t *testing.T) {
	table, elig := view.NewNodeTable(), cluster.NewEligibility()
	o := view.Options{DefaultDuration: 100, SchedulerName: "drover", Nodes: table, Eligibility: elig}
	pods := []corev1.Pod{mkPod("p").label(v1alpha1.OptInLabel, "BE").obj()}
	w := &view.World{Nodes: []corev1.Node{mkNode("a").obj()}, Pods: pods}
	v := view.Build(w, t0, o)
	if n := v.Snap.Pending.Len(); n != 1 {
		t.Fatalf("queue %d", n)
	}
	w = &view.World{Nodes: []corev1.Node{mkNode("a").taint("k", "v", corev1.TaintEffectNoExecute).obj()}, Pods: pods}
	v = view.Build(w, t0, o)
	if n := v.Snap.Pending.Len(); n != 0 {
		t.Fatalf("after the node was tainted the pod is still queued")
	}
	if _, why := v.Held(); !strings.Contains(why["pod:ns/p"], "untolerated taint {k: v}") {
		t.Errorf("held for %q", why["pod:ns/p"])
	}
}

func podGroup(name string, min int32) schedv1alpha1.PodGroup {
	return schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0), Annotations: map[string]string{}},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: min}}
}

// Pods of a PodGroup are one job: held until minMember pods exist, then
// queued with one replica group per replica type, bound together.
func TestBuildGangs(t *testing.T) {
	pg := podGroup("pt", 3)
	master := mkPod("pt-master-0").gang("pt", "Master").obj()
	w0 := mkPod("pt-worker-0").gang("pt", "Worker").obj()
	w1 := mkPod("pt-worker-1").gang("pt", "Worker").obj()
	nodes := []corev1.Node{mkNode("a").obj(), mkNode("b").obj()}

	v := view.Build(&view.World{Nodes: nodes, Pods: []corev1.Pod{master, w0}, PodGroups: []schedv1alpha1.PodGroup{pg}}, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if v.Snap.Pending.Len() != 0 {
		t.Fatalf("an incomplete gang (2 of 3 pods) is queued: %v", queueIDs(v))
	}
	if gj := v.Gangs[view.GangJobID("ns", "pt")]; gj == nil || gj.Waiting != "waiting for the gang's pods: 2 of minMember 3 exist" {
		t.Fatalf("incomplete gang: %+v", gj)
	}

	pg.Annotations[view.AnnotationPreemptions] = "1"
	v = view.Build(&view.World{Nodes: nodes, Pods: []corev1.Pod{w1, master, w0}, PodGroups: []schedv1alpha1.PodGroup{pg}}, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if d := cmp.Diff([]string{"podgroup:ns/pt"}, queueIDs(v)); d != "" {
		t.Fatalf("queue (-want +got):\n%s", d)
	}
	js := v.Snap.Pending.Head()
	var groups []string
	for _, g := range js.Job.Groups {
		groups = append(groups, g.Name+"x"+string(rune('0'+g.Replicas)))
	}
	if d := cmp.Diff([]string{"masterx1", "workerx2"}, groups); d != "" || js.Preemptions != 1 {
		t.Errorf("groups (-want +got):\n%s; preemptions %d", d, js.Preemptions)
	}
	// All or nothing: with room for two of the three pods, nothing starts.
	small := []corev1.Node{testNode("a", "8", "2", true)}
	v = view.Build(&view.World{Nodes: small, Pods: []corev1.Pod{w1, master, w0}, PodGroups: []schedv1alpha1.PodGroup{pg}}, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	for _, a := range baseline.NewFIFO(placement.Spread).Schedule(v.Snap) {
		if _, ok := a.(policy.Start); ok {
			t.Errorf("a gang of 3 GPUs started on a node of 2: %v", a)
		}
	}
	// Bound pods make it Running on their nodes.
	bound := []corev1.Pod{mkPod("pt-master-0").gang("pt", "master").node("a").obj(), mkPod("pt-worker-0").gang("pt", "worker").node("b").obj(),
		mkPod("pt-worker-1").gang("pt", "worker").node("b").obj()}
	v = view.Build(&view.World{Nodes: nodes, Pods: bound, PodGroups: []schedv1alpha1.PodGroup{pg}}, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if len(v.Snap.Running) != 1 || v.Snap.Running[0].Phase != cluster.Running || len(v.Snap.Running[0].Placement) != 3 {
		t.Fatalf("running %v", v.Snap.Running)
	}
	if g := v.Snap.Nodes[1].Allocated[2]; g != 2 {
		t.Errorf("node b has %d GPUs allocated, want 2", g)
	}
}
