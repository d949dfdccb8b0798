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
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// Policies compared by every experiment here: the article's three, and
// four variants of elastic that isolate a design choice each: the gang
// order before issue 14 (size first: the requested count spread before
// fewer workers on one node), scale-up restricted to a job's own nodes
// (what the article's unrestricted scale-up costs under the cross-node
// penalty), the article's literal node-by-node scale-up loop ("for n in
// NR do for q in Q do": every job grown on node 0, then node 1, ...,
// instead of each job on its own nodes first), and first-fit instead of
// spread for jobs no single node holds (the article's gang pseudo-code
// says "the first available node", its prose "the regular manner").
var Policies = []string{"elastic", "elastic:order=size-first", "elastic:scaleup=local", "elastic:scaleup=node", "elastic:placement=first-fit", "tf-operator", "dragon"}

// Readings are the two readings of the article's gang order that the
// notes compare against each baseline: the default (one node first) and
// the old one.
var Readings = []string{"elastic", "elastic:order=size-first"}

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

// Mixes are the three job mixes. The article's job tables were lost; what
// the text keeps is that its three experiments run 4 jobs each on the 3
// nodes, that they span "low resource requirements in comparison to the
// available resource" (where it says elastic excels) to more, and that
// its weighting ranks jobs by CPU + memory, which only decides something
// when the jobs' shapes differ. So each mix has four different shapes
// (worker size, worker count and server size; in elastic-2, j1 and j4
// request the same total with different workers), taken from the
// CPU-only TensorFlow parameter-server jobs such a GKE cluster runs
// (Kubeflow's TFJob examples): small CNNs (1 vCPU, 2 GiB
// workers), larger CNNs and LSTMs (2-3 vCPU, 3-6 GiB), and wide or
// embedding models whose workers and servers hold large tables (1 vCPU,
// 6-10 GiB workers, 4 GiB servers), so that the CPU + memory weight and
// CPU alone rank them differently. Every mix has the same arrival pattern
// (a job every 60 s; the primary setting, "staggered"), the same training
// times in submit order (1800, 1200, 2400, 1500 s at the requested counts
// on one node) and a last job of priority 1, the "high priority job" of
// the article's loop. Shapes and lengths were assigned independently
// (lengths by submit order, as in UniformMixes), so the weight's order is
// neither shortest- nor longest-job-first. The mixes differ in how large
// the jobs are against the nodes:
//   - elastic-1, low: every job fits one node even at its maximum; the
//     four request 12 of 24 vCPU and 28 of 90 GiB.
//   - elastic-2, medium: every job fits one node at its request, but the
//     four (24 vCPU, 69 GiB) do not fit the three nodes side by side.
//   - elastic-3, high: no job fits one node at its request (two by CPU,
//     one by memory, one by both), every job fits one node at its
//     minimum; the four request 32 vCPU and 102 GiB.
//
// The mixes were fixed before any run of them.
func Mixes() []Mix {
	type sh struct {
		cpu, gib     float64
		n, lo, hi    int
		pscpu, psgib float64
	}
	mk := func(shapes [4]sh) []JobSpec {
		works := []float64{1800, 1200, 2400, 1500}
		out := make([]JobSpec, 4)
		for i, x := range shapes {
			out[i] = JobSpec{ID: fmt.Sprintf("j%d", i+1), Submit: float64(60 * i), Work: works[i],
				Worker: resource.New(x.cpu, x.gib, 0), PS: resource.New(x.pscpu, x.psgib, 0),
				Workers: x.n, Min: x.lo, Max: x.hi, Servers: 1}
		}
		out[3].Priority = 1
		return out
	}
	return []Mix{
		{Name: "elastic-1", Description: "low demand: j1 small CNN 2 x (1 vCPU, 2 GiB) [1-4] + PS (1, 2); j2 wide 1 x (1, 6) [1-3] + PS (1, 4); j3 CNN 2 x (2, 3) [1-3] + PS (1, 2); j4 (priority 1) small 1 x (1, 2) [1-2] + PS (1, 2); 12 of 24 vCPU requested, every job fits a node at max",
			Jobs: mk([4]sh{{1, 2, 2, 1, 4, 1, 2}, {1, 6, 1, 1, 3, 1, 4}, {2, 3, 2, 1, 3, 1, 2}, {1, 2, 1, 1, 2, 1, 2}})},
		{Name: "elastic-2", Description: "medium demand: j1 CNN 3 x (2 vCPU, 4 GiB) [1-4] + PS (1, 2); j2 wide 2 x (1, 10) [1-3] + PS (1, 4); j3 LSTM 3 x (2, 5) [1-4] + PS (1, 2); j4 (priority 1) CNN 2 x (3, 6) [1-3] + PS (1, 2); 24 of 24 vCPU requested, each job fits a node at its request",
			Jobs: mk([4]sh{{2, 4, 3, 1, 4, 1, 2}, {1, 10, 2, 1, 3, 1, 4}, {2, 5, 3, 1, 4, 1, 2}, {3, 6, 2, 1, 3, 1, 2}})},
		{Name: "elastic-3", Description: "high demand: j1 CNN 4 x (2 vCPU, 6 GiB) [2-6] + PS (1, 4); j2 wide 3 x (1, 10) [2-4] + PS (1, 4); j3 CNN 3 x (3, 6) [1-4] + PS (1, 4); j4 (priority 1) LSTM 4 x (2, 4) [2-6] + PS (1, 2); 32 of 24 vCPU requested, no job fits a node at its request, each at its minimum",
			Jobs: mk([4]sh{{2, 6, 4, 2, 6, 1, 4}, {1, 10, 3, 2, 4, 1, 4}, {3, 6, 3, 1, 4, 1, 4}, {2, 4, 4, 2, 6, 1, 2}})},
	}
}

// UniformMixes are the mixes of elastic-1, -2 and -3 before issue 14, kept
// for comparison (elastic-gamma runs them): within a mix every job has the
// same shape, so the CPU + memory weight never orders two jobs, and the
// mixes differ only in how large that one shape is against the nodes.
// Arrivals, training times and priorities are those of Mixes.
func UniformMixes() []Mix {
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
		{Name: "uniform-1", Description: "low demand, one shape: 4 jobs of 2 x (1 vCPU, 2 GiB) workers (max 4) + 1 PS, 12 of 24 vCPU requested",
			Jobs: mk(resource.New(1, 2, 0), ps, 2, 1, 4)},
		{Name: "uniform-2", Description: "medium demand, one shape: 4 jobs of 3 x (2 vCPU, 4 GiB) workers (min 1, max 4) + 1 PS, 28 of 24 vCPU requested",
			Jobs: mk(resource.New(2, 4, 0), ps, 3, 1, 4)},
		{Name: "uniform-3", Description: "high demand, one shape: 4 jobs of 4 x (2 vCPU, 6 GiB) workers (min 2, max 6) + 1 PS (1 vCPU, 4 GiB), each larger than a node",
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
	out = append(out, experiment.Experiment{Name: "elastic-gamma",
		Description: "the three small experiments and their previous uniform-shape mixes (both arrival patterns) at cross-node penalty gamma 0, 1 and 3: elastic (one node first and size first) vs tf-operator vs DRAGON",
		Run:         gammaSweep})
	out = append(out, experiment.Experiment{Name: "elastic-philly",
		Description: "elastic vs tf-operator vs DRAGON on a Philly slice (first 300 jobs, elastic workers derived from GPU counts) on 16 nodes x (64 cores, 512 GiB, 8 GPUs)",
		Run:         philly})
	return out
}

// Tick is the scheduling interval of the small experiments, in seconds.
const Tick = 5

// seeds is the number of seeds of the small experiments: 5, or 2 with
// Quick, unless the environment says.
func seeds(env *experiment.Env) int {
	n := env.SeedCount(5)
	if env.Quick && env.Seeds == 0 {
		n = 2
	}
	return n
}

// runMix runs the policy specs on one mix under both arrival patterns with
// the given speed model. Params are added to every row beside "arrivals".
func runMix(ctx context.Context, env *experiment.Env, m Mix, speed elastic.PSSpeed, specs []string, params map[string]string) ([]experiment.Row, []Run, error) {
	nodes := func() []cluster.Node { return Nodes("node", SmallNodes, SmallNode) }
	var rows []experiment.Row
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
		ps := map[string]string{"arrivals": arr}
		label := m.Name + " " + arr
		for k, v := range params {
			ps[k] = v
			label += " " + k + "=" + v
		}
		r, runs, err := RunAll(ctx, env, label, setup, specs, seeds(env), ps)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, r...)
		all = append(all, runs...)
	}
	return rows, all, nil
}

func speedNote(speed elastic.PSSpeed) string {
	return fmt.Sprintf("speed model alpha=%g gamma=%g tip=%g workers/PS", speed.Alpha, speed.Gamma, speed.Tip)
}

func small(ctx context.Context, env *experiment.Env, m Mix) (*experiment.Report, error) {
	speed := elastic.DefaultPSSpeed()
	rows, all, err := runMix(ctx, env, m, speed, Policies, nil)
	if err != nil {
		return nil, err
	}
	rep := &experiment.Report{Experiment: m.Name, Seed: env.Seed, Seeds: seeds(env), Columns: Columns, Results: rows,
		Notes: []string{fmt.Sprintf("%d nodes x (%v); %s; scheduling every %d s; rescale pause %d s; %s",
			SmallNodes, SmallNode, m.Description, Tick, RescaleCost, speedNote(speed))}}
	rep.Notes = append(rep.Notes, comparisons(rep.Results)...)
	rep.Notes = append(rep.Notes, perJobNotes(all)...)
	rep.Jobs = jobTables(all)
	for _, r := range firstRuns(all) {
		rep.Charts = append(rep.Charts, ReplicaChart(m.Name, r))
	}
	return rep, nil
}

// Gammas are the cross-node penalties elastic-gamma sweeps: none, the
// default (a byte across nodes costs twice a byte within one), and the
// value drover used before issue 14 (four times).
var Gammas = []float64{0, 1, 3}

// GammaPolicies are the policies elastic-gamma compares.
var GammaPolicies = []string{"elastic", "elastic:order=size-first", "elastic:scaleup=node", "tf-operator", "dragon"}

// GammaColumns are the metrics elastic-gamma's table shows.
var GammaColumns = []string{"jct_mean_s", "makespan_s", "train_time_mean_s", "queue_delay_mean_s", "scale_ups", "scale_downs",
	"gang_placed_frac", "reduced_start_frac", "partial_start_frac"}

// gammaSweep runs the three mixes at every gamma in Gammas, the other
// speed-model parameters at their defaults.
func gammaSweep(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	base := elastic.DefaultPSSpeed()
	rep := &experiment.Report{Experiment: "elastic-gamma", Seed: env.Seed, Seeds: seeds(env), Columns: GammaColumns,
		Notes: []string{fmt.Sprintf("the mixes of elastic-1, -2, -3 and the uniform mixes of their previous version on %d nodes x (%v); scheduling every %d s; rescale pause %d s; %s, gamma swept over %v",
			SmallNodes, SmallNode, Tick, RescaleCost, speedNote(base), Gammas)}}
	type tally struct{ tf, dragon, n int }
	var summary []string
	sets := []struct {
		name  string
		mixes []Mix
	}{{"shaped mixes (elastic-1..3)", Mixes()}, {"uniform mixes (uniform-1..3)", UniformMixes()}}
	for _, set := range sets {
		for _, g := range Gammas {
			speed := base
			speed.Gamma = g
			if err := speed.Validate(); err != nil {
				return nil, err
			}
			gs := strconv.FormatFloat(g, 'g', -1, 64)
			wins := map[string]*tally{}
			for _, m := range set.mixes {
				rows, _, err := runMix(ctx, env, m, speed, GammaPolicies, map[string]string{"gamma": gs, "mix": m.Name})
				if err != nil {
					return nil, err
				}
				rep.Results = append(rep.Results, rows...)
				for _, c := range compare(rows, []string{"arrivals"}) {
					rep.Notes = append(rep.Notes, fmt.Sprintf("gamma=%s %s %s", gs, m.Name, c.String()))
					t := wins[c.Reading]
					if t == nil {
						t = &tally{}
						wins[c.Reading] = t
					}
					switch c.Baseline {
					case "tf-operator":
						t.n++
						if c.JCT < 0 {
							t.tf++
						}
					case "dragon":
						if c.JCT < 0 {
							t.dragon++
						}
					}
				}
			}
			for _, r := range Readings {
				if t := wins[r]; t != nil {
					summary = append(summary, fmt.Sprintf("%s, gamma=%s: %s has a lower mean JCT than tf-operator in %d of %d settings, than dragon in %d of %d",
						set.name, gs, r, t.tf, t.n, t.dragon, t.n))
				}
			}
		}
	}
	rep.Notes = append(rep.Notes, summary...)
	return rep, nil
}

// Columns are the metrics the tables show.
var Columns = []string{"completed", "jct_mean_s", "jct_total_s", "train_time_mean_s", "train_time_total_s", "queue_delay_mean_s",
	"makespan_s", "scale_ups", "scale_downs", "gang_placed_frac", "reduced_start_frac", "partial_start_frac", "cpu_alloc_frac"}

// Nodes returns n identical nodes named prefix-0...
func Nodes(prefix string, n int, capacity resource.Vector) []cluster.Node {
	out := make([]cluster.Node, n)
	for i := range out {
		out[i] = cluster.Node{Name: fmt.Sprintf("%s-%d", prefix, i), InstanceType: prefix, Capacity: capacity}
	}
	return out
}

// Comparison is one reading of elastic against one baseline in one
// setting: relative changes of the reading's mean JCT, makespan, mean
// training time and total JCT against the baseline's.
type Comparison struct {
	Reading, Baseline string
	// Setting names the row parameters the two rows share, e.g.
	// "staggered".
	Setting                        string
	JCT, Makespan, Train, TotalJCT float64
}

func (c Comparison) String() string {
	what := c.Baseline
	if c.Setting != "" {
		what += " (" + c.Setting + ")"
	}
	return fmt.Sprintf("%s vs %s: mean JCT %+.1f%%, makespan %+.1f%%, mean training time %+.1f%%, total JCT %+.1f%%",
		c.Reading, what, 100*c.JCT, 100*c.Makespan, 100*c.Train, 100*c.TotalJCT)
}

// compare compares each reading in Readings with each baseline
// (tf-operator, dragon) on rows that agree on the parameters keys.
func compare(rows []experiment.Row, keys []string) []Comparison {
	spec := func(r experiment.Row) string {
		s := r.Policy
		var ps []string
		for _, k := range []string{"order", "placement", "scaleup"} {
			if v := r.Params[k]; v != "" {
				ps = append(ps, k+"="+v)
			}
		}
		if len(ps) > 0 {
			s += ":" + strings.Join(ps, ";")
		}
		return s
	}
	same := func(a, b experiment.Row) bool {
		for _, k := range keys {
			if a.Params[k] != b.Params[k] {
				return false
			}
		}
		return true
	}
	var out []Comparison
	for _, reading := range Readings {
		for _, el := range rows {
			if spec(el) != reading {
				continue
			}
			var setting []string
			for _, k := range keys {
				if v := el.Params[k]; v != "" {
					setting = append(setting, v)
				}
			}
			for _, base := range []string{"tf-operator", "dragon"} {
				for _, r := range rows {
					if r.Policy != base || !same(el, r) {
						continue
					}
					ch := func(k string) float64 { return experiment.Change(r.Metrics[k], el.Metrics[k]) }
					out = append(out, Comparison{Reading: reading, Baseline: base, Setting: strings.Join(setting, " "),
						JCT: ch("jct_mean_s"), Makespan: ch("makespan_s"), Train: ch("train_time_mean_s"), TotalJCT: ch("jct_total_s")})
				}
			}
		}
	}
	return out
}

// comparisons states each reading's change against each baseline, per
// arrival pattern when the rows have one.
func comparisons(rows []experiment.Row) []string {
	var out []string
	for _, c := range compare(rows, []string{"arrivals"}) {
		out = append(out, c.String())
	}
	return out
}

// perJobNotes lists, for the first seed of each variant, every job's
// first start (time, workers, nodes), training time and JCT.
func perJobNotes(runs []Run) []string {
	var out []string
	for _, r := range firstRuns(runs) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s seed %d per job (start s, workers x nodes at start, train / JCT s):", r.Label, r.Seed)
		for _, rec := range r.Result.Records {
			st, ok := r.Starts[rec.ID]
			switch {
			case !ok:
				fmt.Fprintf(&b, " %s never started", rec.ID)
			case rec.Finished():
				fmt.Fprintf(&b, " %s %.0f %dx%d %.0f/%.0f", rec.ID, st.T, st.Workers, st.Nodes, rec.Finish-rec.FirstStart, rec.JCT())
			default:
				fmt.Fprintf(&b, " %s %.0f %dx%d unfinished", rec.ID, st.T, st.Workers, st.Nodes)
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
