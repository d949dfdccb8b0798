package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/drover-sched/drover/pkg/k8s"
)

// Dev-cluster nodes have ephemeral storage (an MPIJob launcher asks for
// it); a bad flag is named.
func TestDevNodeCapacity(t *testing.T) {
	got, err := devNodeCapacity("16", "4", "64Gi", "100Gi")
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), k8s.GPUResource: resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
		t.Errorf("capacity (-want +got):\n%s", d)
	}
	if _, err := devNodeCapacity("16", "4", "64Gi", "lots"); err == nil || !strings.Contains(err.Error(), "--node-ephemeral-storage") {
		t.Errorf("bad storage flag: %v", err)
	}
}
