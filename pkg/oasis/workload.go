package oasis

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
)

// Setting is the synthetic scenario of the paper's Sec. V-A. The text lost
// most of its ranges; every value chosen here is listed in docs/oasis.md
// and kept in this one place (DefaultSetting).
type Setting struct {
	Jobs          int
	Slots         int     // T, the timespan in slots
	Slot          float64 // slot length in seconds (the simulator's tick)
	WorkerServers int
	PSServers     int
	// ArrivalSpan is the fraction of the timespan over which jobs arrive.
	ArrivalSpan float64
	// Share of time-insensitive, time-sensitive and time-critical jobs.
	Insensitive, Sensitive float64
	// Priority range of the sigmoid's g1.
	PriorityLo, PriorityHi float64
	// SensitiveG2 and CriticalG2 are the ranges of the sigmoid's decay g2
	// of time-sensitive and time-critical jobs, per G2Unit seconds (0: per
	// timespan, Slots*Slot). See DefaultSetting for why per timespan.
	SensitiveG2, CriticalG2 [2]float64
	G2Unit                  float64
	// ChunksLo..ChunksHi is N (chunks, hence most concurrent workers) and
	// EpochsLo..EpochsHi is E.
	ChunksLo, ChunksHi int
	EpochsLo, EpochsHi int
	// FixedLo, FixedHi bound the fixed worker count that FIFO and RRH use
	// (the job's requested count).
	FixedLo, FixedHi int
}

// DefaultSetting returns the experiments' scenario with n jobs on the
// given pools over T slots of one hour.
//
// The decay g2 is drawn per timespan: 0.7-3.5 per timespan for
// time-sensitive jobs, 3.5-7 for time-critical ones, so that every job
// keeps at least 1/(1+e^7), about 0.1%, of its priority when it ends at
// the horizon. The paper's L is that utility at the horizon (per unit of
// resource-time); a decay steep on the scale of a job (the earlier
// reading's 2-5 per slot, over a timespan of 100 slots) makes it as little
// as 1e-200 of g1, so that a floor, not the jobs, sets L and U/L. The paper
// varies U/L through the priority range (Fig. 6), which a floored L would
// not let it do. EarlierUtility restores the earlier ranges.
func DefaultSetting(jobs, workers, pss, slots int) Setting {
	return Setting{Jobs: jobs, Slots: slots, Slot: 3600, WorkerServers: workers, PSServers: pss,
		ArrivalSpan: 0.7, Insensitive: 0.2, Sensitive: 0.4, PriorityLo: 1, PriorityHi: 10,
		SensitiveG2: [2]float64{0.7, 3.5}, CriticalG2: [2]float64{3.5, 7},
		ChunksLo: 10, ChunksHi: 30, EpochsLo: 10, EpochsHi: 50, FixedLo: 1, FixedHi: 10}
}

// EarlierUtility returns the setting with the decay ranges of the earlier
// reading: 0.1-0.5 per slot for time-sensitive jobs and 2-5 per slot for
// time-critical ones, under which a time-critical job's utility at the
// horizon underflows and L is set by its floor.
func (st Setting) EarlierUtility() Setting {
	st.SensitiveG2, st.CriticalG2, st.G2Unit = [2]float64{0.1, 0.5}, [2]float64{2, 5}, st.Slot
	return st
}

// g2Unit is the time G2 ranges are per, in seconds.
func (st Setting) g2Unit() float64 {
	if st.G2Unit > 0 {
		return st.G2Unit
	}
	return float64(st.Slots) * st.Slot
}

// Instance types. Worker servers follow EC2 C4 (c4.4xlarge, c4.8xlarge)
// with GPUs added; PS servers follow P2 and G3. Storage is not in the EC2
// table (EBS); 1 TB is our choice.
var (
	workerTypes = []cluster.InstanceType{
		{Name: "c4.4xlarge+4gpu", Capacity: vec(16, 30, 4, 1000, 10000), PricePerHour: 0.796},
		{Name: "c4.8xlarge+8gpu", Capacity: vec(36, 60, 8, 1000, 10000), PricePerHour: 1.591},
	}
	psTypes = []cluster.InstanceType{
		{Name: "p2.8xlarge", Capacity: vec(32, 488, 8, 1000, 10000), PricePerHour: 7.2},
		{Name: "p2.16xlarge", Capacity: vec(64, 732, 16, 1000, 25000), PricePerHour: 14.4},
		{Name: "g3.8xlarge", Capacity: vec(32, 244, 2, 1000, 10000), PricePerHour: 2.28},
		{Name: "g3.16xlarge", Capacity: vec(64, 488, 4, 1000, 25000), PricePerHour: 4.56},
	}
)

func vec(cores, memGiB float64, gpus int64, storGB, mbps float64) resource.Vector {
	v := resource.New(cores, memGiB, gpus)
	v[resource.Storage] = int64(storGB * float64(resource.GiB))
	v[resource.Bandwidth] = int64(mbps)
	return v
}

// Nodes returns the worker and PS servers for a seed: instance types drawn
// at random from the two families.
func (st Setting) Nodes(seed uint64) []cluster.Node {
	r := rng.New(seed, "oasis-nodes")
	var out []cluster.Node
	add := func(n int, role string, types []cluster.InstanceType) {
		for i := 0; i < n; i++ {
			t := types[r.IntN(len(types))]
			out = append(out, cluster.Node{Name: fmt.Sprintf("%s-%d", role, i), InstanceType: t.Name, Role: role,
				Capacity: t.Capacity, PricePerHour: t.PricePerHour})
		}
	}
	add(st.WorkerServers, RoleWorker, workerTypes)
	add(st.PSServers, RolePS, psTypes)
	return out
}

func uni(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }
func uniInt(r *rand.Rand, lo, hi int) int      { return lo + r.IntN(hi-lo+1) }

// Generate returns the jobs of the setting for a seed, sorted by arrival.
// Arrivals are a Poisson process over the first ArrivalSpan of the
// timespan (the Google-trace arrival shape is not reproduced).
func (st Setting) Generate(seed uint64) []*cluster.Job {
	r := rng.New(seed, "oasis-jobs")
	span := st.ArrivalSpan * float64(st.Slots) * st.Slot
	arr := rng.Poisson(r, st.Jobs, float64(st.Jobs)/span)
	jobs := make([]*cluster.Job, st.Jobs)
	for i := range jobs {
		p := &cluster.PSParams{
			Epochs:        uniInt(r, st.EpochsLo, st.EpochsHi),
			Chunks:        uniInt(r, st.ChunksLo, st.ChunksHi),
			MiniBatches:   uniInt(r, 10, 50),
			MiniBatchTime: uni(r, 0.5, 2),
			GradientMB:    uni(r, 10, 100),
			WorkerBW:      uni(r, 100, 2000) / 8, // 100 Mbps .. 2 Gbps, in MB/s
			PSBW:          uni(r, 2000, 10000) / 8,
		}
		wd := vec(float64(uniInt(r, 1, 10)), uni(r, 2, 16), int64(uniInt(r, 0, 4)), uni(r, 5, 10), p.WorkerBW*8)
		sd := vec(float64(uniInt(r, 1, 10)), uni(r, 2, 32), 0, uni(r, 5, 10), p.PSBW*8)
		fixed := min(uniInt(r, st.FixedLo, st.FixedHi), p.Chunks)
		fixedPS, _ := PSFor(p, fixed)
		ws := WorkerSeconds(p)
		// Utility: g3 is a target between 1.5 and 4 times the shortest
		// completion (all N workers from the arrival slot), g1 the
		// priority, g2 the decay by class.
		minSlots := math.Ceil(ws / st.Slot / float64(p.Chunks))
		g3 := uni(r, 1.5, 4) * (minSlots + 1) * st.Slot
		g1 := uni(r, st.PriorityLo, st.PriorityHi)
		var g2 float64
		switch u := r.Float64(); {
		case u < st.Insensitive:
			p.Sensitivity = "insensitive"
		case u < st.Insensitive+st.Sensitive:
			p.Sensitivity = "sensitive"
			g2 = uni(r, st.SensitiveG2[0], st.SensitiveG2[1]) / st.g2Unit()
		default:
			p.Sensitivity = "critical"
			g2 = uni(r, st.CriticalG2[0], st.CriticalG2[1]) / st.g2Unit()
		}
		jobs[i] = &cluster.Job{
			ID: fmt.Sprintf("ps-%04d", i), Class: cluster.ClassBE, Model: "ps", Submit: arr[i],
			Groups: []cluster.ReplicaGroup{
				{Name: RoleWorker, Demand: wd, Replicas: fixed, Min: 1, Max: p.Chunks},
				{Name: RolePS, Demand: sd, Replicas: fixedPS, Min: 1, Max: p.Chunks},
			},
			Work:    ws / float64(fixed),
			Utility: cluster.Sigmoid{G1: g1, G2: g2, G3: g3},
			Speed:   Speed{}, Seed: seed*1_000_003 + uint64(i), PS: p,
		}
	}
	return jobs
}

// RatioSetting is the oasis-ratio scenario: ten small jobs (at most three
// workers, a handful of worker-slots) arriving over the first 40% of eight
// 15-minute slots, on `servers` servers split 2:1 between workers and PSs,
// priorities g1 in [1, hi]. Small enough for the exact offline optimum.
func RatioSetting(servers int, hi float64) Setting {
	st := DefaultSetting(10, servers-servers/3, servers/3, 8)
	st.Slot = 900
	st.ArrivalSpan = 0.4
	st.ChunksLo, st.ChunksHi = 1, 3
	st.EpochsLo, st.EpochsHi = 5, 20
	st.FixedLo, st.FixedHi = 1, 2
	st.PriorityHi = hi
	return st
}
