package autoscaleexp

import (
	"context"
	"testing"
)

// TestRamp runs the Karpenter e2e's ramp in the model: every job ends;
// under reactive each job waits exactly one launch delay (no node is ever
// ready for it ahead of time); predictive's placeholders make some jobs
// find a node already there, so its mean pending time is below reactive's,
// and it pays with more nodes.
func TestRamp(t *testing.T) {
	o := DefaultRampOptions()
	rep, err := RunRamp(context.Background(), env(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d rows, want reactive and predictive", len(rep.Results))
	}
	re, pr := rep.Results[0].Metrics, rep.Results[1].Metrics
	for i, m := range []map[string]float64{re, pr} {
		if m["completed"] != 6 || m["node_hours"] <= 0 || m["cost_per_job"] <= 0 {
			t.Errorf("row %d: %v", i, m)
		}
	}
	if re["pending_mean_s"] != o.LaunchDelay {
		t.Errorf("reactive pending mean %g s, want the launch delay %g s", re["pending_mean_s"], o.LaunchDelay)
	}
	if pr["pending_mean_s"] >= re["pending_mean_s"] || pr["nodes_provisioned"] <= re["nodes_provisioned"] {
		t.Errorf("predictive pending %g s with %g nodes against reactive's %g s with %g", pr["pending_mean_s"], pr["nodes_provisioned"],
			re["pending_mean_s"], re["nodes_provisioned"])
	}
}
