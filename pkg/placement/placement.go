// Package placement finds nodes for a job's replicas. Policies use it to try
// placements on a Ledger, a copy of the snapshot's free resources that they
// can change within one cycle and roll back (the cluster-autoscaler's
// fork/revert idea), so that several decisions in one cycle account for
// each other and a gang is placed all or nothing.
package placement

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// Ledger tracks free resources per node during one scheduling cycle.
type Ledger struct {
	snap  *cluster.Snapshot
	free  []resource.Vector
	undo  []undoEntry
	marks []ledgerMark
	// next is where the next sampled scan starts (see feasibleToScore),
	// so that successive replicas spread their scans over the cluster.
	next int
	// inv holds 1/capacity per kind (0 where the node has none) and the
	// reciprocal of the number of kinds it has, so that scoring a node
	// multiplies instead of divides: scoring is the inner loop of a cycle.
	inv []nodeInv
	// invOf is the capacity each inv entry was computed from, so that
	// Reset recomputes an entry only when its node's capacity changed
	// (rarely; Reset runs every cycle, and a division per kind per node
	// was a third of its cost).
	invOf []resource.Vector
	// roled marks nodes with a Role, so the hot loop need not load each
	// NodeState (a cache miss per node) to learn that most have none.
	roled []bool
	// elig caches node constraints' eligible sets when the snapshot has
	// no Eligibility of its own (hand-built snapshots); reset per cycle.
	elig *cluster.Eligibility

	// cache is set on clusters above feasibleCacheMin nodes, where scans
	// keep each node's score for a few recent demands in slots.
	cache    bool
	slots    [scoreSlots]scoreSlot
	slotTick uint64
	// roledBlock marks the blocks of 64 nodes that hold a node with a
	// role (whose eligibility a scan must ask node by node).
	roledBlock []bool
	// version counts the changes that stay: a Reset, a change outside any
	// Fork, the Commit of an outermost Fork that changed something.
	version uint64
}

// scoreSlots is how many demands the score cache remembers: a gang's
// one-node demand and its per-replica demand alternate, and a cycle's jobs
// tend to share a few shapes.
const scoreSlots = 4

// feasibleCacheMin is the cluster size above which scans use the score
// cache: above 100 nodes a replica scans up to half the cluster, so most
// of the nodes it scores were scored for an earlier replica of the same
// shape and have not changed since. Smaller clusters (every simulator
// experiment but autoscale) scan as before.
const feasibleCacheMin = 100

// scoreSlot remembers, for one demand and strategy, each node's score, or
// -Inf where the demand does not fit, or NaN where it is not known yet. A
// change to a node's free resources forgets the node in every slot, so an
// entry is always what scoring the node again would give: placements do
// not depend on the cache.
type scoreSlot struct {
	d     resource.Vector
	s     Strategy
	live  bool
	used  uint64
	score []float64
	// maybe has a bit per node, clear where the demand is known not to
	// fit (score -Inf); full counts those nodes.
	maybe []uint64
	full  int
	// Per block of 64 nodes (a word of maybe), when ok: the best score in
	// the block, the first node with it, and how many nodes fit. A scan
	// that takes a whole block without reaching its sample size reads
	// these instead of the block's nodes.
	ok        []bool
	blockBest []float64
	blockArg  []int32
	blockFit  []int32
}

// set records node i's score.
func (sl *scoreSlot) set(i int, sc float64) {
	sl.score[i] = sc
	if math.IsInf(sc, -1) {
		sl.maybe[i>>6] &^= 1 << (uint(i) & 63)
		sl.full++
	}
}

// forget marks node i's score unknown.
func (sl *scoreSlot) forget(i int) {
	if math.IsInf(sl.score[i], -1) {
		sl.maybe[i>>6] |= 1 << (uint(i) & 63)
		sl.full--
	}
	sl.score[i] = math.NaN()
	sl.ok[i>>6] = false
}

// summarize scores every node of block w that is not known yet and
// records the block's best score, first node with it, and fitting nodes.
func (l *Ledger) summarize(sl *scoreSlot, w int) {
	lo, hi := w<<6, min(w<<6+64, len(sl.score))
	noFit := math.Inf(-1)
	best, arg, fit := noFit, int32(-1), int32(0)
	for i := lo; i < hi; i++ {
		sc := sl.score[i]
		if sc != sc {
			sc = noFit
			if sl.d.Fits(l.free[i]) {
				sc = l.score(i, sl.d, sl.s)
			}
			sl.set(i, sc)
		}
		if sc != noFit {
			fit++
			if arg < 0 || sc > best {
				best, arg = sc, int32(i)
			}
		}
	}
	sl.blockBest[w], sl.blockArg[w], sl.blockFit[w], sl.ok[w] = best, arg, fit, true
}

type nodeInv struct {
	cap   [resource.NumKinds]float64
	kinds float64
}

type undoEntry struct {
	node int
	prev resource.Vector
}

// NewLedger starts from the snapshot's free resources. Nodes that are not
// ready or are gone have nothing free. Placeholder capacity counts as free
// when takePlaceholders is set, as it does for every real job.
func NewLedger(s *cluster.Snapshot, takePlaceholders bool) *Ledger {
	l := &Ledger{}
	l.Reset(s, takePlaceholders)
	return l
}

// Reset makes l a fresh ledger for s, reusing its memory. A policy that runs
// every cycle of a long replay keeps one Ledger and resets it, rather than
// allocating a free-resource array per cycle.
func (l *Ledger) Reset(s *cluster.Snapshot, takePlaceholders bool) {
	l.snap = s
	l.version++
	if s.Eligibility == nil {
		if l.elig == nil {
			l.elig = cluster.NewEligibility()
		} else {
			l.elig.Reset()
		}
	}
	if cap(l.free) < len(s.Nodes) {
		l.free = make([]resource.Vector, len(s.Nodes), len(s.Nodes)+len(s.Nodes)/4)
	}
	l.free = l.free[:len(s.Nodes)]
	l.undo, l.marks, l.next = l.undo[:0], l.marks[:0], 0
	if cap(l.inv) < len(s.Nodes) {
		l.inv = make([]nodeInv, len(s.Nodes), cap(l.free))
		// inv[i] is always what invOf[i] gives, zero for zero, up to
		// cap.
		l.invOf = make([]resource.Vector, len(s.Nodes), cap(l.free))
	}
	l.inv, l.invOf = l.inv[:len(s.Nodes)], l.invOf[:len(s.Nodes)]
	l.roled = slices.Grow(l.roled[:0], len(s.Nodes))[:len(s.Nodes)]
	// Every node's free resources are set afresh below: forget the score
	// cache.
	l.cache = len(s.Nodes) > feasibleCacheMin
	if l.cache {
		blocks := (len(s.Nodes) + 63) / 64
		l.roledBlock = slices.Grow(l.roledBlock[:0], blocks)[:blocks]
		clear(l.roledBlock)
		for i, n := range s.Nodes {
			if n.Role != "" {
				l.roledBlock[i>>6] = true
			}
		}
	}
	for k := range l.slots {
		l.slots[k].live = false
	}
	for i, n := range s.Nodes {
		l.roled[i] = n.Role != ""
		if n.Capacity != l.invOf[i] {
			var v nodeInv
			k := 0
			for r, c := range n.Capacity {
				if c > 0 {
					v.cap[r] = 1 / float64(c)
					k++
				}
			}
			if k > 0 {
				v.kinds = 1 / float64(k)
			}
			l.inv[i], l.invOf[i] = v, n.Capacity
		}
		// Free, plus the placeholders' room when they are taken: n.Free()
		// and Add, element by element in place.
		f := &l.free[i]
		switch {
		case !n.Ready || n.Gone:
			*f = resource.Vector{}
		case takePlaceholders:
			for k := range f {
				f[k] = n.Capacity[k] - n.Allocated[k] + n.Placeholder[k]
			}
		default:
			for k := range f {
				f[k] = n.Capacity[k] - n.Allocated[k]
			}
		}
	}
}

// Eligible returns the nodes whose labels and taints admit a replica of
// group g of job j (roles aside): nil (All) for a group without node
// constraints on a cluster without hard taints, the fast path.
func (l *Ledger) Eligible(j *cluster.Job, g int) cluster.NodeSet {
	e := l.snap.Eligibility
	if e == nil {
		e = l.elig
	}
	return e.Set(l.snap.Nodes, j.Groups[g].Constraint)
}

// Snapshot returns the snapshot the ledger was built from.
func (l *Ledger) Snapshot() *cluster.Snapshot { return l.snap }

// Free returns what is free on node i.
func (l *Ledger) Free(i int) resource.Vector { return l.free[i] }

func (l *Ledger) set(i int, v resource.Vector) {
	if len(l.marks) > 0 {
		l.undo = append(l.undo, undoEntry{i, l.free[i]})
	} else {
		l.version++
	}
	l.free[i] = v
	l.changed(i)
}

// changed forgets node i in the score cache: its free resources changed.
func (l *Ledger) changed(i int) {
	if l.cache {
		for k := range l.slots {
			if sl := &l.slots[k]; sl.live {
				sl.forget(i)
			}
		}
	}
}

// Take subtracts demand from node i; it fails without change when the
// demand does not fit.
func (l *Ledger) Take(i int, d resource.Vector) bool {
	if !d.Fits(l.free[i]) {
		return false
	}
	l.set(i, l.free[i].Sub(d))
	return true
}

// Give adds resources back to node i (a victim's, or a job's own before it
// moves).
func (l *Ledger) Give(i int, d resource.Vector) { l.set(i, l.free[i].Add(d)) }

// ledgerMark is where a Fork began: the undo log's length and the
// sampling cursor.
type ledgerMark struct{ undo, next int }

// Fork starts a what-if: changes after it can be undone by Revert or kept
// by Commit. Forks nest.
func (l *Ledger) Fork() { l.marks = append(l.marks, ledgerMark{undo: len(l.undo), next: l.next}) }

// Revert undoes everything since the matching Fork, the sampling cursor
// included: a what-if that is reverted leaves no trace on later
// placements (the scheduling queue relies on it: not trying a job that
// would fail must change nothing for the jobs after it).
func (l *Ledger) Revert() {
	mk := l.marks[len(l.marks)-1]
	l.marks = l.marks[:len(l.marks)-1]
	m := mk.undo
	l.next = mk.next
	for i := len(l.undo) - 1; i >= m; i-- {
		l.free[l.undo[i].node] = l.undo[i].prev
		l.changed(l.undo[i].node)
	}
	l.undo = l.undo[:m]
}

// Before calls visit with each node changed since the innermost Fork and
// a free vector it had since then (the value before each change, so the
// least of them is at most the node's room at the Fork). The scheduling
// queue reads it just before a commit that may give room back.
func (l *Ledger) Before(visit func(node int, prev resource.Vector)) {
	if len(l.marks) == 0 {
		return
	}
	for _, u := range l.undo[l.marks[len(l.marks)-1].undo:] {
		visit(u.node, u.prev)
	}
}

// Commit keeps everything since the matching Fork.
func (l *Ledger) Commit() {
	l.marks = l.marks[:len(l.marks)-1]
	if len(l.marks) == 0 {
		if len(l.undo) > 0 {
			l.version++
		}
		l.undo = l.undo[:0]
	}
}

// Version changes whenever the free room may have changed for good: a
// Reset, a Take or Give outside any Fork, the Commit of an outermost Fork
// that changed something. A what-if that is reverted leaves it as it was,
// so an answer computed on the ledger holds while its Version is the same
// (the scheduling queue asks again whether a woken job fits only then).
func (l *Ledger) Version() uint64 { return l.version }

// GiveJob returns a running job's resources to the ledger.
func (l *Ledger) GiveJob(js *cluster.JobState) {
	for _, a := range js.Placement {
		l.Give(a.Node, js.Job.Groups[a.Group].Demand)
	}
}

// TakePlacement takes a whole placement, all or nothing.
func (l *Ledger) TakePlacement(j *cluster.Job, p cluster.Placement) bool {
	l.Fork()
	for _, a := range p {
		if !l.Take(a.Node, j.Groups[a.Group].Demand) {
			l.Revert()
			return false
		}
	}
	l.Commit()
	return true
}

// Strategy chooses among the nodes where a replica fits.
type Strategy int

// Strategies.
const (
	// Spread prefers the node with the most free resources after placing,
	// like kube-scheduler's LeastAllocated scoring.
	Spread Strategy = iota
	// Pack prefers the node with the least free resources after placing
	// (best fit), like MostAllocated.
	Pack
	// FirstFit takes the lowest-indexed node that fits.
	FirstFit
)

// ParseStrategy maps "spread", "pack" or "first-fit" to a Strategy.
func ParseStrategy(s string) (Strategy, error) {
	switch s {
	case "spread":
		return Spread, nil
	case "pack", "binpack":
		return Pack, nil
	case "first-fit":
		return FirstFit, nil
	}
	return 0, fmt.Errorf("unknown placement strategy %q (want spread, pack or first-fit)", s)
}

func (s Strategy) String() string { return [...]string{"spread", "pack", "first-fit"}[s] }

// Options shape a placement.
type Options struct {
	// ScoreAll scores every feasible node. By default, on clusters of more
	// than 100 nodes, a replica's node is the best of the first
	// feasibleToScore feasible nodes found from a rotating start, as
	// kube-scheduler's percentageOfNodesToScore does: scoring all 5,000
	// nodes for each of 10,000 replicas costs a second per cycle.
	ScoreAll bool
	Strategy Strategy
	// Gang says whether all replicas of a job go on one node first.
	Gang Gang
	// OneNodeFirstFit makes the one-node stage of a gang take the
	// lowest-indexed node that holds the whole gang, rather than the best
	// by Strategy (the elastic article's gang placement).
	OneNodeFirstFit bool
	// Filter, when set, must also accept a node for a replica of group g
	// (node constraints beyond roles); it is asked of every candidate.
	Filter func(n *cluster.NodeState, g int) bool
}

// Gang is how a job's replicas are kept together.
type Gang uint8

// Gang modes.
const (
	// PerReplica places each replica on its own best node.
	PerReplica Gang = iota
	// OneNodeFirst tries to put all replicas on one node before placing
	// them one by one (which avoids cross-node communication).
	OneNodeFirst
	// OneNodeOnly puts all replicas on one node or fails.
	OneNodeOnly
)

// ParseGang maps "per-replica", "one-node-first" or "one-node-only".
func ParseGang(s string) (Gang, error) {
	switch s {
	case "", "per-replica":
		return PerReplica, nil
	case "one-node-first":
		return OneNodeFirst, nil
	case "one-node-only":
		return OneNodeOnly, nil
	}
	return 0, fmt.Errorf("unknown gang mode %q (want per-replica, one-node-first or one-node-only)", s)
}

func (g Gang) String() string {
	return [...]string{"per-replica", "one-node-first", "one-node-only"}[g]
}

// Eligible reports whether group g of job j may run on node n: the node's
// role admits the group, and its labels and taints admit the group's node
// constraint (nodeSelector, required affinity, tolerations; a group
// without one tolerates no NoSchedule or NoExecute taint). Every policy
// and the validator ask this, so a constraint is honoured everywhere.
// Placement's own scans use the cached sets of Ledger.Eligible instead.
func Eligible(n *cluster.NodeState, j *cluster.Job, g int) bool {
	if n.Role != "" && n.Role != j.Groups[g].Name {
		return false
	}
	c := j.Groups[g].Constraint
	if c == nil && len(n.Taints) == 0 {
		return true
	}
	return cluster.Admits(&n.Node, c)
}

// Why returns why group g of job j may not run on node n, naming the rule
// as kube-scheduler's filters do ("node-role: ...", "taint-toleration:
// ...", "node-affinity: ..."), or "" when it may.
func Why(n *cluster.NodeState, j *cluster.Job, g int) string {
	if n.Role != "" && n.Role != j.Groups[g].Name {
		return "node-role: node is for " + n.Role
	}
	why := cluster.WhyNot(&n.Node, j.Groups[g].Constraint)
	switch {
	case why == "":
		return ""
	case strings.HasPrefix(why, "node(s) had untolerated taint"):
		return "taint-toleration: " + why
	case strings.HasPrefix(why, "Insufficient "):
		return why // resources the vector does not carry (the Kubernetes executor's extended resources)
	}
	return "node-affinity: " + why
}

// Place finds nodes for the given replica counts of job j and takes them
// from the ledger. It is all or nothing: on failure the ledger is
// unchanged, and the error says which group did not fit. It honours roles
// and each group's node constraints (Ledger.Eligible), and adds a group's
// preferred node affinity to the strategy's score (kube-scheduler's
// NodeAffinity score: twice the weight of the resource score, normalised
// over the nodes; FirstFit ignores preferences).
func Place(l *Ledger, j *cluster.Job, counts []int, o Options) (cluster.Placement, error) {
	if err := l.shortOfFirst(j, counts, o); err != nil {
		return nil, err
	}
	if o.Gang != PerReplica {
		if p, ok := placeOnOne(l, j, counts, o); ok {
			return p, nil
		}
		if o.Gang == OneNodeOnly {
			return nil, &NoFitError{Demand: j.Demand(counts), Replicas: sum(counts), OneNode: true, from: &fitArgs{l, j, counts}}
		}
	}
	l.Fork()
	p := make(cluster.Placement, 0, sum(counts))
	var one [1]cluster.NodeSet
	for g, c := range counts {
		if c == 0 {
			continue
		}
		d := j.Groups[g].Demand
		sets := l.sets(j, g, one[:0])
		for r := 0; r < c; r++ {
			n := pick(l, j, g, d, sets, o)
			if n < 0 {
				l.Revert()
				return nil, &NoFitError{Demand: d, Replica: r + 1, Group: j.Groups[g].Name, from: &fitArgs{l, j, counts}}
			}
			l.Take(n, d)
			p = append(p, cluster.Assignment{Group: g, Node: n})
		}
	}
	l.Commit()
	return p, nil
}

// shortOfFirst returns Place's error, without placing, when the first
// group with replicas cannot have them all on the ledger as it is: that
// group is placed first, replica by replica, each on a node that holds it
// (its role, its eligible set, room), so its replicas that fit are, node
// by node, the successive takes of its demand that fit there, summed; if
// they are fewer than its count, replica have+1 is the one that fails, and
// no node holds the whole gang (every demand being nonnegative, such a
// node would hold the count of this group). Failed scans leave nothing
// behind (the per-replica stage is reverted, a one-node scan that finds no
// node moves no sampling cursor), so the answer and the ledger are
// Place's. On a long queue most placements that fail are of gangs woken
// by room an earlier start in the walk took: this is one pass over the
// nodes instead of a scan per replica. nil: Place must place.
func (l *Ledger) shortOfFirst(j *cluster.Job, counts []int, o Options) *NoFitError {
	if o.Filter != nil {
		return nil
	}
	g0 := -1
	for g, c := range counts {
		if c > 0 && j.Groups[g].Demand.AnyNegative() {
			return nil
		}
		if c > 0 && g0 < 0 {
			g0 = g
		}
	}
	if g0 < 0 {
		return nil
	}
	d, want := j.Groups[g0].Demand, counts[g0]
	var one [1]cluster.NodeSet
	sets := l.sets(j, g0, one[:0])
	nodes := l.snap.Nodes
	have := 0
nodes:
	for i := range nodes {
		if l.roled[i] && !roleAdmits(nodes[i], j, g0) {
			continue
		}
		for _, s := range sets {
			if !s.Has(i) {
				continue nodes
			}
		}
		for f := l.free[i]; d.Fits(f); f = f.Sub(d) {
			if have++; have >= want {
				return nil
			}
		}
	}
	if o.Gang == OneNodeOnly {
		return &NoFitError{Demand: j.Demand(counts), Replicas: sum(counts), OneNode: true, from: &fitArgs{l, j, counts}}
	}
	return &NoFitError{Demand: d, Replica: have + 1, Group: j.Groups[g0].Name, from: &fitArgs{l, j, counts}}
}

// NoFitError is Place's error: no node has room for the whole gang on one
// node (OneNode, Replicas in all), or for one replica of a group. Its
// message is built only when asked for: what-if placements (a preemption
// plugin trying victims) fail by the thousand and read none.
type NoFitError struct {
	Demand   resource.Vector
	OneNode  bool
	Replicas int
	// Replica (from 1) of Group did not fit, when not OneNode.
	Replica int
	Group   string
	// Constrained says how many nodes constrained groups may use at all
	// ("" without constraints), once Resolve has run.
	Constrained string
	// from is what Constrained is worked out from, until Resolve: most
	// failures are what-ifs whose error nobody reads.
	from *fitArgs
}

// fitArgs are the ledger, job and counts a NoFitError was made for.
type fitArgs struct {
	l      *Ledger
	j      *cluster.Job
	counts []int
}

// Resolve fills Constrained (and forgets what it was worked out from, so
// that two errors of the same content compare equal). It must be called
// before the ledger is Reset for another snapshot; Error calls it.
func (e *NoFitError) Resolve() {
	if e.from != nil {
		e.Constrained = e.from.l.constrained(e.from.j, e.from.counts)
		e.from = nil
	}
}

// Error implements error.
func (e *NoFitError) Error() string {
	e.Resolve()
	if e.OneNode {
		return fmt.Sprintf("no node has %v free for all %d replicas%s", e.Demand, e.Replicas, e.Constrained)
	}
	return fmt.Sprintf("no node has %v free for replica %d of group %s%s", e.Demand, e.Replica, e.Group, e.Constrained)
}

// sets appends group g's eligible set to buf unless it is the fast path
// (every node, no preference).
func (l *Ledger) sets(j *cluster.Job, g int, buf []cluster.NodeSet) []cluster.NodeSet {
	if s := l.Eligible(j, g); !s.All() || s.MaxPref > 0 {
		buf = append(buf, s)
	}
	return buf
}

// constrained is the part of a placement error that says how many nodes a
// constrained group may use at all.
func (l *Ledger) constrained(j *cluster.Job, counts []int) string {
	out := ""
	for g, c := range counts {
		if c == 0 {
			continue
		}
		if s := l.Eligible(j, g); !s.All() {
			out += fmt.Sprintf("; group %s may use %d of %d nodes (node selector, affinity, taints)", j.Groups[g].Name, s.Len(), len(l.snap.Nodes))
		}
	}
	return out
}

func placeOnOne(l *Ledger, j *cluster.Job, counts []int, o Options) (cluster.Placement, bool) {
	if o.OneNodeFirstFit {
		o.Strategy = FirstFit
	}
	var buf [4]cluster.NodeSet
	sets := buf[:0]
	for g, c := range counts {
		if c > 0 {
			sets = l.sets(j, g, sets)
		}
	}
	best := l.scan(j.Demand(counts), o, sets, func(n *cluster.NodeState) bool {
		for g := range counts {
			if counts[g] > 0 && !roleAdmits(n, j, g) {
				return false
			}
			if counts[g] > 0 && o.Filter != nil && !o.Filter(n, g) {
				return false
			}
		}
		return true
	})
	if best < 0 {
		return nil, false
	}
	l.Take(best, j.Demand(counts))
	p := make(cluster.Placement, 0, sum(counts))
	for g, c := range counts {
		for r := 0; r < c; r++ {
			p = append(p, cluster.Assignment{Group: g, Node: best})
		}
	}
	return p, true
}

func roleAdmits(n *cluster.NodeState, j *cluster.Job, g int) bool {
	return n.Role == "" || n.Role == j.Groups[g].Name
}

// pick returns the best node for one replica of group g, or -1.
func pick(l *Ledger, j *cluster.Job, g int, d resource.Vector, sets []cluster.NodeSet, o Options) int {
	if o.Filter != nil {
		return l.scan(d, o, sets, func(n *cluster.NodeState) bool { return roleAdmits(n, j, g) && o.Filter(n, g) })
	}
	return l.scan(d, o, sets, func(n *cluster.NodeState) bool { return roleAdmits(n, j, g) })
}

// scan returns the best-scoring node where d fits, that every set in sets
// holds and that eligible accepts, or -1. eligible is asked only about
// nodes with a role (or with o.Filter), so the common case costs no call
// per node, and sets is empty on the fast path (no constraint, no taint).
// FirstFit returns the lowest-indexed such node. Otherwise, unless
// o.ScoreAll, the scan stops after feasibleToScore feasible nodes,
// starting where the previous sampled scan stopped.
func (l *Ledger) scan(d resource.Vector, o Options, sets []cluster.NodeSet, eligible func(*cluster.NodeState) bool) int {
	nodes := l.snap.Nodes
	n := len(nodes)
	limit, start := n, 0
	if !o.ScoreAll && o.Strategy != FirstFit {
		if limit = feasibleToScore(n); limit < n {
			start = l.next % n
		}
	}
	prefer := false
	for _, s := range sets {
		prefer = prefer || s.MaxPref > 0
	}
	if len(sets) == 1 && sets[0].Sparse(n) {
		return l.scanSparse(d, o, sets[0], eligible, limit, start, prefer)
	}
	if l.cache && o.Strategy != FirstFit && !prefer {
		// No preference: a node's score is the strategy's alone, which
		// the score cache keeps.
		return l.scanCached(l.slot(d, o.Strategy), d, o, sets, eligible, limit, start)
	}
	best, bestScore, found := -1, 0.0, 0
nodes:
	for k := 0; k < n; k++ {
		i := start + k
		if i >= n {
			i -= n
		}
		if !d.Fits(l.free[i]) || (l.roled[i] || o.Filter != nil) && !eligible(nodes[i]) {
			continue
		}
		for _, s := range sets {
			if !s.Has(i) {
				continue nodes
			}
		}
		if o.Strategy == FirstFit {
			return i
		}
		sc := l.score(i, d, o.Strategy)
		if prefer {
			for _, s := range sets {
				if s.MaxPref > 0 {
					sc += 2 * float64(s.Pref(i)) / float64(s.MaxPref)
				}
			}
		}
		if best < 0 || sc > bestScore {
			best, bestScore = i, sc
		}
		if found++; found >= limit {
			if limit < n {
				l.next = i + 1
			}
			break
		}
	}
	return best
}

// scanCached is scan, without preferences, with the score cache slot of
// d: the same nodes in the same order with the same outcome, but a node's score comes from the
// slot when it is known there, and nodes known not to fit are skipped a
// word of the slot's bitmap at a time (on a full cluster a scan finds
// nothing, and would otherwise visit every node).
func (l *Ledger) scanCached(sl *scoreSlot, d resource.Vector, o Options, sets []cluster.NodeSet, eligible func(*cluster.NodeState) bool,
	limit, start int) int {
	nodes := l.snap.Nodes
	n := len(nodes)
	if sl.full == n {
		return -1
	}
	score, free, roled, maybe := sl.score[:n], l.free[:n], l.roled[:n], sl.maybe
	check := o.Filter != nil
	// Whole blocks may be taken from their summary when no node in them
	// needs asking about its eligibility.
	whole := !check && len(sets) == 0
	noFit := math.Inf(-1)
	best, bestScore, found := -1, 0.0, 0
	for seg := range 2 {
		lo, hi := start, n
		if seg == 1 {
			lo, hi = 0, start
		}
		if lo >= hi {
			continue
		}
		// Word by word over the nodes not known to be full, in order.
		for w := lo >> 6; w<<6 < hi; w++ {
			if whole && w<<6 >= lo && w<<6+64 <= hi && !l.roledBlock[w] {
				if !sl.ok[w] {
					l.summarize(sl, w)
				}
				if fit := int(sl.blockFit[w]); found+fit < limit {
					// The sample does not end in this block: its best
					// node is what a node-by-node walk would keep.
					if fit > 0 && (best < 0 || sl.blockBest[w] > bestScore) {
						best, bestScore = int(sl.blockArg[w]), sl.blockBest[w]
					}
					found += fit
					continue
				}
			}
			m := maybe[w]
			if w == lo>>6 {
				m &^= 1<<(uint(lo)&63) - 1
			}
			if end := (w + 1) << 6; end > hi {
				m &= 1<<(uint(hi)&63) - 1
			}
		nodes:
			for ; m != 0; m &= m - 1 {
				i := w<<6 + bits.TrailingZeros64(m)
				sc := score[i]
				if sc != sc { // NaN: not known
					sc = noFit
					if d.Fits(free[i]) {
						sc = l.score(i, d, o.Strategy)
					}
					sl.set(i, sc)
				}
				if sc == noFit || (roled[i] || check) && !eligible(nodes[i]) {
					continue
				}
				for _, s := range sets {
					if !s.Has(i) {
						continue nodes
					}
				}
				if best < 0 || sc > bestScore {
					best, bestScore = i, sc
				}
				if found++; found >= limit {
					if limit < n {
						l.next = i + 1
					}
					return best
				}
			}
		}
	}
	return best
}

// scanSparse is scan over the members of a sparse eligible set (a
// dedicated pool) only, in the same order (from start, wrapping) and with
// the same sampling, so it picks the node scan would.
func (l *Ledger) scanSparse(d resource.Vector, o Options, set cluster.NodeSet, eligible func(*cluster.NodeState) bool,
	limit, start int, prefer bool) int {
	nodes := l.snap.Nodes
	n := len(nodes)
	best, bestScore, found := -1, 0.0, 0
	for pass := 0; pass < 2; pass++ {
		lo, hi := start, n
		if pass == 1 {
			lo, hi = 0, start
		}
		for i := set.Next(lo, hi); i >= 0; i = set.Next(i+1, hi) {
			if !d.Fits(l.free[i]) || (l.roled[i] || o.Filter != nil) && !eligible(nodes[i]) {
				continue
			}
			if o.Strategy == FirstFit {
				return i
			}
			sc := l.score(i, d, o.Strategy)
			if prefer && set.MaxPref > 0 {
				sc += 2 * float64(set.Pref(i)) / float64(set.MaxPref)
			}
			if best < 0 || sc > bestScore {
				best, bestScore = i, sc
			}
			if found++; found >= limit {
				if limit < n {
					l.next = i + 1
				}
				return best
			}
		}
	}
	return best
}

// slot returns the score cache slot of demand d under strategy s, taking
// the least recently used one, emptied, when d has none.
func (l *Ledger) slot(d resource.Vector, s Strategy) *scoreSlot {
	l.slotTick++
	var lru *scoreSlot
	for k := range l.slots {
		sl := &l.slots[k]
		if sl.live && sl.d == d && sl.s == s {
			sl.used = l.slotTick
			return sl
		}
		if lru == nil || !sl.live && lru.live || sl.live == lru.live && sl.used < lru.used {
			lru = sl
		}
	}
	n := len(l.free)
	lru.score = slices.Grow(lru.score[:0], n)[:n]
	nan := math.NaN()
	for i := range lru.score {
		lru.score[i] = nan
	}
	words := (n + 63) / 64
	lru.maybe = slices.Grow(lru.maybe[:0], words)[:words]
	for w := range lru.maybe {
		lru.maybe[w] = ^uint64(0)
	}
	if r := n & 63; r != 0 {
		lru.maybe[words-1] = 1<<uint(r) - 1
	}
	lru.ok = slices.Grow(lru.ok[:0], words)[:words]
	clear(lru.ok)
	lru.blockBest = slices.Grow(lru.blockBest[:0], words)[:words]
	lru.blockArg = slices.Grow(lru.blockArg[:0], words)[:words]
	lru.blockFit = slices.Grow(lru.blockFit[:0], words)[:words]
	lru.d, lru.s, lru.live, lru.used, lru.full = d, s, true, l.slotTick, 0
	return lru
}

// feasibleToScore is kube-scheduler's adaptive number of feasible nodes to
// score in a cluster of n nodes: all of them up to 100, then a share that
// falls from 50% by one point per 125 nodes, to no less than 5%, and never
// fewer than 100 nodes.
// Samples reports whether Place, with options o on a cluster of n nodes,
// scores only a sample of the feasible nodes, from a cursor kept in the
// ledger that a placement moves whether or not it is kept (and that
// Revert does not restore).
func Samples(n int, o Options) bool {
	return !o.ScoreAll && o.Strategy != FirstFit && feasibleToScore(n) < n
}

func feasibleToScore(n int) int {
	if n <= 100 {
		return n
	}
	pct := 50 - n/125
	if pct < 5 {
		pct = 5
	}
	k := n * pct / 100
	if k < 100 {
		k = 100
	}
	return k
}

// Score is the strategy's score of node i for demand d: higher is better.
// FirstFit scores by index (the lowest index best).
func (l *Ledger) Score(i int, d resource.Vector, s Strategy) float64 {
	if s == FirstFit {
		return -float64(i)
	}
	return l.score(i, d, s)
}

// score is higher for the better node: the mean free fraction of node i
// after placing d, over the kinds the node has (Spread), or its negation
// (Pack).
func (l *Ledger) score(i int, d resource.Vector, s Strategy) float64 {
	inv := &l.inv[i]
	f := &l.free[i]
	sum := 0.0
	for k := range d {
		sum += float64(f[k]-d[k]) * inv.cap[k]
	}
	sum *= inv.kinds
	if s == Pack {
		return -sum
	}
	return sum
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// Grow adds up to want replicas of group g of running job js on the nodes
// in order (ready, not gone, role-eligible), as many on each as fit before
// moving on, and returns the job's new placement and how many were added.
// The ledger is left as it was: the caller records the growth (a Resize)
// through whatever keeps its accounting.
func Grow(l *Ledger, js *cluster.JobState, g, want int, order []int) (cluster.Placement, int) {
	nodes := l.snap.Nodes
	d := js.Job.Groups[g].Demand
	p := slices.Clone(js.Placement)
	added := 0
	l.Fork()
	for _, ni := range order {
		n := nodes[ni]
		if !n.Ready || n.Gone || !Eligible(n, js.Job, g) {
			continue
		}
		for added < want && l.Take(ni, d) {
			p = append(p, cluster.Assignment{Group: g, Node: ni})
			added++
		}
	}
	l.Revert()
	return p, added
}

// FreeAll returns every node's free room, in buf when it has the room.
func (l *Ledger) FreeAll(buf []resource.Vector) []resource.Vector {
	return append(buf[:0], l.free...)
}
