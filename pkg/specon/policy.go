package specon

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// Labels SpeCon persists on each job, so that rebuilt plugins (the
// Kubernetes controller after a restart) continue where they stopped and
// users can see each job's category.
const (
	LabelCategory    = "drover.dev/category"            // PC, WC or CC
	LabelRound       = "drover.dev/specon-round"        // last categorisation round applied
	LabelConvergedAt = "drover.dev/specon-converged-at" // time the job entered CC
	LabelMigrated    = "drover.dev/specon-migrated"     // "true" once Alg. 2 decided for it
	LabelMarkedAt    = "drover.dev/specon-migrated-at"  // time Alg. 2 marked it migrated (Alg. 3's t_cj)
	LabelMove        = "drover.dev/specon-move"         // "M" (Alg. 2) or "R" (Alg. 3) once moved
	LabelSlot        = "drover.dev/rr-slot"             // round-robin sequence number
)

// Move kinds as the paper marks them in Fig. 9 ("Job-ID-M", "Job-ID-R").
const (
	MoveMigrate   = "M"
	MoveRebalance = "R"
)

// Scope is where Alg. 1 line 15 counts the progressing and watching jobs
// that let a converged job ask for reallocation.
type Scope string

// Scopes of line 15.
const (
	// ScopeWorker counts |PC_wi| + |WC_wi| on the converged job's own
	// worker w_i: Alg. 1 runs per worker over the sets PC_wi, WC_wi, and a
	// move is meant to free that host for its fast-growing jobs. One of
	// the two readings of line 15 (docs/specon.md, "The readings").
	ScopeWorker Scope = "worker"
	// ScopeCluster counts them over the whole cluster: line 15 is the one
	// line of Alg. 1 written "|PC|+|WC|>1", without the per-worker
	// subscript every other line carries. The default since issue 26,
	// because it is the reading under which SpeCon acts in the paper's
	// fixed schedule, as the paper reports it does (docs/specon.md).
	ScopeCluster Scope = "cluster"
)

// RebalanceWhen says when Alg. 3 runs.
type RebalanceWhen string

// When Alg. 3 runs.
const (
	// RebalanceAlways runs Alg. 3 on every cycle, whatever the jobs'
	// categories: the pseudo-code has no condition, and the paper's own
	// example rebalances Job-1 at 620 s while most jobs still progress.
	// The default.
	RebalanceAlways RebalanceWhen = "always"
	// RebalanceGated runs it only when some worker is idle or every
	// running job has converged (drover's first reading of "when all
	// containers are converged").
	RebalanceGated RebalanceWhen = "gated"
)

// Candidates says which jobs Alg. 3 may move and from when their
// duration d_cj = t - t_cj runs.
type Candidates string

// Alg. 3's candidates.
const (
	// CandidatesMigrated: jobs marked migrated by Alg. 2 (it decided for
	// them, whether they stayed or not) and not moved yet, t_cj being the
	// time of the mark (Alg. 3 line 1: "the timestamp when c_j is marked
	// as migrated"). The default.
	CandidatesMigrated Candidates = "migrated"
	// CandidatesConverged: jobs in CC not moved yet, t_cj being the time
	// they entered CC (drover's first reading, from the text's "time
	// length between when a container is marked as converged and current
	// time").
	CandidatesConverged Candidates = "converged"
)

// Params are SpeCon's settings.
type Params struct {
	// Alpha is the categorisation threshold on the growth of the
	// normalised evaluation function per interval.
	Alpha float64
	// Interval is the categorisation interval t_m - t_m-1 in seconds.
	Interval float64
	// Weights are Alg. 2's category weights.
	Weights Weights
	// Scope is where Alg. 1 line 15 counts |PC| + |WC|.
	Scope Scope
	// Rebalance is when Alg. 3 runs.
	Rebalance RebalanceWhen
	// Candidates are the jobs Alg. 3 may move.
	Candidates Candidates
}

// DefaultParams are the paper's settings for every experiment after
// Table III (alpha 0.01, interval 30 s, weights 2 / 1.5 / 1) and drover's
// default reading of Alg. 1 and Alg. 3: line 15 over the cluster (the
// text leaves it open; see ScopeCluster), Alg. 3 on every cycle over the
// jobs marked migrated.
var DefaultParams = Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights,
	Scope: ScopeCluster, Rebalance: RebalanceAlways, Candidates: CandidatesMigrated}

// WorkerReading is DefaultParams with line 15 counted on the converged
// job's worker (ScopeWorker), the other reading of the text and the
// default before issue 26. Its policy spec is WorkerReadingSpec.
var WorkerReading = Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights,
	Scope: ScopeWorker, Rebalance: RebalanceAlways, Candidates: CandidatesMigrated}

// WorkerReadingSpec is the `specon` policy spec of WorkerReading.
const WorkerReadingSpec = "specon:scope=worker"

// FirstReading is drover's first reading of Alg. 1 line 15 and Alg. 3,
// kept for comparison: line 15 counted over the cluster, Alg. 3 only when
// a worker is idle or every job has converged, over CC jobs timed from
// convergence. Its policy spec is FirstReadingSpec.
var FirstReading = Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights,
	Scope: ScopeCluster, Rebalance: RebalanceGated, Candidates: CandidatesConverged}

// FirstReadingSpec is the `specon` policy spec of FirstReading.
const FirstReadingSpec = "specon:scope=cluster;rebalance=gated;candidates=converged"

// Validate rejects settings the algorithms are not defined for.
func (p Params) Validate() error {
	var errs []error
	if !(p.Alpha > 0 && p.Alpha < 1) {
		errs = append(errs, fmt.Errorf("alpha=%v: must be in (0, 1)", p.Alpha))
	}
	if !(p.Interval > 0) || math.IsInf(p.Interval, 0) {
		errs = append(errs, fmt.Errorf("interval=%v: must be a positive number of seconds", p.Interval))
	}
	w := p.Weights
	for _, f := range []struct {
		k string
		v float64
	}{{"wpc", w.PC}, {"wwc", w.WC}, {"wcc", w.CC}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%s=%v: must be a finite weight >= 0", f.k, f.v))
		}
	}
	if w.PC < w.WC || w.WC < w.CC {
		errs = append(errs, fmt.Errorf("weights wpc=%v, wwc=%v, wcc=%v: must be ordered wpc >= wwc >= wcc (progressing jobs weigh most)", w.PC, w.WC, w.CC))
	}
	if p.Scope != ScopeWorker && p.Scope != ScopeCluster {
		errs = append(errs, fmt.Errorf("scope=%q: must be %s or %s", p.Scope, ScopeWorker, ScopeCluster))
	}
	if p.Rebalance != RebalanceAlways && p.Rebalance != RebalanceGated {
		errs = append(errs, fmt.Errorf("rebalance=%q: must be %s or %s", p.Rebalance, RebalanceAlways, RebalanceGated))
	}
	if p.Candidates != CandidatesMigrated && p.Candidates != CandidatesConverged {
		errs = append(errs, fmt.Errorf("candidates=%q: must be %s or %s", p.Candidates, CandidatesMigrated, CandidatesConverged))
	}
	return errors.Join(errs...)
}

// Bounds of the parameters ParseParams reads. The interval is the period of
// the categorisation, so it must be long against the clock's resolution
// (interval=1e-300 never advances time); a day is far beyond the paper's
// 10 to 60 s. Weights are ratios of evaluation-function growth.
const (
	MinInterval = 1
	MaxInterval = 24 * 3600
	MaxWeight   = 1e6
)

// paramKeys are the keys ParseParams reads.
var paramKeys = []string{"alpha", "interval", "wpc", "wwc", "wcc", "scope", "rebalance", "candidates"}

// ParseParams reads alpha, interval, wpc, wwc, wcc, scope, rebalance and
// candidates, defaulting to DefaultParams, and validates them.
func ParseParams(ps policy.Params) (Params, error) {
	if err := ps.Check("specon", paramKeys...); err != nil {
		return Params{}, err
	}
	p := DefaultParams
	var err error
	get := func(key string, dst *float64, min, max float64) {
		if err == nil {
			*dst, err = ps.FloatIn(key, *dst, min, max)
		}
	}
	enum := func(key, def string, allowed ...string) string {
		if err != nil {
			return def
		}
		var v string
		v, err = ps.Enum(key, def, allowed...)
		return v
	}
	get("alpha", &p.Alpha, 0, 1) // the open interval is Validate's
	get("interval", &p.Interval, MinInterval, MaxInterval)
	get("wpc", &p.Weights.PC, 0, MaxWeight)
	get("wwc", &p.Weights.WC, 0, MaxWeight)
	get("wcc", &p.Weights.CC, 0, MaxWeight)
	p.Scope = Scope(enum("scope", string(p.Scope), string(ScopeWorker), string(ScopeCluster)))
	p.Rebalance = RebalanceWhen(enum("rebalance", string(p.Rebalance), string(RebalanceAlways), string(RebalanceGated)))
	p.Candidates = Candidates(enum("candidates", string(p.Candidates), string(CandidatesMigrated), string(CandidatesConverged)))
	if err != nil {
		return Params{}, err
	}
	return p, p.Validate()
}

// paramHelp documents the parameters in the preset's and the plugin's
// descriptions.
const paramHelp = "alpha=0.01;interval=30;wpc=2;wwc=1.5;wcc=1 (the paper's); " +
	"scope=cluster|worker: Alg. 1 line 15 counts |PC|+|WC| > 1 over the cluster (as line 15 is written, without the per-worker subscript; default) or on the converged job's worker (the sets PC_wi, WC_wi of the other lines); " +
	"rebalance=always|gated: Alg. 3 on every cycle (default) or only when a worker is idle or every job has converged; " +
	"candidates=migrated|converged: Alg. 3 moves jobs marked migrated by Alg. 2, timed from the mark (default), or CC jobs timed from convergence; " +
	"drover's first reading is scope=cluster;rebalance=gated;candidates=converged"

// Plugin names.
const (
	RoundRobinName = "round-robin"
	SpeConName     = "specon"
)

// DefaultProfile is the `default` preset, the paper's DS baseline: pending
// jobs in queue order, every container of a job on one worker, round-robin
// over the workers, and no job ever moves.
func DefaultProfile() framework.Profile {
	rr := &RoundRobin{}
	return framework.Profile{Name: "default", Gang: placement.OneNodeOnly,
		Filter:  []framework.Filter{rr},
		Score:   []framework.WeightedScore{{Score: rr, Weight: 1}},
		Reserve: []framework.Reserve{rr}}
}

// Profile is the `specon` preset: DefaultProfile's round-robin initial
// placement, then the Speculator (Alg. 1-3) with parameters p.
func Profile(p Params) framework.Profile {
	prof := DefaultProfile()
	sp := NewSpeculator(p)
	prof.Name = "specon"
	prof.Reserve = append(prof.Reserve, sp)
	prof.Rebalance = []framework.Rebalance{sp}
	return prof
}

// New returns the `specon` preset's runtime; p must be valid (ParseParams
// validates).
func New(p Params) *framework.Runtime { return mustNew(Profile(p)) }

// NewDefault returns the `default` preset's runtime.
func NewDefault() *framework.Runtime { return mustNew(DefaultProfile()) }

func mustNew(p framework.Profile) *framework.Runtime {
	r, err := scheduler.New(p)
	if err != nil {
		panic(err) // a fixed, valid profile
	}
	return r
}

// Entries registers `specon` and its baseline `default`.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "specon", Description: "SpeCon: round-robin initial placement, then categorise jobs PC/WC/CC by evaluation-function growth every interval, migrate a converged job once to the lowest-score worker, rebalance workers by Alg. 3; parameters: " + paramHelp,
			New: func(ps policy.Params) (policy.Policy, error) {
				p, err := ParseParams(ps)
				if err != nil {
					return nil, err
				}
				return New(p), nil
			}},
		{Name: "default", Description: "SpeCon's baseline DS: fixed round-robin initial placement over workers, never moves a job",
			New: func(ps policy.Params) (policy.Policy, error) {
				if err := ps.Check("default"); err != nil {
					return nil, err
				}
				return NewDefault(), nil
			}},
	}
}

// Plugins returns the registry entries of SpeCon's plugins.
func Plugins() []profile.PluginEntry {
	return []profile.PluginEntry{
		{Name: RoundRobinName, Description: "filter, score, reserve: SpeCon's fixed round-robin, the n-th job started goes to worker n mod |W| or the next that fits, kept in the drover.dev/rr-slot label (use with gang one-node-only)",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(RoundRobinName); err != nil {
					return nil, err
				}
				return &RoundRobin{}, nil
			}},
		{Name: SpeConName, Description: "reserve, rebalance: SpeCon's Alg. 1-3, categorise jobs PC/WC/CC every interval, migrate a converged job once to the lowest-score worker, rebalance workers by Alg. 3; parameters: " + paramHelp,
			New: func(a policy.Params) (framework.Plugin, error) {
				p, err := ParseParams(a)
				if err != nil {
					return nil, err
				}
				return NewSpeculator(p), nil
			}},
	}
}

// maxLabel bounds every number read back from a label. Labels are not
// SpeCon's alone: whoever may edit a job (its tenant) can write any value,
// and a slot of math.MaxInt64 would overflow the next slot into a negative
// index, a round in the far future would stop the job's categorisation for
// good, and a NaN time would sort anywhere. A value outside [0, maxLabel)
// is ignored, as a malformed one is, and rewritten with SpeCon's own.
const maxLabel = 1 << 40

// labelInt reads label key as an integer in [0, maxLabel); ok is false
// when it is missing, malformed or out of range.
func labelInt(l map[string]string, key string) (int64, bool) {
	v, err := strconv.ParseInt(l[key], 10, 64)
	return v, err == nil && v >= 0 && v < maxLabel
}

// labelFloat reads label key as a number in [0, maxLabel) (NaN is not);
// ok is false when it is missing, malformed or out of range.
func labelFloat(l map[string]string, key string) (float64, bool) {
	v, err := strconv.ParseFloat(l[key], 64)
	return v, err == nil && v >= 0 && v < maxLabel
}
