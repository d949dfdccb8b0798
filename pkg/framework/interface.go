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
// group, within the group's [Min, Max]. A fixed-size job gets one answer
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
// job's key once per sort and compares keys, with no plugin call per
// comparison: on a long queue, sorting by Compare was most of a cycle of
// the elastic preset. The order must be the same; only the cost differs.
// Compare is still used for single comparisons. Implement it only when a
// comparison is costly (a map lookup, a computed share): sorting keys
// moves larger elements than sorting pointers, and a priority or class
// comparison was cheaper as it was (measured on the long Philly queue:
// k8s-default and fitgpp took 1.4 and 2.5 times the CPU with keys).
type KeyedSort interface {
	QueueSort
	Key(c *Cycle, js *cluster.JobState) SortKey
}

// StableKeys is a KeyedSort whose keys hold across cycles: a job's key is
// a function of its Job (the spec, not its state) and of what KeyStamp
// returns. While KeyStamp returns an equal value (==; it must be
// comparable), the Runtime reuses the key it computed for a job in an
// earlier cycle instead of calling Key again; on a long queue computing
// the keys of every waiting job each cycle was most of the sort's cost
// (elastic: the weights' shares of the cluster's capacity). Key is still
// called for a job the Runtime has no key for, and the order must be the
// same as with Key called every cycle (a Job, once a policy has seen it,
// is not changed: executors build a new one for a changed spec).
type StableKeys interface {
	KeyedSort
	// KeyStamp sums up what the keys depend on besides the jobs' specs,
	// such as the cluster's ready capacity; nil when nothing.
	KeyStamp(c *Cycle) any
}

// QueueOrdered is a QueueSort that can tell cheaply that the executor's
// queue is already in its order. When InQueueOrder says so, the Runtime
// walks the queue as it does without a QueueSort: lazily, in queue order,
// stopping where an Admit plugin blocks, instead of collecting every
// pending job and checking (or sorting) their order. The order is the
// same, since a stable sort leaves a sequence already in order as it is;
// only the cost differs. On a long queue that blocks at its head (DRAGON
// starts one job per cycle) the walk and the check were most of a cycle.
type QueueOrdered interface {
	QueueSort
	// InQueueOrder reports whether Compare(c, a, b) <= 0 for every two
	// pending jobs of c's snapshot with a before b in queue order, for the
	// whole cycle (a sort whose order changes within a cycle, see
	// Cycle.Resort, must not say so then). It is asked once per cycle and
	// must cost O(1) amortised, not a pass over the queue.
	InQueueOrder(c *Cycle) bool
}

// GroupedKeys is a KeyedSort whose jobs fall into groups within which
// keys order jobs by queue position: in every cycle, and whatever the
// cycle's starts (and Resorts) so far, two pending jobs of one group (equal
// Group values) have keys that compare as their queue positions do. A
// job's group is a function of its Job (the spec, which executors never
// change; the value must be comparable). The scheduling queue then finds
// the first of an awake class's parked members in queue-sort order from
// one key per group instead of one per member (DRF: a tenant's jobs of
// one demand have one share; the order among them is the queue's).
type GroupedKeys interface {
	KeyedSort
	Group(js *cluster.JobState) any
}

// CheckGroupedKeys reports the first two pending jobs of s of one group
// whose keys do not compare as their queue positions do, for GroupedKeys
// plugins' tests.
func CheckGroupedKeys(gk GroupedKeys, s *cluster.Snapshot) error {
	c := &Cycle{Snap: s, St: &Statement{}}
	jobs := slices.Collect(s.Pending.All())
	for i, a := range jobs {
		for j, b := range jobs {
			if gk.Group(a) != gk.Group(b) {
				continue
			}
			if got := CompareKeys(gk.Key(c, a), gk.Key(c, b)); got != cmp.Compare(i, j) {
				return fmt.Errorf("%s: %s (position %d) vs %s (position %d), one group: keys %v vs %v give %d", gk.Name(),
					a.Job.ID, i, b.Job.ID, j, gk.Key(c, a), gk.Key(c, b), got)
			}
		}
	}
	return nil
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

// UniformFilter is a Filter whose verdict and reason for group g on node n
// depend only on the node's identity, role, labels and taints and on the
// job's replica groups (names, demands, node constraints): never on the
// node's free room (placement checks that, monotonically), the job's
// identity or state, the time, the random source or what the plugin saw
// before. When every Filter of a profile is uniform (the
// node-role rule is), the Runtime's scheduling queue treats jobs alike in
// their groups and sizes as one class on the generic placement path too:
// once one of them failed, the others are not placed again until room
// comes back (see Requeuer), since they would fail with the same reason.
type UniformFilter interface {
	Filter
	Uniform() bool
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

// ClassPlace is a Place plugin whose attempts join the scheduling queue's
// classes (see Requeuer and ARCHITECTURE.md, "The scheduling queue"), as
// placement.Place's do: jobs alike in their replica groups (demands,
// names, node constraints) and in the counts tried are then placed once
// per class while they fail. ClassPlace returns true when Place keeps
// these promises:
//   - whether Place fails for counts of js, and the status it fails with,
//     depend only on the room on l and on js's groups and counts: never on
//     the job's identity or state, the time, the random source or what
//     the plugin saw before;
//   - it is monotone in the room: if it fails on l, it fails on any
//     ledger with no more room on any node in any resource;
//   - a failed Place leaves l exactly as it was, placement's sampling
//     cursor included (so not trying it again changes nothing);
//   - Place has no effect but on l: the Runtime calls it for dry runs on
//     a scratch ledger, or on a fork it reverts.
//
// What a successful Place returns may depend on anything Requeue allows.
type ClassPlace interface {
	Place
	ClassPlace() bool
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

// OrderKeeper is a Reserve plugin that never calls Cycle.Resort (SpeCon's
// view and labels, round-robin's cursor). When every Reserve plugin of a
// profile is one, the queue-sort order never changes within a cycle, and
// the scheduling queue need not mark, at each start, the parked jobs the
// start passed (which on a sorted profile with Preempt plugins sorted
// every parked job by queue position, per start): the merge after a
// Preempt plugin gives room back compares them with the job tried last,
// which in an unchanged order comes after every job started before it.
// Calling Resort from such a profile panics.
type OrderKeeper interface {
	Reserve
	KeepsOrder() bool
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

// Events are the cluster changes after which the Runtime's scheduling
// queue tries again a job it has set aside (see Requeuer).
type Events uint8

// Events a Requeuer may ask for. Room is watched for every job set aside;
// the others only when some plugin asks.
const (
	// EventRoom: some node has more room, in some resource, than the job
	// had when it failed: a job finished, was suspended at the end of its
	// grace period, shrank or moved away; a placeholder went; a node was
	// added or became ready; room held for a nominated job was not kept;
	// or, within the cycle, a Preempt plugin gave room back.
	EventRoom Events = 1 << iota
	// EventNodes: a node was added, became ready or went away.
	EventNodes
	// EventRunning: the running jobs changed: one started, ended, changed
	// phase or replica counts.
	EventRunning
	// EventPending: a pending job left the queue (it started or was
	// rejected) or the queue is otherwise not what it was.
	EventPending
	// EventRunningHint is EventRunning narrowed by the plugin's
	// RunningHint: the running jobs changed, and for one of the jobs that
	// started or changed phase or replica counts the plugin says it may
	// change its answer for the job set aside. Only a RunningHinter may
	// ask for it (from another plugin it counts as EventRunning).
	EventRunningHint
	// EventWatch: a Watcher plugin of the profile says that something it
	// watches itself changed (see Watcher). Only a Watcher may ask for it.
	EventWatch
	// RequeueSkip lets the job be set aside although the plugin acts for
	// it at every attempt: each cycle, at the job's turn, the Runtime
	// calls the plugin's Skip instead (see Skipper). Only a Skipper may
	// ask for it; from another plugin, or where the Runtime cannot tell
	// the job's turns, it counts as RequeueAlways.
	RequeueSkip
	// RequeueAlways keeps the job in every cycle: the plugin may decide
	// differently for it at any time (a clock, a random draw), or must see
	// every attempt (it reads Cycle.Failed).
	RequeueAlways Events = 1 << 7
)

// Requeuer is kube-scheduler's QueueingHint for drover's Runtime. A job
// that was tried and could not start (no size fitted and no Preempt plugin
// made or nominated room) is, on a cluster that has not changed, going to
// fail again, and on a long queue retrying every such job on every cycle
// is most of the work. When every plugin of a profile implements
// Requeuer, the Runtime asks each of them, for each job that failed in the
// cycle, which events could change its answer for that job, and sets the
// job aside until one of them (or EventRoom) happens: it is not sorted,
// admitted, sized, placed or offered to Preempt plugins, is not in
// Cycle.Failed, and keeps its wait reason. A profile with a plugin that
// does not implement Requeuer tries every pending job every cycle.
//
// Requeue is called after the job's Wait is recorded, on every plugin of
// the profile, whether or not the plugin took part in the attempt. It
// must return:
//   - RequeueAlways when skipping the job until an event could change what
//     the plugin decides or records, for this job or any other: an Admit
//     plugin that reads Cycle.Failed, a plugin that draws from Cycle.Rand
//     or keeps state for jobs it turned away, a Filter, Score or Place
//     whose answer depends on time or on anything but the room on the
//     nodes (the node-role rule and the built-in strategies do not); a
//     Skipper whose only such effect it can make at the job's turn
//     (random draws) may answer RequeueSkip instead;
//   - the Events, beyond EventRoom, after which the plugin's answer for js
//     may change (a Preempt plugin that declines js now may choose it
//     later once the running jobs change);
//   - 0 when the plugin's behaviour does not depend on whether js is tried.
//
// A QueueSort plugin that returns anything but RequeueAlways also promises
// that its order is the current Compare with ties in queue order: a job
// set aside that has to come back within a cycle (a Preempt plugin gave
// room back) is merged into the jobs not yet tried in that order.
type Requeuer interface {
	Plugin
	Requeue(c *Cycle, js *cluster.JobState) Events
}

// Watcher is a Requeuer that keeps its own account of what could change
// its answer for the jobs it asked EventWatch for, when that is not one of
// the Runtime's events (room on Now, nodes, running or pending jobs): a
// victim search that fails on the room its victims would give back, say.
// At the start of every cycle in which a parked job asks EventWatch, the
// Runtime asks Woken, on the cycle's fresh ledgers before any job is
// tried, about each class (see schedQueue) with such a member, naming one
// member (jobs of a class are alike in the groups' demands, names and
// node constraints and in the sizes and replica counts asked), and about
// each such job without a class, all in one call. Woken sets woken[i]
// (leaving it as it is otherwise) when its answer for a job of jobs[i]'s
// shape set aside for it may differ from when it was set aside: a class
// is then woken as for room (its first member in the walk's order is
// tried, then the next while they start or get room nominated, until one
// fails), and a job without a class is tried.
type Watcher interface {
	Requeuer
	Woken(c *Cycle, jobs []*cluster.JobState, woken []bool)
}

// Skipper is a Requeuer whose work for a job that fails has an effect
// beyond the job that later decisions of the cycle can see (random draws
// from Cycle.Rand, which move the stream later draws come from): Requeue
// may still set such a job aside with RequeueSkip, and the Runtime then
// calls Skip, in every cycle while the job is set aside, in the place of
// the attempt the job would have had at its turn in the walk, before
// anything that the effect could reach: before the Preempt plugins of
// each job tried after it, and before the Rebalance plugins. Skip must do
// what the plugin would have done for the failing job, nothing else (see
// Cycle.DrawLater for draws). Calls for jobs whose turns come between two
// commits of Preempt plugins see the same Statement, so their order among
// themselves is not kept: Skip's effect must not depend on it.
//
// The Runtime keeps such a job aside only on the simulator's queue
// (cluster.QueueLog), without a window, without a Reserve plugin that may
// resort and without the panic guard; elsewhere it tries it every cycle.
// While set aside, the job keeps the Wait reason it failed with: Skip must
// only be asked of a plugin whose failure reason, the one recorded, is the
// same at every skipped attempt.
type Skipper interface {
	Requeuer
	Skip(c *Cycle, js *cluster.JobState)
}

// Closer is implemented by an Admit plugin that can tell when it turns
// away every job for the rest of the cycle (one start per cycle): when the
// profile's first Admit plugin is a Closer and Closed says so after a
// start, the Runtime ends the walk of the queue there, instead of finding
// the next candidate (the first member of a woken class, the parked jobs
// to merge back after a Preempt plugin gave room) only to have it
// Blocked. Closed must return true only when Admit would return Blocked
// for any job from then on in the cycle.
type Closer interface {
	Admit
	Closed(c *Cycle) bool
}

// Recaller is implemented by a Requeuer that treats one pending job of a
// cycle apart from all others, a job chosen from the whole queue and the
// running jobs (elastic's scale-down acts for the heaviest waiting job
// only): its Requeue may then leave out, for the other jobs, the events
// that could make one of them that job, because at the start of every
// cycle in which jobs are parked the Runtime asks Recall for the job it
// treats apart in this cycle, and tries that job even if it is parked.
// Recall returns nil when there is none; it must name the job the
// plugin's decisions in this cycle treat apart, so that no parked job is
// treated differently from when it failed.
type Recaller interface {
	Requeuer
	Recall(c *Cycle) *cluster.JobState
}

// RunningHinter is a Requeuer that narrows EventRunning to the changes
// that matter for a job (kube-scheduler's QueueingHintFn for the event):
// for a job it asked EventRunningHint for, the Runtime asks RunningHint,
// when the running jobs changed, about each running job that is new
// (started since the previous cycle) or changed phase or replica counts,
// and tries the job again when the answer is true for one of them. A job
// that stopped running is not asked about: what it frees is room.
// RunningHint must say true for every change after which the plugin's
// answer for j may differ from the one it gave when j was set aside.
type RunningHinter interface {
	Requeuer
	RunningHint(c *Cycle, j *cluster.Job, r *cluster.JobState) bool
}

// Clockless is implemented by TimeDriven plugins that need cycles without
// events only to take their next step after a change (a controller's next
// pass: one start per pass, a scale-up after a start), not because time
// passes: given the cluster of a cycle that recorded nothing (no action
// but waits), they record nothing again, whatever Now, Cycle and the
// random source say. When every TimeDriven plugin of a profile is
// Clockless, the Runtime answers such a cycle on an unchanged cluster at
// once, with no action (plugins that are not TimeDriven do not act on the
// clock or on a new random draw alone, by TimeDriven's contract).
type Clockless interface {
	Clockless() bool
}

// ClocklessOn is Clockless decided cycle by cycle, for a TimeDriven plugin
// whose need for cycles without events depends on the cluster (SpeCon's
// monitor needs the clock only while a running job reports a metric, the
// predictive autoscaler only on a cluster with an instance catalogue):
// given the cluster s of a cycle that recorded nothing (no action but
// waits), ClocklessOn reports whether the plugin records nothing again,
// whatever Now, Cycle and the random source say, and keeps no state a
// later cycle reads that the cycle would change. A profile whose
// TimeDriven plugins are each Clockless or ClocklessOn gets the idle-cycle
// answer of Clockless on the cycles where every ClocklessOn plugin agrees.
//
// A plugin that is not TimeDriven but whose answer a new draw from
// Cycle.Rand alone could change implements it too, to say on which
// clusters that cannot happen (FitGpp's random victim search); the
// Runtime asks every plugin that implements it.
type ClocklessOn interface {
	ClocklessOn(s *cluster.Snapshot) bool
}
