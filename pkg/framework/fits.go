package framework

// The Runtime's answers to the scheduling queue (pkg/scheduler/queue):
// whether a job fits now, and the walk's order.

import (
	"cmp"
	"encoding/binary"
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// Fit is the Runtime's answer to whether a job fits now (FitsNow).
type Fit uint8

const (
	// NoFit: the job fits at none of its sizes.
	NoFit Fit = iota
	// Fits: it fits at one of its sizes.
	Fits
	// NoRoom: it does not fit, and the answer reads only its placement
	// shape and the ledger: the profile has no Place or Picker plugin, and
	// the free room on the nodes its role and node constraints admit
	// cannot hold its smallest size (Runtime.room, necessary for every
	// placement the Runtime makes), so no Filter or Score plugin could
	// make it fit.
	NoRoom
)

// FitsNow answers whether js fits at one of its sizes on the Statement's
// Now ledger as it is, with nothing taken. A profile with a Picker score
// plugin (a cursor that what-ifs move) says Fits without trying.
//
// Two answers cost one pass over the nodes per group and no placement: on
// a long queue most buckets' heads are asked at every release of room,
// and most releases are far too small for a gang.
//   - NoRoom, when the free room cannot hold the job's smallest size at
//     all (room at the requested counts, or at the groups' minimums with
//     a Size plugin, whose sizes lie within them: sizes), with no Place
//     plugin. Every size asks at least that much, so none fits.
//   - Fits, when the generic placement is sure to succeed (exactRoom).
func (r *Runtime) FitsNow(c *Cycle, js *cluster.JobState) Fit {
	if len(r.pickers) > 0 {
		return Fits
	}
	l := c.St.Now()
	j := js.Job
	if r.p.Place == nil {
		var buf [4]int
		least := buf[:0]
		for g := range j.Groups {
			if r.p.Size != nil {
				least = append(least, j.Groups[g].Min)
			} else {
				least = append(least, j.Groups[g].Replicas)
			}
		}
		if !r.room(l, j, least) {
			return NoRoom
		}
		if r.p.Size == nil && r.exactRoom(j, least) {
			return Fits // roomFor just said so
		}
	}
	l.Fork()
	defer l.Revert()
	sizes, _ := r.sizes(c, js)
	for _, counts := range sizes {
		// Without a Size plugin the one size is the requested counts,
		// whose room was checked above.
		if r.p.Place == nil && r.p.Size != nil && !r.room(l, j, counts) {
			continue
		}
		// As placeSizes: the first size that fits is taken (and given
		// back by the Revert).
		if _, st := r.place(c, l, js, counts); st.IsSuccess() {
			return Fits
		}
	}
	return NoFit
}

// exactRoom reports whether, for counts of j, roomFor's answer is the
// generic placement's: the profile places by the generic path
// (placeGeneric) with no Place plugin, no Picker, no Filter but the role
// rule, and not one-node-only; and one group has replicas, with a
// positive demand. The placement then takes each replica's demand from
// one node that passes the group's rules, wherever the scores send it, and
// every take leaves that node room for exactly one replica fewer: it
// places as many as roomFor counts, in any order, and fails on the next.
func (r *Runtime) exactRoom(j *cluster.Job, counts []int) bool {
	if !r.exactFirst() {
		return false
	}
	g := firstGroup(j, counts)
	return g >= 0 && g == lastGroup(counts)
}

// exactFirst reports whether the generic placement places the first
// group with replicas as exactRoom says (the profile's part of it): that
// group is placed first, on the ledger as it is, so if it cannot hold
// them the placement fails there, whatever the other groups (noRoomMiss).
func (r *Runtime) exactFirst() bool {
	return !r.fast && r.p.Place == nil && len(r.pickers) == 0 && r.roleOnly && r.p.Gang != placement.OneNodeOnly
}

// firstGroup returns the first group of counts with replicas if its
// demand is positive, else -1.
func firstGroup(j *cluster.Job, counts []int) int {
	for g, n := range counts {
		if n > 0 {
			if replicasIn(j.Groups[g].Demand, j.Groups[g].Demand) > 0 { // a positive demand
				return g
			}
			return -1
		}
	}
	return -1
}

// lastGroup returns the last group of counts with replicas, -1 if none.
func lastGroup(counts []int) int {
	for g := len(counts) - 1; g >= 0; g-- {
		if counts[g] > 0 {
			return g
		}
	}
	return -1
}

// FitsByShape reports whether FitsNow's answer is a function of the job's
// placement shape (AppendPlaceKey: its groups, demands, counts and node
// constraints) and the ledger alone: the placement is one built-in
// strategy with the node-role filter (placement.Place reads nothing else
// of the job), with no Size or Place plugin and no Picker. Any other
// plugin may read the job's class, priority, tenant or utility, so the
// queue then shares only the answers that read the shape alone (Fits
// wakes a job the exhaustive walk tries anyway; NoRoom).
func (r *Runtime) FitsByShape() bool {
	return r.fast && r.p.Size == nil && r.p.Place == nil && len(r.pickers) == 0
}

// room is the room check for the profile's gang mode: oneNodeRoom for
// one-node-only gangs (a placement there needs one node that holds the
// whole job, which roomFor's sum over the nodes does not see), roomFor
// otherwise.
func (r *Runtime) room(l *placement.Ledger, j *cluster.Job, counts []int) bool {
	if r.p.Gang == placement.OneNodeOnly {
		return oneNodeRoom(l, j, counts)
	}
	return roomFor(l, j, counts)
}

// oneNodeRoom reports whether some ready node that every group with
// replicas may use (its role and node constraints) has room for counts of
// j all at once: necessary for a one-node-only placement, built-in or
// generic (pick for the whole gang), whatever the Filter and Score
// plugins say of the node.
func oneNodeRoom(l *placement.Ledger, j *cluster.Job, counts []int) bool {
	d := j.Demand(counts)
	var buf [4]cluster.NodeSet
	sets := buf[:0]
	for g, n := range counts {
		if n > 0 {
			sets = append(sets, l.Eligible(j, g))
		}
	}
	for i, n := range l.Snapshot().Nodes {
		if !n.Ready || n.Gone || !d.Fits(l.Free(i)) || !inSets(sets, i) {
			continue
		}
		ok := true
		for g, c := range counts {
			if c > 0 && n.Role != "" && n.Role != j.Groups[g].Name {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// roomFor reports whether the free room on l could hold counts of j at
// all: for every group with replicas, the replicas of its demand that fit
// on the ready nodes it may use (its role and node constraints), summed
// over the nodes, are at least its count. It is necessary for any
// placement the Runtime makes (the built-in strategies and the generic
// path take a replica's demand from one eligible node, all or nothing), so
// a false answer is the placement's own; it costs one pass over the nodes
// per group with no allocation, where a placement that fails costs a scan
// per replica.
func roomFor(l *placement.Ledger, j *cluster.Job, counts []int) bool {
	for g, want := range counts {
		if want > 0 && groupRoom(l, j, g, want) < want {
			return false
		}
	}
	return true
}

// groupRoom is how many replicas of group g of j fit, one demand per node
// at a time, on the ready nodes the group may use (its role and node
// constraints), counted up to want: want itself for a demand of nothing
// positive.
func groupRoom(l *placement.Ledger, j *cluster.Job, g, want int) int {
	gr := &j.Groups[g]
	if gr.Demand.IsZero() {
		return want
	}
	set := l.Eligible(j, g)
	have := 0
	for i, n := range l.Snapshot().Nodes {
		if !n.Ready || n.Gone || n.Role != "" && n.Role != gr.Name || !set.Has(i) {
			continue
		}
		m := replicasIn(l.Free(i), gr.Demand)
		if m < 0 {
			return want // a demand of nothing positive fits anywhere
		}
		if have += m; have >= want {
			break
		}
	}
	return have
}

// replicasIn is how many replicas of demand d fit in free, one after
// another; -1 when d asks for nothing positive.
func replicasIn(free, d resource.Vector) int {
	k := -1
	for r, v := range d {
		if v <= 0 {
			continue
		}
		if free[r] < v {
			return 0
		}
		if m := int(free[r] / v); k < 0 || m < k {
			k = m
		}
	}
	return k
}

// WalkOrder compares a and b as the walk orders them: by the QueueSort,
// then by queue position.
func (r *Runtime) WalkOrder(c *Cycle, a, b *cluster.JobState) int {
	if qs := r.p.QueueSort; qs != nil {
		if d := qs.Compare(c, a, b); d != 0 {
			return d
		}
	}
	return QueueOrder(c, a, b)
}

// QueueOrder compares a and b by their positions in the pending queue.
func QueueOrder(c *Cycle, a, b *cluster.JobState) int {
	i, ok := c.Snap.Pending.Order(a)
	if !ok {
		i = math.MaxInt
	}
	j, ok := c.Snap.Pending.Order(b)
	if !ok {
		j = math.MaxInt
	}
	return cmp.Compare(i, j)
}

// AppendPlaceKey appends what placement reads of a job: its replica groups
// (names, demands, counts and their bounds, node constraints).
func AppendPlaceKey(k []byte, j *cluster.Job) []byte {
	for _, g := range j.Groups {
		for _, v := range g.Demand {
			k = binary.AppendVarint(k, v)
		}
		k = binary.AppendUvarint(k, uint64(len(g.Name)))
		k = append(k, g.Name...)
		k = binary.AppendVarint(k, int64(g.Replicas))
		k = binary.AppendVarint(k, int64(g.Min))
		k = binary.AppendVarint(k, int64(g.Max))
		if g.Constraint != nil {
			ck := g.Constraint.Key()
			k = binary.AppendUvarint(k, uint64(len(ck))+1)
			k = append(k, ck...)
		} else {
			k = binary.AppendUvarint(k, 0)
		}
	}
	return append(k, 0xff)
}

// ForgetReasons drops the generic placement's failure messages, which name
// the nodes' rules: the scheduling queue calls it when the nodes changed.
func (r *Runtime) ForgetReasons() { r.reasons.reset() }
