package k8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/resource"
)

// TestPlaceholderLabelOnlyInItsNamespace: a pod with the
// drover.dev/placeholder label counts as a placeholder (capacity a job
// takes by deleting it with grace 0) only in the placeholder namespace; a
// tenant's pod carrying the label is an ordinary pod, which no start
// force-deletes (issue 28 item 3: such a pod was deleted with grace 0
// despite its 3600 s grace).
func TestPlaceholderLabelOnlyInItsNamespace(t *testing.T) {
	own := mkPod("ph").node("n0").label(v1alpha1.LabelPlaceholder, "warm").obj()
	own.Namespace = "drover-system"
	tenant := mkPod("fake").node("n0").label(v1alpha1.LabelPlaceholder, "warm").obj()
	tenant.Namespace = "team-a"
	one := view.PodDemand(&own.Spec)
	for _, tc := range []struct {
		name string
		ns   string
		want resource.Vector
	}{
		{"placeholder namespace set", "drover-system", one},
		{"unset (any namespace, as before)", "", one.Add(one)},
	} {
		v := view.Build(&view.World{Nodes: []corev1.Node{mkNode("n0").obj()}, Pods: []corev1.Pod{own, tenant}}, t0,
			view.Options{DefaultDuration: 100, SchedulerName: "drover", PlaceholderNamespace: tc.ns})
		n := v.Snap.Nodes[0]
		if n.Placeholder != tc.want {
			t.Errorf("%s: placeholder capacity %v, want %v", tc.name, n.Placeholder, tc.want)
		}
		if n.Allocated != one.Add(one) {
			t.Errorf("%s: allocated %v, want both pods' %v", tc.name, n.Allocated, one.Add(one))
		}
	}
}
