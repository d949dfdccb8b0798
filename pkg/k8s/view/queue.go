package view

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
)

// QueueEntry is one waiting job, as `drover queue` lists it.
type QueueEntry struct {
	// Position is 1 at the head of the queue; 0 for a job held out of it
	// (Phase Held: scheduling gates, or no node could ever run it).
	Position int `json:"position"`
	// Kind is TrainingJob, Pod (an opted-in plain pod) or PodGroup (a
	// gang).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Class     string `json:"class"`
	Priority  int    `json:"priority"`
	Tenant    string `json:"tenant"`
	// Replicas is the requested replica count over all groups.
	Replicas int `json:"replicas"`
	// Phase is the TrainingJob's phase (Pending, or Suspended after a
	// preemption); Pending for a pod.
	Phase string `json:"phase"`
	// Since is when the job entered the queue: its creation, or its last
	// preemption.
	Since       time.Time `json:"since"`
	Preemptions int       `json:"preemptions"`
	// Reason is the policy's last wait reason (status.reason; for a pod,
	// the message of a PodScheduled=False condition).
	Reason string `json:"reason,omitempty"`
}

// Queue lists the view's waiting jobs in the order the scheduler hands
// them to its policy: preempted jobs first (the most recent first), then
// arrival order. Jobs that left the queue during the cycle (started or
// rejected by the policy's actions) are left out.
func (v *View) Queue() []QueueEntry {
	var out []QueueEntry
	for st := range v.Snap.Pending.All() {
		if st.Phase != cluster.Pending {
			continue
		}
		if e, ok := v.entry(st, len(out)+1); ok {
			out = append(out, e)
		}
	}
	// Held jobs follow, at position 0, with the reason they are held.
	ids, why := v.Held()
	for _, id := range ids {
		if st := v.heldState(id); st != nil {
			if e, ok := v.entry(st, 0); ok {
				e.Phase, e.Reason = "Held", why[id]
				out = append(out, e)
			}
		}
	}
	return out
}

// heldState is the state of a held job.
func (v *View) heldState(id string) *cluster.JobState {
	switch {
	case v.Jobs[id] != nil:
		return v.Jobs[id].St
	case v.PodJobs[id] != nil:
		return v.PodJobs[id].St
	case v.Gangs[id] != nil:
		return v.Gangs[id].St
	}
	return nil
}

// entry describes one waiting job.
func (v *View) entry(st *cluster.JobState, pos int) (QueueEntry, bool) {
	e := QueueEntry{Position: pos, Class: st.Job.Class.String(), Priority: st.Job.Priority,
		Tenant: st.Job.Tenant, Phase: string(v1alpha1.PhasePending), Preemptions: st.Preemptions}
	for _, g := range st.Job.Groups {
		e.Replicas += g.Replicas
	}
	switch {
	case v.Jobs[st.Job.ID] != nil:
		tj := v.Jobs[st.Job.ID].TJ
		e.Kind, e.Namespace, e.Name, e.Reason = "TrainingJob", tj.Namespace, tj.Name, tj.Status.Reason
		if tj.Status.Tenant != "" {
			// What the scheduler charges it to: `drover queue` reads the
			// API server without the scheduler's tenants mapping.
			e.Tenant = tj.Status.Tenant
		}
		e.Since = tj.CreationTimestamp.Time
		if tj.Status.RequeuedAt != nil {
			e.Since = tj.Status.RequeuedAt.Time
		}
		if tj.Status.Phase != "" {
			e.Phase = string(tj.Status.Phase)
		}
	case v.PodJobs[st.Job.ID] != nil:
		p := v.PodJobs[st.Job.ID].Pod
		e.Kind, e.Namespace, e.Name, e.Since = "Pod", p.Namespace, p.Name, p.CreationTimestamp.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				e.Reason = c.Message
			}
		}
	case v.Gangs[st.Job.ID] != nil:
		gj := v.Gangs[st.Job.ID]
		e.Kind, e.Namespace, e.Name, e.Since, e.Reason = "PodGroup", gj.ns, gj.name, gj.created, st.Reason
		if gj.requeued != nil {
			e.Since = *gj.requeued
		}
	default:
		return QueueEntry{}, false
	}
	return e, true
}
