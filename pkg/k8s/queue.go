package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

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
	case v.jobs[id] != nil:
		return v.jobs[id].st
	case v.pods[id] != nil:
		return v.pods[id].st
	case v.gangs[id] != nil:
		return v.gangs[id].st
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
	case v.jobs[st.Job.ID] != nil:
		tj := v.jobs[st.Job.ID].tj
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
	case v.pods[st.Job.ID] != nil:
		p := v.pods[st.Job.ID].pod
		e.Kind, e.Namespace, e.Name, e.Since = "Pod", p.Namespace, p.Name, p.CreationTimestamp.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				e.Reason = c.Message
			}
		}
	case v.gangs[st.Job.ID] != nil:
		gj := v.gangs[st.Job.ID]
		e.Kind, e.Namespace, e.Name, e.Since, e.Reason = "PodGroup", gj.ns, gj.name, gj.created, st.Reason
		if gj.requeued != nil {
			e.Since = *gj.requeued
		}
	default:
		return QueueEntry{}, false
	}
	return e, true
}

// QueueOptions tune ReadQueue; they should match the scheduler's config.
type QueueOptions struct {
	// SchedulerName is the scheduler's (default drover): opted-in plain
	// pods with it are queued too.
	SchedulerName string
	// Namespace is the scheduler's config.namespace: the TrainingJobs it
	// schedules (empty: all).
	Namespace string
}

// ReadQueue reads nodes, pods and TrainingJobs from the API server (or any
// reader) and returns the queue as the scheduler would build it now. Wait
// reasons are those the scheduler last wrote.
func ReadQueue(ctx context.Context, c client.Reader, o QueueOptions) ([]QueueEntry, error) {
	if o.SchedulerName == "" {
		o.SchedulerName = "drover"
	}
	w := &World{}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	w.Nodes = nodes.Items
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	w.Pods = pods.Items
	var jobs v1alpha1.TrainingJobList
	var opts []client.ListOption
	if o.Namespace != "" {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if err := c.List(ctx, &jobs, opts...); err != nil {
		return nil, fmt.Errorf("listing trainingjobs: %w", err)
	}
	w.Jobs = jobs.Items
	var pgs schedv1alpha1.PodGroupList
	if err := c.List(ctx, &pgs, opts...); err == nil {
		w.PodGroups = pgs.Items // (no PodGroup CRD: gangs from the Volcano annotation only)
	}
	var cfg Config
	cfg.Defaults()
	v := Build(w, time.Now(), Options{DefaultDuration: cfg.DefaultDurationSeconds, StuckAfter: cfg.StuckAfter.Duration,
		SchedulerName: o.SchedulerName})
	return v.Queue(), nil
}

// publishQueue writes status.queuePosition for the first
// cfg.QueuePositions waiting jobs and clears it on the others, at most
// every cfg.QueuePositionPeriod and only where it changed, so the writes
// it costs are bounded however long the queue is. It runs after the
// cycle's actions, so a job started this cycle gets no position.
func (e *Executor) publishQueue(ctx context.Context, v *View) error {
	now := e.Now()
	if !e.positioned.IsZero() && now.Sub(e.positioned) < e.cfg.QueuePositionPeriod.Duration {
		return nil
	}
	e.positioned = now
	limit := 0
	if e.cfg.QueuePositions != nil {
		limit = *e.cfg.QueuePositions
	}
	want := map[string]int32{}
	for _, q := range v.Queue() {
		if q.Position > limit {
			break
		}
		if q.Kind == "TrainingJob" {
			want[q.Namespace+"/"+q.Name] = int32(q.Position)
		}
	}
	// The writes run startWorkers at a time (each touches only its own
	// job). A job with a write in flight (a start of this cycle: its
	// jobView is the flight's) is left alone: that write clears its
	// position (deriveStatus clears it on a job that no longer waits).
	busy := e.inFlight()
	var mu sync.Mutex
	var errs []error
	var g errgroup.Group
	g.SetLimit(startWorkers)
	for _, key := range v.order {
		jv := v.jobs[key]
		if jv.invalid != nil || jv.st == nil || busy[key] {
			continue
		}
		pos, have := want[key], jv.tj.Status.QueuePosition
		if (have == nil && pos == 0) || (have != nil && *have == pos) {
			continue
		}
		g.Go(func() error {
			err := e.updateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
				o.Status.QueuePosition = nil
				if pos > 0 {
					o.Status.QueuePosition = &pos
				}
				return nil // deriveStatus clears it on a job that no longer waits
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("queue position of %s: %w", key, err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
