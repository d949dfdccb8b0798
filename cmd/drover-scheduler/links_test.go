package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksOnlyWhatItRuns: the production binary links the plugins and
// the Kubernetes executor, never the simulator, the experiments or the
// workload package with its embedded Philly trace.
func TestLinksOnlyWhatItRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := string(out)
	for _, banned := range []string{"/internal/exp/", "/pkg/workload", "/pkg/sim\n", "/pkg/experiment", "/pkg/registry"} {
		if strings.Contains(deps, banned) {
			t.Errorf("drover-scheduler links %s", strings.TrimSpace(banned))
		}
	}
	for _, want := range []string{"/pkg/plugins\n", "/pkg/k8s\n", "/pkg/framework\n"} {
		if !strings.Contains(deps, want) {
			t.Errorf("drover-scheduler does not link %s", strings.TrimSpace(want))
		}
	}
}
