// Package validate holds the checks that every executor makes before it
// carries out a policy's action. The simulator and the Kubernetes
// controller both call Check with a read-only view of their own state, so
// an action a policy returns is accepted or refused the same way, with the
// same reason, in both.
//
// Check never changes anything; an executor calls it first and changes its
// state only when it returns nil, so a refused action is never half
// applied. Checks run in a fixed order and iterate no maps, so the same
// state and action always give the same reason.
package validate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// State is the part of an executor's state that actions are checked
// against, as the actions applied earlier in the cycle left it. Check only
// reads it.
type State interface {
	// Job returns the state of a job the executor knows (it has arrived
	// and was not dropped), in whatever phase, or nil. Its Phase and
	// Placement must reflect the actions applied so far this cycle.
	Job(id string) *cluster.JobState
	// Nodes returns every node, indexed as placements refer to them,
	// including launching and gone ones.
	Nodes() []*cluster.NodeState
	// Free returns what node i can still take this cycle: its capacity
	// less what is allocated, plus its placeholder capacity (which any
	// real job may take), after the actions applied so far.
	Free(i int) resource.Vector
	// Catalog returns the instance types ProvisionNode may ask for.
	Catalog() []cluster.InstanceType
}

// Limited is implemented by the state of an executor that cannot carry
// out some actions whatever the state (the Kubernetes executor leaves
// adding and removing nodes to the cluster autoscaler, and cannot move a
// plain pod). Check asks it first.
type Limited interface {
	// Unsupported returns why the executor cannot carry out a, or nil.
	Unsupported(a policy.Action) error
}

// Extra is implemented by the state of an executor whose nodes have
// limits the resource vector does not carry: the Kubernetes executor's
// pods per node and extended resources, and its namespaces'
// ResourceQuotas. Check asks it last about every placement (Start,
// Migrate, Resize), after the vector fit, so a placement over such a limit
// is refused like one over capacity. The simulator's state does not
// implement it: its nodes have no such limits.
type Extra interface {
	// FitsExtra returns why placement p of job j, once the job's current
	// placement (nil when pending) is given back, exceeds such a limit in
	// the state the actions applied so far this cycle left, or nil.
	FitsExtra(j *cluster.Job, p, current cluster.Placement) error
}

// Check returns nil when the executor may carry out action a in state s,
// or an error saying why not. The rules per action are those of
// docs/ARCHITECTURE.md:
//
//   - Start: the job is pending; the placement is valid (see below).
//   - Preempt: the job is running; the grace is finite and >= 0.
//   - Migrate: the job is running; the placement is valid once the job's
//     current placement is given back; the replica counts are unchanged.
//   - Resize: as Migrate, but counts may change: a group may grow while
//     it is below its minimum (a partial start completing), but it may
//     not shrink below its minimum.
//   - Reject, Wait: the job is pending.
//   - SetLabel: the job is known.
//   - ProvisionNode: the type is in the catalogue; the count is positive.
//   - ReleaseNode: the node exists, is not gone and runs no job.
//   - SetPlaceholders: every count is >= 0 and every demand non-zero and
//     not negative.
//
// A placement is valid when it is not empty, names existing groups and
// nodes, uses only ready nodes whose role, labels and taints admit the
// group (placement.Eligible: node selector, affinity, tolerations), puts at most
// Max replicas in each group and fits, node by node in first-use order, in
// the node's free capacity (plus what the job gives back there), and, when
// s implements Extra, fits the limits it adds.
func Check(s State, a policy.Action) error {
	if l, ok := s.(Limited); ok {
		if err := l.Unsupported(a); err != nil {
			return err
		}
	}
	switch a := a.(type) {
	case policy.Start:
		js, err := jobIn(s, a.Job, cluster.Pending)
		if err != nil {
			return err
		}
		return checkPlacement(s, js.Job, a.Placement, nil)
	case policy.Preempt:
		if _, err := jobIn(s, a.Job, cluster.Running); err != nil {
			return err
		}
		if !(a.Grace >= 0) || math.IsInf(a.Grace, 0) {
			return fmt.Errorf("grace %v is not a finite number >= 0", a.Grace)
		}
		return nil
	case policy.Migrate:
		js, err := jobIn(s, a.Job, cluster.Running)
		if err != nil {
			return err
		}
		if err := checkPlacement(s, js.Job, a.Placement, js.Placement); err != nil {
			return err
		}
		cur, next := js.Counts(), a.Placement.Counts(len(js.Job.Groups))
		if !slices.Equal(cur, next) {
			return fmt.Errorf("migration changes replica counts %v -> %v; use Resize", cur, next)
		}
		return nil
	case policy.Resize:
		js, err := jobIn(s, a.Job, cluster.Running)
		if err != nil {
			return err
		}
		if err := checkPlacement(s, js.Job, a.Placement, js.Placement); err != nil {
			return err
		}
		// A group may not shrink below its minimum; it may stay below it
		// only while growing towards it (a non-gang start completing, as
		// tf-operator's partial starts do).
		cur, next := js.Counts(), a.Placement.Counts(len(js.Job.Groups))
		for g, c := range next {
			if grp := &js.Job.Groups[g]; c < grp.Min && c < cur[g] {
				return fmt.Errorf("group %s: %d replicas is below min %d", grp.Name, c, grp.Min)
			}
		}
		return nil
	case policy.Reject:
		_, err := jobIn(s, a.Job, cluster.Pending)
		return err
	case policy.Wait:
		_, err := jobIn(s, a.Job, cluster.Pending)
		return err
	case policy.SetLabel:
		if s.Job(a.Job) == nil {
			return fmt.Errorf("unknown job %q", a.Job)
		}
		return nil
	case policy.ProvisionNode:
		if !slices.ContainsFunc(s.Catalog(), func(t cluster.InstanceType) bool { return t.Name == a.InstanceType }) {
			return fmt.Errorf("instance type %q is not in the catalogue", a.InstanceType)
		}
		if a.Count <= 0 {
			return fmt.Errorf("count %d is not positive", a.Count)
		}
		return nil
	case policy.ReleaseNode:
		n := Node(s, a.Node)
		if n == nil {
			return fmt.Errorf("unknown node %q", a.Node)
		}
		if len(n.Jobs) > 0 {
			return fmt.Errorf("node %s still runs %d jobs", n.Name, len(n.Jobs))
		}
		return nil
	case policy.SetPlaceholders:
		for _, p := range a.Placeholders {
			if p.Count < 0 || p.Demand.AnyNegative() || p.Demand.IsZero() {
				return fmt.Errorf("placeholder %q: count %d or demand %v is invalid", p.Name, p.Count, p.Demand)
			}
		}
		return nil
	}
	return fmt.Errorf("unsupported action %T", a)
}

// Node returns the node of that name that is not gone, or nil.
func Node(s State, name string) *cluster.NodeState {
	for _, n := range s.Nodes() {
		if n.Name == name && !n.Gone {
			return n
		}
	}
	return nil
}

// jobIn returns the job when it is known and in phase want.
func jobIn(s State, id string, want cluster.Phase) (*cluster.JobState, error) {
	js := s.Job(id)
	if js == nil {
		return nil, fmt.Errorf("unknown job %q", id)
	}
	if js.Phase != want {
		return nil, fmt.Errorf("job %s is %s, not %s", id, js.Phase, want)
	}
	return js, nil
}

// checkPlacement checks placement p of job j, whose current placement (nil
// when pending) would be given back first.
func checkPlacement(s State, j *cluster.Job, p, current cluster.Placement) error {
	if len(p) == 0 {
		return errors.New("empty placement")
	}
	nodes := s.Nodes()
	for _, a := range p {
		if err := checkIndices(j, a, len(nodes)); err != nil {
			return err
		}
		n := nodes[a.Node]
		if !n.Ready || n.Gone {
			return fmt.Errorf("node %s is not ready", n.Name)
		}
		if !placement.Eligible(n, j, a.Group) {
			if n.Role != "" && n.Role != j.Groups[a.Group].Name {
				return fmt.Errorf("node %s is for %s replicas, not %s", n.Name, n.Role, j.Groups[a.Group].Name)
			}
			return fmt.Errorf("node %s refuses group %s: %s", n.Name, j.Groups[a.Group].Name, placement.Why(n, j, a.Group))
		}
	}
	if err := checkMax(j, p); err != nil {
		return err
	}
	need := p.DemandOn(j)
	have := current.DemandOn(j)
	for _, ni := range p.Nodes() { // first-use order, not map order: the reason is reproducible
		d := need[ni]
		free := s.Free(ni).Add(have[ni])
		if !d.Fits(free) {
			return fmt.Errorf("over capacity on node %s: needs %v, %v free (short of %s)", nodes[ni].Name, d, free, d.Short(free))
		}
	}
	if x, ok := s.(Extra); ok {
		return x.FitsExtra(j, p, current)
	}
	return nil
}

// checkIndices refuses an assignment that names a group the job lacks or
// a node past the end of the node list, before anything indexes with it.
func checkIndices(j *cluster.Job, a cluster.Assignment, nodes int) error {
	if a.Group < 0 || a.Group >= len(j.Groups) {
		return fmt.Errorf("placement names group %d; the job has %d", a.Group, len(j.Groups))
	}
	if a.Node < 0 || a.Node >= nodes {
		return fmt.Errorf("placement names node %d; there are %d", a.Node, nodes)
	}
	return nil
}

// checkMax refuses a placement that puts more replicas in a group than
// the group's Max.
func checkMax(j *cluster.Job, p cluster.Placement) error {
	for g, c := range p.Counts(len(j.Groups)) {
		if c > j.Groups[g].Max {
			return fmt.Errorf("group %s: %d replicas is above max %d", j.Groups[g].Name, c, j.Groups[g].Max)
		}
	}
	return nil
}

// Committed checks a placement an executor reads back from its own store
// before it acts on it again: the Kubernetes executor keeps each job's
// placement in the TrainingJob's status, which whoever holds
// trainingjobs/status can rewrite, and creates and binds the pods that
// placement still lacks. whole is the job's placement as stored, todo the
// part of it not carried out yet (replicas with no pod bound). The rules
// are those of a Start: whole names existing groups and nodes and puts at
// most Max replicas in each group; todo uses only ready nodes whose role,
// labels and taints admit the group, and fits, node by node, in the free
// capacity (s.Free must not count todo as taken: the executor checks
// stored placements one after another on a ledger, as a cycle's Starts
// are checked). What
// is carried out already is a fact, not checked again: a node cordoned
// under running replicas does not make them invalid.
func Committed(s State, j *cluster.Job, whole, todo cluster.Placement) error {
	if len(whole) == 0 {
		return errors.New("empty placement")
	}
	nodes := s.Nodes()
	for _, a := range whole {
		if err := checkIndices(j, a, len(nodes)); err != nil {
			return err
		}
	}
	if err := checkMax(j, whole); err != nil {
		return err
	}
	if len(todo) == 0 {
		return nil
	}
	return checkPlacement(s, j, todo, nil)
}
