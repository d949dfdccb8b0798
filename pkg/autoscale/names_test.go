package autoscale

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

func TestPlaceholderName(t *testing.T) {
	long := strings.Repeat("x", 70) + ".large"
	tests := []struct {
		typ  string
		seq  int
		want string
	}{
		{"gpu1", 1, "ph-gpu1-1"},
		{"g4dn.xlarge", 1, "ph-g4dn-xlarge-1"},
		{"m5.24xlarge", 12, "ph-m5-24xlarge-12"},
		{"Weird_Type..X", 3, "ph-weird-type-x-3"},
		{"-a-", 7, "ph-a-7"},
		{"...", 4, "ph-4"},
		{"", 5, "ph-5"},
		{long, 123, "ph-" + strings.Repeat("x", 63-len("ph-")-len("-123")) + "-123"},
		{strings.Repeat("x", 57) + ".y", 9, "ph-" + strings.Repeat("x", 57) + "-9"}, // cut before the '-', not after
	}
	for _, tc := range tests {
		got := PlaceholderName(tc.typ, tc.seq)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("PlaceholderName(%q, %d) (-want +got):\n%s", tc.typ, tc.seq, d)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("PlaceholderName(%q, %d) = %q is not a DNS-1123 label: %v", tc.typ, tc.seq, got, errs)
		}
	}
}

// TestPlaceholderNamesAreKubernetesNames runs the plugin (ladder) on a
// catalogue named like AWS's, with two types whose names differ only by a
// dot and a dash: every placeholder it sets must be a DNS-1123 label (the
// Kubernetes executor refuses anything else) and no two may share a name.
// Before the names were sanitised the plugin named them ph-m5.xlarge-1.
func TestPlaceholderNamesAreKubernetesNames(t *testing.T) {
	cat := []cluster.InstanceType{
		{Name: "m5.xlarge", Capacity: resource.New(4, 16, 0), PricePerHour: 0.192},
		{Name: "m5-xlarge", Capacity: resource.New(8, 32, 0), PricePerHour: 0.384},
		{Name: "g4dn.12xlarge", Capacity: resource.New(48, 192, 4), PricePerHour: 3.912},
	}
	job := func(id string, cpu, mem float64, gpu int64) *cluster.Job {
		j := job1(id, 0, 60)
		j.Groups[0].Demand = resource.New(cpu, mem, gpu)
		return j
	}
	p, err := NewPredictive(policy.Params{"model": "ladder", "groups": "pg.a,pg.b"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := scheduler.New(framework.Profile{Name: "provision-only", Provision: []framework.Provision{p}})
	if err != nil {
		t.Fatal(err)
	}
	got := setPlaceholders(rt.Schedule(at(0, cat, job("a", 4, 16, 0), job("b", 8, 32, 0), job("c", 16, 64, 4))))
	var names []string
	seen := map[string]bool{}
	for _, ph := range got {
		names = append(names, ph.Name)
		if errs := validation.IsDNS1123Label(ph.Name); len(errs) > 0 {
			t.Errorf("placeholder name %q is not a DNS-1123 label: %v", ph.Name, errs)
		}
		if seen[ph.Name] {
			t.Errorf("placeholder name %q is used twice", ph.Name)
		}
		seen[ph.Name] = true
	}
	want := []string{"ph-m5-xlarge-1", "ph-m5-xlarge-2", "ph-g4dn-12xlarge-3"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("placeholder names (-want +got):\n%s", d)
	}
}
