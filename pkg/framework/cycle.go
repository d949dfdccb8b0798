package framework

import (
	"hash/fnv"
	"math/rand/v2"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
)

// Cycle is the state of one scheduling cycle: the snapshot, the Statement
// that collects this cycle's decisions, what the Runtime has decided so
// far, and typed per-plugin data. It lives for one call of
// Runtime.Schedule.
type Cycle struct {
	// Snap is the snapshot the cycle decides from; read only.
	Snap *cluster.Snapshot
	// St records this cycle's actions and keeps the ledgers in step.
	St *Statement

	rt      *Runtime
	data    map[any]any
	started []*cluster.JobState
	failed  []*cluster.JobState
	resort  bool
	// sortGen counts the Resorts of the cycle: the queue's keys memoised
	// in an earlier generation are computed again (queue.Queue.keyOf).
	sortGen int
	trying  []int
	on      *placement.Ledger
	// committed: a Preempt plugin committed while the current job was
	// tried (the queue looks for jobs the room it gave back wakes).
	committed bool
}

// Ledger returns the ledger the Runtime is placing on right now (Now, or
// Soon for a Preempt plugin's what-if), for Score plugins.
func (c *Cycle) Ledger() *placement.Ledger {
	if c.on != nil {
		return c.on
	}
	return c.St.Now()
}

// Rand returns a random source for one plugin's draws about one job in
// this cycle, seeded from the snapshot's Seed and Cycle, the job's ID and
// the plugin's name (js nil: the plugin's draws about the cycle as a
// whole, for Rebalance and Provision plugins). The randomness contract:
// a job's draws depend on the seed, the cycle, the job and the plugin,
// never on which other jobs were tried before it, in what order, or what
// they drew, so that deciding, skipping or reordering one job's attempt
// never changes another's. Each call returns a new source at the start of
// its stream: a plugin that draws several times for one job in one
// attempt keeps the source it got.
func (c *Cycle) Rand(plugin string, js *cluster.JobState) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(plugin))
	h.Write([]byte{0})
	if js != nil {
		h.Write([]byte(js.Job.ID))
	}
	return rand.New(rand.NewPCG(c.Snap.Seed^h.Sum64(), c.Snap.Cycle))
}

// Started lists the pending jobs started in this cycle so far, in order.
func (c *Cycle) Started() []*cluster.JobState { return c.started }

// Failed lists the pending jobs tried in this cycle that could not be
// started (not those an Admit plugin held back), in order.
func (c *Cycle) Failed() []*cluster.JobState { return c.failed }

// SortGen counts the cycle's Resorts so far: sort keys memoised in an
// earlier generation are stale (the scheduling queue's key memo).
func (c *Cycle) SortGen() int { return c.sortGen }

// Resort asks the Runtime to sort the jobs not yet tried again before the
// next one, because an order that depends on allocations (DRF) changed.
func (c *Cycle) Resort() { c.resort, c.sortGen = true, c.sortGen+1 }

// Place finds nodes for counts of job js on ledger l with the profile's
// Filter and Score plugins and gang mode, and takes them from l, all or
// nothing. Preempt plugins use it for what-ifs on the Statement's ledgers.
func (c *Cycle) Place(l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *Status) {
	return c.rt.place(c, l, js, counts)
}

// Key names a piece of typed per-cycle data. Create one per kind of data
// with NewKey, in the package that owns it; the pointer is the identity.
type Key[T any] struct{ name string }

// NewKey returns a new key; name is for debugging only.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name: name} }

// Get returns the value stored under k in this cycle, if any.
func Get[T any](c *Cycle, k *Key[T]) (T, bool) {
	v, ok := c.data[k]
	if !ok {
		var zero T
		return zero, false
	}
	// Only Set stores under k, always a T: the assertion cannot fail.
	return v.(T), true
}

// Set stores v under k for the rest of the cycle.
func Set[T any](c *Cycle, k *Key[T], v T) {
	if c.data == nil {
		c.data = map[any]any{}
		if c.rt != nil {
			c.rt.data = c.data // for the next cycles, emptied
		}
	}
	c.data[k] = v
}

// GetOrInit returns the value under k, storing init() first if absent.
func GetOrInit[T any](c *Cycle, k *Key[T], init func() T) T {
	if v, ok := Get(c, k); ok {
		return v
	}
	v := init()
	Set(c, k, v)
	return v
}
