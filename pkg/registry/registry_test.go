package registry_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/registry"
)

// shortParallel are the experiments the determinism test runs with
// -short: one per way an experiment reaches experiment.Parallel
// (RunPolicies with several seeds, specon's paired runs and calibration,
// OASiS's per-seed bounds and the ratio and estimate grids).
var shortParallel = map[string]bool{
	"fitgpp": true, "overview": true, "specon-fixed": true, "specon-interference": true,
	"oasis-deadline": true, "oasis-ratio": true, "oasis-estimate": true, "elastic-2": true,
}

// TestParallelOutputIsSerialOutput runs experiments (--quick) with one
// worker and with several, and requires byte-identical JSON reports: the
// seeds and policies of an experiment run in parallel, and nothing in the
// output may depend on the order in which they finish.
func TestParallelOutputIsSerialOutput(t *testing.T) {
	exps, err := registry.Experiments()
	if err != nil {
		t.Fatal(err)
	}
	pols, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exps.All() {
		if testing.Short() && !shortParallel[e.Name] {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			var out [2][]byte
			for i, workers := range []int{1, 4} {
				env := &experiment.Env{Seed: 1, Policies: pols, Quick: true, Workers: workers}
				rep, err := e.Run(context.Background(), env)
				if err != nil {
					t.Fatalf("workers=%d: %v", workers, err)
				}
				var b bytes.Buffer
				if err := rep.WriteJSON(&b); err != nil {
					t.Fatal(err)
				}
				out[i] = b.Bytes()
			}
			if !bytes.Equal(out[0], out[1]) {
				t.Errorf("the report with 4 workers differs from the serial one:\nserial:   %.400s\nparallel: %.400s", out[0], out[1])
			}
		})
	}
}
