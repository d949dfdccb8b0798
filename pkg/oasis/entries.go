package oasis

import (
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// OASiSProfile is the oasis preset: arrivals decided in submission order
// by the OASiS plugin, which also moves every admitted job to its plan.
func OASiSProfile(o *OASiS) framework.Profile {
	return framework.Profile{Name: OASiSName, QueueSort: ArrivalOrder{},
		Admit: []framework.Admit{o}, Rebalance: []framework.Rebalance{o}}
}

// FIFOProfile is the ps-fifo preset: queue order, head-of-line blocking,
// a job that does not fit the empty cluster rejected, requested (fixed)
// counts placed round-robin.
func FIFOProfile() framework.Profile {
	return framework.Profile{Name: "ps-fifo", Admit: []framework.Admit{baseline.HeadOfLine{}, FitsEmpty{}},
		Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{{Score: &RoundRobin{}, Weight: 1}}}
}

// DRFProfile is the ps-drf preset: the DRF plugin holds and reallocates.
func DRFProfile(d *DRF) framework.Profile {
	return framework.Profile{Name: DRFName, Admit: []framework.Admit{d}, Rebalance: []framework.Rebalance{d}}
}

// RRHProfile is the rrh preset: risk-reward admission and order, the
// requested (fixed) counts placed round-robin; jobs behind one that does
// not fit wait (order arrival) or are tried (order value).
func RRHProfile(r *RRH) framework.Profile {
	return framework.Profile{Name: RRHName, QueueSort: r, Admit: []framework.Admit{r},
		Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{{Score: &RoundRobin{}, Weight: 1}},
		Reserve: []framework.Reserve{r}}
}

// DormProfile is the dorm preset: the Dorm plugin holds and recomputes.
func DormProfile(d *Dorm) framework.Profile {
	return framework.Profile{Name: DormName, Admit: []framework.Admit{d}, Rebalance: []framework.Rebalance{d}}
}

// NewPolicy returns the runtime of a preset profile of this package.
func NewPolicy(p framework.Profile) *framework.Runtime {
	r, err := scheduler.New(p)
	if err != nil {
		panic(err) // the presets are fixed, valid profiles
	}
	return r
}

// Entries returns the presets of this package for the policy registry.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "oasis", Description: "OASiS: online primal-dual admission of parameter-server jobs with per-slot worker/PS schedules (slot, slots, eta, scale, uw, up, lw, lp, lfloor in (0, 1], ubound=resource|resource-slot)",
			New: func(p policy.Params) (policy.Policy, error) {
				o, err := newOASiS(p)
				if err != nil {
					return nil, err
				}
				return scheduler.New(OASiSProfile(o))
			}},
		{Name: "ps-fifo", Description: "OASiS baseline FIFO: parameter-server jobs in arrival order at fixed worker/PS counts, round-robin placement",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("ps-fifo"); err != nil {
					return nil, err
				}
				return scheduler.New(FIFOProfile())
			}},
		{Name: "ps-drf", Description: "OASiS baseline DRF: all jobs admitted, dominant-resource-fair worker/PS counts recomputed on arrival and completion",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("ps-drf"); err != nil {
					return nil, err
				}
				return scheduler.New(DRFProfile(&DRF{}))
			}},
		{Name: "rrh", Description: "OASiS baseline RRH: risk-reward admission (gain minus delay cost above threshold*g1), pause jobs without future gain; admitted jobs start in arrival order without skipping, or by utility per resource-second skipping what does not fit (threshold in [0, 1], order=arrival|value)",
			New: func(p policy.Params) (policy.Policy, error) {
				r, err := newRRH("rrh", p)
				if err != nil {
					return nil, err
				}
				return scheduler.New(RRHProfile(r))
			}},
		{Name: "dorm", Description: "OASiS baseline Dorm: utilisation-maximising LP (relaxed MILP) under fairness and adjustment limits, recomputed on arrival and completion (fair, adjust)",
			New: func(p policy.Params) (policy.Policy, error) {
				d, err := newDorm("dorm", p)
				if err != nil {
					return nil, err
				}
				return scheduler.New(DormProfile(d))
			}},
	}
}

// Plugins returns the registry entries of this package's plugins.
func Plugins() []profile.PluginEntry {
	none := func(name string, mk func() framework.Plugin) func(policy.Params) (framework.Plugin, error) {
		return func(a policy.Params) (framework.Plugin, error) {
			if err := a.Check(name); err != nil {
				return nil, err
			}
			return mk(), nil
		}
	}
	return []profile.PluginEntry{
		{Name: OASiSName, Description: "admit, rebalance: OASiS (Bao et al.): admits an arrival when its best per-slot worker/PS schedule under exponential prices has positive payoff, then moves every admitted job to its plan each slot (slot, slots, eta, scale, uw, up, lw, lp, lfloor in (0, 1], ubound=resource|resource-slot)",
			New: func(a policy.Params) (framework.Plugin, error) {
				o, err := newOASiS(a)
				if err != nil {
					return nil, err
				}
				return o, nil
			}},
		{Name: ArrivalOrderName, Description: "queueSort: earliest submission first, then queue order",
			New: none(ArrivalOrderName, func() framework.Plugin { return ArrivalOrder{} })},
		{Name: RoundRobinName, Description: "score: round-robin over the servers, each group continuing after the node its last replica took (OASiS's FIFO, DRF and RRH)",
			New: none(RoundRobinName, func() framework.Plugin { return &RoundRobin{} })},
		{Name: FitsEmptyName, Description: "admit: rejects a job whose requested counts do not fit even the empty cluster",
			New: none(FitsEmptyName, func() framework.Plugin { return FitsEmpty{} })},
		{Name: DRFName, Description: "admit, rebalance: holds pending jobs and, on each arrival or completion, reallocates worker/PS counts of all parameter-server jobs by dominant-resource progressive filling, placed round-robin",
			New: none(DRFName, func() framework.Plugin { return &DRF{} })},
		{Name: RRHName, Description: "queueSort, admit, reserve: risk-reward heuristic: admits an arrival when gain minus delay cost exceeds threshold*g1, pauses running jobs without future gain while admitted jobs wait; starts admitted jobs in arrival order, a job that does not fit holding those behind it, or by utility per resource-second skipping what does not fit (threshold in [0, 1], order=arrival|value)",
			New: func(a policy.Params) (framework.Plugin, error) {
				r, err := newRRH(RRHName, a)
				if err != nil {
					return nil, err
				}
				return r, nil
			}},
		{Name: DormName, Description: "admit, rebalance: Dorm: holds pending jobs and, on each arrival or completion, recomputes worker/PS counts by a utilisation-maximising LP under fairness and adjustment limits, placed first-fit (fair, adjust)",
			New: func(a policy.Params) (framework.Plugin, error) {
				d, err := newDorm(DormName, a)
				if err != nil {
					return nil, err
				}
				return d, nil
			}},
	}
}

func newRRH(name string, p policy.Params) (*RRH, error) {
	if err := p.Check(name, "threshold", "order"); err != nil {
		return nil, err
	}
	th, err := p.FloatIn("threshold", 0.1, 0, 1)
	if err != nil {
		return nil, err
	}
	o, err := p.Enum("order", RRHArrival.String(), RRHOrderNames...)
	if err != nil {
		return nil, err
	}
	return NewRRH(th, RRHOrder(slices.Index(RRHOrderNames, o))), nil
}

func newDorm(name string, p policy.Params) (*Dorm, error) {
	if err := p.Check(name, "fair", "adjust"); err != nil {
		return nil, err
	}
	f, err := p.FloatIn("fair", 0.5, 0, 1)
	if err != nil {
		return nil, err
	}
	a, err := p.IntIn("adjust", 4, 0, MaxSlots)
	if err != nil {
		return nil, err
	}
	return &Dorm{Fair: f, Adjust: a}, nil
}

// Bounds of the oasis parameters. A slot is at least a second and at most
// a year; the schedule keeps one entry per slot, so MaxSlots bounds its
// memory; eta and scale are factors on prices within six orders of
// magnitude of the paper's 1.
const (
	MinSlot  = 1
	MaxSlot  = 365 * 24 * 3600
	MaxSlots = 100_000
	MinScale = 1e-6
	MaxScale = 1e6
	// MaxBound bounds the given price bounds uw, up, lw, lp: times
	// MaxScale and summed over slots they stay finite.
	MaxBound = 1e100
)

// oasisParams are the oasis plugin's parameters.
var oasisParams = []string{"slot", "slots", "eta", "scale", "uw", "up", "lw", "lp", "lfloor", "ubound"}

func newOASiS(p policy.Params) (*OASiS, error) {
	if err := p.Check("oasis", oasisParams...); err != nil {
		return nil, err
	}
	var cfg Config
	var err error
	if cfg.Slot, err = p.FloatIn("slot", 3600, MinSlot, MaxSlot); err != nil {
		return nil, err
	}
	if cfg.Slots, err = p.IntIn("slots", 100, 1, MaxSlots); err != nil {
		return nil, err
	}
	if cfg.Eta, err = p.FloatIn("eta", 1, MinScale, MaxScale); err != nil {
		return nil, err
	}
	if cfg.LFloor, err = p.FloatIn("lfloor", DefaultLFloor, math.SmallestNonzeroFloat64, 1); err != nil {
		return nil, err
	}
	ub, err := p.Enum("ubound", UPerResource.String(), UReadingNames...)
	if err != nil {
		return nil, err
	}
	cfg.U = UReading(slices.Index(UReadingNames, ub))
	scale, err := p.FloatIn("scale", 1, MinScale, MaxScale)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, k := range []string{"uw", "up", "lw", "lp"} {
		if _, ok := p[k]; ok {
			n++
		}
	}
	switch n {
	case 0:
		if _, ok := p["scale"]; ok {
			return nil, fmt.Errorf("parameter scale: needs explicit bounds uw, up, lw, lp")
		}
	case 4:
		if _, ok := p["ubound"]; ok {
			return nil, fmt.Errorf("parameter ubound: applies to bounds learned online, not to given uw, up, lw, lp")
		}
		var b Bounds
		if b.UW, err = parseVec("uw", p["uw"]); err != nil {
			return nil, err
		}
		if b.UP, err = parseVec("up", p["up"]); err != nil {
			return nil, err
		}
		if b.LW, err = p.FloatIn("lw", 0, math.SmallestNonzeroFloat64, MaxBound); err != nil {
			return nil, err
		}
		if b.LP, err = p.FloatIn("lp", 0, math.SmallestNonzeroFloat64, MaxBound); err != nil {
			return nil, err
		}
		b = b.Scale(scale)
		cfg.Bounds = &b
	default:
		return nil, fmt.Errorf("parameters uw, up, lw, lp: give all four or none")
	}
	return New(cfg)
}
