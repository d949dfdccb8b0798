package workload

import (
	"fmt"
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
)

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
	r := rng.New(seed, "mixed")
	jobs := make([]*cluster.Job, o.Jobs)
	gpuSec := 0.0
	for i := range jobs {
		j := &cluster.Job{ID: fmt.Sprintf("job-%04d", i), Seed: seed*1_000_003 + uint64(i)}
		gpus := int64(1)
		if r.Float64() < o.TEShare {
			j.Class = cluster.ClassTE
			j.Work = math.Round(rng.TruncNormal(r, 600, 300, 60, 1800))
		} else {
			j.Class = cluster.ClassBE
			j.Work = math.Round(rng.TruncNormal(r, 4*3600, 2*3600, 1800, 12*3600))
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
			j.GracePeriod = math.Round(rng.TruncNormal(r, 120, 60, 0, 300))
		}
		j.Groups = []cluster.ReplicaGroup{{Name: "worker", Replicas: 1, Min: 1, Max: 1,
			Demand: resource.New(o.CoresPerGPU*float64(gpus), o.MemGiBPerGPU*float64(gpus), gpus)}}
		gpuSec += j.Work * float64(gpus)
		jobs[i] = j
	}
	rate := o.Load * float64(o.ClusterGPUs) / (gpuSec / float64(o.Jobs))
	for i, t := range rng.Poisson(r, o.Jobs, rate) {
		jobs[i].Submit = math.Round(t)
	}
	return jobs
}
