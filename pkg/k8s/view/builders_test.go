package view

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	dres "github.com/drover-sched/drover/pkg/resource"
)

// Builders of the objects a snapshot is read from, in the shape of
// kube-scheduler's st.MakePod(): each returns the object with .obj().

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type nodeB struct{ n corev1.Node }

func makeNode(name string) *nodeB {
	b := &nodeB{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("64Gi"), GPUResource: resource.MustParse("4")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}}
	return b
}

func (b *nodeB) gpu(q string) *nodeB {
	b.n.Status.Allocatable[GPUResource] = resource.MustParse(q)
	return b
}

func (b *nodeB) notReady() *nodeB {
	b.n.Status.Conditions[0].Status = corev1.ConditionFalse
	return b
}

func (b *nodeB) label(k, v string) *nodeB {
	if b.n.Labels == nil {
		b.n.Labels = map[string]string{}
	}
	b.n.Labels[k] = v
	return b
}

func (b *nodeB) obj() corev1.Node { return b.n }

type jobB struct{ j v1alpha1.TrainingJob }

// makeJob is a BE TrainingJob in namespace ns with one worker group of
// replicas pods, each requesting 2 CPUs and 1 GPU.
func makeJob(name string, created time.Time, replicas int32) *jobB {
	return &jobB{testJob(name, created, replicas, "2", "1")}
}

func (b *jobB) gpu(q string) *jobB {
	b.j.Spec.ReplicaGroups[0].Template.Spec.Containers[0].Resources.Requests[GPUResource] = resource.MustParse(q)
	return b
}

func (b *jobB) running(node string, count int32) *jobB {
	b.j.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1,
		Placement: []v1alpha1.Assignment{{Group: "worker", Node: node, Count: count}}}
	return b
}

func (b *jobB) suspended(requeued time.Time) *jobB {
	r := metav1.NewTime(requeued)
	b.j.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseSuspended, Attempt: 1, RequeuedAt: &r}
	return b
}

func (b *jobB) phase(p v1alpha1.TrainingJobPhase) *jobB {
	b.j.Status.Phase = p
	return b
}

func (b *jobB) obj() v1alpha1.TrainingJob { return b.j }

type podB struct{ p corev1.Pod }

// makePod is a pod in namespace ns on node requesting cpu CPUs.
func makePod(name, node, cpu string) *podB {
	return &podB{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
}

// replicaOf makes the pod a replica of job's worker group, attempt 1.
func (b *podB) replicaOf(job string) *podB {
	b.p.Labels = map[string]string{v1alpha1.LabelJob: job, v1alpha1.LabelGroup: "worker", v1alpha1.LabelAttempt: "1"}
	b.p.Annotations = map[string]string{v1alpha1.AnnotationNode: b.p.Spec.NodeName}
	b.p.Spec.Containers[0].Resources.Requests[GPUResource] = resource.MustParse("1")
	return b
}

// gang makes the pod drover's, a member of PodGroup pg.
func (b *podB) gang(pg string) *podB {
	b.p.Spec.SchedulerName = "drover"
	b.p.Labels = map[string]string{LabelPodGroup: pg}
	return b
}

func (b *podB) deleting(at time.Time) *podB {
	t := metav1.NewTime(at)
	b.p.DeletionTimestamp = &t
	return b
}

func (b *podB) obj() corev1.Pod { return b.p }

func testJob(name string, created time.Time, replicas int32, cpu, gpu string) v1alpha1.TrainingJob {
	return v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created), UID: types.UID("uid-" + name)},
		Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE, ReplicaGroups: []v1alpha1.ReplicaGroup{{Name: "worker", Replicas: replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), GPUResource: resource.MustParse(gpu)}}}}}}}}}}
}

// summary is what a table case checks of a built view.
type summary struct {
	Nodes   []string          // name:ready, in index order
	Queue   []string          // pending job IDs, head first
	Running map[string]string // job ID: phase
	Held    map[string]string // job ID: reason
	Used    map[string]string // node: allocated/releasing CPU millicores and GPUs, for nodes in use
	Invalid []string          // jobs kept aside with an error
}

func summarise(v *View) summary {
	var s summary
	for _, n := range v.Snap.Nodes {
		s.Nodes = append(s.Nodes, fmt.Sprintf("%s:%v", n.Name, n.Ready))
		if !n.Allocated.IsZero() || !n.Releasing.IsZero() {
			if s.Used == nil {
				s.Used = map[string]string{}
			}
			s.Used[n.Name] = fmt.Sprintf("cpu %d gpu %d releasing cpu %d", n.Allocated[dres.CPU], n.Allocated[dres.GPU], n.Releasing[dres.CPU])
		}
	}
	for js := range v.Snap.Pending.All() {
		s.Queue = append(s.Queue, js.Job.ID)
	}
	for _, js := range v.Snap.Running {
		if s.Running == nil {
			s.Running = map[string]string{}
		}
		s.Running[js.Job.ID] = js.Phase.String()
	}
	order, held := v.Held()
	for _, id := range order {
		if s.Held == nil {
			s.Held = map[string]string{}
		}
		s.Held[id] = held[id]
	}
	for k, jv := range v.Jobs {
		if jv.Invalid != nil {
			s.Invalid = append(s.Invalid, k)
		}
	}
	sort.Strings(s.Invalid)
	return s
}

// TestBuildTable reads worlds of objects into snapshots, client-free.
func TestBuildTable(t *testing.T) {
	now := t0.Add(time.Minute)
	cases := []struct {
		name string
		w    World
		want summary
	}{{
		name: "empty",
	}, {
		name: "nodes in name order, readiness kept",
		w:    World{Nodes: []corev1.Node{makeNode("b").obj(), makeNode("a").notReady().obj()}},
		want: summary{Nodes: []string{"a:false", "b:true"}},
	}, {
		name: "pending jobs in arrival order, finished jobs left out",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			Jobs: []v1alpha1.TrainingJob{makeJob("late", t0.Add(2*time.Second), 1).obj(), makeJob("early", t0, 1).obj(),
				makeJob("done", t0, 1).phase(v1alpha1.PhaseSucceeded).obj()}},
		want: summary{Nodes: []string{"a:true"}, Queue: []string{"ns/early", "ns/late"}},
	}, {
		name: "a preempted job with no pods left heads the queue",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			Jobs: []v1alpha1.TrainingJob{makeJob("first", t0, 1).obj(), makeJob("sus", t0.Add(time.Second), 1).suspended(t0.Add(30 * time.Second)).obj()}},
		want: summary{Nodes: []string{"a:true"}, Queue: []string{"ns/sus", "ns/first"}},
	}, {
		name: "a running job is charged its whole placement before its pods are seen",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			Jobs: []v1alpha1.TrainingJob{makeJob("run", t0, 2).running("a", 2).obj()},
			Pods: []corev1.Pod{makePod("run-worker-0", "a", "2").replicaOf("run").obj()}},
		want: summary{Nodes: []string{"a:true"}, Running: map[string]string{"ns/run": "Running"},
			Used: map[string]string{"a": "cpu 4000 gpu 2 releasing cpu 0"}},
	}, {
		name: "a suspended job's terminating pod is still charged to its node, as releasing",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			Jobs: []v1alpha1.TrainingJob{makeJob("susp", t0, 1).suspended(t0.Add(30 * time.Second)).obj()},
			Pods: []corev1.Pod{makePod("susp-worker-0", "a", "2").replicaOf("susp").deleting(now.Add(10 * time.Second)).obj()}},
		want: summary{Nodes: []string{"a:true"}, Running: map[string]string{"ns/susp": "Suspending"},
			Used: map[string]string{"a": "cpu 2000 gpu 1 releasing cpu 2000"}},
	}, {
		name: "a pod drover does not manage takes room on its node",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			Pods: []corev1.Pod{makePod("other", "a", "1").obj()}},
		want: summary{Nodes: []string{"a:true"}, Used: map[string]string{"a": "cpu 1000 gpu 0 releasing cpu 0"}},
	}, {
		name: "a job no node could ever hold is held, not queued",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			Jobs: []v1alpha1.TrainingJob{makeJob("big", t0, 1).gpu("8").obj(), makeJob("fits", t0, 1).obj()}},
		want: summary{Nodes: []string{"a:true"}, Queue: []string{"ns/fits"}, Held: map[string]string{"ns/big": "Unschedulable: no node can ever run a worker replica (cpu=2 gpu=8): 0/1 nodes are available: 1 Insufficient gpu"}},
	}, {
		name: "a job without replica groups is kept aside as invalid",
		w: World{Nodes: []corev1.Node{makeNode("a").label(LabelRole, "gpu").obj()},
			Jobs: []v1alpha1.TrainingJob{func() v1alpha1.TrainingJob {
				j := makeJob("bad", t0, 1).obj()
				j.Spec.ReplicaGroups = nil
				return j
			}()}},
		want: summary{Nodes: []string{"a:true"}, Invalid: []string{"ns/bad"}},
	}, {
		name: "a PodGroup gang with minMember pods is one pending job",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			PodGroups: []schedv1alpha1.PodGroup{podGroup("pg", 2)},
			Pods:      []corev1.Pod{makePod("pg-0", "", "1").gang("pg").obj(), makePod("pg-1", "", "1").gang("pg").obj()}},
		want: summary{Nodes: []string{"a:true"}, Queue: []string{"podgroup:ns/pg"}},
	}, {
		name: "a PodGroup gang short of minMember pods is not queued",
		w: World{Nodes: []corev1.Node{makeNode("a").obj()},
			PodGroups: []schedv1alpha1.PodGroup{podGroup("pg", 3)},
			Pods:      []corev1.Pod{makePod("pg-0", "", "1").gang("pg").obj(), makePod("pg-1", "", "1").gang("pg").obj()}},
		want: summary{Nodes: []string{"a:true"}},
	}, {
		name: "a gang whose members are bound runs on their nodes",
		w: World{Nodes: []corev1.Node{makeNode("a").obj(), makeNode("b").obj()},
			PodGroups: []schedv1alpha1.PodGroup{podGroup("pg", 2)},
			Pods:      []corev1.Pod{makePod("pg-0", "a", "1").gang("pg").obj(), makePod("pg-1", "b", "1").gang("pg").obj()}},
		want: summary{Nodes: []string{"a:true", "b:true"}, Running: map[string]string{"podgroup:ns/pg": "Running"},
			Used: map[string]string{"a": "cpu 1000 gpu 0 releasing cpu 0", "b": "cpu 1000 gpu 0 releasing cpu 0"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Build(&c.w, now, Options{DefaultDuration: 100, StuckAfter: time.Minute, SchedulerName: "drover"})
			if d := cmp.Diff(c.want, summarise(v)); d != "" {
				t.Errorf("Build (-want +got):\n%s", d)
			}
		})
	}
}

func podGroup(name string, minMember int32) schedv1alpha1.PodGroup {
	return schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0)},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: minMember}}
}
