package specon

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/sim"
	sp "github.com/drover-sched/drover/pkg/specon"
)

func env(t *testing.T) *experiment.Env {
	t.Helper()
	r := policy.NewRegistry()
	if err := r.Add(append(sp.Entries(), baseline.Entries()...)...); err != nil {
		t.Fatal(err)
	}
	return &experiment.Env{Seed: 1, Policies: r, Quick: true}
}

func run(t *testing.T, name string) *experiment.Report {
	t.Helper()
	for _, e := range Experiments() {
		if e.Name == name {
			rep, err := e.Run(context.Background(), env(t))
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
	}
	t.Fatalf("no experiment %s", name)
	return nil
}

// row returns the metrics of the row of policy whose params include want.
func row(t *testing.T, rep *experiment.Report, policy string, want ...string) map[string]float64 {
	t.Helper()
	for _, r := range rep.Results {
		if r.Policy != policy {
			continue
		}
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			ok = ok && r.Params[want[i]] == want[i+1]
		}
		if ok {
			return r.Metrics
		}
	}
	t.Fatalf("%s: no row %s %v", rep.Experiment, policy, want)
	return nil
}

// TestRandomExperiment asserts what the model shows for the 30-job random
// schedule (docs/specon.md): both readings move converged jobs and shorten
// the makespan, the first reading recovers most of the worker time the
// fixed round-robin placement strands; mean JCT moves by only a few
// percent, although the placement-only reference schedule shows that
// favouring the jobs with least work left could cut it by more than 10%.
func TestRandomExperiment(t *testing.T) {
	rep := run(t, "specon-random")
	d := row(t, rep, "default")
	paper, first := row(t, rep, "specon", "reading", "cluster"), row(t, rep, "specon", "reading", "first")
	for _, s := range []map[string]float64{d, paper, first} {
		if s["completed"] != 30 {
			t.Fatalf("completed %v", s["completed"])
		}
	}
	for name, s := range map[string]map[string]float64{"cluster": paper, "first": first} {
		if s["migrations"] == 0 || s["migrations"] > 30 || s["rebalances"] > s["migrations"] {
			t.Errorf("%s: migrations %v rebalances %v", name, s["migrations"], s["rebalances"])
		}
		if !(s["makespan_change"] < 0) {
			t.Errorf("%s: makespan change %v: SpeCon should shorten the makespan", name, s["makespan_change"])
		}
		if math.Abs(s["jct_change"]) > 0.05 {
			t.Errorf("%s: mean JCT change %v: the model showed |change| < 5%%; update docs/specon.md", name, s["jct_change"])
		}
		if f := s["jobs_faster_frac"]; !(f > 0 && f < 1) || s["best_job_gain_frac"] <= 0 {
			t.Errorf("%s: jobs_faster_frac %v best_job_gain_frac %v", name, f, s["best_job_gain_frac"])
		}
		if !(s["jct_change_min"] <= s["jct_change"]+1e-9 && s["jct_change"] <= s["jct_change_max"]+1e-9) {
			t.Errorf("%s: jct change %v outside its per-seed range [%v, %v]", name, s["jct_change"], s["jct_change_min"], s["jct_change_max"])
		}
	}
	if !(first["stranded_frac"] < d["stranded_frac"]/2) {
		t.Errorf("stranded capacity %v (first reading) vs %v (default): it should recover most of it", first["stranded_frac"], d["stranded_frac"])
	}
	pooled := row(t, rep, "bound-pooled-ps")["jct_change"]
	place := row(t, rep, "bound-placement-srpt")["jct_change"]
	srpt := row(t, rep, "bound-pooled-srpt")["jct_change"]
	if !(pooled < 0 && pooled > -0.05) {
		t.Errorf("pooled PS changes mean JCT by %v; docs/specon.md says it is within (-5%%, 0)", pooled)
	}
	if !(place < -0.10 && srpt <= place) {
		t.Errorf("placement SRPT %v, pooled SRPT %v: docs/specon.md says placement alone can gain more than 10%%, pausing more", place, srpt)
	}
	var gantt int
	for _, c := range rep.Charts {
		if c.Gantt != nil {
			gantt++
			if len(c.Gantt.Rows) != 4 || len(c.Gantt.Spans) < 30 {
				t.Errorf("%s: %d rows, %d spans", c.File, len(c.Gantt.Rows), len(c.Gantt.Spans))
			}
			var b bytes.Buffer
			if err := c.Gantt.WriteSVG(&b); err != nil || !strings.Contains(b.String(), "worker-4") {
				t.Errorf("%s: %v", c.File, err)
			}
		}
	}
	if gantt != 2 {
		t.Errorf("%d timelines, want default and specon", gantt)
	}
}

// TestMixedExperiment: Fig. 6's workload, 20 jobs of the five models in
// [0, 300] s, with both readings and the reference schedules.
func TestMixedExperiment(t *testing.T) {
	rep := run(t, "specon-mixed")
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Policy+" "+r.Params["reading"])
		if r.Metrics["completed"] != 20 && !strings.HasPrefix(r.Policy, "bound-") {
			t.Errorf("%s %v: completed %v", r.Policy, r.Params, r.Metrics["completed"])
		}
	}
	want := []string{"default ", "bound-pooled-ps ", "bound-placement-srpt ", "bound-pooled-srpt ", "specon cluster", "specon worker", "specon first"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	jobs, err := mixedScenario.Jobs(1)
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]bool{}
	for _, j := range jobs {
		models[j.Model] = true
		if j.Submit < 0 || j.Submit > 300 {
			t.Errorf("%s submitted at %v, outside [0, 300]", j.ID, j.Submit)
		}
	}
	if len(jobs) != 20 || len(models) < 3 {
		t.Errorf("%d jobs of %d models", len(jobs), len(models))
	}
}

// TestReadingsExperiment: every combination of the three switches on the
// four workloads; the default, per-worker and first readings are three of them, and
// give the same figures as the comparison experiments.
func TestReadingsExperiment(t *testing.T) {
	rep := run(t, "specon-readings")
	if len(rep.Results) != 4*(1+8) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	random := run(t, "specon-random")
	for _, c := range []struct{ reading, scope, when, cands string }{
		{"cluster", "cluster", "always", "migrated"},
		{"worker", "worker", "always", "migrated"},
		{"first", "cluster", "gated", "converged"},
	} {
		got := row(t, rep, "specon", "workload", "specon-random", "scope", c.scope, "rebalance", c.when, "candidates", c.cands)
		want := row(t, random, "specon", "reading", c.reading)
		for _, k := range []string{"jct_mean_s", "makespan_s", "jct_change", "migrations", "rebalances"} {
			if got[k] != want[k] {
				t.Errorf("%s reading: %s = %v in specon-readings, %v in specon-random", c.reading, k, got[k], want[k])
			}
		}
	}
}

// TestParamsExperiment: one row per Table III cell and reading plus the
// baseline, each with the four Table III keys.
func TestParamsExperiment(t *testing.T) {
	rep := run(t, "specon-params")
	if len(rep.Results) != 1+3*len(TableIII) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	for _, r := range rep.Results[1:] {
		if r.Params["alpha"] == "" || r.Params["interval"] == "" || r.Params["reading"] == "" {
			t.Errorf("row without params: %+v", r)
		}
		for _, k := range []string{"jobs_faster_frac", "jct_change", "best_job_gain_frac", "makespan_change"} {
			if _, ok := r.Metrics[k]; !ok {
				t.Errorf("%v: no %s", r.Params, k)
			}
		}
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
}

// TestFluid: the three reference schedules on small cases worked by
// hand. Three jobs of 10, 20 and 30 s at time 0 on 2 workers: pooled PS
// runs all at 2/3 until the first ends at 15 s; placement SRPT runs the
// shortest alone and the other two on one worker; pooled SRPT runs the
// two shortest and holds the third back.
func TestFluid(t *testing.T) {
	job := func(id string, submit, work float64) *cluster.Job {
		return &cluster.Job{ID: id, Submit: submit, Work: work}
	}
	three := []*cluster.Job{job("a", 0, 10), job("b", 0, 20), job("c", 0, 30)}
	type res struct{ JCT, Makespan float64 }
	tests := []struct {
		name    string
		jobs    []*cluster.Job
		workers int
		want    map[Bound]res
	}{
		{"two jobs share one worker", []*cluster.Job{job("a", 0, 10), job("b", 0, 10)}, 1,
			map[Bound]res{BoundPooledPS: {20, 20}, BoundPlacementSRPT: {20, 20}, BoundPooledSRPT: {15, 20}}},
		{"three jobs on two workers", three, 2,
			map[Bound]res{BoundPooledPS: {(15 + 25 + 35) / 3.0, 35}, BoundPlacementSRPT: {(10 + 25 + 35) / 3.0, 35}, BoundPooledSRPT: {(10 + 20 + 40) / 3.0, 40}}},
		{"three jobs on one worker: placement SRPT is PS", three, 1,
			map[Bound]res{BoundPooledPS: {(30 + 50 + 60) / 3.0, 60}, BoundPlacementSRPT: {(30 + 50 + 60) / 3.0, 60}, BoundPooledSRPT: {(10 + 30 + 60) / 3.0, 60}}},
		{"fewer jobs than workers run at full speed", []*cluster.Job{job("a", 0, 10), job("b", 5, 10)}, 2,
			map[Bound]res{BoundPooledPS: {10, 15}, BoundPlacementSRPT: {10, 15}, BoundPooledSRPT: {10, 15}}},
		// b arrives at 5 with 10 s of work, a has 5 left: SRPT finishes a
		// first (at 10), then b (at 20); PS shares from 5 on.
		{"late arrival", []*cluster.Job{job("a", 0, 10), job("b", 5, 10)}, 1,
			map[Bound]res{BoundPooledPS: {(15 + 15) / 2.0, 20}, BoundPlacementSRPT: {(15 + 15) / 2.0, 20}, BoundPooledSRPT: {(10 + 15) / 2.0, 20}}},
		// short arrives at 10 with 5 s of work against 90 s left on each
		// long job: placement SRPT runs it alone and the long jobs share a
		// worker until 15 (87.5 s left each); pooled SRPT holds x back.
		{"a short arrival overtakes the long jobs", []*cluster.Job{job("long", 0, 100), job("x", 0, 100), job("short", 10, 5)}, 2,
			map[Bound]res{BoundPooledPS: {(7.5 + 102.5 + 102.5) / 3.0, 102.5}, BoundPlacementSRPT: {(5 + 102.5 + 102.5) / 3.0, 102.5}, BoundPooledSRPT: {(5 + 100 + 105) / 3.0, 105}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[Bound]res{}
			for b := range tc.want {
				jct, span := Fluid(tc.jobs, tc.workers, b)
				got[b] = res{jct, span}
			}
			if d := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("Fluid (-want +got):\n%s", d)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	rec := func(id string, finish float64) metrics.JobRecord {
		return metrics.JobRecord{ID: id, Submit: 0, FirstStart: 0, Finish: finish, Work: 1}
	}
	state := func(id string, moves int) *cluster.JobState {
		js := cluster.NewJobState(&cluster.Job{ID: id})
		js.Migrations = moves
		return js
	}
	base := &sim.Result{Records: []metrics.JobRecord{rec("a", 100), rec("b", 200), rec("c", 50)}, Stats: metrics.RunStats{Makespan: 200}}
	pol := &sim.Result{Records: []metrics.JobRecord{rec("a", 60), rec("b", 210), rec("c", 50)}, Stats: metrics.RunStats{Makespan: 210},
		Final: []*cluster.JobState{state("a", 1), state("b", 0), state("c", 0)}}
	want := Compared{JCTChange: (320 - 350) / 350.0, MakespanChange: 0.05, FasterFrac: 1.0 / 3, BestGain: 0.4,
		MovedJCTChange: -0.4, OthersJCTChange: (260 - 250) / 250.0}
	if d := cmp.Diff(want, Compare(base, pol), cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("Compare (-want +got):\n%s", d)
	}
}

// TestJobsDeterministic: a seed fixes the workload; submissions are sorted
// and inside the window.
func TestJobsDeterministic(t *testing.T) {
	sc := scenario{name: "specon-random", workers: 4, jobs: 30, window: 600}
	a, _ := sc.Jobs(3)
	b, _ := sc.Jobs(3)
	for i := range a {
		if a[i].Submit != b[i].Submit || a[i].Model != b[i].Model || a[i].Work != b[i].Work {
			t.Fatalf("job %d differs", i)
		}
		if a[i].Submit < 0 || a[i].Submit > 600 || i > 0 && a[i].Submit < a[i-1].Submit {
			t.Fatalf("job %d submit %v", i, a[i].Submit)
		}
	}
	if _, err := (scenario{name: "x", jobs: 1, models: []string{"nope"}}).Jobs(1); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown model error %v", err)
	}
}

// TestInterferenceExperiment: the sensitivity study has a default and three
// specon rows per workload and level; at every level default's mean JCT
// is the paper's DS (the run lengths are re-fitted), the fitted lengths
// shrink as interference grows, and SpeCon's mean-JCT gain grows with
// interference in the random schedule, as docs/specon.md reports.
func TestInterferenceExperiment(t *testing.T) {
	rep := run(t, "specon-interference")
	if len(rep.Results) != 3*4*len(QuickInterference) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	lo, hi := fmt.Sprint(QuickInterference[0]), fmt.Sprint(QuickInterference[len(QuickInterference)-1])
	for w, ds := range PaperDS {
		scale := map[string]float64{}
		for _, b := range []string{lo, hi} {
			d := row(t, rep, "default", "workload", w, "interference", b)
			if math.Abs(d["jct_mean_s"]-ds[0]) > 0.05 {
				t.Errorf("%s at %s: default's mean JCT %v, want the paper's %v", w, b, d["jct_mean_s"], ds[0])
			}
			for _, r := range rep.Results {
				if r.Params["workload"] == w && r.Params["interference"] == b {
					scale[b], _ = strconv.ParseFloat(r.Params["scale"], 64)
				}
			}
		}
		if !(scale[hi] < scale[lo]) {
			t.Errorf("%s: scale %v at %s, %v at %s: interference should need shorter jobs", w, scale[hi], hi, scale[lo], lo)
		}
	}
	for _, reading := range []string{"cluster", "first"} {
		at := func(b string) float64 {
			return row(t, rep, "specon", "workload", "specon-random", "interference", b, "reading", reading)["jct_change"]
		}
		if !(at(hi) < at(lo)) {
			t.Errorf("%s reading: JCT change %v at %s, %v at %s: want a larger gain with interference", reading, at(hi), hi, at(lo), lo)
		}
	}
}

// TestCalibrate: the fitted factor brings default's mean JCT to the
// target; a target outside the factor's range is an error.
func TestCalibrate(t *testing.T) {
	e := env(t)
	sc := scenario{name: "cal", workers: 2, jobs: 6, window: 100, models: []string{"vae"}}
	for _, target := range []float64{150, 400} {
		scale, err := Calibrate(context.Background(), e, sc, target, 2)
		if err != nil {
			t.Fatal(err)
		}
		sc2 := sc
		sc2.scale = scale
		sum := 0.0
		for k := range 2 {
			r, err := RunOne(context.Background(), e, sc2, "default", e.Seed+uint64(k))
			if err != nil {
				t.Fatal(err)
			}
			sum += r.Result.Metrics()["jct_mean_s"]
		}
		if math.Abs(sum/2-target) > 0.05 {
			t.Errorf("target %v: scale %v gives %v", target, scale, sum/2)
		}
	}
	if _, err := Calibrate(context.Background(), e, sc, 1e6, 2); err == nil || !strings.Contains(err.Error(), "not reached") {
		t.Errorf("unreachable target: %v", err)
	}
}

// TestSpread: the per-seed keys of a comparison row. Three seeds whose
// changes are -20%, -10% and +10% reach a paper change of -10% on two of
// them; a change that is the same on every seed has a zero-width
// interval.
func TestSpread(t *testing.T) {
	base := []float64{100, 200, 100}
	ms := []map[string]float64{{"jct_mean_s": 80, "makespan_s": 100}, {"jct_mean_s": 180, "makespan_s": 200}, {"jct_mean_s": 110, "makespan_s": 100}}
	got := map[string]float64{}
	spread(got, base, base, ms, [2]float64{-0.10, -0.05})
	half := got["jct_change_ci95"]
	delete(got, "jct_change_ci95")
	want := map[string]float64{"jct_change_min": -0.2, "jct_change_max": 0.1, "seeds_jct_paper": 2,
		"makespan_change_min": 0, "makespan_change_max": 0, "makespan_change_ci95": 0, "seeds_makespan_paper": 0}
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); d != "" {
		t.Errorf("spread (-want +got):\n%s", d)
	}
	if !(half > 0.05 && half < 1) {
		t.Errorf("jct_change_ci95 %v: three spread seeds should give a wide interval", half)
	}
	// Without a paper figure there is no seeds_*_paper key.
	got = map[string]float64{}
	spread(got, base, base, ms, [2]float64{})
	if _, ok := got["seeds_jct_paper"]; ok {
		t.Errorf("seeds_jct_paper without a paper change: %v", got)
	}
}
