package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// NewRand returns the seeded random source every generator uses, so a run
// is reproduced by its seed alone. The stream is a name so that two
// generators in one experiment do not share (and perturb) one sequence.
func NewRand(seed uint64, stream string) *rand.Rand {
	h := uint64(14695981039346656037)
	for i := 0; i < len(stream); i++ {
		h ^= uint64(stream[i])
		h *= 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

// TruncNormal draws from a normal distribution with the given mean and
// standard deviation, truncated to [lo, hi] by rejection (falling back to
// clamping after many rejections, for a window far in the tail).
func TruncNormal(r *rand.Rand, mean, sd, lo, hi float64) float64 {
	for i := 0; i < 1000; i++ {
		x := mean + sd*r.NormFloat64()
		if x >= lo && x <= hi {
			return x
		}
	}
	return math.Min(hi, math.Max(lo, mean))
}

// Exp draws an exponential inter-arrival time with the given rate (per
// second).
func Exp(r *rand.Rand, rate float64) float64 { return r.ExpFloat64() / rate }

// Poisson returns n arrival times of a Poisson process with the given rate
// starting at 0.
func Poisson(r *rand.Rand, n int, rate float64) []float64 {
	out := make([]float64, n)
	t := 0.0
	for i := range out {
		t += Exp(r, rate)
		out[i] = t
	}
	return out
}

// MixedOptions shape the Mixed generator.
type MixedOptions struct {
	Jobs int
	// Load is the offered GPU load: GPU-seconds demanded per second over
	// the cluster's GPUs. Arrivals are Poisson at the rate that yields it.
	Load        float64
	ClusterGPUs int64
	TEShare     float64
	// CoresPerGPU and MemGiBPerGPU as in PhillyOptions.
	CoresPerGPU, MemGiBPerGPU float64
}

// Mixed generates a workload of short one-GPU trial-and-error jobs and
// longer multi-GPU best-effort jobs: TE run times ~ N(10 min, 5 min) in
// [1, 30] min; BE run times ~ N(4 h, 2 h) in [30 min, 12 h] with 1, 2, 4
// or 8 GPUs (50/20/20/10%); BE grace periods ~ N(120 s, 60 s) in [0,
// 300] s. It is the default experiment's workload.
func Mixed(seed uint64, o MixedOptions) []*cluster.Job {
	r := NewRand(seed, "mixed")
	jobs := make([]*cluster.Job, o.Jobs)
	gpuSec := 0.0
	for i := range jobs {
		j := &cluster.Job{ID: fmt.Sprintf("job-%04d", i), Seed: seed*1_000_003 + uint64(i)}
		gpus := int64(1)
		if r.Float64() < o.TEShare {
			j.Class = cluster.ClassTE
			j.Work = math.Round(TruncNormal(r, 600, 300, 60, 1800))
		} else {
			j.Class = cluster.ClassBE
			j.Work = math.Round(TruncNormal(r, 4*3600, 2*3600, 1800, 12*3600))
			switch u := r.Float64(); {
			case u < 0.5:
				gpus = 1
			case u < 0.7:
				gpus = 2
			case u < 0.9:
				gpus = 4
			default:
				gpus = 8
			}
			j.GracePeriod = math.Round(TruncNormal(r, 120, 60, 0, 300))
		}
		j.Groups = []cluster.ReplicaGroup{{Name: "worker", Replicas: 1, Min: 1, Max: 1,
			Demand: resource.New(o.CoresPerGPU*float64(gpus), o.MemGiBPerGPU*float64(gpus), gpus)}}
		gpuSec += j.Work * float64(gpus)
		jobs[i] = j
	}
	rate := o.Load * float64(o.ClusterGPUs) / (gpuSec / float64(o.Jobs))
	for i, t := range Poisson(r, o.Jobs, rate) {
		jobs[i].Submit = math.Round(t)
	}
	return jobs
}
