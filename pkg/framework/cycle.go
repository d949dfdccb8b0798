package framework

import (
	"math/rand/v2"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
)

// Cycle is the state of one scheduling cycle: the snapshot, the Statement
// that collects this cycle's decisions, a seeded random source, what the
// Runtime has decided so far, and typed per-plugin data. It lives for one
// call of Runtime.Schedule.
type Cycle struct {
	// Snap is the snapshot the cycle decides from; read only.
	Snap *cluster.Snapshot
	// St records this cycle's actions and keeps the ledgers in step.
	St *Statement

	rt      *Runtime
	rng     *rand.Rand
	data    map[any]any
	started []*cluster.JobState
	failed  []*cluster.JobState
	resort  bool
	trying  []int
	on      *placement.Ledger
	// committed: a Preempt plugin committed while the current job was
	// tried; merge: the jobs set aside are to be merged back (queue.go).
	committed, merge bool
	// keysChecked: the Runtime's memo of sort keys was checked against
	// the QueueSort's stamp in this cycle.
	keysChecked bool
	// inOrder: the pending queue is in the QueueSort's order this cycle
	// (or there is none), so the Runtime walks it lazily (QueueOrdered).
	inOrder bool
	// echo identifies the attempt while Preempt plugins run (see Echo).
	echo Echo
	// later holds draws to make before the next use of rng (DrawLater),
	// as runs of equal n.
	later []drawRun
	// stop is the job at which the walk of the queue stopped early (it
	// was Blocked, or the Closer closed after it): no job after it in
	// the walk had a turn.
	stop *cluster.JobState
}

type drawRun struct{ n, times int }

// Echo identifies the attempt of the job that Preempt plugins are asked
// about, so that a plugin can answer a job as it answered an earlier one
// that is alike, without its what-ifs. Two jobs asked about in one cycle
// with the same non-zero Echo are in one class of the scheduling queue
// (alike in the groups' demands, names and node constraints and in the
// sizes tried; see schedQueue), and between the two no Preempt plugin
// committed: no running job was acted on, no room was nominated, and the
// ledgers only lost room (jobs started). A plugin whose failure for a job
// is a function of these (its what-ifs placements, which are monotone in
// the room) may therefore repeat it, including whatever else it did then
// (random draws), and must key anything else it reads from the job (its
// replica counts, say) beside the Echo.
//
// Why it pays. A long queue of TE jobs of a few shapes, each tried every
// cycle (their victim search draws random numbers, so they are never set
// aside), repeats the same failed search for every job of a shape: with
// the Echo a shape costs one search per cycle and commit.
type Echo struct {
	cl    *jobClass
	epoch uint64
}

// Echo returns the attempt's Echo while Preempt plugins run, and false
// when the Runtime cannot tell (outside Preempt, without a scheduling
// queue, when attempts are not a function of the class, or for a job
// that is not classed: see schedQueue).
func (c *Cycle) Echo() (Echo, bool) { return c.echo, c.echo.cl != nil }

// Ledger returns the ledger the Runtime is placing on right now (Now, or
// Soon for a Preempt plugin's what-if), for Score plugins.
func (c *Cycle) Ledger() *placement.Ledger {
	if c.on != nil {
		return c.on
	}
	return c.St.Now()
}

// Rand returns the cycle's random source, seeded from the snapshot's Seed
// and Cycle (rand.NewPCG(Seed, Cycle)) on first use, so that runs are
// reproducible and a cycle that draws nothing costs nothing.
func (c *Cycle) Rand() *rand.Rand {
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(c.Snap.Seed, c.Snap.Cycle))
	}
	if len(c.later) > 0 {
		later := c.later
		c.later = nil
		for _, d := range later {
			for range d.times {
				for k := d.n; k > 0; k-- {
					c.rng.IntN(k)
				}
			}
		}
		c.later = later[:0]
	}
	return c.rng
}

// DrawLater stands for the draws rng.IntN(n), rng.IntN(n-1), ...,
// rng.IntN(1) from Rand (picking n things at random one by one, none
// twice), made now: they are made before Rand next hands out the source,
// so whoever draws next gets the numbers it would have got, and a cycle
// in which nobody draws again never makes them. A plugin that draws only
// to keep the stream where it would be (a search it knows fails) and a
// Skipper use it.
func (c *Cycle) DrawLater(n int) {
	if n <= 0 {
		return
	}
	if k := len(c.later); k > 0 && c.later[k-1].n == n {
		c.later[k-1].times++
		return
	}
	c.later = append(c.later, drawRun{n: n, times: 1})
}

// Epoch counts the cycles and, within a cycle, the commits of Preempt
// plugins: between two commits the Statement's jobs are acted on by
// nothing but starts (see Echo). It is 0 without a scheduling queue.
func (c *Cycle) Epoch() uint64 {
	if c.rt != nil && c.rt.q != nil {
		return c.rt.q.epoch
	}
	return 0
}

// Started lists the pending jobs started in this cycle so far, in order.
func (c *Cycle) Started() []*cluster.JobState { return c.started }

// Failed lists the pending jobs tried in this cycle that could not be
// started (not those an Admit plugin held back), in order.
func (c *Cycle) Failed() []*cluster.JobState { return c.failed }

// Resort asks the Runtime to sort the jobs not yet tried again before the
// next one, because an order that depends on allocations (DRF) changed.
func (c *Cycle) Resort() {
	if rt := c.rt; rt != nil && !rt.resorts && len(rt.p.Reserve) > 0 {
		panic("framework: Cycle.Resort in a profile whose Reserve plugins all keep the order (OrderKeeper)")
	}
	c.resort = true
}

// Place finds nodes for counts of job js on ledger l with the profile's
// Filter and Score plugins and gang mode, and takes them from l, all or
// nothing. Preempt plugins use it for what-ifs on the Statement's ledgers.
func (c *Cycle) Place(l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *Status) {
	return c.rt.place(c, l, js, counts)
}

// PlacesQuietly reports whether Place is a pure function of the ledger's
// room, the job and the counts, with no effect beyond the ledger when it
// succeeds and none at all when it fails: the profile places with
// placement.Place alone (no Place, Filter or Score plugin is asked, no
// Picker told) on a cluster where its scan does not sample nodes (a
// sampled scan moves a cursor that Revert does not restore). A Preempt
// plugin may then skip a what-if placement whose outcome it knows
// without changing anything it or a later plugin decides.
func (c *Cycle) PlacesQuietly() bool {
	return c.rt.p.Place == nil && c.rt.fast && !placement.Samples(len(c.Snap.Nodes), c.rt.opts)
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
