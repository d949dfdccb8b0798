package framework

import (
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// Picker is implemented by Score plugins whose scores depend on the nodes
// taken before (a round-robin cursor that continues where the last
// replica went). On the generic placement path the Runtime calls Picked
// right after it takes node for one replica of group g, or for a whole
// gang on one node (g < 0), in placement order. It is called also for
// replicas of a gang that then fails and is given back, and for what-if
// placements (Cycle.Place): a cursor moves on whether or not the
// placement is kept.
type Picker interface {
	Picked(c *Cycle, js *cluster.JobState, g int, node int)
}

// picked tells the Picker score plugins that node was taken.
func (r *Runtime) picked(c *Cycle, js *cluster.JobState, g, node int) {
	for _, p := range r.pickers {
		p.Picked(c, js, g, node)
	}
}

// Trying returns the replica counts the Runtime is placing right now (for
// Score plugins scoring a whole gang, g < 0), or nil.
func (c *Cycle) Trying() []int { return c.trying }

// placeGeneric is the placement for profiles with custom Filter or Score
// plugins: every feasible node is filtered and scored.
func (r *Runtime) placeGeneric(c *Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *Status) {
	prev, prevOn := c.trying, c.on
	c.trying, c.on = counts, l
	defer func() { c.trying, c.on = prev, prevOn }()
	j := js.Job
	total := 0
	for _, n := range counts {
		total += n
	}
	if r.exactFirst() {
		// Sure to fail: the same failure without placing (a failed try
		// of a woken job that an earlier start left no room is the most
		// common try on a long queue).
		if miss := r.noRoomMiss(c, l, js, counts); miss != nil {
			return nil, StatusOf(Unschedulable, miss).WithPlugin("placement")
		}
	}
	if r.p.Gang != placement.PerReplica {
		d := j.Demand(counts)
		best, miss := r.pick(c, l, js, -1, d, counts)
		if best >= 0 {
			l.Take(best, d)
			r.picked(c, js, -1, best)
			p := make(cluster.Placement, 0, total)
			for g, n := range counts {
				for range n {
					p = append(p, cluster.Assignment{Group: g, Node: best})
				}
			}
			return p, nil
		}
		if r.p.Gang == placement.OneNodeOnly {
			miss.oneNode, miss.total, miss.d = true, total, d
			return nil, StatusOf(Unschedulable, miss).WithPlugin("placement")
		}
	}
	l.Fork()
	p := make(cluster.Placement, 0, total)
	for g, n := range counts {
		d := j.Groups[g].Demand
		for k := range n {
			best, miss := r.pick(c, l, js, g, d, counts)
			if best < 0 {
				l.Revert()
				miss.replica, miss.group, miss.d = k+1, j.Groups[g].Name, d
				return nil, StatusOf(Unschedulable, miss).WithPlugin("placement")
			}
			l.Take(best, d)
			r.picked(c, js, g, best)
			p = append(p, cluster.Assignment{Group: g, Node: best})
		}
	}
	l.Commit()
	return p, nil
}

// noRoomMiss returns, when exactFirst holds, the failure the placement of
// counts of js on l returns when the first group with replicas cannot hold
// them (nil when it can, or cannot say), found without placing: the
// placement places that group first, as many of its replicas as fit on
// the nodes that pass the group's rules (exactRoom), and the next one
// fails with every such node short of room, the others refused as pick
// refuses them, in node order. A one-node-first gang fails on one node
// first (a node that held the gang would hold the group's replicas),
// which the placement does not report.
func (r *Runtime) noRoomMiss(c *Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) *noNodeError {
	s := c.Snap
	g := firstGroup(js.Job, counts)
	if g < 0 {
		return nil
	}
	gr := &js.Job.Groups[g]
	have := groupRoom(l, js.Job, g, counts[g]) // the role rule is the only filter (exactFirst)
	if have >= counts[g] {
		return nil
	}
	set := l.Eligible(js.Job, g)
	// pick's failure for replica have+1.
	miss := &noNodeError{memo: &r.reasons, nodes: s.Nodes, js: js, g: g, counts: counts}
	for i, n := range s.Nodes {
		if !n.Ready || n.Gone {
			miss.notReady++
			continue
		}
		if !set.Has(i) {
			miss.misses = append(miss.misses, nodeMiss{node: i})
			continue
		}
		if nm, ok := r.filter(c, js, g, i, n, counts); !ok {
			miss.misses = append(miss.misses, nm)
			continue
		}
		miss.insufficient++
	}
	miss.replica, miss.group, miss.d = have+1, gr.Name, gr.Demand
	return miss
}

// pick returns the best feasible node for demand d of group g (or of the
// whole gang at counts, g < 0), or -1 and why no node was feasible (a
// noNodeError, formatted only if read: what-if placements fail by the
// thousand and read none).
func (r *Runtime) pick(c *Cycle, l *placement.Ledger, js *cluster.JobState, g int, d resource.Vector, counts []int) (int, *noNodeError) {
	s := c.Snap
	// On the stack for clusters of up to 64 nodes: a what-if placement
	// (the queue's FitsNow) picks by the thousand.
	var fbuf [64]int
	feasible := fbuf[:0]
	// Why the nodes were refused, kept only if none is feasible.
	var misses []nodeMiss
	notReady, insufficient := 0, 0
	// The groups' eligible sets (node constraints and taints), so that a
	// node is matched by a bit test, not by the constraint's rules.
	var buf [4]cluster.NodeSet
	sets := buf[:0]
	for k := range js.Job.Groups {
		if g == k || g < 0 && counts[k] > 0 {
			sets = append(sets, l.Eligible(js.Job, k))
		}
	}
	for i, n := range s.Nodes {
		if !n.Ready || n.Gone {
			notReady++
			continue
		}
		if !inSets(sets, i) {
			misses = append(misses, nodeMiss{node: i})
			continue
		}
		if nm, ok := r.filter(c, js, g, i, n, counts); !ok {
			misses = append(misses, nm)
			continue
		}
		if !d.Fits(l.Free(i)) {
			insufficient++
			continue
		}
		if g < 0 && r.p.OneNodeFirstFit {
			return i, nil
		}
		feasible = append(feasible, i)
	}
	if len(feasible) == 0 {
		return -1, &noNodeError{memo: &r.reasons, nodes: s.Nodes, js: js, g: g, counts: counts,
			notReady: notReady, insufficient: insufficient, misses: misses}
	}
	if len(r.p.Score) == 0 {
		best, bs := -1, 0.0
		for _, i := range feasible {
			if sc := l.Score(i, d, placement.Pack); best < 0 || sc > bs {
				best, bs = i, sc
			}
		}
		return best, nil
	}
	var sbuf, rbuf [64]float64
	sum, raw := sbuf[:], rbuf[:]
	if len(feasible) > len(sbuf) {
		sum, raw = make([]float64, len(feasible)), make([]float64, len(feasible))
	}
	sum, raw = sum[:len(feasible)], raw[:len(feasible)]
	for _, ws := range r.p.Score {
		lo, hi := 0.0, 0.0
		for k, i := range feasible {
			raw[k] = ws.Score.Score(c, js, g, i)
			if k == 0 || raw[k] < lo {
				lo = raw[k]
			}
			if k == 0 || raw[k] > hi {
				hi = raw[k]
			}
		}
		for k := range feasible {
			v := raw[k]
			if len(r.p.Score) > 1 {
				// NormalizeScore: each plugin's scores to [0, 100], so
				// that plugins on different scales combine by weight.
				v = 100
				if hi > lo {
					v = 100 * (raw[k] - lo) / (hi - lo)
				}
			}
			sum[k] += ws.Weight * v
		}
	}
	best := 0
	for k := range feasible {
		if sum[k] > sum[best] {
			best = k
		}
	}
	return feasible[best], nil
}

// filter reports whether node n (index i) passes the role rule and every
// Filter plugin (node constraints are checked before, by the eligible
// sets) for group g (every group with replicas, g < 0); when it does not,
// the miss says why, to be formatted if read.
func (r *Runtime) filter(c *Cycle, js *cluster.JobState, g, i int, n *cluster.NodeState, counts []int) (nodeMiss, bool) {
	check := func(g int) (nodeMiss, bool) {
		if n.Role != "" && n.Role != js.Job.Groups[g].Name {
			return nodeMiss{node: i, role: true, group: g}, false
		}
		for _, f := range r.p.Filter {
			if _, ok := f.(NodeRole); ok {
				continue
			}
			if st := f.Filter(c, js, g, n); !st.IsSuccess() {
				return nodeMiss{node: i, filter: f, st: st}, false
			}
		}
		return nodeMiss{}, true
	}
	if g >= 0 {
		return check(g)
	}
	for g, k := range counts {
		if k > 0 {
			if nm, ok := check(g); !ok {
				return nm, false
			}
		}
	}
	return nodeMiss{}, true
}

func inSets(sets []cluster.NodeSet, i int) bool {
	for _, s := range sets {
		if !s.Has(i) {
			return false
		}
	}
	return true
}

// Built-in plugins: the placement strategies as Score plugins and the node
// role rule as a Filter.

// Strategy is a built-in Score plugin: least-allocated (spread),
// most-allocated (pack) or first-fit.
type Strategy struct{ S placement.Strategy }

// The Runtime places a profile whose only Score plugin is a Strategy
// (and whose only Filter is NodeRole) with placement.Place, whose scan
// samples feasible nodes on large clusters as kube-scheduler does; the
// generic path scores every feasible node.
var _ Score = Strategy{}

// Name implements Plugin.
func (s Strategy) Name() string {
	switch s.S {
	case placement.Spread:
		return "least-allocated"
	case placement.Pack:
		return "most-allocated"
	}
	return "first-fit"
}

// Score implements Score: the strategy's score of the node after placing
// one replica of group g (or the whole gang being tried, g < 0).
func (s Strategy) Score(c *Cycle, js *cluster.JobState, g int, node int) float64 {
	var d resource.Vector
	if g < 0 {
		d = js.Job.Demand(c.Trying())
	} else {
		d = js.Job.Groups[g].Demand
	}
	return c.Ledger().Score(node, d, s.S)
}

// NodeRole is the built-in Filter for node roles (OASiS's worker and
// parameter-server pools): a node with a role takes only replicas of the
// group of that name. Placement and both executors' validator enforce the
// rule whether or not a profile lists this plugin.
type NodeRole struct{}

var _ Filter = NodeRole{}

// Name implements Plugin.
func (NodeRole) Name() string { return "node-role" }

// Filter implements Filter.
func (NodeRole) Filter(c *Cycle, js *cluster.JobState, g int, n *cluster.NodeState) *Status {
	if placement.Eligible(n, js.Job, g) {
		return nil
	}
	return Statusf(Unschedulable, "node %s is for %s replicas", n.Name, n.Role)
}
