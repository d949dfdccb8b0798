package k8s

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// The jobs a gang becomes, by how many of its members are bound.
func TestGangJobs(t *testing.T) {
	nodes := []corev1.Node{mkNode("a").obj(), mkNode("b").obj()} // 4 GPUs each
	type want struct {
		queue    []string
		running  []string // job ID x placements
		replicas map[string]int32
		waiting  string
	}
	mk := func(name, rtype, node string) corev1.Pod {
		b := mkPod(name).gang("pg", rtype)
		if node != "" {
			b = b.node(node)
		}
		return b.obj()
	}
	withRes := podGroup("pg", 2)
	withRes.Spec.MinResources = corev1.ResourceList{view.GPUResource: resource.MustParse("8")}
	for _, tc := range []struct {
		name string
		pg   *schedv1alpha1.PodGroup
		pods []corev1.Pod
		want want
	}{
		{"minMember 2 of 4: the first two are the gang", ptr(podGroup("pg", 2)),
			[]corev1.Pod{mk("pg-worker-0", "worker", ""), mk("pg-worker-1", "worker", ""), mk("pg-worker-2", "worker", ""), mk("pg-master-0", "master", "")},
			want{queue: []string{"podgroup:ns/pg"}, replicas: map[string]int32{"master": 1, "worker": 1}}},
		{"minMember 0: all pods", ptr(podGroup("pg", 0)),
			[]corev1.Pod{mk("pg-worker-0", "worker", ""), mk("pg-worker-1", "worker", "")},
			want{queue: []string{"podgroup:ns/pg"}, replicas: map[string]int32{"worker": 2}}},
		{"bound reach minMember: the rest one by one", ptr(podGroup("pg", 2)),
			[]corev1.Pod{mk("pg-worker-0", "worker", "a"), mk("pg-worker-1", "worker", "b"), mk("pg-worker-2", "worker", ""), mk("pg-worker-3", "worker", "")},
			want{queue: []string{"pod:ns/pg-worker-2", "pod:ns/pg-worker-3"}, running: []string{"podgroup:ns/pg x2"}}},
		{"a lost member of 4: the new pod alone", ptr(podGroup("pg", 4)),
			[]corev1.Pod{mk("pg-master-0", "master", "a"), mk("pg-worker-0", "worker", "a"), mk("pg-worker-1", "worker", ""), mk("pg-worker-2", "worker", "b")},
			want{queue: []string{"pod:ns/pg-worker-1"}, running: []string{"podgroup:ns/pg x3"}}},
		{"two lost members of 4: a fill gang of both", ptr(podGroup("pg", 4)),
			[]corev1.Pod{mk("pg-master-0", "master", "a"), mk("pg-worker-0", "worker", ""), mk("pg-worker-1", "worker", ""), mk("pg-worker-2", "worker", "b")},
			want{queue: []string{"podgroup:ns/pg/fill"}, running: []string{"podgroup:ns/pg x2"}, replicas: map[string]int32{"worker": 2}}},
		{"no PodGroup: PodGroupNotFound, nothing queued", nil,
			[]corev1.Pod{mk("pg-worker-0", "worker", ""), mk("pg-worker-1", "worker", "")},
			want{waiting: view.ReasonPodGroupNotFound + ": PodGroup ns/pg is not visible"}},
		{"minResources above the free room: held", &withRes,
			[]corev1.Pod{mk("pg-worker-0", "worker", ""), mk("pg-worker-1", "worker", ""), otherPod("a")},
			want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &view.World{Nodes: nodes, Pods: tc.pods}
			if tc.pg != nil {
				w.PodGroups = []schedv1alpha1.PodGroup{*tc.pg}
			}
			v := view.Build(w, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
			if d := cmp.Diff(tc.want.queue, queueIDs(v)); d != "" {
				t.Errorf("queue (-want +got):\n%s", d)
			}
			var running []string
			for _, st := range v.Snap.Running {
				running = append(running, st.Job.ID+" x"+string(rune('0'+len(st.Placement))))
			}
			if d := cmp.Diff(tc.want.running, running); d != "" {
				t.Errorf("running (-want +got):\n%s", d)
			}
			if tc.want.replicas != nil {
				got := map[string]int32{}
				for _, g := range v.Snap.Pending.Head().Job.Groups {
					got[g.Name] = int32(g.Replicas)
				}
				if d := cmp.Diff(tc.want.replicas, got); d != "" {
					t.Errorf("replicas of the queued gang (-want +got):\n%s", d)
				}
			}
			gj := v.Gangs[view.GangJobID("ns", "pg")]
			if !strings.HasPrefix(gj.Waiting, tc.want.waiting) || (tc.want.waiting == "") != (gj.Waiting == "") {
				t.Errorf("waiting %q, want %q...", gj.Waiting, tc.want.waiting)
			}
		})
	}
	// The held gang says why: 8 GPUs asked, 8 - 1 free.
	w := &view.World{Nodes: nodes, Pods: []corev1.Pod{mk("pg-worker-0", "worker", ""), mk("pg-worker-1", "worker", ""), otherPod("a")},
		PodGroups: []schedv1alpha1.PodGroup{withRes}}
	v := view.Build(w, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if _, why := v.Held(); !strings.Contains(why["podgroup:ns/pg"], "minResources") {
		t.Errorf("held for %q", why["podgroup:ns/pg"])
	}
	// A TE gang counts what BE jobs hold as room (FitGpp may preempt
	// them): a BE plain pod holding 1 GPU does not hold it back.
	te := func(name string) corev1.Pod {
		return mkPod(name).gang("pg", "worker").label(v1alpha1.OptInLabel, "TE").obj()
	}
	w2 := &view.World{Nodes: nodes, Pods: []corev1.Pod{te("pg-worker-0"), te("pg-worker-1"), mkPod("be").node("a").obj()},
		PodGroups: []schedv1alpha1.PodGroup{withRes}}
	if d := cmp.Diff([]string{"podgroup:ns/pg"}, queueIDs(view.Build(w2, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"}))); d != "" {
		t.Errorf("TE gang next to a BE pod (-want +got):\n%s", d)
	}
	// With all 8 free it is queued.
	w.Pods = w.Pods[:2]
	v = view.Build(w, t0, view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	if d := cmp.Diff([]string{"podgroup:ns/pg"}, queueIDs(v)); d != "" {
		t.Errorf("queue with the room free (-want +got):\n%s", d)
	}
}

// otherPod is a 1-GPU pod of another scheduler bound to node.
func otherPod(node string) corev1.Pod {
	p := mkPod("other").node(node).obj()
	p.Spec.SchedulerName = "default-scheduler"
	return p
}
