package specon

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

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

func row(t *testing.T, rep *experiment.Report, policy string) map[string]float64 {
	t.Helper()
	for _, r := range rep.Results {
		if r.Policy == policy {
			return r.Metrics
		}
	}
	t.Fatalf("%s: no row %s", rep.Experiment, policy)
	return nil
}

// TestRandomExperiment asserts what the model shows for the 30-job random
// schedule: SpeCon moves converged jobs, recovers most of the worker time
// the fixed round-robin placement strands, and so shortens the makespan;
// mean JCT moves by only a few percent, because under processor sharing
// even a perfect balancer (the pooled bound) cannot gain 5% here.
func TestRandomExperiment(t *testing.T) {
	rep := run(t, "specon-random")
	d, s := row(t, rep, "default"), row(t, rep, "specon")
	if d["completed"] != 30 || s["completed"] != 30 {
		t.Fatalf("completed default %v specon %v", d["completed"], s["completed"])
	}
	if s["migrations"] == 0 || s["migrations"] > 30 || s["rebalances"] > s["migrations"] {
		t.Errorf("migrations %v rebalances %v", s["migrations"], s["rebalances"])
	}
	if !(s["makespan_change"] < 0) {
		t.Errorf("makespan change %v: SpeCon should shorten the makespan", s["makespan_change"])
	}
	if !(s["stranded_frac"] < d["stranded_frac"]/2) {
		t.Errorf("stranded capacity %v (specon) vs %v (default): SpeCon should recover most of it", s["stranded_frac"], d["stranded_frac"])
	}
	pooled := experiment.Change(d["jct_mean_s"], d["pooled_jct_mean_s"])
	if !(pooled < 0 && pooled > -0.05) {
		t.Errorf("pooled bound changes mean JCT by %v; docs/specon.md says it is within (-5%%, 0)", pooled)
	}
	if math.Abs(s["jct_change"]) > 0.05 {
		t.Errorf("mean JCT change %v: the model showed |change| < 5%%; update docs/specon.md", s["jct_change"])
	}
	if f := s["jobs_faster_frac"]; !(f > 0 && f < 1) || s["best_job_gain_frac"] <= 0 {
		t.Errorf("jobs_faster_frac %v best_job_gain_frac %v", f, s["best_job_gain_frac"])
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

// TestParamsExperiment: one row per Table III cell plus the baseline,
// each with the four Table III keys.
func TestParamsExperiment(t *testing.T) {
	rep := run(t, "specon-params")
	if len(rep.Results) != 1+len(TableIII) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	for _, r := range rep.Results[1:] {
		if r.Params["alpha"] == "" || r.Params["interval"] == "" {
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

func TestPooledPS(t *testing.T) {
	job := func(submit, work float64) *cluster.Job { return &cluster.Job{Submit: submit, Work: work} }
	tests := []struct {
		name      string
		jobs      []*cluster.Job
		workers   int
		jct, span float64
	}{
		{"two jobs share one worker", []*cluster.Job{job(0, 10), job(0, 10)}, 1, 20, 20},
		{"three jobs on two workers run at 2/3", []*cluster.Job{job(0, 10), job(0, 10), job(0, 10)}, 2, 15, 15},
		{"fewer jobs than workers run at full speed", []*cluster.Job{job(0, 10), job(5, 10)}, 2, 10, 15},
		{"late arrival", []*cluster.Job{job(0, 10), job(5, 10)}, 1, (15 + 15) / 2.0, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jct, span := PooledPS(tc.jobs, tc.workers)
			if math.Abs(jct-tc.jct) > 1e-9 || math.Abs(span-tc.span) > 1e-9 {
				t.Errorf("PooledPS = %v, %v; want %v, %v", jct, span, tc.jct, tc.span)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	rec := func(id string, finish float64) metrics.JobRecord {
		return metrics.JobRecord{ID: id, Submit: 0, FirstStart: 0, Finish: finish, Work: 1}
	}
	base := &sim.Result{Records: []metrics.JobRecord{rec("a", 100), rec("b", 200), rec("c", 50)}, Stats: metrics.RunStats{Makespan: 200}}
	pol := &sim.Result{Records: []metrics.JobRecord{rec("a", 60), rec("b", 210), rec("c", 50)}, Stats: metrics.RunStats{Makespan: 210}}
	c := Compare(base, pol)
	if math.Abs(c.FasterFrac-1.0/3) > 1e-9 || math.Abs(c.BestGain-0.4) > 1e-9 || math.Abs(c.MakespanChange-0.05) > 1e-9 {
		t.Errorf("Compare = %+v", c)
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

// TestInterferenceExperiment: the sensitivity study has a default and a
// specon row per workload and level, and SpeCon's mean-JCT gain grows
// with interference, as docs/specon.md reports.
func TestInterferenceExperiment(t *testing.T) {
	rep := run(t, "specon-interference")
	if len(rep.Results) != 2*2*len(Interference) {
		t.Fatalf("%d rows", len(rep.Results))
	}
	change := map[string]float64{}
	for _, r := range rep.Results {
		if r.Policy == "specon" {
			change[r.Params["workload"]+"/"+r.Params["interference"]] = r.Metrics["jct_change"]
		}
	}
	for _, w := range []string{"specon-random", "specon-large"} {
		lo, hi := change[w+"/0"], change[w+"/0.2"]
		if !(hi < lo) {
			t.Errorf("%s: JCT change %v at interference 0.2, %v at 0: want a larger gain with interference", w, hi, lo)
		}
	}
}
