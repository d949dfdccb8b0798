package oasis

import (
	"context"
	"testing"

	"github.com/drover-sched/drover/pkg/experiment"
	poasis "github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/policy"
)

func quickEnv(t *testing.T) *experiment.Env {
	t.Helper()
	reg := policy.NewRegistry()
	if err := reg.Add(poasis.Entries()...); err != nil {
		t.Fatal(err)
	}
	return &experiment.Env{Seed: 1, Policies: reg, Quick: true}
}

func row(t *testing.T, rep *experiment.Report, policy, key, val string) map[string]float64 {
	t.Helper()
	for _, r := range rep.Results {
		if r.Policy == policy && r.Params[key] == val {
			return r.Metrics
		}
	}
	t.Fatalf("%s: no row %s %s=%s", rep.Experiment, policy, key, val)
	return nil
}

// TestSweepQuick: with ample resources OASiS admits and finishes every
// job; at the scarcest point it beats the fixed-size FIFO and the
// utility-blind DRF (the model does not show it beating RRH there; see
// docs/oasis.md).
func TestSweepQuick(t *testing.T) {
	rep, err := sweep(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3*(len(Compared)+1) {
		t.Fatalf("%d rows, want %d", len(rep.Results), 3*(len(Compared)+1))
	}
	ample := row(t, rep, "OASiS", "jobs", "20")
	if ample["rejected"] != 0 || ample["completed"] != ample["jobs"] {
		t.Errorf("ample: OASiS rejected %v, completed %v of %v", ample["rejected"], ample["completed"], ample["jobs"])
	}
	o := row(t, rep, "OASiS", "jobs", "120")["utility_total"]
	for _, b := range []string{"FIFO", "DRF"} {
		if u := row(t, rep, b, "jobs", "120")["utility_total"]; !(o > u) {
			t.Errorf("scarce: OASiS utility %v not above %s %v", o, b, u)
		}
	}
	for _, r := range rep.Results {
		for _, k := range []string{"utility_total", "admitted", "rejected", "deadline_miss_mean_s"} {
			if _, ok := r.Metrics[k]; !ok {
				t.Errorf("%s: missing key %s", r.Policy, k)
			}
		}
	}
}

// TestRatioQuick: the offline optimum is never below OASiS, and the ratio
// stays within the bound of 2.
func TestRatioQuick(t *testing.T) {
	rep, err := ratio(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		pr := r.Metrics["performance_ratio"]
		if pr < 1-1e-9 || pr > 2 || r.Metrics["performance_ratio_max"] > 2 {
			t.Errorf("%v: performance ratio %v (max %v), want in [1, 2]", r.Params, pr, r.Metrics["performance_ratio_max"])
		}
	}
}

// TestEstimateAndDeadlineQuick smoke-tests the other two experiments.
func TestEstimateAndDeadlineQuick(t *testing.T) {
	env := quickEnv(t)
	rep, err := estimate(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 6 {
		t.Errorf("estimate: %d rows, want 6", len(rep.Results))
	}
	rep, err = deadline(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(Compared) {
		t.Errorf("deadline: %d rows", len(rep.Results))
	}
}
