// Package rng holds the seeded random sources and the few distributions
// drover's workload generators draw from. It is its own package so that a
// policy package with a generator of its own (OASiS's) does not link the
// workload package and its embedded Philly trace into the scheduler.
package rng

import (
	"math"
	"math/rand/v2"
)

// New returns the seeded random source every generator uses, so a run
// is reproduced by its seed alone. The stream is a name so that two
// generators in one experiment do not share (and perturb) one sequence.
func New(seed uint64, stream string) *rand.Rand {
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
