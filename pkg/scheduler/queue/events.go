package queue

import (
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// eventWatch finds the events between two cycles from their snapshots,
// the same way whatever the executor: nodes and running jobs by
// fingerprint, room by comparing each node's free room with the least the
// parked jobs saw.
type eventWatch struct {
	nodes   []uint64
	running uint64
	// gen is the Gen of the snapshot the fingerprints were taken of (0:
	// none, or an executor that does not number its states).
	gen uint64
	// now and soon are, per node, the least free room any job parked
	// since the previous full check saw on the Now and Soon ledgers; a
	// node with more than that in some resource is EventRoom.
	now, soon []resource.Vector
	// parked: a job was parked in this cycle (fold keeps what it saw).
	parked bool
	// checked: the cycle began with a room check of every bucket, so what
	// the parked jobs saw is at least the cycle's fresh ledgers.
	checked bool
	// pre is the room the nodes a Preempt plugin's commit changed had
	// before it, in this cycle (beforeCommit). Jobs tried before the
	// commit saw at least that much; the commit may give back room they
	// never saw, which the room at the cycle's end would hide.
	pre []preRoom
	// still is the Gen of a snapshot whose fresh ledgers had no more room
	// than the parked jobs saw, while what they saw (now, soon) has not
	// changed since (0: none): a snapshot of the same Gen has the same
	// ledgers, so the answer holds. A time-driven profile runs a cycle
	// per tick, most of them on an unchanged cluster.
	still uint64
}

// preRoom is a node's room on the Now (or Soon) ledger before a commit.
type preRoom struct {
	node int
	free resource.Vector
	soon bool
}

// since returns the events since the previous cycle.
func (w *eventWatch) since(c *framework.Cycle, r Runtime, future bool) framework.Events {
	s := c.Snap
	var ev framework.Events
	if s.Gen != 0 && s.Gen == w.gen && len(w.nodes) == len(s.Nodes) {
		// The same state of the cluster as the previous cycle's
		// (Snapshot.Gen's contract: the same nodes and running jobs), so
		// the same fingerprints: only the room is compared. A time-driven
		// profile runs a cycle per tick, most of them with nothing new.
		w.checked = false
		if w.still != s.Gen {
			w.room(c, s, future, &ev)
		}
		return ev
	}
	w.gen = s.Gen
	if len(w.nodes) != len(s.Nodes) {
		ev |= framework.EventNodes
		r.ForgetReasons()
		w.nodes = slices.Grow(w.nodes[:0], len(s.Nodes))[:len(s.Nodes)]
		w.now, w.soon, w.still = nil, nil, 0
	}
	for i, n := range s.Nodes {
		if fp := nodePrint(n); fp != w.nodes[i] {
			w.nodes[i] = fp
			ev |= framework.EventNodes
			r.ForgetReasons() // the messages name nodes' rules
		}
	}
	var run uint64
	for _, js := range s.Running {
		run += runPrint(js)
	}
	if run != w.running {
		w.running = run
		ev |= framework.EventRunning
	}
	w.checked = false
	w.room(c, s, future, &ev)
	return ev
}

// room adds EventRoom to ev when some node has more room on the cycle's
// fresh ledgers than the parked jobs saw, and otherwise notes that
// snapshots of s's Gen have none (still).
func (w *eventWatch) room(c *framework.Cycle, s *cluster.Snapshot, future bool, ev *framework.Events) {
	if w.grew(c, future) {
		*ev |= framework.EventRoom
		w.checked = true
		return
	}
	w.still = s.Gen
}

// grew reports whether some node has more room on the Statement's
// ledgers than the parked jobs saw.
func (w *eventWatch) grew(c *framework.Cycle, future bool) bool {
	if w.now == nil {
		return true
	}
	if more(c.St.Now(), w.now) {
		return true
	}
	return future && more(c.St.Soon(), w.soon)
}

func more(l *placement.Ledger, seen []resource.Vector) bool {
	for i, v := range seen {
		if !l.Free(i).Fits(v) {
			return true
		}
	}
	return false
}

// beforeCommit notes, as a Preempt plugin's fork is about to be
// committed, the room the nodes it changed had before it: every job
// parked or left parked so far in the cycle saw at least that much, and
// the commit may give room back there. Nodes it did not change keep the
// room the end of the cycle (or a later commit) shows.
func (w *eventWatch) beforeCommit(c *framework.Cycle, future bool) {
	c.St.Now().Before(func(i int, v resource.Vector) {
		w.pre = append(w.pre, preRoom{node: i, free: v})
	})
	if soon := c.St.Soon(); future && soon != nil {
		soon.Before(func(i int, v resource.Vector) {
			w.pre = append(w.pre, preRoom{node: i, free: v, soon: true})
		})
	}
}

// fold keeps, at the end of a cycle, the least room the jobs parked in
// it saw: the ledgers only lose room between a cycle's start and its end
// but for Preempt plugins' commits. wakeMid answers a commit for the jobs
// still to come in the walk; for those tried before it, the room just
// before the commit (beforeCommit) is folded in too. A cycle that began
// with a room check of every bucket starts from its fresh ledgers' room
// (every job left parked does not fit there).
func (w *eventWatch) fold(c *framework.Cycle, future bool) {
	pre := w.pre
	w.pre = w.pre[:0]
	if !w.parked && !w.checked && len(pre) == 0 && w.now != nil {
		return
	}
	w.still = 0 // what the parked jobs saw changes
	n := len(c.Snap.Nodes)
	if w.now == nil || w.checked {
		w.now, w.soon = c.St.Now().FreeAll(w.now), nil
		if future {
			w.soon = c.St.Soon().FreeAll(w.soon)
		}
	} else {
		for i := range n {
			w.now[i] = w.now[i].Min(c.St.Now().Free(i))
			if future {
				w.soon[i] = w.soon[i].Min(c.St.Soon().Free(i))
			}
		}
	}
	for _, p := range pre {
		switch {
		case !p.soon:
			w.now[p.node] = w.now[p.node].Min(p.free)
		case future && w.soon != nil:
			w.soon[p.node] = w.soon[p.node].Min(p.free)
		}
	}
	w.parked, w.checked = false, false
}

// fnv64 is a multiply-xorshift mix over integers and over strings eight
// bytes at a time, written out so that a fingerprint costs no allocation:
// the queue takes one of every node and running job each cycle.
type fnv64 uint64

const fnvOffset fnv64 = 14695981039346656037

// str mixes s in eight bytes at a time (the queue prints every node and
// running job each cycle; a byte at a time was a tenth of a busy replay),
// then its length, so that strings of different lengths differ.
func (h fnv64) str(s string) fnv64 {
	for ; len(s) >= 8; s = s[8:] {
		h = h.u64(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
	}
	var tail uint64
	for i := 0; i < len(s); i++ {
		tail |= uint64(s[i]) << (8 * i)
	}
	return h.u64(tail).u64(uint64(len(s)) | 1<<63)
}

func (h fnv64) u64(v uint64) fnv64 {
	h = (h ^ fnv64(v)) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// nodePrint is a fingerprint of what a node offers besides its room.
func nodePrint(n *cluster.NodeState) uint64 {
	h := fnvOffset.str(n.Name).str(n.Role).str(n.InstanceType).str(n.Zone).str(n.PlacementGroup)
	flags := uint64(0)
	if n.Ready {
		flags |= 1
	}
	if n.Gone {
		flags |= 2
	}
	h = h.u64(flags)
	for _, v := range n.Capacity {
		h = h.u64(uint64(v))
	}
	// Labels in any order: the sum of each one's print.
	var labels uint64
	for k, v := range n.Labels {
		labels += uint64(fnvOffset.str(k).str(v))
	}
	h = h.u64(labels)
	for _, t := range n.Taints {
		h = h.str(t.Key).str(t.Value).str(t.Effect)
	}
	return uint64(h)
}

// runPrint is a fingerprint of a running job's state as plugins read it;
// the running set's is the sum of its jobs', whatever their order.
func runPrint(js *cluster.JobState) uint64 {
	h := fnvOffset.str(js.Job.ID).u64(uint64(js.Phase)).u64(uint64(js.Preemptions)).u64(uint64(len(js.Placement)))
	for _, a := range js.Placement {
		h = h.u64(uint64(a.Group)<<32 | uint64(a.Node))
	}
	return uint64(h)
}
