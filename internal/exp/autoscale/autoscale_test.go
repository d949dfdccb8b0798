package autoscaleexp

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/pkg/autoscale"
	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

func env(t *testing.T) *experiment.Env {
	t.Helper()
	r := policy.NewRegistry()
	if err := r.Add(append(baseline.Entries(), autoscale.Entries()...)...); err != nil {
		t.Fatal(err)
	}
	return &experiment.Env{Seed: 1, Policies: r, Quick: true}
}

// TestQuick runs the quick experiment and checks what the model shows:
// static-max never waits for a node but pays for the peak all the time;
// the reactive cluster-autoscaler is cheapest and waits about a launch
// delay for each job that finds no room; every predictive variant waits
// less than reactive and costs less than static-max, paying for it with
// placeholder node-hours.
func TestQuick(t *testing.T) {
	rep, err := Run(context.Background(), env(t), QuickOptions())
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]float64{}
	for _, r := range rep.Results {
		name := r.Policy
		if m := r.Params["model"]; m != "" {
			name += ":" + m
		}
		rows[name] = r.Metrics
		for _, k := range []string{"pending_mean_s", "pending_p95_s", "cost", "overprovisioned_node_hours"} {
			if _, ok := r.Metrics[k]; !ok {
				t.Fatalf("%s: no %s", name, k)
			}
		}
		if r.Metrics["completed"] < 0.9*r.Metrics["jobs"] {
			t.Fatalf("%s: %g of %g jobs completed", name, r.Metrics["completed"], r.Metrics["jobs"])
		}
	}
	st, re := rows["static-max"], rows["reactive"]
	if st == nil || re == nil || len(rows) != 2+len(QuickOptions().Models) {
		t.Fatalf("rows: %v", rows)
	}
	if re["cost"] >= st["cost"] || re["pending_mean_s"] <= st["pending_mean_s"] {
		t.Fatalf("reactive cost %g pending %g vs static-max cost %g pending %g", re["cost"], re["pending_mean_s"], st["cost"], st["pending_mean_s"])
	}
	for _, m := range QuickOptions().Models {
		p := rows["predictive:"+m]
		if p["pending_mean_s"] >= re["pending_mean_s"] || p["cost"] >= st["cost"] || p["placeholder_node_hours"] <= 0 {
			t.Errorf("predictive %s: pending %g (reactive %g), cost %g (static-max %g), placeholder node-hours %g",
				m, p["pending_mean_s"], re["pending_mean_s"], p["cost"], st["cost"], p["placeholder_node_hours"])
		}
	}
}

func TestJobsSliceAndCatalog(t *testing.T) {
	o := QuickOptions()
	o.Days = 1
	jobs, err := Jobs("", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) == 0 || jobs[0].Submit < 0 || jobs[len(jobs)-1].Submit >= 86400 {
		t.Fatalf("%d jobs, first %g last %g", len(jobs), jobs[0].Submit, jobs[len(jobs)-1].Submit)
	}
	for _, j := range jobs {
		d := j.Groups[0].Demand
		if d[resource.CPU] != 4000*d[resource.GPU] {
			t.Fatalf("job %s: %v is not 4 cores per GPU", j.ID, d)
		}
	}
	nodes, err := StaticNodes(jobs, Catalog())
	if err != nil || len(nodes) == 0 {
		t.Fatalf("static nodes: %d, %v", len(nodes), err)
	}
	o.From = time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Jobs("", o); err == nil {
		t.Fatal("a slice after the trace gave no error")
	}
	o.Days = 0
	if _, err := Jobs("", o); err == nil {
		t.Fatal("zero days gave no error")
	}
}
