// Package elasticexp defines the experiments of the elastic gang scheduler
// (pkg/elastic): the article's three small experiments (3 nodes of 8 vCPU
// and 30 GB, 4 jobs each) with job mixes from low to high demand relative
// to the cluster, and a replay of a slice of the Philly trace with elastic
// worker counts on a larger cluster. Each compares elastic with
// tf-operator and DRAGON.
package elasticexp

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// Policies compared by every experiment here: the article's three, and two
// variants of elastic that isolate a design choice each: scale-up
// restricted to a job's own nodes (what the article's unrestricted
// scale-up costs under the cross-node penalty), and first-fit instead of
// spread for jobs no single node holds (the article's gang pseudo-code
// says "the first available node", its prose "the regular manner").
var Policies = []string{"elastic", "elastic:scaleup=local", "elastic:placement=first-fit", "tf-operator", "dragon"}

// Arrivals are the arrival patterns of the small experiments: "staggered"
// (the mixes' submit times, a job every 60 s; the primary result) and
// "together" (all four jobs at time 0, the article's setting if its jobs
// were submitted at once, which the text does not say).
var Arrivals = []string{"staggered", "together"}

// JobSpec is one job of a small experiment's mix.
type JobSpec struct {
	ID string
	// Submit in seconds and Work in seconds (training time at the requested
	// counts packed on one node; see elastic.PSSpeed).
	Submit, Work float64
	Priority     int
	// Worker and PS are the per-replica demands.
	Worker, PS resource.Vector
	// Workers requested, and the elastic bounds.
	Workers, Min, Max int
	// Servers is the number of parameter servers (fixed).
	Servers int
}

// Mix is the job mix of one small experiment.
type Mix struct {
	Name, Description string
	Jobs              []JobSpec
}

// SmallNode is the article's node: 8 vCPU and 30 GB (taken as 30 GiB).
var SmallNode = resource.New(8, 30, 0)

// SmallNodes is the article's cluster size.
const SmallNodes = 3

// Mixes are the three job mixes; the article's tables were lost, so these
// span its range from jobs small against the cluster to jobs that do not
// fit one node. Every mix has the same arrival pattern (a job every 60 s),
// the same training times and a last job of higher priority, so they
// differ only in how large the jobs are against the cluster:
//   - elastic-1, low: 1-vCPU workers, 2 requested (max 4). The four jobs
//     request 12 of 24 vCPU and fit the cluster together even at max.
//   - elastic-2, medium: 2-vCPU workers, 3 requested (min 1, max 4). A job
//     requests 7 vCPU (one node each), the four request 28 of 24 vCPU.
//   - elastic-3, high: 2-vCPU, 6-GiB workers, 4 requested (min 2, max 6).
//     A job requests 9 vCPU and 28 GiB, more than a node, so no job can be
//     gang-placed on one node at its requested size; two fit at a time.
func Mixes() []Mix {
	ps := resource.New(1, 2, 0)
	mk := func(w resource.Vector, psd resource.Vector, n, lo, hi int) []JobSpec {
		works := []float64{1800, 1200, 2400, 1500}
		out := make([]JobSpec, 4)
		for i := range out {
			out[i] = JobSpec{ID: fmt.Sprintf("j%d", i+1), Submit: float64(60 * i), Work: works[i],
				Worker: w, PS: psd, Workers: n, Min: lo, Max: hi, Servers: 1}
		}
		out[3].Priority = 1
		return out
	}
	return []Mix{
		{Name: "elastic-1", Description: "low demand: 4 jobs of 2 x (1 vCPU, 2 GiB) workers (max 4) + 1 PS, 12 of 24 vCPU requested",
			Jobs: mk(resource.New(1, 2, 0), ps, 2, 1, 4)},
		{Name: "elastic-2", Description: "medium demand: 4 jobs of 3 x (2 vCPU, 4 GiB) workers (min 1, max 4) + 1 PS, 28 of 24 vCPU requested",
			Jobs: mk(resource.New(2, 4, 0), ps, 3, 1, 4)},
		{Name: "elastic-3", Description: "high demand: 4 jobs of 4 x (2 vCPU, 6 GiB) workers (min 2, max 6) + 1 PS (1 vCPU, 4 GiB), each larger than a node",
			Jobs: mk(resource.New(2, 6, 0), resource.New(1, 4, 0), 4, 2, 6)},
	}
}

// RescaleCost is the pause, in seconds, of a job whose workers change:
// starting or stopping worker pods and re-registering with the parameter
// servers (asynchronous training keeps its parameters on the servers, so
// there is no checkpoint to restore).
const RescaleCost = 10

// Jitter is the per-seed variation of the small experiments: submit times
// move by up to ±JitterSubmit seconds and training times by up to
// ±JitterWork (relative), drawn from cluster.Uniform(seed, job), so every
// seed is a slightly different run of the same mix.
const (
	JitterSubmit = 20.0
	JitterWork   = 0.1
)

// BuildJobs turns a mix into jobs for a seed, with the speed model. With
// together set every job is submitted at time 0.
func BuildJobs(m Mix, seed uint64, speed elastic.PSSpeed, together bool) []*cluster.Job {
	out := make([]*cluster.Job, len(m.Jobs))
	for i, s := range m.Jobs {
		submit := math.Max(0, s.Submit+JitterSubmit*cluster.Uniform(seed, uint64(2*i)))
		if together {
			submit = 0
		}
		work := s.Work * (1 + JitterWork*cluster.Uniform(seed, uint64(2*i+1)))
		out[i] = &cluster.Job{ID: s.ID, Class: cluster.ClassBE, Model: "ps", Priority: s.Priority, Submit: math.Round(submit),
			Work: math.Round(work), RescaleCost: RescaleCost, Speed: speed, Seed: seed*131 + uint64(i),
			Groups: []cluster.ReplicaGroup{
				{Name: "worker", Demand: s.Worker, Replicas: s.Workers, Min: s.Min, Max: s.Max},
				{Name: "ps", Demand: s.PS, Replicas: s.Servers, Min: s.Servers, Max: s.Servers},
			}}
	}
	return out
}

// Experiments returns the elastic experiments.
func Experiments() []experiment.Experiment {
	var out []experiment.Experiment
	for _, m := range Mixes() {
		out = append(out, experiment.Experiment{Name: m.Name,
			Description: "elastic vs tf-operator vs DRAGON on 3 nodes x (8 vCPU, 30 GiB), " + m.Description,
			Run:         func(ctx context.Context, env *experiment.Env) (*experiment.Report, error) { return small(ctx, env, m) }})
	}
	out = append(out, experiment.Experiment{Name: "elastic-philly",
		Description: "elastic vs tf-operator vs DRAGON on a Philly slice (first 300 jobs, elastic workers derived from GPU counts) on 16 nodes x (64 cores, 512 GiB, 8 GPUs)",
		Run:         philly})
	return out
}

// Tick is the scheduling interval of the small experiments, in seconds.
const Tick = 5

func small(ctx context.Context, env *experiment.Env, m Mix) (*experiment.Report, error) {
	speed := elastic.DefaultPSSpeed()
	seeds := env.SeedCount(5)
	if env.Quick && env.Seeds == 0 {
		seeds = 2
	}
	nodes := func() []cluster.Node { return Nodes("node", SmallNodes, SmallNode) }
	rep := &experiment.Report{Experiment: m.Name, Seed: env.Seed, Seeds: seeds, Columns: Columns,
		Notes: []string{fmt.Sprintf("%d nodes x (%v); %s; scheduling every %d s; rescale pause %d s; speed model alpha=%g gamma=%g tip=%g workers/PS",
			SmallNodes, SmallNode, m.Description, Tick, RescaleCost, speed.Alpha, speed.Gamma, speed.Tip)}}
	var all []Run
	for _, arr := range Arrivals {
		together := arr == "together"
		setup := Setup{Nodes: nodes,
			Jobs: func(seed uint64) ([]*cluster.Job, error) {
				jobs := BuildJobs(m, seed, speed, together)
				if err := elastic.ValidateJobs(jobs, nodes()); err != nil {
					return nil, fmt.Errorf("%s: %w", m.Name, err)
				}
				return jobs, nil
			},
			Config: sim.Config{Tick: Tick}}
		rows, runs, err := RunAll(ctx, env, m.Name+" "+arr, setup, Policies, seeds, map[string]string{"arrivals": arr})
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, rows...)
		all = append(all, runs...)
	}
	rep.Notes = append(rep.Notes, comparisons(rep.Results)...)
	rep.Notes = append(rep.Notes, perJobNotes(all)...)
	rep.Jobs = jobTables(all)
	for _, r := range firstRuns(all) {
		rep.Charts = append(rep.Charts, ReplicaChart(m.Name, r))
	}
	return rep, nil
}

// Columns are the metrics the tables show.
var Columns = []string{"completed", "jct_mean_s", "jct_total_s", "train_time_mean_s", "train_time_total_s", "queue_delay_mean_s",
	"makespan_s", "scale_ups", "scale_downs", "gang_placed_frac", "partial_start_frac", "cpu_alloc_frac"}

// Nodes returns n identical nodes named prefix-0...
func Nodes(prefix string, n int, capacity resource.Vector) []cluster.Node {
	out := make([]cluster.Node, n)
	for i := range out {
		out[i] = cluster.Node{Name: fmt.Sprintf("%s-%d", prefix, i), InstanceType: prefix, Capacity: capacity}
	}
	return out
}

// comparisons states elastic's change against each baseline in mean JCT
// and mean training time, per arrival pattern.
func comparisons(rows []experiment.Row) []string {
	var out []string
	for _, el := range rows {
		if el.Policy != "elastic" || el.Params["scaleup"] != "" || el.Params["placement"] != "" {
			continue
		}
		for _, r := range rows {
			if r.Policy == "elastic" || r.Params["arrivals"] != el.Params["arrivals"] {
				continue
			}
			what := r.Policy
			if a := el.Params["arrivals"]; a != "" {
				what += " (" + a + ")"
			}
			out = append(out, fmt.Sprintf("elastic vs %s: mean JCT %+.1f%%, mean training time %+.1f%%, total JCT %+.1f%%", what,
				100*experiment.Change(r.Metrics["jct_mean_s"], el.Metrics["jct_mean_s"]),
				100*experiment.Change(r.Metrics["train_time_mean_s"], el.Metrics["train_time_mean_s"]),
				100*experiment.Change(r.Metrics["jct_total_s"], el.Metrics["jct_total_s"])))
		}
	}
	return out
}

func perJobNotes(runs []Run) []string {
	var out []string
	for _, r := range firstRuns(runs) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s seed %d per job (train / JCT s):", r.Label, r.Seed)
		for _, rec := range r.Result.Records {
			if rec.Finished() {
				fmt.Fprintf(&b, " %s %.0f/%.0f", rec.ID, rec.Finish-rec.FirstStart, rec.JCT())
			} else {
				fmt.Fprintf(&b, " %s unfinished", rec.ID)
			}
		}
		out = append(out, b.String())
	}
	return out
}

func firstRuns(runs []Run) []Run {
	var out []Run
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Label] {
			seen[r.Label] = true
			out = append(out, r)
		}
	}
	return out
}

func jobTables(runs []Run) []experiment.JobTable {
	var out []experiment.JobTable
	for _, r := range firstRuns(runs) {
		out = append(out, experiment.JobTable{Name: fmt.Sprintf("jobs-%s-seed%d", r.Label, r.Seed), Records: r.Result.Records})
	}
	return out
}

// ReplicaChart is the worker count of each job over time in one run.
func ReplicaChart(exp string, r Run) experiment.ChartFile {
	c := &chart.Line{Title: fmt.Sprintf("Workers per job, %s, %s (seed %d)", exp, r.Label, r.Seed), XLabel: "time (s)",
		YLabel: "workers", Step: true}
	ids := make([]string, 0, len(r.Workers))
	for id := range r.Workers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s := chart.Series{Name: id}
		for _, p := range r.Workers[id] {
			s.X = append(s.X, p.T)
			s.Y = append(s.Y, p.Value)
		}
		c.Series = append(c.Series, s)
	}
	return experiment.ChartFile{File: "replicas-" + r.Label + ".svg", Line: c}
}

// TotalWorkersChart plots the workers of all jobs over time, one line per
// policy (first seed), for experiments with too many jobs for one line
// each.
func TotalWorkersChart(title string, runs []Run) experiment.ChartFile {
	c := &chart.Line{Title: title, XLabel: "time (h)", YLabel: "workers running", Step: true}
	for _, r := range firstRuns(runs) {
		s := chart.Series{Name: r.Label}
		for _, p := range r.Total {
			s.X = append(s.X, p.T/3600)
			s.Y = append(s.Y, p.Value)
		}
		c.Series = append(c.Series, s)
	}
	return experiment.ChartFile{File: "workers-total.svg", Line: c}
}
