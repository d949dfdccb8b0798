package embed

import (
	"errors"
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// Scale is the size of a set of demand snapshots embedded in a catalogue:
// the summed hourly price of the rounded-up bucket counts over all
// snapshots. Price stands in for "scale" because it weighs a g4dn.metal
// above a g4dn.xlarge the way capacity does while staying one number
// across dimensions; the paper's Figure 7 plots scale without saying how
// it is measured.
func (c Catalog) Scale(snapshots [][]Vec) (float64, error) {
	var s float64
	for k, d := range snapshots {
		counts, err := c.Embed(d)
		if err != nil {
			return 0, fmt.Errorf("snapshot %d: %w", k, err)
		}
		s += c.Cost(counts)
	}
	return s, nil
}

// Base is the result of SelectBase.
type Base struct {
	// Catalog is the chosen series: the input without the dropped smallest
	// types. Catalog[0] is the base instance type.
	Catalog Catalog
	// Scales[k] is the scale with the k smallest types removed, for every
	// k tried (Figure 7).
	Scales []float64
}

// SelectBase picks the base instance type (§4.4, Figure 7): it removes the
// smallest type while removing it does not raise the scale, that is while
// the smallest type does not help cut the cost of holding the demand, and
// stops at the first type whose removal would raise it (or make some
// demand fit nowhere). The catalogue must be sorted (AWS and ParseCatalog
// sort).
func SelectBase(c Catalog, snapshots [][]Vec) (Base, error) {
	if len(c) == 0 {
		return Base{}, errors.New("select base: empty catalogue")
	}
	cur, err := c.Scale(snapshots)
	if err != nil {
		return Base{}, fmt.Errorf("select base: full catalogue: %w", err)
	}
	b := Base{Catalog: c, Scales: []float64{cur}}
	for len(b.Catalog) > 1 {
		next, err := b.Catalog[1:].Scale(snapshots)
		if errors.Is(err, ErrNoFit) {
			break
		}
		if err != nil {
			return Base{}, fmt.Errorf("select base: %w", err)
		}
		b.Scales = append(b.Scales, next)
		if next > cur*(1+1e-12) {
			break
		}
		b.Catalog, cur = b.Catalog[1:], next
	}
	return b, nil
}

// DemandFunc maps a job to its demand vectors, one per replica (a replica
// runs on one instance, so it is the unit the embedding packs).
type DemandFunc func(j *cluster.Job) []Vec

// JobVectors is the default DemandFunc: every replica of every group at the
// job's requested counts, with its declared demand.
func JobVectors(j *cluster.Job) []Vec {
	var out []Vec
	counts := j.RequestedCounts()
	for g, grp := range j.Groups {
		v := FromResource(grp.Demand)
		for range counts[g] {
			out = append(out, v)
		}
	}
	return out
}

// g4dn resources per GPU: the g4dn.xlarge shape (4 vCPU, 16 GiB per T4).
const (
	PhillyCoresPerGPU  = 4
	PhillyMemGiBPerGPU = 16
)

// PhillyVectors maps a Philly job to g4dn instance types by GPU count: the
// trace records only GPUs, so each replica of g GPUs (the loader splits a
// job into replicas of at most 8 GPUs) becomes (g GPUs, 4g vCPU, 16g GiB),
// the g4dn.xlarge shape scaled. With the g4dn catalogue a 1-GPU replica
// lands in g4dn.xlarge, 2-4 GPUs in g4dn.12xlarge, 5-8 in g4dn.metal. The
// CPU and memory the Philly loader assigns (sized for its on-premise node)
// are ignored on purpose.
func PhillyVectors(j *cluster.Job) []Vec {
	var out []Vec
	counts := j.RequestedCounts()
	for g, grp := range j.Groups {
		gpus := float64(grp.Demand[resource.GPU])
		v := Vec{GPU: gpus, CPU: PhillyCoresPerGPU * gpus, Mem: PhillyMemGiBPerGPU * gpus}
		for range counts[g] {
			out = append(out, v)
		}
	}
	return out
}

// TypeFor returns the index of the type first fit increasing puts one
// demand in, or an error wrapping ErrNoFit.
func (c Catalog) TypeFor(d Vec) (int, error) {
	idx, err := Assign([]Vec{d}, c.Caps())
	if err != nil {
		return -1, err
	}
	return idx[0], nil
}
