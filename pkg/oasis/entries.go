package oasis

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/policy"
)

// Entries returns the policies of this package for the registry.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "oasis", Description: "OASiS: online primal-dual admission of parameter-server jobs with per-slot worker/PS schedules (slot, slots, eta, scale, uw, up, lw, lp, lfloor)",
			New: newOASiS},
		{Name: "ps-fifo", Description: "OASiS baseline FIFO: parameter-server jobs in arrival order at fixed worker/PS counts, round-robin placement",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("ps-fifo"); err != nil {
					return nil, err
				}
				return &FIFO{}, nil
			}},
		{Name: "ps-drf", Description: "OASiS baseline DRF: all jobs admitted, dominant-resource-fair worker/PS counts recomputed on arrival and completion",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("ps-drf"); err != nil {
					return nil, err
				}
				return &DRF{}, nil
			}},
		{Name: "rrh", Description: "OASiS baseline RRH: risk-reward admission (gain minus delay cost above threshold*g1), pause jobs without future gain (threshold)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("rrh", "threshold"); err != nil {
					return nil, err
				}
				th, err := p.Float("threshold", 0.1)
				if err != nil || th < 0 {
					return nil, fmt.Errorf("parameter threshold: want a number >= 0")
				}
				return &RRH{Threshold: th}, nil
			}},
		{Name: "dorm", Description: "OASiS baseline Dorm: utilisation-maximising LP (relaxed MILP) under fairness and adjustment limits, recomputed on arrival and completion (fair, adjust)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("dorm", "fair", "adjust"); err != nil {
					return nil, err
				}
				f, err := p.Float("fair", 0.5)
				if err != nil || f < 0 || f > 1 {
					return nil, fmt.Errorf("parameter fair: want a number in [0, 1]")
				}
				a, err := p.Int("adjust", 4)
				if err != nil || a < 0 {
					return nil, fmt.Errorf("parameter adjust: want an integer >= 0")
				}
				return &Dorm{Fair: f, Adjust: a}, nil
			}},
	}
}

func newOASiS(p policy.Params) (policy.Policy, error) {
	if err := p.Check("oasis", "slot", "slots", "eta", "scale", "uw", "up", "lw", "lp", "lfloor"); err != nil {
		return nil, err
	}
	var cfg Config
	var err error
	if cfg.Slot, err = p.Float("slot", 3600); err != nil {
		return nil, err
	}
	if cfg.Slots, err = p.Int("slots", 100); err != nil {
		return nil, err
	}
	if cfg.Eta, err = p.Float("eta", 1); err != nil {
		return nil, err
	}
	if cfg.LFloor, err = p.Float("lfloor", DefaultLFloor); err != nil {
		return nil, err
	}
	scale, err := p.Float("scale", 1)
	if err != nil {
		return nil, err
	}
	if scale <= 0 {
		return nil, fmt.Errorf("parameter scale=%v: want a number > 0", scale)
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
		var b Bounds
		if b.UW, err = parseVec("uw", p["uw"]); err != nil {
			return nil, err
		}
		if b.UP, err = parseVec("up", p["up"]); err != nil {
			return nil, err
		}
		if b.LW, err = p.Float("lw", 0); err != nil {
			return nil, err
		}
		if b.LP, err = p.Float("lp", 0); err != nil {
			return nil, err
		}
		if b.LW <= 0 || b.LP <= 0 {
			return nil, fmt.Errorf("parameters lw, lp: want numbers > 0")
		}
		b = b.Scale(scale)
		cfg.Bounds = &b
	default:
		return nil, fmt.Errorf("parameters uw, up, lw, lp: give all four or none")
	}
	return New(cfg)
}
