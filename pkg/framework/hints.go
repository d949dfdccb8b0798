package framework

import (
	"github.com/drover-sched/drover/pkg/cluster"
)

// Events are the cluster changes after which the scheduling queue tries
// again a job it has set aside (kube-scheduler's ClusterEvents). A job
// that failed is parked in the unschedulable set with the events each
// plugin that turned it away declared (see EnqueueExtensions), and comes
// back when one of them happens and the plugin's hint agrees, when its
// own spec or queue entry changes, or at the periodic flush.
type Events uint8

// The events. EventAlways is not an event but "never set aside".
const (
	// EventRoom: some node has more room, now or once the jobs in their
	// grace period are gone (the Soon ledger), than when the job failed: a
	// job finished, was suspended, shrank or moved away; a placeholder
	// went; a node was added; a nomination was dropped; or, within a
	// cycle, a Preempt plugin gave room back.
	EventRoom Events = 1 << iota
	// EventNodes: a node was added, went away, or changed readiness,
	// capacity, role, labels, taints, instance type, zone or placement
	// group (anything of cluster.Node a node constraint may read).
	EventNodes
	// EventRunning: the running jobs changed: one started, ended, changed
	// phase, replica counts or preemption count.
	EventRunning
	// EventPending: a job joined or left the pending queue.
	EventPending
	// EventAlways keeps the job in every cycle: the plugin may decide
	// differently at any time (a clock), or must see every attempt (it
	// reads Cycle.Failed).
	EventAlways Events = 1 << 7
)

// DefaultEvents are the events of a plugin that declares none (does not
// implement EnqueueExtensions): any release of capacity, and node
// changes. The periodic flush bounds what a plugin whose answer depends on
// anything else can cost: latency, never a decision that is wrong for
// ever.
const DefaultEvents = EventRoom | EventNodes

// EnqueueExtensions is kube-scheduler's EnqueueExtensions with its
// QueueingHint, for one plugin. When a pending job is tried and does not
// start, the Runtime asks the plugins that turned it away (the Admit
// plugin that answered Unschedulable or Wait; else the placement plugins,
// Size, Filter, Score and Place, and every Preempt plugin) which events
// could change their answer for it, and parks the job until one happens.
//
// Events returns those events for js, which just failed: 0 when the
// plugin's answer for js cannot change (a Preempt plugin that never acts
// for such a job), EventAlways when it may change at any time. It is
// called right after the failure, with the cycle's state.
//
// Requeue is the hint: at the start of a later cycle in which some of the
// events ev (a subset of what Events returned) happened, whether the
// plugin may now answer js differently. Returning true is always safe.
// The queue keeps parked jobs alike (the same class, priority, utility,
// tenant, replica groups and requested counts, and the same declared
// events) in one bucket, in walk order, and asks Requeue for its first
// member only; that member is tried, and the next one only once it
// starts. So the plugin's answers for jobs alike must not differ by
// anything else of the job: when they can (a search whose random draws,
// per job, decide whether it succeeds), Events returns EventAlways.
//
// A plugin that does not implement EnqueueExtensions gets DefaultEvents
// and always agrees. The placement itself (the built-in strategies and
// the node-role rule) counts as a plugin whose events are EventRoom and
// EventNodes and whose hint for EventRoom is whether the job fits, at one
// of its sizes, on the cycle's fresh Now ledger.
type EnqueueExtensions interface {
	Plugin
	Events(c *Cycle, js *cluster.JobState) Events
	Requeue(c *Cycle, js *cluster.JobState, ev Events) bool
}
