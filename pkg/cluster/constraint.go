package cluster

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Taint effects. A replica that does not tolerate a NoSchedule or
// NoExecute taint never runs on the node; PreferNoSchedule is a soft
// preference that drover does not score.
const (
	TaintNoSchedule       = "NoSchedule"
	TaintNoExecute        = "NoExecute"
	TaintPreferNoSchedule = "PreferNoSchedule"
)

// Taint keeps replicas that do not tolerate it off a node (Kubernetes'
// node taints, and the simulator's cluster spec `taint=`).
type Taint struct {
	Key, Value, Effect string
}

// Hard reports whether the taint keeps untolerating replicas off the node.
func (t Taint) Hard() bool { return t.Effect == TaintNoSchedule || t.Effect == TaintNoExecute }

// String is kube-scheduler's rendering: {key: value}.
func (t Taint) String() string { return "{" + t.Key + ": " + t.Value + "}" }

// HardTaint returns the node's first NoSchedule or NoExecute taint, which
// a replica without tolerations does not tolerate.
func (n *Node) HardTaint() (Taint, bool) {
	for _, t := range n.Taints {
		if t.Hard() {
			return t, true
		}
	}
	return Taint{}, false
}

// NodeConstraint is a replica group's rules about nodes beyond resources
// and roles: Kubernetes' nodeSelector, required and preferred node
// affinity, and tolerations of the nodes' taints. pkg/constraint
// implements it with k8s.io/component-helpers, the code kube-scheduler's
// own NodeAffinity and TaintToleration plugins call; this package only asks
// it. Implementations are immutable and safe for concurrent use.
type NodeConstraint interface {
	// Key identifies the rules: two constraints with equal keys accept,
	// refuse and prefer exactly the same nodes. Eligibility caches by it.
	Key() string
	// Admits reports whether a replica may run on node n.
	Admits(n *Node) bool
	// Why returns the reason n refuses a replica ("" when it admits one),
	// in kube-scheduler's words, naming the rule.
	Why(n *Node) string
	// Preference is the summed weight of the preferred node-affinity terms
	// that n matches; 0 without preferred terms.
	Preference(n *Node) int64
	// Prefers reports whether there are preferred terms at all.
	Prefers() bool
}

// ReasonUntolerated is why a node with a hard taint refuses a replica
// without a toleration for it.
func ReasonUntolerated(t Taint) string {
	return "node(s) had untolerated taint " + t.String()
}

// NodeSet is the set of nodes that accept a replica group, as Eligibility
// computes it: a bitmap over node indices, nil meaning every node. It also
// carries each node's preference score when the group has preferred terms.
// Roles are not part of it (they depend on the group's name and are
// checked separately).
type NodeSet struct {
	bits  []uint64
	count int // members among the nodes computed (when bits != nil)
	pref  []int64
	// MaxPref is the largest preference over the nodes; 0 when the group
	// prefers nothing (or no node matches its preferred terms).
	MaxPref int64
}

// All reports whether every node is in the set (the fast path: no
// constraint and no tainted node).
func (s NodeSet) All() bool { return s.bits == nil }

// Has reports whether node i is in the set.
func (s NodeSet) Has(i int) bool {
	if s.bits == nil {
		return true
	}
	w := i >> 6
	return w < len(s.bits) && s.bits[w]&(1<<(uint(i)&63)) != 0
}

// Next returns the smallest member >= i that is below n, or -1. Placement
// walks a sparse set (a dedicated pool) by it rather than testing every
// node. Only for a set that is not All.
func (s NodeSet) Next(i, n int) int {
	for w := i >> 6; w < len(s.bits) && w<<6 < n; w++ {
		word := s.bits[w]
		if w == i>>6 {
			word &= ^uint64(0) << (uint(i) & 63)
		}
		if word != 0 {
			if j := w<<6 + bits.TrailingZeros64(word); j < n {
				return j
			}
			return -1
		}
	}
	return -1
}

// Sparse reports whether the set holds fewer than a quarter of n nodes.
func (s NodeSet) Sparse(n int) bool { return s.bits != nil && s.count*4 < n }

// Pref is node i's preference score (0 without preferred terms).
func (s NodeSet) Pref(i int) int64 {
	if i < len(s.pref) {
		return s.pref[i]
	}
	return 0
}

// Len counts the nodes in the set; -1 for every node.
func (s NodeSet) Len() int {
	if s.bits == nil {
		return -1
	}
	n := 0
	for _, w := range s.bits {
		n += bits.OnesCount64(w)
	}
	return n
}

// Eligibility caches, per distinct node constraint (and for "none": a
// group without tolerations, which tainted nodes refuse), the set of
// nodes that accept it. An executor keeps one for its whole run and hands
// it to policies in Snapshot.Eligibility: a set is computed once, the
// first time a constraint is seen, and extended when nodes are appended,
// so a cycle over 5,000 nodes costs a bit test per node, not a match. The
// executor calls Reset when a node's labels, taints or cordon change.
// Safe for concurrent use.
type Eligibility struct {
	mu   sync.Mutex
	sets map[string]*setEntry
	// taints counts the nodes seen with a hard taint; while it is 0 a group
	// without constraints is eligible everywhere (a nil set).
	taints int
	seen   int // nodes counted into taints
	// untainted is, for the lock-free answer to a group without
	// constraints, the number of nodes counted with none of them hard
	// tainted (seen while taints is 0), or -1 once one is: a placement asks
	// for each group it places, and on a cluster without taints the lock
	// was most of the cost of the answer.
	untainted atomic.Int64
}

type setEntry struct {
	c    NodeConstraint
	n    int // nodes computed
	out  int // nodes refused among them
	bits []uint64
	pref []int64
	max  int64
}

// NewEligibility returns an empty cache.
func NewEligibility() *Eligibility { return &Eligibility{sets: map[string]*setEntry{}} }

// Reset forgets every computed set (a node's labels or taints changed).
func (e *Eligibility) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.sets)
	e.taints, e.seen = 0, 0
	e.untainted.Store(0)
}

// Set returns the nodes (of nodes, indexed as in a snapshot) that accept a
// replica under constraint c; c nil means no selector, affinity or
// toleration. The result is nil (All) when no node refuses it.
func (e *Eligibility) Set(nodes []*NodeState, c NodeConstraint) NodeSet {
	if c == nil && e.untainted.Load() == int64(len(nodes)) {
		return NodeSet{} // as below, with e.seen == len(nodes) and e.taints == 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for ; e.seen < len(nodes); e.seen++ {
		if _, ok := nodes[e.seen].HardTaint(); ok {
			e.taints++
		}
	}
	if e.taints == 0 {
		e.untainted.Store(int64(e.seen))
	} else {
		e.untainted.Store(-1)
	}
	if c == nil && e.taints == 0 {
		return NodeSet{}
	}
	key := ""
	if c != nil {
		key = "c:" + c.Key()
	}
	s := e.sets[key]
	if s == nil {
		s = &setEntry{c: c}
		e.sets[key] = s
	}
	prefers := c != nil && c.Prefers()
	for ; s.n < len(nodes); s.n++ {
		i := s.n
		if i>>6 >= len(s.bits) {
			s.bits = append(s.bits, 0)
		}
		n := &nodes[i].Node
		ok := false
		if c == nil {
			_, hard := n.HardTaint()
			ok = !hard
		} else {
			ok = c.Admits(n)
		}
		if ok {
			s.bits[i>>6] |= 1 << (uint(i) & 63)
		} else {
			s.out++
		}
		if prefers {
			p := int64(0)
			if ok {
				p = c.Preference(n)
			}
			s.pref = append(s.pref, p)
			s.max = max(s.max, p)
		}
	}
	if s.out == 0 && s.max == 0 {
		return NodeSet{}
	}
	ns := NodeSet{pref: s.pref, MaxPref: s.max}
	if s.out > 0 {
		ns.bits, ns.count = s.bits, s.n-s.out
	}
	return ns
}

// Admits reports whether node n accepts a replica under c (nil: no
// constraint), roles aside.
func Admits(n *Node, c NodeConstraint) bool {
	if c == nil {
		_, hard := n.HardTaint()
		return !hard
	}
	return c.Admits(n)
}

// WhyNot returns why node n refuses a replica under c, or "".
func WhyNot(n *Node, c NodeConstraint) string {
	if c == nil {
		if t, hard := n.HardTaint(); hard {
			return ReasonUntolerated(t)
		}
		return ""
	}
	return c.Why(n)
}
