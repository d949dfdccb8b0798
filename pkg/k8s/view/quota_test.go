package view

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// What a replica counts against a ResourceQuota, as the API server's pod
// evaluator counts it, and the reason a job does not fit, in the quota
// admission's words.
func TestQuotaUsageAndShort(t *testing.T) {
	spec := func(req, lim corev1.ResourceList) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}}
	}
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	str := func(l corev1.ResourceList) map[string]string {
		out := map[string]string{}
		for r, q := range l {
			out[string(r)] = q.String()
		}
		return out
	}
	cases := []struct {
		name string
		spec *corev1.PodSpec
		want map[string]string
	}{
		{"requests", spec(rl("cpu", "2", "memory", "1Gi", "nvidia.com/gpu", "1"), rl("nvidia.com/gpu", "1")),
			map[string]string{"pods": "1", "count/pods": "1", "cpu": "2", "requests.cpu": "2", "memory": "1Gi", "requests.memory": "1Gi",
				"requests.nvidia.com/gpu": "1", "limits.nvidia.com/gpu": "1"}},
		{"limits only: requests default to them", spec(nil, rl("cpu", "1", "example.com/fpga", "2")),
			map[string]string{"pods": "1", "count/pods": "1", "cpu": "1", "requests.cpu": "1", "limits.cpu": "1",
				"requests.example.com/fpga": "2", "limits.example.com/fpga": "2"}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, str(quotaUsage(c.spec))); d != "" {
			t.Errorf("%s: usage (-want +got):\n%s", c.name, d)
		}
	}
	qs := []*NSQuota{
		{name: "a-cpu", hard: rl("requests.cpu", "4"), used: rl("requests.cpu", "3")},
		{name: "b-gpu", hard: rl("requests.nvidia.com/gpu", "8", "pods", "10"), used: rl("requests.nvidia.com/gpu", "6")},
	}
	shorts := []struct {
		need corev1.ResourceList
		want string
	}{
		{rl("requests.cpu", "1", "requests.nvidia.com/gpu", "2", "pods", "2"), ""},
		{rl("requests.cpu", "2"), "namespace ns: exceeded quota: a-cpu, requested: requests.cpu=2, used: requests.cpu=3, limited: requests.cpu=4"},
		{rl("requests.nvidia.com/gpu", "4", "pods", "11"), "namespace ns: exceeded quota: b-gpu, requested: pods=11,requests.nvidia.com/gpu=4, used: pods=0,requests.nvidia.com/gpu=6, limited: pods=10,requests.nvidia.com/gpu=8"},
		{rl("limits.cpu", "100"), ""}, // no quota limits it
	}
	for _, s := range shorts {
		if got := QuotaShort("ns", qs, s.need); got != s.want {
			t.Errorf("need %v: %q, want %q", str(s.need), got, s.want)
		}
	}
}

// A quota's used amount is never read as less than the cluster holds:
// status.used from the informer cache lags the API server's quota
// admission, so a job started a moment ago (its placement written, its
// pods not yet seen, status.used still 0) and pods outside drover's jobs
// count, and the larger of the two is kept (floorQuotaUsed).
func TestQuotaUsedFloor(t *testing.T) {
	gpu := corev1.ResourceName("requests." + string(GPUResource))
	quota := func(hard, used string) corev1.ResourceQuota {
		q := corev1.ResourceQuota{}
		q.Name, q.Namespace = "gpu", "ns"
		q.Spec.Hard = corev1.ResourceList{gpu: resource.MustParse(hard)}
		if used != "" {
			q.Status.Used = corev1.ResourceList{gpu: resource.MustParse(used)}
		}
		return q
	}
	other := makePod("other", "a", "1").obj()
	other.Spec.Containers[0].Resources.Requests[GPUResource] = resource.MustParse("1")
	done := other.DeepCopy()
	done.Name, done.Status.Phase = "done", corev1.PodSucceeded
	cases := []struct {
		name string
		w    World
		want string // the quota's used GPUs as read
	}{
		{"nothing runs: status.used kept", World{Quotas: []corev1.ResourceQuota{quota("4", "1")}}, "1"},
		{"a job started, its pods not seen, status.used stale at 0",
			World{Quotas: []corev1.ResourceQuota{quota("4", "0")},
				Jobs: []v1alpha1.TrainingJob{makeJob("run", t0, 2).running("a", 2).obj()}}, "2"},
		{"its pods seen are not counted twice",
			World{Quotas: []corev1.ResourceQuota{quota("4", "")},
				Jobs: []v1alpha1.TrainingJob{makeJob("run", t0, 2).running("a", 2).obj()},
				Pods: []corev1.Pod{makePod("run-worker-0", "a", "2").replicaOf("run").obj(), makePod("run-worker-1", "a", "2").replicaOf("run").obj()}}, "2"},
		{"a pod outside drover's jobs counts, a finished one does not",
			World{Quotas: []corev1.ResourceQuota{quota("4", "0")}, Pods: []corev1.Pod{other, *done}}, "1"},
		{"status.used above the pods (a deleted pod not yet recounted) is kept",
			World{Quotas: []corev1.ResourceQuota{quota("4", "3")},
				Jobs: []v1alpha1.TrainingJob{makeJob("run", t0, 1).running("a", 1).obj()}}, "3"},
		{"a pending job reserves nothing here (overQuota reserves its minimum)",
			World{Quotas: []corev1.ResourceQuota{quota("4", "0")},
				Jobs: []v1alpha1.TrainingJob{makeJob("wait", t0, 2).obj()}}, "0"},
	}
	for _, c := range cases {
		c.w.Nodes = []corev1.Node{makeNode("a").gpu("8").obj()}
		v := Build(&c.w, t0.Add(time.Minute), Options{DefaultDuration: 100, StuckAfter: time.Minute, SchedulerName: "drover"})
		got := "none"
		if qs := v.Quotas["ns"]; len(qs) == 1 {
			u := qs[0].used[gpu]
			got = u.String()
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: used GPUs (-want +got):\n%s", c.name, d)
		}
	}
}
