package k8s

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/plugins"
)

// TestQueuePersistsAcrossCycles: the Kubernetes executor's snapshots are
// built anew each cycle, and the policy's scheduling queue still follows
// them: jobs that cannot start are parked after their first try and not
// tried again on an unchanged cluster; a node added wakes the bucket of
// jobs alike, whose head is tried, then the next while they start, until
// one fails. The tries are the Runtime's count.
func TestQueuePersistsAcrossCycles(t *testing.T) {
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	pol, err := reg.New("k8s-default")
	if err != nil {
		t.Fatal(err)
	}
	rt := pol.(*framework.Runtime)
	w := &view.World{}
	for i := range 2 {
		w.Nodes = append(w.Nodes, testNode(fmt.Sprintf("small-%d", i), "16", "8", true))
	}
	// Another scheduler's pod takes half of small-0, so that a gang of two
	// 12-CPU replicas (which the two empty nodes would hold) fits nowhere.
	w.Pods = append(w.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "x", UID: "uid-other"},
		Spec: corev1.PodSpec{NodeName: "small-0", SchedulerName: "default-scheduler", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("8")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	for i := range 40 {
		w.Jobs = append(w.Jobs, testJob(fmt.Sprintf("job-%02d", i), t0.Add(time.Duration(i)*time.Second), 2, "12", "1"))
	}
	o := view.Options{DefaultDuration: 3600, Jobs: view.NewJobCache(), Nodes: view.NewNodeTable()}
	cycle := func(min time.Duration) (tries, starts int) {
		before := rt.Tries()
		v := view.Build(w, t0.Add(min*time.Minute), o)
		acts, faults := rt.ScheduleGuarded(v.Snap)
		if len(faults) > 0 {
			t.Fatalf("faults: %v", faults)
		}
		for _, a := range acts {
			if fmt.Sprintf("%T", a) == "policy.Start" {
				starts++
			}
		}
		return rt.Tries() - before, starts
	}
	if tries, starts := cycle(1); tries != 40 || starts != 0 {
		t.Fatalf("first cycle: %d tries, %d starts; want 40, 0", tries, starts)
	}
	for m := range 3 {
		if tries, _ := cycle(time.Duration(2 + m)); tries != 0 {
			t.Errorf("unchanged cycle %d: %d tries, want 0 (every job parked)", m+2, tries)
		}
	}
	// A node with room for two of them (four replicas): the bucket's
	// head, then the next, start; the third is tried and fails.
	w.Nodes = append(w.Nodes, testNode("big", "48", "8", true))
	if tries, starts := cycle(10); tries != 3 || starts != 2 {
		t.Errorf("after a node was added: %d tries, %d starts; want 3, 2", tries, starts)
	}
}
