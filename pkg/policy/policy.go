// Package policy defines the contract between scheduling policies and the
// executors that carry out their decisions: a Policy reads a
// cluster.Snapshot and returns Actions. It also holds the registry that maps
// policy names to constructors.
//
// Policies never mutate the snapshot and never call an API. An executor
// applies the actions in order, validating each one against the state left
// by the ones before it, and refuses an invalid action with a reason rather
// than half-applying it.
package policy

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Policy decides what to do in one scheduling cycle.
type Policy interface {
	// Name is the registered name, e.g. "fifo".
	Name() string
	// Schedule is called once per scheduling cycle with a snapshot that is
	// valid only during the call. It must be deterministic given the
	// snapshot and the policy's own state, and must not retain or modify
	// anything reachable from the snapshot.
	Schedule(s *cluster.Snapshot) []Action
}

// TimeDriven is implemented by policies that must run on every scheduling
// tick even when nothing in the cluster changed (a forecaster on a clock, a
// monitor that samples progress, a schedule with time slots). Other
// policies run only after an arrival, completion or similar event.
type TimeDriven interface {
	TimeDriven() bool
}

// Action is one decision. The concrete types below are the only actions.
type Action interface {
	// Target names the job or node the action applies to, for logs and
	// refusals.
	Target() string
	isAction()
}

// Start places a pending job. Every replica gets an assignment; a group may
// start below its minimum only when the policy models a non-gang scheduler
// (the job then holds resources and makes no progress).
type Start struct {
	Job       string
	Placement cluster.Placement
}

// Preempt tells a running job to stop. It keeps running and holding its
// resources for Grace seconds, is then suspended with its progress kept,
// and goes back to the head of the pending queue.
type Preempt struct {
	Job    string
	Grace  float64
	By     string // the job the resources are for, if any
	Reason string
}

// Migrate checkpoints a running job and restores it on a new placement. The
// job is paused for its checkpoint and restore cost.
type Migrate struct {
	Job       string
	Placement cluster.Placement
	Reason    string
}

// Resize changes a running job's replicas to the given placement (which
// also fixes the new counts). Replicas that stay on the same node keep
// running.
type Resize struct {
	Job       string
	Placement cluster.Placement
	Reason    string
}

// Reject removes a pending job for good (admission control, or a job no
// node can ever hold).
type Reject struct {
	Job    string
	Reason string
}

// Wait records why a pending job did not start this cycle. It changes
// nothing but what users see.
type Wait struct {
	Job    string
	Reason string
}

// SetLabel stores a small piece of policy state with a job, so that it
// survives a restart of the scheduler (the Kubernetes executor keeps labels
// as annotations on the TrainingJob).
type SetLabel struct {
	Job, Key, Value string
}

// ProvisionNode asks for new nodes of an instance type from the snapshot's
// catalogue; they become ready after the executor's launch delay.
type ProvisionNode struct {
	InstanceType   string
	PlacementGroup string
	Count          int
}

// ReleaseNode gives back an empty node.
type ReleaseNode struct {
	Node string
}

// SetPlaceholders replaces the set of overprovisioning placeholders. A
// placeholder is capacity at the lowest priority: a real job takes it when
// it needs it, and an autoscaler sees a pending placeholder as demand.
type SetPlaceholders struct {
	Placeholders []cluster.Placeholder
}

func (a Start) Target() string           { return a.Job }
func (a Preempt) Target() string         { return a.Job }
func (a Migrate) Target() string         { return a.Job }
func (a Resize) Target() string          { return a.Job }
func (a Reject) Target() string          { return a.Job }
func (a Wait) Target() string            { return a.Job }
func (a SetLabel) Target() string        { return a.Job }
func (a ProvisionNode) Target() string   { return a.InstanceType }
func (a ReleaseNode) Target() string     { return a.Node }
func (a SetPlaceholders) Target() string { return "placeholders" }

func (Start) isAction()           {}
func (Preempt) isAction()         {}
func (Migrate) isAction()         {}
func (Resize) isAction()          {}
func (Reject) isAction()          {}
func (Wait) isAction()            {}
func (SetLabel) isAction()        {}
func (ProvisionNode) isAction()   {}
func (ReleaseNode) isAction()     {}
func (SetPlaceholders) isAction() {}

// Kind returns a short lowercase name of an action's type, for logs,
// metrics and events.
func Kind(a Action) string {
	switch a.(type) {
	case Start:
		return "start"
	case Preempt:
		return "preempt"
	case Migrate:
		return "migrate"
	case Resize:
		return "resize"
	case Reject:
		return "reject"
	case Wait:
		return "wait"
	case SetLabel:
		return "label"
	case ProvisionNode:
		return "provision"
	case ReleaseNode:
		return "release"
	case SetPlaceholders:
		return "placeholders"
	}
	return fmt.Sprintf("%T", a)
}

// Refusal is an action an executor did not carry out, and why.
type Refusal struct {
	Time   float64
	Action Action
	Reason string
}

func (r Refusal) Error() string {
	return fmt.Sprintf("t=%.0fs: %s %s refused: %s", r.Time, Kind(r.Action), r.Action.Target(), r.Reason)
}
