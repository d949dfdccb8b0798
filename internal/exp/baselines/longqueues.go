package baselines

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
	corev1 "k8s.io/api/core/v1"
)

// The synthetic long queues of BenchmarkLongQueues (issue 23, item 5):
// queues where thousands of jobs wait at once, each stressing another part
// of a scheduling queue. Every generator is a pure function of its seed
// (pkg/rng streams), so the same seed gives the same jobs. Nodes are the
// Philly shape (8 GPUs, 48 cores, 384 GiB); a GPU replica asks 6 cores and
// 48 GiB per GPU. Arrivals are Poisson at the rate that offers LongLoad
// times the cluster's GPUs in GPU-seconds per second, so that about
// 1 - 1/LongLoad of the jobs are waiting when the last one arrives.

// LongLoad is the offered GPU load of the synthetic long queues.
const LongLoad = 3

// longNode is the node shape of the long queues (PhillyNode's).
var longNode = resource.New(48, 384, 8)

// gpuDemand is one replica of g GPUs at the Philly ratios.
func gpuDemand(g int64) resource.Vector { return resource.New(6*float64(g), 48*float64(g), g) }

// pickGPUs draws 1, 2, 4 or 8 GPUs with the given cumulative weights.
func pickGPUs(r *rand.Rand, cum [3]float64) int64 {
	switch u := r.Float64(); {
	case u < cum[0]:
		return 1
	case u < cum[1]:
		return 2
	case u < cum[2]:
		return 4
	}
	return 8
}

// arrive sets Poisson submit times (rounded to seconds) that offer load
// times gpus GPUs, and returns jobs.
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

// fixed is a fixed-size replica group.
func fixed(name string, n int, d resource.Vector) cluster.ReplicaGroup {
	return cluster.ReplicaGroup{Name: name, Replicas: n, Min: n, Max: n, Demand: d}
}

// HeavyTailQueue is n best-effort jobs on 8 nodes whose run times are
// heavy-tailed and days long: Pareto with scale 6 h and shape 1.3 (median
// 10.2 h, mean 26 h), capped at 60 days; 1, 2, 4 or 8 GPUs (40/30/20/10%)
// in one replica; 8 tenants (vc-0..vc-7) drawn uniformly; 60 s grace
// periods. Stream "longqueue-heavytail".
func HeavyTailQueue(seed uint64, n int) ([]cluster.Node, []*cluster.Job) {
	r := rng.New(seed, "longqueue-heavytail")
	jobs := make([]*cluster.Job, n)
	for i := range jobs {
		work := math.Min(6*3600*math.Pow(1-r.Float64(), -1/1.3), 60*86400)
		g := pickGPUs(r, [3]float64{0.4, 0.7, 0.9})
		jobs[i] = &cluster.Job{ID: fmt.Sprintf("ht-%05d", i), Class: cluster.ClassBE, Tenant: fmt.Sprintf("vc-%d", r.IntN(8)),
			Work: math.Round(work), GracePeriod: 60, Seed: seed*1_000_003 + uint64(i),
			Groups: []cluster.ReplicaGroup{fixed("worker", 1, gpuDemand(g))}}
	}
	return Nodes("node", 8, longNode, 24.48), arrive(r, jobs, LongLoad, 8*8)
}

// GangQueue is n jobs on 16 nodes, 70% of them multi-node gangs: 2, 3, 4,
// 6 or 8 worker replicas (uniformly) of 4 or 8 GPUs (50/50), half of them
// with a second group of 1 or 2 parameter servers (4 cores, 32 GiB, no
// GPU); the other 30% one replica of 1, 2, 4 or 8 GPUs (40/30/20/10%).
// Run times are log-normal with median 2 h and sigma 1, in [5 min, 3 days];
// a fifth of the jobs are TE (run times / 10, no grace period), the rest BE
// with 60 s grace; 8 tenants. Stream "longqueue-gang".
func GangQueue(seed uint64, n int) ([]cluster.Node, []*cluster.Job) {
	r := rng.New(seed, "longqueue-gang")
	jobs := make([]*cluster.Job, n)
	for i := range jobs {
		work := math.Min(math.Max(2*3600*math.Exp(r.NormFloat64()), 300), 3*86400)
		j := &cluster.Job{ID: fmt.Sprintf("gang-%05d", i), Class: cluster.ClassBE, Tenant: fmt.Sprintf("vc-%d", r.IntN(8)),
			GracePeriod: 60, Seed: seed*1_000_003 + uint64(i)}
		if r.Float64() < 0.7 {
			reps := []int{2, 3, 4, 6, 8}[r.IntN(5)]
			g := int64(4)
			if r.IntN(2) == 1 {
				g = 8
			}
			j.Groups = []cluster.ReplicaGroup{fixed("worker", reps, gpuDemand(g))}
			if r.IntN(2) == 1 {
				j.Groups = append(j.Groups, fixed("ps", 1+r.IntN(2), resource.New(4, 32, 0)))
			}
		} else {
			j.Groups = []cluster.ReplicaGroup{fixed("worker", 1, gpuDemand(pickGPUs(r, [3]float64{0.4, 0.7, 0.9})))}
		}
		if r.Float64() < 0.2 {
			j.Class, j.GracePeriod, work = cluster.ClassTE, 0, work/10
		}
		j.Work = math.Round(work)
		jobs[i] = j
	}
	return Nodes("node", 16, longNode, 24.48), arrive(r, jobs, LongLoad, 16*8)
}

// ConstrainedQueue is n TE and BE jobs on 8 nodes with node constraints.
// Nodes 0-1 are a TE pool (label pool=te, taint dedicated=te:NoSchedule,
// gpu=v100), nodes 2-5 gpu=v100, nodes 6-7 gpu=p100. 40% of the jobs are
// TE: 1 GPU, run times normal (10 min, sd 5 min) in [1, 30] min, priority
// 1, tolerating dedicated=te and preferring pool=te (weight 10), so they
// may run anywhere but the pool first. The other 60% are BE: 1, 2, 4 or 8
// GPUs (40/30/20/10%), log-normal run times (median 2 h, sigma 1, in
// [10 min, 2 days]), 60 s grace; 40% select gpu=v100, 20% gpu=p100
// (nodeSelector), and of the other 40% half prefer gpu=p100 (weight 5).
// 8 tenants. Stream "longqueue-constrained".
func ConstrainedQueue(seed uint64, n int) ([]cluster.Node, []*cluster.Job) {
	nodes := Nodes("node", 8, longNode, 24.48)
	for i := range nodes {
		switch {
		case i < 2:
			nodes[i].Labels = map[string]string{"pool": "te", "gpu": "v100"}
			nodes[i].Taints = []cluster.Taint{{Key: "dedicated", Value: "te", Effect: cluster.TaintNoSchedule}}
		case i < 6:
			nodes[i].Labels = map[string]string{"gpu": "v100"}
		default:
			nodes[i].Labels = map[string]string{"gpu": "p100"}
		}
	}
	prefer := func(key, value string, weight int32) *corev1.NodeAffinity {
		return &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}}}
	}
	must := func(s constraint.Spec) cluster.NodeConstraint {
		c, err := constraint.New(s)
		if err != nil {
			panic(err) // fixed, valid specs
		}
		return c
	}
	te := must(constraint.Spec{Affinity: prefer("pool", "te", 10),
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "te", Effect: corev1.TaintEffectNoSchedule}}})
	v100 := must(constraint.Spec{NodeSelector: map[string]string{"gpu": "v100"}})
	p100 := must(constraint.Spec{NodeSelector: map[string]string{"gpu": "p100"}})
	likeP100 := must(constraint.Spec{Affinity: prefer("gpu", "p100", 5)})

	r := rng.New(seed, "longqueue-constrained")
	jobs := make([]*cluster.Job, n)
	for i := range jobs {
		j := &cluster.Job{ID: fmt.Sprintf("con-%05d", i), Tenant: fmt.Sprintf("vc-%d", r.IntN(8)), Seed: seed*1_000_003 + uint64(i)}
		if r.Float64() < 0.4 {
			j.Class, j.Priority = cluster.ClassTE, 1
			j.Work = math.Round(rng.TruncNormal(r, 600, 300, 60, 1800))
			g := fixed("worker", 1, gpuDemand(1))
			g.Constraint = te
			j.Groups = []cluster.ReplicaGroup{g}
		} else {
			j.Class, j.GracePeriod = cluster.ClassBE, 60
			j.Work = math.Round(math.Min(math.Max(2*3600*math.Exp(r.NormFloat64()), 600), 2*86400))
			g := fixed("worker", 1, gpuDemand(pickGPUs(r, [3]float64{0.4, 0.7, 0.9})))
			switch u := r.Float64(); {
			case u < 0.4:
				g.Constraint = v100
			case u < 0.6:
				g.Constraint = p100
			case u < 0.8:
				g.Constraint = likeP100
			}
			j.Groups = []cluster.ReplicaGroup{g}
		}
		jobs[i] = j
	}
	return nodes, arrive(r, jobs, LongLoad, 8*8)
}
