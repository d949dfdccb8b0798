package scoreboard

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/drover-sched/drover/internal/exp/baselines"
	"github.com/drover-sched/drover/internal/exp/combined"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// Regime is one workload of the scoreboard: a cluster and a job generator
// (or a slice of the Philly trace) with stated distributions. Plan is the
// regime's line in docs/scoreboard-plan.md, which a test holds to.
type Regime struct {
	Name string
	// Plan states the workload: what docs/scoreboard-plan.md says of it.
	Plan string
	// Extra lists presets run on this regime only (oasis, where its job
	// model applies).
	Extra []string
	// Jobs and Nodes of the full and the quick size.
	Full, Quick Size
	build       func(seed uint64, sz Size, env *experiment.Env) ([]cluster.Node, []*cluster.Job, error)
}

// Size is a regime's scale: job count, cluster nodes, seeds.
type Size struct {
	Jobs, Nodes, Seeds int
}

// size picks the regime's size for env.
func (r Regime) size(env *experiment.Env) Size {
	if env.Quick {
		return r.Quick
	}
	return r.Full
}

// Setup builds the regime's simulator setup for env: the nodes and jobs of
// a seed, a 60 s scheduling tick.
func (r Regime) Setup(env *experiment.Env) (experiment.Setup, error) {
	sz := r.size(env)
	// Built once here to report an error early; then per call, since no
	// run may share another's job objects.
	if _, _, err := r.build(env.Seed, sz, env); err != nil {
		return experiment.Setup{}, fmt.Errorf("regime %s: %w", r.Name, err)
	}
	return experiment.Setup{
		Nodes: func(seed uint64) []cluster.Node {
			n, _, _ := r.build(seed, sz, env)
			return n
		},
		Jobs: func(seed uint64) ([]*cluster.Job, error) {
			_, j, err := r.build(seed, sz, env)
			return j, err
		},
		Config: sim.Config{Tick: 60, SampleEvery: 300},
		Params: map[string]string{"regime": r.Name},
	}, nil
}

// Regimes are the scoreboard's workloads, fixed in docs/scoreboard-plan.md
// before any tuning.
func Regimes() []Regime {
	return []Regime{
		{Name: "philly-light",
			Plan: "the Philly trace's median day (combined.PhillyDay: 1,339 jobs; GPUs, run times, TE = ran <= 300 s, 60 s BE grace, as the trace loader derives them) on the nodes that make its offered GPU load 0.5 over the day; jobs larger than the cluster dropped",
			Full: Size{Jobs: 0, Nodes: 0, Seeds: 3}, Quick: Size{Jobs: 300, Seeds: 2},
			build: phillyBuild(0.5)},
		{Name: "philly-heavy",
			Plan: "the same Philly day on the nodes that make its offered GPU load 1.5; jobs larger than the cluster dropped",
			Full: Size{Jobs: 0, Seeds: 3}, Quick: Size{Jobs: 300, Seeds: 2},
			build: phillyBuild(1.5)},
		{Name: "heavytail",
			Plan: "8 nodes of 8 GPUs; 70% BE jobs from baselines.HeavyTailQueue (Pareto run times, scale 6 h, shape 1.3, cap 60 days; 1/2/4/8 GPUs 40/30/20/10%; 60 s grace) and 30% TE trials (1/2/4 GPUs 50/30/20%, run time N(10 min, 5 min) in [1, 30] min); Poisson arrivals at offered GPU load 2.0 (overloaded: a long queue of days-long jobs)",
			Full: Size{Jobs: 300, Nodes: 8, Seeds: 5}, Quick: Size{Jobs: 100, Nodes: 8, Seeds: 2},
			build: heavyTail},
		{Name: "small-pods",
			Plan: "16 nodes of 8 GPUs; 70% BE pods of 1 GPU (log-normal run time, median 1 h, sigma 1, in [5 min, 1 day], 60 s grace), 10% BE jobs of one 8-GPU replica (same run times), 20% TE trials of 1 GPU (N(10 min, 5 min) in [1, 30] min); Poisson arrivals at offered GPU load 0.95",
			Full: Size{Jobs: 1200, Nodes: 16, Seeds: 5}, Quick: Size{Jobs: 300, Nodes: 8, Seeds: 2},
			build: smallPods},
		{Name: "gangs",
			Plan: "16 nodes of 8 GPUs; baselines.GangQueue (70% multi-node gangs of 2-8 replicas of 4 or 8 GPUs, half with 1-2 parameter servers; 30% single replicas; log-normal run times, median 2 h; 20% TE at a tenth of the run time) with its arrivals stretched to offered GPU load 0.9",
			Full: Size{Jobs: 300, Nodes: 16, Seeds: 5}, Quick: Size{Jobs: 100, Nodes: 16, Seeds: 2},
			build: gangs},
		{Name: "constrained",
			Plan: "baselines.ConstrainedQueue (8 nodes: a tainted TE pool of 2, 4 v100, 2 p100; 40% TE trials preferring the pool, 60% BE with nodeSelectors and preferences) with its arrivals stretched to offered GPU load 0.9",
			Full: Size{Jobs: 400, Nodes: 8, Seeds: 5}, Quick: Size{Jobs: 120, Nodes: 8, Seeds: 2},
			build: constrained},
		{Name: "elastic",
			Plan: "combined.Generate without utilities (UtilityShare 0): 35% TE trials, elastic BE jobs (1/2/4 workers of 1-2 GPUs, min half, max twice, N(3 h, 1.5 h) run times, SpeCon loss curves), one day with a ±60% daily cycle at offered GPU load 0.9, on combined.Nodes(14, 2)",
			Full: Size{Jobs: 0, Nodes: 14, Seeds: 5}, Quick: Size{Jobs: 120, Nodes: 7, Seeds: 2},
			build: elasticBuild(0)},
		{Name: "utility",
			Plan:  "the combined workload as is (combined.DefaultOptions: 30% of BE jobs are OASiS parameter-server jobs with sigmoid utilities and deadlines, the per-slot decay reading), on combined.Nodes(14, 2)",
			Extra: []string{"oasis"},
			Full:  Size{Jobs: 0, Nodes: 14, Seeds: 5}, Quick: Size{Jobs: 120, Nodes: 7, Seeds: 2},
			build: elasticBuild(0.3)},
	}
}

// teTrial is a trial of g GPUs at the Philly ratios: run time N(10 min,
// 5 min) in [1, 30] min, no grace period.
func teTrial(r *rand.Rand, id string, g int64) *cluster.Job {
	return &cluster.Job{ID: id, Class: cluster.ClassTE, Tenant: fmt.Sprintf("vc-%d", r.IntN(8)),
		Work:   math.Round(rng.TruncNormal(r, 600, 300, 60, 1800)),
		Groups: []cluster.ReplicaGroup{{Name: "worker", Replicas: 1, Min: 1, Max: 1, Demand: gpuDemand(g)}}}
}

// gpuDemand is one replica of g GPUs at the Philly ratios (6 cores, 48
// GiB per GPU).
func gpuDemand(g int64) resource.Vector { return resource.New(6*float64(g), 48*float64(g), g) }

var phillyNode = resource.New(48, 384, 8)

// arrive sets Poisson submit times (rounded to seconds) that offer load
// times gpus GPUs, and sorts the jobs by them.
func arrive(r *rand.Rand, jobs []*cluster.Job, load float64, gpus int64) []*cluster.Job {
	gpuSec := 0.0
	for _, j := range jobs {
		gpuSec += j.Work * float64(j.RequestedDemand()[resource.GPU])
	}
	rate := load * float64(gpus) / (gpuSec / float64(len(jobs)))
	for i, t := range rng.Poisson(r, len(jobs), rate) {
		jobs[i].Submit = math.Round(t)
	}
	return jobs
}

// stretch scales submit times from the long queues' load to load.
func stretch(jobs []*cluster.Job, load float64) []*cluster.Job {
	for _, j := range jobs {
		j.Submit = math.Round(j.Submit * baselines.LongLoad / load)
	}
	slices.SortStableFunc(jobs, func(a, b *cluster.Job) int { return cmp.Compare(a.Submit, b.Submit) })
	return jobs
}

func heavyTail(seed uint64, sz Size, _ *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
	r := rng.New(seed, "scoreboard-heavytail")
	_, be := baselines.HeavyTailQueue(seed, sz.Jobs)
	jobs := make([]*cluster.Job, 0, sz.Jobs)
	k := 0
	for i := range sz.Jobs {
		if r.Float64() < 0.3 {
			g := []int64{1, 1, 1, 1, 1, 2, 2, 2, 4, 4}[r.IntN(10)]
			j := teTrial(r, fmt.Sprintf("te-%05d", i), g)
			j.Seed = seed*1_000_003 + uint64(i)
			jobs = append(jobs, j)
			continue
		}
		jobs = append(jobs, be[k])
		k++
	}
	return baselines.Nodes("node", sz.Nodes, phillyNode, 24.48), arrive(r, jobs, 2.0, int64(sz.Nodes)*8), nil
}

func smallPods(seed uint64, sz Size, _ *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
	r := rng.New(seed, "scoreboard-small-pods")
	jobs := make([]*cluster.Job, sz.Jobs)
	for i := range jobs {
		u := r.Float64()
		if u < 0.2 {
			jobs[i] = teTrial(r, fmt.Sprintf("te-%05d", i), 1)
		} else {
			g := int64(1)
			if u >= 0.9 {
				g = 8
			}
			jobs[i] = &cluster.Job{ID: fmt.Sprintf("pod-%05d", i), Class: cluster.ClassBE, Tenant: fmt.Sprintf("vc-%d", r.IntN(8)),
				Work:        math.Round(math.Min(math.Max(3600*math.Exp(r.NormFloat64()), 300), 86400)),
				GracePeriod: 60,
				Groups:      []cluster.ReplicaGroup{{Name: "worker", Replicas: 1, Min: 1, Max: 1, Demand: gpuDemand(g)}}}
		}
		jobs[i].Seed = seed*1_000_003 + uint64(i)
	}
	return baselines.Nodes("node", sz.Nodes, phillyNode, 24.48), arrive(r, jobs, 0.95, int64(sz.Nodes)*8), nil
}

func gangs(seed uint64, sz Size, _ *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
	nodes, jobs := baselines.GangQueue(seed, sz.Jobs)
	return nodes, stretch(jobs, 0.9), nil
}

func constrained(seed uint64, sz Size, _ *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
	nodes, jobs := baselines.ConstrainedQueue(seed, sz.Jobs)
	return nodes, stretch(jobs, 0.9), nil
}

func elasticBuild(utility float64) func(uint64, Size, *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
	return func(seed uint64, sz Size, _ *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
		o := combined.DefaultOptions(int64(sz.Nodes) * 8)
		o.UtilityShare, o.MaxJobs = utility, sz.Jobs
		ps := 2
		if sz.Nodes < 14 {
			ps = 1
		}
		return combined.Nodes(sz.Nodes, ps), combined.Generate(seed, o), nil
	}
}

// phillyBuild returns the Philly regime at an offered load: the median
// day's jobs (the first sz.Jobs of it when positive) on the nodes that
// make their GPU-seconds load times the day's GPU-seconds.
func phillyBuild(load float64) func(uint64, Size, *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
	return func(_ uint64, sz Size, env *experiment.Env) ([]cluster.Node, []*cluster.Job, error) {
		all, err := phillyTrace(env.PhillyPath)
		if err != nil {
			return nil, nil, err
		}
		day := combined.PhillyDay(all, sz.Jobs)
		if len(day) == 0 {
			return nil, nil, fmt.Errorf("philly: no day with 100 jobs")
		}
		n := PhillyNodes(day, load)
		t0 := day[0].Submit
		var jobs []*cluster.Job
		for _, pj := range day {
			if pj.RequestedDemand()[resource.GPU] > int64(n)*8 {
				continue
			}
			j := *pj
			j.Submit = math.Round(pj.Submit - t0)
			jobs = append(jobs, &j)
		}
		return baselines.Nodes("node", n, phillyNode, 24.48), jobs, nil
	}
}

// PhillyNodes is the node count (8 GPUs each) at which the jobs' GPU-seconds
// are load times the nodes' GPU-seconds over one day; at least one.
func PhillyNodes(day []*cluster.Job, load float64) int {
	gpuSec := 0.0
	for _, j := range day {
		gpuSec += j.Work * float64(j.RequestedDemand()[resource.GPU])
	}
	return max(1, int(math.Round(gpuSec/(load*combined.Day*8))))
}

// phillyTrace loads the trace once per path.
func phillyTrace(path string) ([]*cluster.Job, error) {
	phillyMu.Lock()
	defer phillyMu.Unlock()
	if jobs, ok := phillyCache[path]; ok {
		return jobs, nil
	}
	jobs, err := workload.LoadPhilly(path, workload.DefaultPhillyOptions())
	if err != nil {
		return nil, err
	}
	phillyCache[path] = jobs
	return jobs, nil
}

var (
	phillyMu    sync.Mutex
	phillyCache = map[string][]*cluster.Job{}
)
