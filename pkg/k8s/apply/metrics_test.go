package apply

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-sched/drover/pkg/policy"
)

// Every labelled counter has its known series at zero from the start (a
// dashboard says 0, not "No data"), and the refused kinds cover every
// action kind.
func TestMetricsInitialised(t *testing.T) {
	r := prometheus.NewRegistry()
	NewMetrics(r)
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, f := range fams {
		series[f.GetName()] = len(f.GetMetric())
	}
	for name, want := range map[string]int{
		"drover_actions_total":         len(actionKinds),
		"drover_refused_actions_total": len(refusedKinds),
		"drover_policy_panics_total":   len(panicStages),
		"drover_queue_length":          2,
		"drover_job_completions_total": 2,
		"drover_job_failures_total":    2,
		"drover_migrations_total":      2,
		"drover_job_wait_seconds":      2,
		"drover_preemptions_total":     2 * len(preemptReasons),
		"drover_resizes_total":         2 * len(resizeDirs),
	} {
		if series[name] != want {
			t.Errorf("%s: %d series at start, want %d", name, series[name], want)
		}
	}
	for _, a := range []policy.Action{policy.Start{}, policy.Preempt{}, policy.Migrate{}, policy.Resize{}, policy.Reject{}, policy.Wait{},
		policy.SetLabel{}, policy.ProvisionNode{}, policy.ReleaseNode{}, policy.SetPlaceholders{}} {
		if k := policy.Kind(a); !slices.Contains(refusedKinds, k) {
			t.Errorf("action kind %q is not initialised in drover_refused_actions_total", k)
		}
	}
	for _, s := range []policy.Stage{policy.StageJob, policy.StageRebalance, policy.StageProvision, policy.StageCycle} {
		if !slices.Contains(panicStages, string(s)) {
			t.Errorf("stage %q is not initialised in drover_policy_panics_total", s)
		}
	}
}
