// Package framework is drover's scheduling framework: one small interface
// per extension point, a per-cycle state (Cycle) with a transactional
// Statement over the placement ledger, and a Runtime that runs a Profile
// (which plugins run at which point) as a policy.Policy.
//
// The shape follows the kube-scheduler framework (one interface per
// extension point, a Status with a code and the failing plugin's name,
// per-cycle state) and Volcano's Statement (record actions, then commit or
// discard them together), adapted to drover's contract: plugins read an
// immutable cluster.Snapshot and return actions; they never mutate the
// snapshot or call an API. Both executors (the simulator and the
// Kubernetes controller) run the same Runtime.
//
// One cycle of the Runtime:
//
//  1. QueueSort orders the pending jobs (within Profile.Window).
//  2. For each job in that order: Admit plugins accept it, reject it for
//     good, make it wait, or block it and every job behind it.
//  3. Size proposes replica counts, largest first; for each, Filter and
//     Score choose nodes (Profile.Gang decides whether a gang goes on one
//     node first), or a Place plugin places by an algorithm of its own.
//     The first counts that fit are started on the Statement and the
//     Reserve plugins are told.
//  4. When no counts fit, each Preempt plugin in turn proposes evictions or
//     shrinks on a fork of the Statement; the fork is committed when the
//     plugin made room (the job starts now) or nominated room that is
//     coming (the job waits for it), and discarded otherwise.
//  5. Rebalance plugins run after placement (scale-up, migration).
//  6. Provision plugins run last (placeholders, node requests).
//
// A behaviour is one plugin in one package plus one line in the plugin
// registry (pkg/plugins); a preset is a named Profile.
package framework

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
)

// Code is the outcome of a plugin call.
type Code uint8

// Status codes. The zero value is Success, so a nil *Status is success.
const (
	// Success: the plugin agrees, or did what it was asked.
	Success Code = iota
	// Unschedulable: not now; a later cycle may succeed (the job stays
	// pending and the reason is shown as its wait reason).
	Unschedulable
	// Unresolvable: never, whatever happens to the cluster (an Admit plugin
	// returning it rejects the job for good).
	Unresolvable
	// Wait: the job waits for something already under way (room being
	// freed by preempted jobs in their grace period, a slot in a plan);
	// from a Preempt plugin it means "commit what I did and let the job
	// wait for it".
	Wait
	// Blocked: from Admit, the job and every job after it in queue order
	// wait this cycle (head-of-line blocking); the runtime stops walking
	// the queue.
	Blocked
	// Error: the plugin failed; the runtime treats the job as
	// unschedulable this cycle and reports the error as its reason.
	Error
)

func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Unschedulable:
		return "Unschedulable"
	case Unresolvable:
		return "Unresolvable"
	case Wait:
		return "Wait"
	case Blocked:
		return "Blocked"
	case Error:
		return "Error"
	}
	return fmt.Sprintf("Code(%d)", c)
}

// Status is a plugin's answer: a code, a reason a person can read, and
// the plugin that gave it. A nil *Status means Success.
type Status struct {
	code   Code
	reason string
	plugin string
	// cause, when set, gives the reason (its Error) the first time it is
	// read: what-if placements fail by the thousand and read few reasons.
	cause error
}

// NewStatus returns a status with a code and a reason.
func NewStatus(code Code, reason string) *Status { return &Status{code: code, reason: reason} }

// StatusOf returns a status with a code whose reason is err's message,
// built only if it is read.
func StatusOf(code Code, err error) *Status { return &Status{code: code, cause: err} }

// Statusf is NewStatus with a format.
func Statusf(code Code, format string, a ...any) *Status {
	return &Status{code: code, reason: fmt.Sprintf(format, a...)}
}

// Code returns the code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether s is nil or has code Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// Reason returns the reason; "" for nil.
func (s *Status) Reason() string {
	if s == nil {
		return ""
	}
	if s.cause != nil {
		s.reason, s.cause = s.cause.Error(), nil
	}
	return s.reason
}

// Plugin returns the name of the plugin that gave the status.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin sets the plugin name if none is set yet, and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil && s.plugin == "" {
		s.plugin = name
	}
	return s
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	if s.plugin == "" {
		return s.code.String() + ": " + s.Reason()
	}
	return s.code.String() + " (" + s.plugin + "): " + s.Reason()
}

// Plugin is what every plugin implements. Name is the name it is
// registered and configured under.
type Plugin interface {
	Name() string
}

// QueueSort orders the pending jobs a cycle considers. It is called by the
// Runtime at the start of each cycle (and again for the jobs not yet tried
// after a Reserve plugin asks for it with Cycle.Resort). Compare must be a
// strict weak order; jobs it ranks equal keep their queue order (the
// executor's queue: arrival order, preempted jobs at the head). It may read
// the snapshot and cycle data, and must not record actions.
type QueueSort interface {
	Plugin
	Compare(c *Cycle, a, b *cluster.JobState) int
}

// Admit decides whether a pending job may be tried this cycle. It is
// called by the Runtime for each job in queue order, before Size, in the
// profile's order; the first non-success answer wins. Success tries the
// job; Unresolvable rejects it for good (a Reject action with the reason);
// Unschedulable or Wait leaves it pending with the reason; Blocked leaves
// it and every job after it pending (head-of-line blocking). Admit may read
// what the cycle has already decided (Cycle.Started, Cycle.Failed) and may
// record SetLabel actions; it must not place anything.
type Admit interface {
	Plugin
	Admit(c *Cycle, js *cluster.JobState) *Status
}

// Size proposes the replica counts to try for a job, in order of
// preference (usually largest first; the elastic plugin's one-node-first
// order puts a smaller count that fits one node before a larger one that
// must spread). Each counts slice has one entry per replica
// group, within the group's [Min, Max]; the Runtime does not try one that
// is not (the queue reads the minimums as the smallest a job may take),
// and a job left with none waits with a reason naming the plugin. A
// fixed-size job gets one answer
// (its requested counts). Called once per job tried; must not record
// actions. The profile has at most one Size plugin; without one the
// requested counts are tried.
type Size interface {
	Plugin
	Size(c *Cycle, js *cluster.JobState) [][]int
}

// Filter says whether replica group g of a job may run on node n, apart
// from free resources (which the placement checks) and the node's role
// (which placement and the executors' validator always enforce). A failure
// carries a reason that names the constraint, so that "why is my job not
// running" can be answered. Called for every candidate node of every
// replica tried, so it must be cheap and must not record actions.
type Filter interface {
	Plugin
	Filter(c *Cycle, js *cluster.JobState, g int, n *cluster.NodeState) *Status
}

// SortKey is a queue-sort key: keys are compared component by component
// with cmp.Compare, the lowest first (see KeyedSort).
type SortKey [6]float64

// CompareKeys compares two sort keys component by component with
// cmp.Compare.
func CompareKeys(a, b SortKey) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// KeyedSort is a QueueSort whose order is a key per job: within a cycle,
// CompareKeys(Key(c, a), Key(c, b)) equals Compare(c, a, b) for every two
// pending jobs (CheckSortKeys tests it). The Runtime then computes each
// active job's key once per sort and compares keys, with no plugin call
// per comparison. It is the one speed-only interface the framework keeps:
// a comparison that computes a share of the cluster (DRF's dominant
// share, the elastic weight) costs a map lookup or a division per call,
// and sorting calls Compare n log n times. The order must be the same;
// only the cost differs. Implement it only when a comparison is costly:
// sorting keys moves larger elements than sorting pointers.
type KeyedSort interface {
	QueueSort
	Key(c *Cycle, js *cluster.JobState) SortKey
}

// CheckSortKeys reports the first two pending jobs of s whose keys order
// them otherwise than Compare, for KeyedSort plugins' tests.
func CheckSortKeys(ks KeyedSort, s *cluster.Snapshot) error {
	c := &Cycle{Snap: s, St: &Statement{}}
	jobs := slices.Collect(s.Pending.All())
	for _, a := range jobs {
		for _, b := range jobs {
			if want, got := ks.Compare(c, a, b), CompareKeys(ks.Key(c, a), ks.Key(c, b)); want != got {
				return fmt.Errorf("%s: %s vs %s: Compare %d, keys %v vs %v give %d", ks.Name(), a.Job.ID, b.Job.ID, want,
					ks.Key(c, a), ks.Key(c, b), got)
			}
		}
	}
	return nil
}

// Score ranks the feasible nodes for one replica of group g of a job, or
// (g < 0) for a whole gang on one node. Higher is better. The Runtime
// normalises each plugin's scores over the feasible nodes to [0, 100]
// before weighting and summing them (so plugins on different scales
// combine), and takes the best node, the lowest index on ties. Must not
// record actions.
type Score interface {
	Plugin
	Score(c *Cycle, js *cluster.JobState, g int, node int) float64
}

// Place replaces the Runtime's placement (Filter, Score and the gang
// mode) with an algorithm of the plugin's own, for policies whose
// placement is not a choice of the best node per replica: a controller's
// own bin filling (DRAGON's ScheduleJob fills nodes in an order of its
// own, parameter servers first) or pods bound one at a time where whatever
// fits is kept (tf-operator without gangs). The Runtime calls it wherever
// it places a job (for each of Size's counts in order, and from
// Cycle.Place), with the ledger to place on. It takes what it returns from
// l, or returns a non-success status with l unchanged. It may return fewer
// replicas than counts asks for, down to what the policy accepts (a
// partial start); the job starts with the placement returned. It must not
// record actions. The profile has at most one Place plugin; without one
// the Runtime places with Filter, Score and Profile.Gang.
type Place interface {
	Plugin
	Place(c *Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *Status)
}

// Preempt makes room for a job that could not be placed at any size.
// Called by the Runtime on a fork of the Statement, in profile order,
// until one succeeds. It records evictions (Statement.Evict), shrinks
// (Statement.Resize) or a nomination (Statement.Nominate) and returns:
// Success when the job can be placed now (it may start the job itself with
// Statement.Start; otherwise the Runtime places it again); Wait when room
// is coming (victims in their grace period) and the job should wait for it;
// anything else to have the fork discarded.
type Preempt interface {
	Plugin
	Preempt(c *Cycle, js *cluster.JobState, failed *Status) *Status
}

// Reserve is told that a job was started in this cycle, with its
// placement, right after the Statement recorded it: per-cycle accounting
// (DRF shares), persisted state (SetLabel) and asking for the rest of the
// queue to be re-sorted (Cycle.Resort) happen here. It must not fail: the
// start is already decided.
type Reserve interface {
	Plugin
	Reserve(c *Cycle, js *cluster.JobState, p cluster.Placement)
}

// Rebalance runs once per cycle after every pending job was tried: it
// changes running jobs (scale-up into idle capacity, migration, moving to
// a planned slot) through the Statement, which already holds this cycle's
// starts, evictions and nominations. Called in profile order.
type Rebalance interface {
	Plugin
	Rebalance(c *Cycle) *Status
}

// Provision runs last in the cycle and manages capacity rather than jobs:
// overprovisioning placeholders (SetPlaceholders) and node requests
// (ProvisionNode, ReleaseNode). Called in profile order.
type Provision interface {
	Plugin
	Provision(c *Cycle) *Status
}

// TimeDriven is implemented by plugins that must run on every scheduling
// tick even when nothing in the cluster changed (a forecaster on a clock, a
// monitor that samples progress, a plan with time slots). A profile is
// time-driven when any of its plugins is.
type TimeDriven interface {
	TimeDriven() bool
}
