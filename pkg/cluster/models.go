package cluster

import (
	"math"
)

// SpeedModel gives a job's speed, in work-seconds per second, when it runs
// with the given replica counts spread over the given number of distinct
// nodes. Speed 1 means "as fast as on an idle cluster at the requested
// counts". Contention on shared nodes is applied by the executor on top.
// Implementations must be pure functions of their arguments.
type SpeedModel interface {
	Speed(j *Job, counts []int, nodes int) float64
}

// DefaultSpeed is the model for jobs that carry none: zero while any group
// is below its minimum (a partially started gang makes no progress),
// otherwise linear in the first group's count relative to the request.
type DefaultSpeed struct{}

// Speed implements SpeedModel.
func (DefaultSpeed) Speed(j *Job, counts []int, _ int) float64 {
	for i := range j.Groups {
		if counts[i] < j.Groups[i].Min || counts[i] == 0 && j.Groups[i].Replicas > 0 {
			return 0
		}
	}
	if j.Groups[0].Replicas == 0 {
		return 1
	}
	return float64(counts[0]) / float64(j.Groups[0].Replicas)
}

// Utility values a job's completion. The argument is the job completion
// time (finish minus submit) in seconds.
type Utility interface {
	Value(jct float64) float64
}

// Sigmoid is OASiS's utility: G1 / (1 + exp(G2 * (jct - G3))). G1 is the
// job's priority weight, G2 how sharply value decays (0: time-insensitive),
// G3 the target completion time in seconds.
type Sigmoid struct{ G1, G2, G3 float64 }

// Value implements Utility.
func (s Sigmoid) Value(jct float64) float64 {
	return s.G1 / (1 + math.Exp(s.G2*(jct-s.G3)))
}

// EvalCurve is a job's evaluation function (for example its loss) as a
// function of training progress in [0, 1]. Sample adds measurement noise
// that is a pure function of the job seed and the sample index, so the same
// run yields the same samples whatever else happens in the cluster.
type EvalCurve interface {
	Sample(progress float64, seed uint64, k int) float64
}

// ExpCurve is a loss that falls exponentially from Start to Floor as
// progress goes from 0 to 1: E(p) = Floor + (Start-Floor)·exp(-Rate·p),
// times (1 + Noise·u) with u uniform in [-1, 1].
type ExpCurve struct {
	Start, Floor, Rate, Noise float64
}

// Sample implements EvalCurve.
func (c ExpCurve) Sample(p float64, seed uint64, k int) float64 {
	e := c.Floor + (c.Start-c.Floor)*math.Exp(-c.Rate*p)
	if c.Noise == 0 {
		return e
	}
	return e * (1 + c.Noise*Uniform(seed, uint64(k)))
}

// Uniform returns a deterministic pseudo-random number in [-1, 1) from two
// keys (splitmix64 of their mix). It lets models add noise without sharing a
// random stream, whose consumption order would depend on event order.
func Uniform(a, b uint64) float64 {
	x := a*0x9E3779B97F4A7C15 ^ (b + 0x632BE59BD9B4E019)
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11)/float64(1<<52) - 1
}
