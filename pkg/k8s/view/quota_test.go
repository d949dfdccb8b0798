package view

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
