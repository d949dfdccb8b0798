// Package autoscaleexp defines the `autoscale` experiment of issue 7: a
// contiguous slice of the Philly trace on an elastic cluster of AWS g4dn
// nodes, comparing static allocation at the peak (static-max), the
// cluster-autoscaler alone (reactive) and the predictive autoscaler with
// each forecaster (papers/004).
package autoscaleexp

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/embed"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/forecast"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// Options fix the scenario. Defaults (DefaultOptions) are the documented
// experiment; Quick shrinks them.
type Options struct {
	// From is the first day of the slice (UTC midnight) and Days its
	// length; the embedded trace spans 2017-09-04 to 2017-12-22.
	From time.Time
	Days int
	// Warmup is how long the predictive policy uses its ladder before
	// forecasting (hours); Refit how often it refits (hours).
	Warmup, Refit float64
	// LaunchDelay of a node in seconds (the paper's 5 minutes), IdleTimeout
	// of the cluster-autoscaler (10 minutes), Tick of the scheduler.
	LaunchDelay, IdleTimeout, Tick float64
	// Models are the forecasters of the predictive rows ("naive", the last
	// value, never forecasts growth: it isolates what the placeholders of
	// the others buy).
	Models []string
	// Base is the base scheduling policy of reactive and predictive.
	Base string
	// Groups are the placement groups the predictive policy balances over.
	Groups string
}

// PhillyStart is the submit time of the embedded trace's first job, which
// the loader rebases to 0.
var PhillyStart = time.Date(2017, 9, 4, 10, 30, 41, 0, time.UTC)

// DefaultOptions: the two weeks from Monday 2017-10-02 (the busiest part
// of the trace, 23k jobs), the first week of ladder warm-up (one weekly
// season, as the paper's prophet collects a season before predicting; the
// second week is the paper's test week), daily refits (weekly for the
// networks, whose training takes minutes).
func DefaultOptions() Options {
	return Options{From: time.Date(2017, 10, 2, 0, 0, 0, 0, time.UTC), Days: 14, Warmup: 7 * 24, Refit: 24,
		LaunchDelay: 300, IdleTimeout: 600, Tick: 60,
		Models: []string{"static", "naive", "seasonal-naive", "holt-winters", "arima", "lstm", "transformer", "ladder"},
		Base:   "binpack", Groups: "pg-a,pg-b"}
}

// QuickOptions: three days, a day of warm-up, the fast forecasters only.
func QuickOptions() Options {
	o := DefaultOptions()
	o.Days, o.Warmup, o.Refit = 3, 24, 12
	o.Models = []string{"seasonal-naive", "holt-winters", "ladder"}
	return o
}

// Experiments returns the autoscaling experiments.
func Experiments() []experiment.Experiment {
	return []experiment.Experiment{{Name: "autoscale",
		Description: "Philly slice (2 weeks from 2017-10-02) on elastic g4dn nodes: static-max vs reactive (cluster-autoscaler) vs predictive with each forecaster (papers/004)",
		Run: func(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
			o := DefaultOptions()
			if env.Quick {
				o = QuickOptions()
			}
			return Run(ctx, env, o)
		}}, {Name: "autoscale-karpenter",
		Description: "the Karpenter e2e's demand ramp (6 one-GPU jobs in 3 waves) with the real loop's launch delay and consolidation: reactive vs predictive (ladder), to set against the real loop (docs/autoscale.md)",
		Run: func(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
			return RunRamp(ctx, env, DefaultRampOptions())
		}}}
}

// Catalog returns the g4dn series as simulator instance types.
func Catalog() []cluster.InstanceType {
	var out []cluster.InstanceType
	for _, t := range embed.MustAWS("g4dn") {
		out = append(out, cluster.InstanceType{Name: t.Name, PricePerHour: t.Price,
			Capacity: resource.New(t.Cap[embed.CPU], t.Cap[embed.Mem], int64(t.Cap[embed.GPU]))})
	}
	return out
}

// Jobs loads the slice: Philly jobs submitted in [From, From+Days),
// rebased to start at 0, with each GPU sized as a g4dn.xlarge (4 vCPU, 16
// GiB), so a 1-GPU replica fills a g4dn.xlarge and the simulator's demand
// equals the embedding's (embed.PhillyVectors).
func Jobs(path string, o Options) ([]*cluster.Job, error) {
	po := workload.DefaultPhillyOptions()
	po.CoresPerGPU, po.MemGiBPerGPU = embed.PhillyCoresPerGPU, embed.PhillyMemGiBPerGPU
	all, err := workload.LoadPhilly(path, po)
	if err != nil {
		return nil, err
	}
	if o.Days <= 0 {
		return nil, fmt.Errorf("autoscale: days %d: want a positive number of days", o.Days)
	}
	lo := o.From.Sub(PhillyStart).Seconds()
	hi := lo + float64(o.Days)*86400
	var out []*cluster.Job
	for _, j := range all {
		if j.Submit >= lo && j.Submit < hi {
			c := *j
			c.Submit -= lo
			out = append(out, &c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("autoscale: no Philly job submitted in the %d days from %s", o.Days, o.From.Format("2006-01-02"))
	}
	return out, nil
}

// StaticNodes sizes the static-max cluster: for every instance type, the
// peak over the slice of its bucket count (the embedded demand of the
// jobs running at each 5-minute snapshot with no queueing, Alg. 2), i.e.
// the `static` forecaster's answer with perfect hindsight.
func StaticNodes(jobs []*cluster.Job, cat []cluster.InstanceType) ([]cluster.Node, error) {
	ec := make(embed.Catalog, len(cat))
	for i, t := range cat {
		ec[i] = embed.InstanceType{Name: t.Name, Cap: embed.FromResource(t.Capacity), Price: t.PricePerHour}
	}
	ec = ec.Sorted()
	s, err := forecast.BuildSeries(jobs, ec, forecast.DefaultStep, embed.JobVectors)
	if err != nil {
		return nil, fmt.Errorf("static-max: %w", err)
	}
	var nodes []cluster.Node
	for b, name := range s.Buckets {
		peak := 0.0
		for _, row := range s.Values {
			peak = math.Max(peak, row[b])
		}
		for _, t := range cat {
			if t.Name != name {
				continue
			}
			for i := 0; i < int(peak); i++ {
				nodes = append(nodes, cluster.Node{Name: fmt.Sprintf("%s-%d", name, i), InstanceType: name,
					Capacity: t.Capacity, PricePerHour: t.PricePerHour})
			}
		}
	}
	return nodes, nil
}

// Columns of the report table.
var Columns = []string{"jobs", "completed", "pending_mean_s", "pending_p95_s", "cost", "overprovisioned_node_hours",
	"pending_test_mean_s", "pending_test_p95_s", "cost_test", "overprovisioned_node_hours_test", "placeholder_node_hours_test",
	"node_hours_test", "nodes_peak", "nodes_provisioned"}

// Run runs the experiment with the given options.
func Run(ctx context.Context, env *experiment.Env, o Options) (*experiment.Report, error) {
	jobs, err := Jobs(env.PhillyPath, o)
	if err != nil {
		return nil, err
	}
	cat := Catalog()
	static, err := StaticNodes(jobs, cat)
	if err != nil {
		return nil, err
	}
	// Every run stops at the end of the slice: costs and node-hours are
	// over the same window for every row (jobs of the slice run for up to
	// weeks beyond it, which static-max would pay for at its peak size).
	horizon := float64(o.Days) * 86400
	shared := func(uint64) ([]*cluster.Job, error) { return jobs, nil } // immutable specs
	base := fmt.Sprintf("base=%s", o.Base)
	// static-max: the peak's nodes, always; no catalogue, no autoscaler.
	fixed := experiment.Setup{Nodes: func(uint64) []cluster.Node { return static }, Jobs: shared,
		Config: sim.Config{Tick: o.Tick, ElasticMetrics: true, Horizon: horizon}}
	rows, runs, err := experiment.RunPolicies(ctx, env, "autoscale static-max", fixed, []string{"reactive:" + base}, 1)
	if err != nil {
		return nil, err
	}
	rows[0].Policy, rows[0].Params, runs[0].Policy = "static-max", nil, "static-max"
	elastic := experiment.Setup{Nodes: func(uint64) []cluster.Node { return nil }, Jobs: shared,
		Config: sim.Config{Tick: o.Tick, LaunchDelay: o.LaunchDelay, Catalog: cat, Horizon: horizon,
			Autoscaler: &sim.Autoscaler{IdleTimeout: o.IdleTimeout}}}
	specs := []string{"reactive:" + base}
	for _, m := range o.Models {
		quick := ""
		if env.Quick {
			quick = ";quick=1"
		}
		refit := o.Refit
		if m == "lstm" || m == "transformer" {
			refit = math.Max(refit, 7*24)
		}
		specs = append(specs, fmt.Sprintf("predictive:model=%s;warmup=%g;refit=%g;groups=%s;%s%s", m, o.Warmup, refit, o.Groups, base, quick))
	}
	more, moreRuns, err := experiment.RunPolicies(ctx, env, "autoscale", elastic, specs, 1)
	if err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	runs = append(runs, moreRuns...)
	for i := range rows {
		if m := rows[i].Params["model"]; m != "" {
			rows[i].Params = map[string]string{"model": m}
		} else {
			rows[i].Params = nil
		}
	}
	for i := range runs {
		testWindow(rows[i].Metrics, runs[i].Result, o.Warmup*3600, horizon)
		runs[i].Policy = rows[i].Policy
		if m := rows[i].Params["model"]; m != "" {
			runs[i].Policy += " " + m
		}
	}
	notes := []string{
		fmt.Sprintf("%d Philly jobs submitted in the %d days from %s (UTC), each GPU sized as a g4dn.xlarge (4 vCPU, 16 GiB)",
			len(jobs), o.Days, o.From.Format("2006-01-02")),
		fmt.Sprintf("elastic rows: no initial node, g4dn catalogue, nodes ready %g s after the request, released after %g s empty; scheduling every %g s; base policy %s",
			o.LaunchDelay, o.IdleTimeout, o.Tick, o.Base),
		fmt.Sprintf("static-max: %d fixed nodes (per type, the peak of the embedded demand over the slice), no autoscaler", len(static)),
		fmt.Sprintf("predictive: forecast every 300 s; ladder for the first %g h; refit every %g h; placement groups %s", o.Warmup, o.Refit, o.Groups),
		fmt.Sprintf("every run stops at the end of the slice (%g h): jobs still running then are counted as not completed", horizon/3600),
		"pending time: first start minus submit (jobs never started count until the end); cost: node price x hours from request to release; " +
			"overprovisioned_node_hours: node capacity not used by real jobs (held by placeholders, empty, or launching), by dominant share",
		"Microsoft Philly cluster trace, Jeon et al., USENIX ATC 2019 (CC BY 4.0)",
	}
	if env.Quick {
		notes = append(notes, "quick: 3 days, 1 day of warm-up, fast forecasters only")
	}
	return &experiment.Report{Experiment: "autoscale", Seed: env.Seed, Results: rows, Columns: Columns, Notes: notes,
		Charts: []experiment.ChartFile{pendingChart(runs), nodesChart(runs)}}, nil
}

// testWindow adds the figures of the window after the predictive
// policy's warm-up (the paper's test week), when the model, not the
// ladder, sets the placeholders: pending time of the jobs submitted in it
// (a job never started counts until the end) and the node-hours and cost
// of the hours in it (from the run's hourly series).
func testWindow(m map[string]float64, r *sim.Result, from, end float64) {
	var pend []float64
	for _, rec := range r.Records {
		if rec.Rejected || rec.Submit < from {
			continue
		}
		if rec.FirstStart >= 0 {
			pend = append(pend, rec.QueueDelay())
		} else {
			pend = append(pend, end-rec.Submit)
		}
	}
	m["test_jobs"] = float64(len(pend))
	m["pending_test_mean_s"] = metrics.Mean(pend)
	m["pending_test_p95_s"] = metrics.Percentile(pend, 95)
	var cost, nh, over, ph float64
	for _, h := range r.Elastic {
		if float64(h.Hour)*3600 >= from {
			cost, nh, over, ph = cost+h.Cost, nh+h.NodeHours, over+h.OverHours, ph+h.PlaceholderHours
		}
	}
	m["cost_test"], m["node_hours_test"], m["overprovisioned_node_hours_test"], m["placeholder_node_hours_test"] = cost, nh, over, ph
}

// nodesChart plots the mean number of nodes alive per hour for each row.
func nodesChart(runs []experiment.Run) experiment.ChartFile {
	c := &chart.Line{Title: "nodes alive (hourly mean)", XLabel: "time (h)", YLabel: "nodes", Step: true}
	for _, r := range runs {
		s := chart.Series{Name: r.Policy}
		for _, h := range r.Result.Elastic {
			s.X = append(s.X, float64(h.Hour))
			s.Y = append(s.Y, h.NodeHours)
		}
		c.Series = append(c.Series, s)
	}
	return experiment.ChartFile{File: "nodes.svg", Line: c}
}

// pendingChart plots pending time per job against its submit time (hours)
// for each row, as a step chart of the hourly mean.
func pendingChart(runs []experiment.Run) experiment.ChartFile {
	c := &chart.Line{Title: "mean pending time per hour of submission", XLabel: "time (h)", YLabel: "pending (s)", Step: true}
	for _, r := range runs {
		sum := map[int]float64{}
		n := map[int]float64{}
		last := 0
		for _, rec := range r.Result.Records {
			if rec.Rejected || rec.FirstStart < 0 {
				continue
			}
			h := int(rec.Submit / 3600)
			sum[h] += rec.QueueDelay()
			n[h]++
			last = max(last, h)
		}
		s := chart.Series{Name: r.Policy}
		for h := 0; h <= last; h++ {
			s.X = append(s.X, float64(h))
			if n[h] > 0 {
				s.Y = append(s.Y, sum[h]/n[h])
			} else {
				s.Y = append(s.Y, 0)
			}
		}
		c.Series = append(c.Series, s)
	}
	return experiment.ChartFile{File: "pending.svg", Line: c}
}
