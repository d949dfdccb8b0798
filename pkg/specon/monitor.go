// Package specon implements SpeCon (Mao et al., "Speculative Container
// Scheduling for Deep Learning Applications in a Kubernetes Cluster"): a
// container monitor that sorts training jobs into progressing (PC),
// watching (WC) and converged (CC) categories from the growth of their
// evaluation functions (Alg. 1), a scheduler that moves a converged job,
// once, to the worker with the lowest weighted category score when its
// worker hosts other progressing jobs (Alg. 2), and a rebalancer that
// moves the jobs Alg. 2 marked, most recently marked first, to idle or
// underloaded workers (Alg. 3). Params selects between the paper's
// reading of Alg. 1 line 15 and Alg. 3 (the default) and drover's first
// reading (FirstReading). It also
// holds the paper's baseline, `default`: a fixed round-robin initial
// placement that never moves a job, and the progress model of the paper's
// five model types (models.go).
//
// The algorithms are pure functions (Categorize, Choose, Rebalance) so
// that they can be tested against the paper's rules one by one. Two
// framework plugins wire them to snapshots: RoundRobin (filter, score,
// reserve) is the initial placement, and Speculator (reserve, rebalance)
// runs Alg. 1-3 and persists each job's state in labels. The presets
// `default` (DefaultProfile) and `specon` (Profile) are made of them.
package specon

import (
	"fmt"
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Category is a job's training-progress category.
type Category uint8

// Categories. Every job starts in PC (Alg. 1 line 2).
const (
	PC Category = iota // progressing: the evaluation function still falls fast
	WC                 // watching: growth is slowing and may pick up again
	CC                 // converged: slow growth, unlikely to speed up again
)

func (c Category) String() string {
	switch c {
	case PC:
		return "PC"
	case WC:
		return "WC"
	case CC:
		return "CC"
	}
	return fmt.Sprintf("Category(%d)", uint8(c))
}

// ParseCategory reads a category label value.
func ParseCategory(s string) (Category, error) {
	switch s {
	case "PC":
		return PC, nil
	case "WC":
		return WC, nil
	case "CC":
		return CC, nil
	}
	return PC, fmt.Errorf("category %q is not PC, WC or CC", s)
}

// Rule names the branch of Alg. 1 that a categorisation took; tests and
// logs use it.
type Rule string

// Alg. 1 branches.
const (
	RuleSlowing  Rule = "slowing"  // lines 6-16: G fell and is below alpha
	RuleBouncing Rule = "bouncing" // lines 17-18: G rose but is below alpha
	RuleReset    Rule = "reset"    // lines 19-22: G above alpha
	RuleFirst    Rule = "first"    // no previous growth to compare with yet
	RuleAtAlpha  Rule = "at-alpha" // G == alpha: no branch of Alg. 1 applies
)

// Step is the outcome of one categorisation of one job.
type Step struct {
	Next Category
	Rule Rule
	// Converged is true when the job was already in CC and its growth fell
	// again (line 13): it may ask for reallocation (lines 15-16), which the
	// caller grants only when other PC/WC jobs exist.
	Converged bool
}

// Categorize is Alg. 1 lines 5-22 for one job: g is the growth
// |E(t_m) - E(t_m-1)| over the last interval and prev the growth over the
// interval before (hasPrev false when the job has not been watched that
// long).
//
// The paper's lines 7 and 10 are two consecutive ifs, so read literally a
// PC job would pass through WC into CC in one round; the text describes
// them as separate cases ("starts slowing down, but not stable yet" and
// then "has started its convergence process"), and line 10's body repeats
// line 7's (PC.remove, WC.insert) where the text says WC -> CC. We follow
// the text: one step per round, PC -> WC -> CC.
func Categorize(cur Category, g, prev float64, hasPrev bool, alpha float64) Step {
	switch {
	case g > alpha:
		return Step{Next: PC, Rule: RuleReset}
	case !hasPrev:
		if g < alpha {
			return Step{Next: cur, Rule: RuleFirst}
		}
		return Step{Next: cur, Rule: RuleAtAlpha}
	case g < prev && g < alpha:
		switch cur {
		case PC:
			return Step{Next: WC, Rule: RuleSlowing}
		case WC:
			return Step{Next: CC, Rule: RuleSlowing}
		default:
			return Step{Next: CC, Rule: RuleSlowing, Converged: true}
		}
	case g >= prev && g < alpha:
		return Step{Next: cur, Rule: RuleBouncing}
	}
	return Step{Next: cur, Rule: RuleAtAlpha}
}

// EvalAt returns the job's evaluation-function value at time t: the latest
// sample taken at or before t, as the paper's monitor reads the last value
// written to the log ("when querying in the middle of an iteration, the
// previous value will be returned"). ok is false before the first sample.
func EvalAt(samples []cluster.EvalSample, t float64) (v float64, ok bool) {
	lo, hi := 0, len(samples)
	for lo < hi {
		m := (lo + hi) / 2
		if samples[m].T <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, false
	}
	return samples[lo-1].Value, true
}

// Growths returns G(t_m) and G(t_m-1) for a round ending at tm with the
// given interval. n is how many of them exist (0, 1 or 2).
func Growths(samples []cluster.EvalSample, tm, interval float64) (g, prev float64, n int) {
	e0, ok0 := EvalAt(samples, tm)
	e1, ok1 := EvalAt(samples, tm-interval)
	if !ok0 || !ok1 {
		return 0, 0, 0
	}
	g = math.Abs(e0 - e1)
	e2, ok2 := EvalAt(samples, tm-2*interval)
	if !ok2 {
		return g, 0, 1
	}
	return g, math.Abs(e1 - e2), 2
}
