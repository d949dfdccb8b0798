package oasis

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// Bounds are the constants of OASiS's price functions (the paper's Eq.
// (22)-(26)), one set for the worker pool and one for the PS pool.
//
// Units: resource amounts are normalised per pool by the largest capacity
// of that kind among the pool's servers (Pool.Ref), so a price is utility
// per "one largest server's worth of the resource" per slot and amounts of
// different kinds can be summed, which the paper's L (a sum over kinds)
// needs.
//
//   - U[r] is the largest per-unit-resource utility any job can reach
//     (Eq. (23)-(24)): its utility at its shortest completion over the
//     normalised amount of r one of its workers (or PSs) takes. Appendix A
//     needs exactly this: when r is exhausted on a server in a slot its
//     price is U[r], so any schedule with a replica there costs at least
//     U[r] * w_i^r >= f_i(t_hat_i), the most the job can earn, and is
//     rejected. (An earlier reading divided by the job's worker-slots as
//     well, a per-resource-slot U that is too small by that factor for
//     the property to hold; UPerResourceSlot keeps it as a labelled
//     variant.)
//   - L is the smallest per-slot, per-unit-resource utility (Eq.
//     (25)-(26)): a job's utility when it ends at the horizon, over the
//     most resource-time it could hold (N replicas of every kind for every
//     slot up to T).
//
// A resource kind no job in the pool demands has U[r] = 0 and no price.
type Bounds struct {
	UW, UP [resource.NumKinds]float64
	LW, LP float64
}

// Scale returns the bounds multiplied by f (the oasis-estimate
// experiment's 50%..150% estimates).
func (b Bounds) Scale(f float64) Bounds {
	for r := range b.UW {
		b.UW[r] *= f
		b.UP[r] *= f
	}
	b.LW *= f
	b.LP *= f
	return b
}

// String encodes the bounds as policy parameters (uw, up, lw, lp).
func (b Bounds) String() string {
	enc := func(v [resource.NumKinds]float64) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.FormatFloat(x, 'g', 10, 64)
		}
		return strings.Join(s, "/")
	}
	return fmt.Sprintf("uw=%s;up=%s;lw=%s;lp=%s", enc(b.UW), enc(b.UP),
		strconv.FormatFloat(b.LW, 'g', 10, 64), strconv.FormatFloat(b.LP, 'g', 10, 64))
}

func parseVec(key, s string) ([resource.NumKinds]float64, error) {
	var v [resource.NumKinds]float64
	parts := strings.Split(s, "/")
	if len(parts) != int(resource.NumKinds) {
		return v, fmt.Errorf("parameter %s=%q: want %d values separated by /", key, s, resource.NumKinds)
	}
	for i, p := range parts {
		x, err := strconv.ParseFloat(p, 64)
		if err != nil || !(x >= 0 && x <= MaxBound) {
			return v, fmt.Errorf("parameter %s=%q: value %d is not a number in [0, %g]", key, s, i+1, MaxBound)
		}
		v[i] = x
	}
	return v, nil
}

// Pool is one server pool (worker or PS servers) as the price functions see
// it.
type Pool struct {
	Nodes []int // snapshot indices
	Ref   [resource.NumKinds]float64
}

func newPool(nodes []*cluster.NodeState, role string) Pool {
	var p Pool
	for _, n := range nodes {
		if n.Role != role || n.Gone {
			continue
		}
		p.Nodes = append(p.Nodes, n.Index)
		for r := range p.Ref {
			p.Ref[r] = math.Max(p.Ref[r], float64(n.Capacity[r]))
		}
	}
	return p
}

// add appends a node that joined the cluster after the pool was built.
// The pool's unit (Ref) stays what it was, so that prices stay in the unit
// of the bounds; only a kind the pool had none of takes its unit from the
// first node that has it.
func (p *Pool) add(n *cluster.NodeState, role string) {
	if n.Role != role || n.Gone {
		return
	}
	p.Nodes = append(p.Nodes, n.Index)
	for r := range p.Ref {
		if p.Ref[r] == 0 {
			p.Ref[r] = float64(n.Capacity[r])
		}
	}
}

// norm returns a demand in the pool's normalised units.
func (p *Pool) norm(d resource.Vector) [resource.NumKinds]float64 {
	var out [resource.NumKinds]float64
	for r := range d {
		if p.Ref[r] > 0 {
			out[r] = float64(d[r]) / p.Ref[r]
		}
	}
	return out
}

// Price is the paper's Eq. (22): the unit price of a resource with upper
// bound u, lower bound l and scaling eta when g of its capacity c is
// allocated: l/(2 eta) * (2 eta u / l)^(g/c). It is l/(2 eta) on an idle
// server, low enough to admit any job, and u on a full one, high enough to
// admit none.
func Price(g, c, u, l, eta float64) float64 {
	if u <= 0 || c <= 0 {
		return 0
	}
	base := l / (2 * eta)
	return base * math.Pow(2*eta*u/l, g/c)
}

// UReading is how U is normalised.
type UReading uint8

const (
	// UPerResource is the paper's U: utility per unit of resource
	// (Appendix A: U^r * w_i^r >= f_i(t_hat_i)). The default.
	UPerResource UReading = iota
	// UPerResourceSlot is the earlier reading: utility per unit of
	// resource per worker-slot (U divided by the job's worker-slots, or
	// PS-slots), kept as a labelled variant (parameter ubound=resource-slot).
	UPerResourceSlot
)

// UReadingNames are the values of the oasis plugin's ubound parameter.
var UReadingNames = []string{"resource", "resource-slot"}

func (r UReading) String() string {
	if int(r) < len(UReadingNames) {
		return UReadingNames[r]
	}
	return fmt.Sprintf("UReading(%d)", r)
}

// ComputeBounds returns the true bounds of a job set on the given servers
// over slots [0, T) of the given length: what the paper assumes OASiS
// knows in advance.
func ComputeBounds(jobs []*cluster.Job, nodes []cluster.Node, slot float64, T int) Bounds {
	return ComputeBoundsAs(jobs, nodes, slot, T, UPerResource)
}

// ComputeBoundsAs is ComputeBounds with U normalised as reading says.
func ComputeBoundsAs(jobs []*cluster.Job, nodes []cluster.Node, slot float64, T int, reading UReading) Bounds {
	return ComputeBoundsFloor(jobs, nodes, slot, T, reading, DefaultLFloor)
}

// ComputeBoundsFloor is ComputeBoundsAs with L floored at f times the
// largest U instead of DefaultLFloor; f = 0 leaves L as the jobs set it
// (possibly 0, when a utility underflows).
func ComputeBoundsFloor(jobs []*cluster.Job, nodes []cluster.Node, slot float64, T int, reading UReading, f float64) Bounds {
	ns := make([]*cluster.NodeState, len(nodes))
	for i := range nodes {
		ns[i] = &cluster.NodeState{Node: nodes[i], Index: i}
	}
	wp, pp := newPool(ns, RoleWorker), newPool(ns, RolePS)
	var b Bounds
	b.LW, b.LP = math.Inf(1), math.Inf(1)
	for _, j := range jobs {
		if CheckJob(j) != nil {
			continue
		}
		jb := jobBounds(j, &wp, &pp, slot, T, reading)
		for r := range b.UW {
			b.UW[r] = math.Max(b.UW[r], jb.UW[r])
			b.UP[r] = math.Max(b.UP[r], jb.UP[r])
		}
		b.LW = math.Min(b.LW, jb.LW)
		b.LP = math.Min(b.LP, jb.LP)
	}
	return b.floor(f)
}

// MaxU is the largest U over both pools and every resource.
func (b Bounds) MaxU() float64 {
	mx := 0.0
	for r := range b.UW {
		mx = math.Max(mx, math.Max(b.UW[r], b.UP[r]))
	}
	return mx
}

// UOverL is the largest U over the smallest L: the spread of the price
// functions (Theorem 4's ratio grows with its logarithm).
func (b Bounds) UOverL() float64 { return b.MaxU() / math.Min(b.LW, b.LP) }

// DefaultLFloor is the smallest L as a fraction of the largest U.
const DefaultLFloor = 1e-12

// floor keeps L positive and at most U: a time-critical job that ends at
// the horizon has a utility that underflows to 0, which would make the
// price base 2 eta U / L infinite. L is floored at f (DefaultLFloor unless
// the policy's lfloor parameter says otherwise) times the largest U.
func (b Bounds) floor(f float64) Bounds {
	lo := f * b.MaxU()
	if math.IsInf(b.LW, 1) || b.LW < lo {
		b.LW = lo
	}
	if math.IsInf(b.LP, 1) || b.LP < lo {
		b.LP = lo
	}
	return b
}

// jobBounds is one job's contribution to the bounds (Eq. (23)-(26)).
func jobBounds(j *cluster.Job, wp, pp *Pool, slot float64, T int, reading UReading) Bounds {
	p := j.PS
	W := EstimatedWorkerSlots(j, slot)
	a := arrivalSlot(j.Submit, slot)
	fast := a + (W+p.Chunks-1)/p.Chunks
	umax := utility(j, float64(fast)*slot-j.Submit)
	ps, _ := PSFor(p, p.Chunks)
	psSlots := int(math.Ceil(float64(W) * float64(ps) / float64(p.Chunks)))
	dw, dp := wp.norm(j.Groups[GWorker].Demand), pp.norm(j.Groups[GPS].Demand)
	wn, pn := 1.0, 1.0 // per unit of resource
	if reading == UPerResourceSlot {
		wn, pn = float64(W), float64(psSlots)
	}
	var b Bounds
	var sw, sp float64
	for r := range dw {
		if dw[r] > 0 {
			b.UW[r] = umax / (dw[r] * wn)
		}
		if dp[r] > 0 {
			b.UP[r] = umax / (dp[r] * pn)
		}
		sw += dw[r]
		sp += dp[r]
	}
	span := float64(max(T-a, 1))
	umin := utility(j, float64(T)*slot-j.Submit)
	b.LW = umin / (span * float64(p.Chunks) * sw)
	b.LP = umin / (span * float64(p.Chunks) * sp)
	return b
}

// arrivalSlot is the first slot a job that arrived at t can use: the slot
// starting at t if t is a slot boundary, else the next one.
func arrivalSlot(t, slot float64) int {
	return int(math.Ceil(t/slot - 1e-9))
}
