package combined

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
	"github.com/drover-sched/drover/pkg/specon"
)

// Day is the arrival span: one day.
const Day = 86400.0

// Options shape the mixed workload. The defaults (DefaultOptions) were
// fixed before the first run of the combined experiment.
type Options struct {
	// Load is the offered GPU load over the day: GPU-seconds demanded at
	// requested sizes over the worker pool's GPU-seconds in a day.
	Load float64
	// WorkerGPUs is the worker pool's GPU count.
	WorkerGPUs int64
	// TEShare of jobs are short trials; UtilityShare of the BE jobs are
	// parameter-server jobs with an OASiS utility (a deadline).
	TEShare, UtilityShare float64
	// Swing is the daily cycle's amplitude: the arrival rate is
	// proportional to 1 + Swing·sin(2π t/Day − π/2), lowest at midnight,
	// highest at noon.
	Swing float64
	// MaxJobs caps the job count (quick runs).
	MaxJobs int
}

// DefaultOptions: load 0.9 on the worker pool, 35% trials, 30% of BE jobs
// with a utility, a ±60% daily swing.
func DefaultOptions(workerGPUs int64) Options {
	return Options{Load: 0.9, WorkerGPUs: workerGPUs, TEShare: 0.35, UtilityShare: 0.3, Swing: 0.6}
}

// arrivals draws arrival times over one day from the daily cycle by
// thinning a Poisson process, until the callback says stop.
func arrivals(r *rand.Rand, swing float64, rate float64, next func(t float64) bool) {
	t := 0.0
	peak := rate * (1 + swing)
	for {
		t += r.ExpFloat64() / peak
		if t >= Day {
			t -= Day // wrap: demand keeps the daily shape
		}
		lam := rate * (1 + swing*math.Sin(2*math.Pi*t/Day-math.Pi/2))
		if r.Float64()*peak <= lam && !next(t) {
			return
		}
	}
}

// Generate returns the mixed workload for a seed, sorted by submit time:
//   - TE trials: one worker of 1 GPU (8 cores, 32 GiB), run time
//     N(10 min, 5 min) in [1, 30] min, no grace period;
//   - elastic BE jobs: 1, 2 or 4 workers (40/40/20%) of 1 or 2 GPUs
//     (60/40%), min workers half the request (at least 1), max twice it;
//     run time N(3 h, 1.5 h) in [30 min, 8 h] at the requested size (speed
//     proportional to the workers); grace N(120 s, 60 s) in [0, 300] s;
//     checkpoint and restore 30 s each, a resize pauses 10 s; a loss curve
//     of one of SpeCon's five models;
//   - BE parameter-server jobs with a utility (UtilityShare of BE): OASiS's
//     job model (worker 1 GPU, 8 cores, 32 GiB; PS 4 cores, 16 GiB;
//     epochs, chunks and bandwidths as in OASiS's generator), 2 to 4
//     workers, elastic from 1 to its chunk count; utility sigmoid with
//     priority g1 in [1, 10], target 1.5 to 4 times its run time, and
//     decay by class (a third each: insensitive, sensitive, critical);
//   - arrivals over one day with a daily cycle, until the offered GPU load
//     reaches Load.
func Generate(seed uint64, o Options) []*cluster.Job {
	r := rng.New(seed, "combined")
	models := specon.Models()
	target := o.Load * Day * float64(o.WorkerGPUs)
	gpuSec := 0.0
	var jobs []*cluster.Job
	// The rate only sets the spacing; the count is set by the load.
	arrivals(r, o.Swing, 1.0/60, func(t float64) bool {
		i := len(jobs)
		j := &cluster.Job{ID: fmt.Sprintf("job-%04d", i), Submit: math.Round(t), Seed: seed*1_000_003 + uint64(i),
			Tenant: fmt.Sprintf("team-%d", r.IntN(4))}
		worker := func(gpus int64) resource.Vector { return resource.New(8*float64(gpus), 32*float64(gpus), gpus) }
		switch u := r.Float64(); {
		case u < o.TEShare:
			j.Class = cluster.ClassTE
			j.Model = "trial"
			j.Work = math.Round(rng.TruncNormal(r, 600, 300, 60, 1800))
			j.Groups = []cluster.ReplicaGroup{{Name: oasis.RoleWorker, Demand: worker(1), Replicas: 1, Min: 1, Max: 1}}
		case r.Float64() < o.UtilityShare:
			psJob(r, j)
		default:
			j.Class = cluster.ClassBE
			n := []int{1, 1, 2, 2, 4}[r.IntN(5)]
			gpus := int64(1)
			if r.Float64() < 0.4 {
				gpus = 2
			}
			j.Groups = []cluster.ReplicaGroup{{Name: oasis.RoleWorker, Demand: worker(gpus), Replicas: n, Min: max(1, n/2), Max: 2 * n}}
			j.Work = math.Round(rng.TruncNormal(r, 3*3600, 1.5*3600, 1800, 8*3600))
			j.GracePeriod = math.Round(rng.TruncNormal(r, 120, 60, 0, 300))
			j.CheckpointCost, j.RestoreCost, j.RescaleCost = 30, 30, 10
			m := models[r.IntN(len(models))]
			j.Model, j.Eval = m.Name, m.Curve
		}
		jobs = append(jobs, j)
		gpuSec += j.Work * float64(j.RequestedDemand()[resource.GPU])
		return gpuSec < target && (o.MaxJobs == 0 || len(jobs) < o.MaxJobs)
	})
	slices.SortStableFunc(jobs, func(a, b *cluster.Job) int { return cmp.Compare(a.Submit, b.Submit) })
	return jobs
}

// psJob makes j an OASiS parameter-server job with a utility.
func psJob(r *rand.Rand, j *cluster.Job) {
	uni := func(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }
	p := &cluster.PSParams{
		Epochs: 20 + r.IntN(31), Chunks: 4 + r.IntN(5), MiniBatches: 10 + r.IntN(41),
		MiniBatchTime: uni(0.5, 2), GradientMB: uni(10, 100),
		WorkerBW: uni(100, 2000) / 8, PSBW: uni(2000, 10000) / 8,
	}
	fixed := min(2+r.IntN(3), p.Chunks)
	ps, _ := oasis.PSFor(p, fixed)
	work := oasis.WorkerSeconds(p) / float64(fixed)
	// Scale the mini-batch time so the job runs 1 to 4 hours at its
	// requested size, like the elastic BE jobs.
	want := uni(3600, 4*3600)
	p.MiniBatchTime *= want / work
	work = oasis.WorkerSeconds(p) / float64(fixed)
	var g2 float64
	switch k := r.IntN(3); k {
	case 0:
		p.Sensitivity = "insensitive"
	case 1:
		p.Sensitivity = "sensitive"
		g2 = uni(0.1, 0.5) / 3600
	default:
		p.Sensitivity = "critical"
		g2 = uni(2, 5) / 3600
	}
	j.Class, j.Model, j.PS, j.Speed = cluster.ClassBE, "ps", p, oasis.Speed{}
	j.Groups = []cluster.ReplicaGroup{
		{Name: oasis.RoleWorker, Demand: resource.New(8, 32, 1), Replicas: fixed, Min: 1, Max: p.Chunks},
		{Name: oasis.RolePS, Demand: resource.New(4, 16, 0), Replicas: ps, Min: 1, Max: p.Chunks},
	}
	j.Work = math.Round(work)
	j.GracePeriod = 60
	j.CheckpointCost, j.RestoreCost, j.RescaleCost = 30, 30, 10
	j.Utility = cluster.Sigmoid{G1: uni(1, 10), G2: g2, G3: uni(1.5, 4) * j.Work}
}

// Nodes is the combined cluster: a worker pool of GPU nodes (8 GPUs, 64
// cores, 512 GiB; role worker) and a parameter-server pool of CPU nodes
// (64 cores, 256 GiB; role ps), as OASiS's experiments separate them. Every
// job's main group is named worker, so the worker pool takes every job.
func Nodes(workers, ps int) []cluster.Node {
	var out []cluster.Node
	for i := range workers {
		out = append(out, cluster.Node{Name: fmt.Sprintf("gpu-%d", i), InstanceType: "gpu8", Role: oasis.RoleWorker,
			Capacity: resource.New(64, 512, 8), PricePerHour: 24.48})
	}
	for i := range ps {
		out = append(out, cluster.Node{Name: fmt.Sprintf("cpu-%d", i), InstanceType: "cpu64", Role: oasis.RolePS,
			Capacity: resource.New(64, 256, 0), PricePerHour: 2.72})
	}
	return out
}

var specModels = specon.Models()
