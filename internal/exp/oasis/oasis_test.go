package oasis

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

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

func row(t *testing.T, rep *experiment.Report, policy string, kv ...string) map[string]float64 {
	t.Helper()
	for _, r := range rep.Results {
		ok := r.Policy == policy
		for i := 0; i+1 < len(kv); i += 2 {
			ok = ok && r.Params[kv[i]] == kv[i+1]
		}
		if ok {
			return r.Metrics
		}
	}
	t.Fatalf("%s: no row %s %v", rep.Experiment, policy, kv)
	return nil
}

// TestSweepQuick: under both readings, with ample resources OASiS admits
// and finishes every job, and at the scarcest point it beats the
// fixed-size FIFO and the utility-blind DRF (the model does not show it
// beating RRH's value-order variant there; see docs/oasis.md). The paper
// reading's L is the jobs' own (U/L well below the floor's 1e12); the
// earlier reading's is its floor.
func TestSweepQuick(t *testing.T) {
	rep, err := sweep(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * (2*len(Compared) + 1); len(rep.Results) != want {
		t.Fatalf("%d rows, want %d", len(rep.Results), want)
	}
	for _, rd := range Readings {
		ample := row(t, rep, "OASiS", "jobs", "20", "reading", rd.Name)
		if ample["rejected"] != 0 || ample["completed"] != ample["jobs"] {
			t.Errorf("%s, ample: OASiS rejected %v, completed %v of %v", rd.Name, ample["rejected"], ample["completed"], ample["jobs"])
		}
		o := row(t, rep, "OASiS", "jobs", "120", "reading", rd.Name)["utility_total"]
		for _, b := range []string{"FIFO", "DRF"} {
			if u := row(t, rep, b, "jobs", "120", "reading", rd.Name)["utility_total"]; !(o > u) {
				t.Errorf("%s, scarce: OASiS utility %v not above %s %v", rd.Name, o, b, u)
			}
		}
	}
	if ul := row(t, rep, "OASiS", "jobs", "120", "reading", "default")["u_over_l"]; !(ul > 1 && ul < 1e11) {
		t.Errorf("paper reading: U/L %v, want the jobs' own, well below the floor's 1e12", ul)
	}
	if ul := row(t, rep, "OASiS", "jobs", "120", "reading", "earlier")["u_over_l"]; math.Abs(ul/1e12-1) > 1e-9 {
		t.Errorf("earlier reading: U/L %v, want the floor's 1e12", ul)
	}
	for _, r := range rep.Results {
		want := map[string]string{"default": "rrh", "earlier": "rrh:order=value"}[r.Params["reading"]]
		if r.Policy == "RRH" && r.Params["policy_name"] != want {
			t.Errorf("%s reading: RRH runs %s, want %s", r.Params["reading"], r.Params["policy_name"], want)
		}
		for _, k := range []string{"utility_total", "admitted", "rejected", "deadline_miss_mean_s"} {
			if _, ok := r.Metrics[k]; !ok {
				t.Errorf("%s: missing key %s", r.Policy, k)
			}
		}
	}
}

// TestRatioQuick: the offline optimum is never below OASiS, and the ratio
// stays within the bound of 2, under both readings.
func TestRatioQuick(t *testing.T) {
	rep, err := ratio(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2*len(Readings) {
		t.Errorf("%d rows, want %d", len(rep.Results), 2*len(Readings))
	}
	for _, r := range rep.Results {
		pr := r.Metrics["performance_ratio"]
		if pr < 1-1e-9 || pr > 2 || r.Metrics["performance_ratio_max"] > 2 {
			t.Errorf("%v: performance ratio %v (max %v), want in [1, 2]", r.Params, pr, r.Metrics["performance_ratio_max"])
		}
	}
}

// TestEstimateAndDeadlineQuick smoke-tests the Fig. 5 and Fig. 7
// experiments.
func TestEstimateAndDeadlineQuick(t *testing.T) {
	env := quickEnv(t)
	rep, err := estimate(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 6*len(Readings) {
		t.Errorf("estimate: %d rows, want %d", len(rep.Results), 6*len(Readings))
	}
	rep, err = deadline(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(Compared)*len(Readings) {
		t.Errorf("deadline: %d rows", len(rep.Results))
	}
}

// TestLFloorQuick: the floor sets L at every floor under the earlier
// reading and only above the jobs' own L under the paper's; a floor of
// 1e-2 prices every job out (its initial price is above the per-unit
// utility of every job, against Appendix A's first property).
func TestLFloorQuick(t *testing.T) {
	rep, err := lfloor(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(Floors)*len(Readings) {
		t.Fatalf("%d rows, want %d", len(rep.Results), len(Floors)*len(Readings))
	}
	for _, r := range rep.Results {
		f, _ := strconv.ParseFloat(r.Params["lfloor"], 64)
		floored := r.Params["reading"] == "earlier" || f >= 1e-6
		if got := r.Metrics["l_floored"] == 1; got != floored {
			t.Errorf("%v: l_floored %v, want %v", r.Params, r.Metrics["l_floored"], floored)
		}
	}
	for _, rd := range Readings {
		if m := row(t, rep, "OASiS", "reading", rd.Name, "lfloor", "0.01"); m["admitted"] != 0 {
			t.Errorf("%s, lfloor 1e-2: %v admitted, want none", rd.Name, m["admitted"])
		}
	}
}

// TestRRHQuick: at the scarcest point the value order (backfilling) earns
// more than the paper's arrival order, under both readings.
func TestRRHQuick(t *testing.T) {
	rep, err := rrhSweep(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2*3*len(Readings) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	for _, rd := range Readings {
		a := row(t, rep, "RRH", "reading", rd.Name, "order", "arrival", "threshold", "0.1")["utility_total"]
		v := row(t, rep, "RRH", "reading", rd.Name, "order", "value", "threshold", "0.1")["utility_total"]
		if !(v > a) {
			t.Errorf("%s: value order %v not above arrival order %v", rd.Name, v, a)
		}
	}
}

// TestReadingsGridQuick: oasis-readings covers the four combinations of
// decay reading and RRH order at both job counts, with the five schemes in
// each; the RRH row is the order's policy, and the schemes that do not
// depend on the order have the same figures under both. The decay reading
// changes the utilities.
func TestReadingsGridQuick(t *testing.T) {
	env := quickEnv(t)
	env.Seeds = 2
	rep, err := readingsGrid(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	combos := map[string]int{}
	for _, r := range rep.Results {
		combos[r.Params["jobs"]+" "+r.Params["decay"]+" "+r.Params["rrh_order"]]++
	}
	want := map[string]int{}
	for _, n := range []string{"60", "120"} {
		for _, d := range Decays {
			for _, o := range RRHOrders {
				want[n+" "+d+" "+o] = len(Compared)
			}
		}
	}
	if d := cmp.Diff(want, combos); d != "" {
		t.Fatalf("rows per combination (-want +got):\n%s", d)
	}
	for _, r := range rep.Results {
		if r.Policy == "RRH" {
			if w := map[string]string{"arrival": "rrh", "value": "rrh:order=value"}[r.Params["rrh_order"]]; r.Params["policy_name"] != w {
				t.Errorf("RRH row %v runs %s, want %s", r.Params, r.Params["policy_name"], w)
			}
		}
		if _, ok := r.Metrics["utility_total_ci95"]; !ok {
			t.Errorf("%s %v: no utility_total_ci95 over 2 seeds", r.Policy, r.Params)
		}
	}
	for _, d := range Decays {
		for _, p := range []string{"OASiS", "DRF"} {
			a := row(t, rep, p, "jobs", "120", "decay", d, "rrh_order", "arrival")["utility_total"]
			b := row(t, rep, p, "jobs", "120", "decay", d, "rrh_order", "value")["utility_total"]
			if a != b {
				t.Errorf("%s decay=%s: utility %v under arrival, %v under value: it does not depend on RRH's order", p, d, a, b)
			}
		}
		ra := row(t, rep, "RRH", "jobs", "120", "decay", d, "rrh_order", "arrival")["utility_total"]
		rv := row(t, rep, "RRH", "jobs", "120", "decay", d, "rrh_order", "value")["utility_total"]
		if ra == rv {
			t.Errorf("decay=%s: RRH has utility %v under both orders", d, ra)
		}
	}
	if ts, sl := row(t, rep, "OASiS", "jobs", "120", "decay", "timespan", "rrh_order", "arrival")["utility_total"],
		row(t, rep, "OASiS", "jobs", "120", "decay", "slot", "rrh_order", "arrival")["utility_total"]; ts == sl {
		t.Errorf("OASiS has utility %v under both decay readings", ts)
	}
}
