// Package embed turns heterogeneous resource demands into counts of cloud
// instance types ("resource buckets"), the representation the predictive
// autoscaler forecasts (paper 004, §4.1, Alg. 1 and 2).
//
// A demand and an instance type are both a Vec, ordered by cost factor:
// GPU first, then CPU, then memory. Comparing vectors lexicographically in
// that order (Alg. 1) makes every GPU-less demand smaller than every GPU
// type, so first-fit-increasing packing (Alg. 2) never buys a GPU instance
// for a CPU job.
package embed

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/drover-sched/drover/pkg/resource"
)

// Dimensions of a Vec, in cost-factor order (most expensive first).
const (
	GPU = iota
	CPU
	Mem
	NumDims
)

var dimNames = [NumDims]string{"gpu", "cpu", "memory"}

// Vec is a resource vector in cost-factor order: GPUs, CPU cores, memory GiB.
type Vec [NumDims]float64

// FromResource converts a drover resource vector (millicores, bytes) into
// cost-factor order.
func FromResource(v resource.Vector) Vec {
	return Vec{float64(v[resource.GPU]), float64(v[resource.CPU]) / 1000, float64(v[resource.Memory]) / float64(resource.GiB)}
}

// Add returns a + b.
func (a Vec) Add(b Vec) Vec {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

// Scale returns a * k.
func (a Vec) Scale(k float64) Vec {
	for i := range a {
		a[i] *= k
	}
	return a
}

// Fits reports whether a fits in b in every dimension.
func (a Vec) Fits(b Vec) bool {
	for i := range a {
		if a[i] > b[i] {
			return false
		}
	}
	return true
}

func (a Vec) String() string {
	return fmt.Sprintf("(gpu=%g, cpu=%g, mem=%gGiB)", a[GPU], a[CPU], a[Mem])
}

// Compare is Alg. 1: it walks the vectors in cost-factor order and the
// first differing element decides (-1 if a is smaller, +1 if larger, 0 if
// equal). The paper's pseudocode only returns on "smaller" and increments
// otherwise, which read literally would call (1,0,0) smaller than (0,8,32);
// its prose ("if it meets a smaller element ... return, if it meets a tie,
// then continues") is a lexicographic order, which is what we implement.
func Compare(a, b Vec) int {
	for i := range a {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

// Less is Compare(a, b) < 0.
func Less(a, b Vec) bool { return Compare(a, b) < 0 }

// Sort sorts vectors increasingly by Compare.
func Sort(vs []Vec) {
	sort.SliceStable(vs, func(i, j int) bool { return Less(vs[i], vs[j]) })
}

// ErrNoFit is wrapped by errors for a demand that no instance type holds.
var ErrNoFit = errors.New("no instance type fits the demand")

// Assign returns, for each demand, the index in types (which must be sorted
// by Compare, see Catalog.Sorted) of the bucket first-fit-increasing puts it
// in: the first type that is not smaller than the demand (Alg. 2's sweep)
// and that the demand fits in every dimension.
//
// The fit test is our addition: Alg. 2 compares only lexicographically, so
// (1 GPU, 2 cores, 64 GiB) would land in a (1 GPU, 4 cores, 16 GiB) bucket
// and be counted as four instances, none of which could run it. With the
// fit test such a demand moves on to the first type that can hold it; for
// demands that fit their lexicographic bucket (all of the paper's examples
// and every Philly job) the result equals the sweep. Alg. 2's "R_j < B_i"
// is read as "not larger": its own Table 2 counts the (1,2,4) demand in the
// (1,2,4) bucket.
func Assign(demands []Vec, types []Vec) ([]int, error) {
	out := make([]int, len(demands))
	for j, d := range demands {
		for k, v := range d {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("demand %d %v: %s is %v, want a finite number >= 0", j, d, dimNames[k], v)
			}
		}
		out[j] = -1
		for i, b := range types {
			if Compare(d, b) <= 0 && d.Fits(b) {
				out[j] = i
				break
			}
		}
		if out[j] < 0 {
			return nil, fmt.Errorf("demand %d %v: %w (largest type %v)", j, d, ErrNoFit, largest(types))
		}
	}
	return out, nil
}

func largest(types []Vec) Vec {
	var m Vec
	for _, t := range types {
		for i := range m {
			m[i] = math.Max(m[i], t[i])
		}
	}
	return m
}

// Count is the last line of Alg. 2: the number of instances of a type that
// hold a summed demand, by its dominant resource (max over dimensions of
// sum/capacity), rounded up. Dimensions the type lacks (capacity 0) are
// skipped; Assign never puts demand there.
func Count(sum, typ Vec) float64 {
	var c float64
	for i := range sum {
		if typ[i] > 0 {
			c = math.Max(c, sum[i]/typ[i])
		}
	}
	// Round up, forgiving float noise (0.1+0.2 GiB must not make 2 nodes).
	return math.Ceil(c - 1e-9)
}

// Embed is Alg. 2: it packs demands into the sorted bucket types by first
// fit increasing and returns one rounded-up instance count per type.
func Embed(demands []Vec, types []Vec) ([]float64, error) {
	idx, err := Assign(demands, types)
	if err != nil {
		return nil, err
	}
	sums := make([]Vec, len(types))
	for j, i := range idx {
		sums[i] = sums[i].Add(demands[j])
	}
	counts := make([]float64, len(types))
	for i := range types {
		counts[i] = Count(sums[i], types[i])
	}
	return counts, nil
}
