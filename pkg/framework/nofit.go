package framework

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// noNodeError is the generic placement's failure (placeGeneric): why no
// node was feasible for one replica of a group, or for the whole gang on
// one node, kept raw and formatted only when read, as placement.NoFitError
// is. What-if placements (the queue's hint, Preempt plugins testing a
// victim, a Size plugin ordering sizes) fail by the thousand and read no
// reason; formatting each node's constraint and the explanation eagerly
// was a sixth of a constrained long queue's cost.
type noNodeError struct {
	memo   *reasonMemo
	nodes  []*cluster.NodeState // the cycle's snapshot's, unchanged while the cycle runs
	js     *cluster.JobState
	g      int // the group picked for, -1 for the whole gang at counts
	counts []int
	// notReady and insufficient count the nodes refused for those
	// reasons; misses lists the others.
	notReady, insufficient int
	misses                 []nodeMiss
	// What was placed: the whole gang on one node (oneNode, total
	// replicas), or replica of group; d is the demand.
	oneNode bool
	total   int
	replica int
	group   string
	d       resource.Vector
}

// nodeMiss is one node refused by a rule: the group's node constraints
// (neither role nor filter), the node's role (role, for group), or a
// Filter plugin (filter, with its status).
type nodeMiss struct {
	node   int
	role   bool
	group  int
	filter Filter
	st     *Status
}

// reasonMemo keeps the generic placement's failure messages by what
// they are made of (noNodeError.appendKey), while the nodes are the same
// (Runtime.schedule empties it when they may not be): on a long queue the
// jobs that cannot start fail for a few reasons cycle after cycle, and
// formatting each one's explanation was a third of a constrained queue's
// cost under a profile with Score plugins of its own.
type reasonMemo struct {
	m   map[string]string
	key []byte
}

// reset forgets every message (the nodes changed).
func (m *reasonMemo) reset() { clear(m.m) }

// Error implements error: "no node for replica 2 of group worker (...):
// 0/16 nodes are available: 4 node-affinity: ..., 12 insufficient
// resources" (kube-scheduler's wording), the memo's when it has it.
func (e *noNodeError) Error() string {
	if e.memo == nil {
		return e.format()
	}
	k := e.appendKey(e.memo.key[:0])
	e.memo.key = k
	if r, ok := e.memo.m[string(k)]; ok {
		return r
	}
	r := e.format()
	if e.memo.m == nil || len(e.memo.m) >= maxReasons {
		e.memo.m = map[string]string{}
	}
	e.memo.m[string(k)] = r
	return r
}

// appendKey appends everything the message is made of but the nodes
// themselves: the job's placement shape (its groups' names, demands,
// counts and node constraints), what was placed, the counts of nodes
// refused for each reason, and the nodes refused by a rule with the rule
// (a Filter plugin's with its reason).
func (e *noNodeError) appendKey(k []byte) []byte {
	k = AppendPlaceKey(k, e.js.Job)
	k = binary.AppendVarint(k, int64(e.g))
	for _, c := range e.counts {
		k = binary.AppendVarint(k, int64(c))
	}
	k = append(k, 0xfe)
	if e.oneNode {
		k = append(k, 1)
	} else {
		k = append(k, 0)
	}
	for _, v := range []int{e.total, e.replica, len(e.group), len(e.nodes), e.notReady, e.insufficient, len(e.misses)} {
		k = binary.AppendVarint(k, int64(v))
	}
	k = append(k, e.group...)
	for _, v := range e.d {
		k = binary.AppendVarint(k, v)
	}
	for _, m := range e.misses {
		k = binary.AppendVarint(k, int64(m.node))
		switch {
		case m.role:
			k = append(k, 1)
			k = binary.AppendVarint(k, int64(m.group))
		case m.filter != nil:
			name, why := m.filter.Name(), m.st.Reason()
			k = append(k, 2)
			k = binary.AppendUvarint(k, uint64(len(name)))
			k = append(k, name...)
			k = binary.AppendUvarint(k, uint64(len(why)))
			k = append(k, why...)
		default:
			k = append(k, 0)
		}
	}
	return k
}

// format builds the message.
func (e *noNodeError) format() string {
	if e.oneNode {
		return fmt.Sprintf("no node holds all %d replicas (%v): %s", e.total, e.d, e.explain())
	}
	return fmt.Sprintf("no node for replica %d of group %s (%v): %s", e.replica, e.group, e.d, e.explain())
}

// explain turns per-reason node counts into "0/16 nodes are available: 4
// node-role: ..., 12 insufficient resources".
func (e *noNodeError) explain() string {
	why := map[string]int{}
	if e.notReady > 0 {
		why["not ready"] += e.notReady
	}
	if e.insufficient > 0 {
		why["insufficient resources"] += e.insufficient
	}
	for _, m := range e.misses {
		n := e.nodes[m.node]
		switch {
		case m.role:
			why[placement.Why(n, e.js.Job, m.group)]++
		case m.filter != nil:
			why[m.filter.Name()+": "+m.st.Reason()]++
		default:
			why[whyNot(e.js, e.g, n, e.counts)]++
		}
	}
	keys := make([]string, 0, len(why))
	for k := range why {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", why[k], k)
	}
	return fmt.Sprintf("0/%d nodes are available: %s", len(e.nodes), strings.Join(parts, ", "))
}

// whyNot names the rule by which node n refuses group g (or the first
// group with replicas in counts that it refuses, g < 0).
func whyNot(js *cluster.JobState, g int, n *cluster.NodeState, counts []int) string {
	for k := range js.Job.Groups {
		if g == k || g < 0 && counts[k] > 0 {
			if why := placement.Why(n, js.Job, k); why != "" {
				return why
			}
		}
	}
	return "node constraints"
}
