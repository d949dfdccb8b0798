package view

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/validate"
)

// ReasonPlacementRefused starts the reason of a job requeued because its
// status.placement could not be acted on.
const ReasonPlacementRefused = "PlacementRefused"

// storedPlacement reads the job's status.placement into the snapshot's
// terms. Nodes that are gone are listed in jv.missingNodes (the job is
// requeued as for a lost node). A group the job does not have, or more
// replicas in a group than its maximum, make the stored placement
// unusable: it is returned with an error and no assignment, never
// expanded (a count of 2^31-1 would otherwise allocate that many).
func (v *View) storedPlacement(jv *Job) (cluster.Placement, error) {
	j := jv.St.Job
	counts := make([]int, len(j.Groups))
	var p cluster.Placement
	for _, a := range jv.TJ.Status.Placement {
		g, ok := jv.group(a.Group)
		if !ok {
			return nil, fmt.Errorf("status.placement: group %q is not a replica group of the job", a.Group)
		}
		if counts[g] += int(a.Count); a.Count < 1 || counts[g] > j.Groups[g].Max {
			// validate.Committed's words for the same rule.
			return nil, fmt.Errorf("status.placement: group %s: %d replicas is above max %d", j.Groups[g].Name, counts[g], j.Groups[g].Max)
		}
		ni, ok := v.nodeIdx[a.Node]
		if !ok {
			jv.MissingNodes = append(jv.MissingNodes, a.Node)
			continue
		}
		for range a.Count {
			p = append(p, cluster.Assignment{Group: g, Node: ni})
		}
	}
	return p, nil
}

// todo is the part of the job's stored placement that has no pod of the
// current attempt bound to its node (running, or completed): what
// reconcile would still create and bind.
func (v *View) todo(jv *Job) cluster.Placement {
	if len(jv.Pods)+len(jv.done) == 0 {
		return jv.St.Placement // nothing created yet (or all gone)
	}
	type key struct{ g, n int }
	bound := map[key]int{}
	attempt := strconv.Itoa(int(jv.TJ.Status.Attempt))
	for _, pods := range [][]*corev1.Pod{jv.Pods, jv.done} {
		for _, p := range pods {
			if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || p.Labels[v1alpha1.LabelAttempt] != attempt {
				continue
			}
			g, gok := jv.group(p.Labels[v1alpha1.LabelGroup])
			ni, nok := v.nodeIdx[p.Spec.NodeName]
			if gok && nok {
				bound[key{g, ni}]++
			}
		}
	}
	var out cluster.Placement
	for _, a := range jv.St.Placement {
		if k := (key{a.Group, a.Node}); bound[k] > 0 {
			bound[k]--
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkCommitted validates the stored placement of every admitted or
// running TrainingJob with validate.Committed, the rules a policy's Start
// is held to, so that a hand-edited status (a cordoned node, a count
// beyond the node's capacity or the group's maximum) is never acted on:
// the job gets badPlacement and reconcile requeues it instead of creating
// and binding its pods. Jobs are checked in the order they were admitted
// (then by key) on a ledger: it starts from what the snapshot leaves free
// with every pending part given back (what is bound stays charged), and
// each accepted job takes its pending part in turn, so that a job
// admitted later with an edited status cannot push out one admitted
// before it.
func (v *View) checkCommitted() {
	type cand struct {
		jv   *Job
		at   time.Time
		todo cluster.Placement
	}
	var cands []cand
	for _, key := range v.Order {
		jv := v.Jobs[key]
		if jv.Invalid != nil || jv.BadPlacement != nil || len(jv.MissingNodes) > 0 {
			continue
		}
		if ph := jv.TJ.Status.Phase; ph != v1alpha1.PhaseAdmitted && ph != v1alpha1.PhaseRunning {
			continue
		}
		at := jv.TJ.CreationTimestamp.Time
		if c := meta.FindStatusCondition(jv.TJ.Status.Conditions, v1alpha1.ConditionAdmitted); c != nil {
			at = c.LastTransitionTime.Time
		}
		cands = append(cands, cand{jv: jv, at: at, todo: v.todo(jv)})
	}
	if len(cands) == 0 {
		return
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.at.Compare(b.at) })
	st := &storedState{v: v, free: make([]resource.Vector, len(v.Snap.Nodes)), extra: CloneExtra(v.Extra)}
	for i, n := range v.Snap.Nodes {
		if n.Ready && !n.Gone {
			st.free[i] = n.Free().Add(n.Placeholder)
		}
	}
	for _, c := range cands {
		if len(c.todo) == 0 {
			continue // the common case: every replica bound
		}
		for ni, d := range c.todo.DemandOn(c.jv.St.Job) {
			st.free[ni] = st.free[ni].Add(d)
		}
		v.TakeExtra(st.extra, c.jv.St.Job, c.todo, -1)
	}
	for _, c := range cands {
		j := c.jv.St.Job
		// A migrating job's new pods are created only once its old ones
		// are gone (ensurePods): what they hold is its own to reuse, as
		// the validator gave back its placement when it allowed the move.
		var own map[int]resource.Vector
		if c.jv.TJ.Status.Migrating {
			own = map[int]resource.Vector{}
			for _, p := range c.jv.Pods {
				if ni, ok := v.nodeIdx[PodNode(p)]; ok && p.DeletionTimestamp != nil {
					own[ni] = own[ni].Add(PodDemand(&p.Spec))
				}
			}
			for ni, d := range own {
				st.free[ni] = st.free[ni].Add(d)
			}
		}
		// Its old pods count against the nodes' pod slots until they are
		// gone, so the pod and extended-resource limits are left to the
		// validator's check of the migration itself.
		st.skipExtra = c.jv.TJ.Status.Migrating
		err := validate.Committed(st, j, c.jv.St.Placement, c.todo)
		for ni, d := range own {
			st.free[ni] = st.free[ni].Sub(d)
		}
		if err != nil {
			c.jv.BadPlacement = fmt.Errorf("status.placement: %w", err)
			continue
		}
		if len(c.todo) == 0 {
			continue
		}
		for ni, d := range c.todo.DemandOn(j) {
			st.free[ni] = st.free[ni].Sub(d)
		}
		v.TakeExtra(st.extra, j, c.todo, 1)
	}
}

// storedState is the validate.State stored placements are checked
// against: the snapshot's nodes and what they have free, resources and
// (validate.Extra) pod slots and extended resources.
type storedState struct {
	v         *View
	free      []resource.Vector
	extra     []NodeExtra
	skipExtra bool
}

var (
	_ validate.State = (*storedState)(nil)
	_ validate.Extra = (*storedState)(nil)
)

// FitsExtra implements validate.Extra: the pods and extended resources
// left on the nodes, as apply.Cycle checks a Start.
func (s *storedState) FitsExtra(j *cluster.Job, p, current cluster.Placement) error {
	if s.skipExtra {
		return nil
	}
	return s.v.PlacementExtra(s.extra, j, p, current)
}

func (s *storedState) Job(string) *cluster.JobState    { return nil }
func (s *storedState) Nodes() []*cluster.NodeState     { return s.v.Snap.Nodes }
func (s *storedState) Free(i int) resource.Vector      { return s.free[i] }
func (s *storedState) Catalog() []cluster.InstanceType { return s.v.Snap.Catalog }
