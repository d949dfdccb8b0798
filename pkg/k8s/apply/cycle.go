package apply

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
	dres "github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/validate"
)

// Cycle carries out one cycle's actions. Like the simulator, it
// validates every action with validate.Check against the state the
// earlier actions of the cycle left (free capacity per node, each job's
// phase and placement) before any API call, and refuses an invalid one
// with a reason instead of half-applying it. It is the validate.State of
// the Kubernetes executor.
type Cycle struct {
	wr    *Writer
	v     *view.View
	world *view.World
	// free is what each node can still take this cycle, placeholder
	// capacity included.
	free []dres.Vector
	// extra is the cycle's ledger of pods and extended resources per node,
	// quota of ResourceQuota usage per namespace (validate.Extra).
	extra []view.NodeExtra
	quota map[string][]*view.NSQuota
	// flights are the starts this cycle put in flight (Writer.flights):
	// validation and the ledger stay sequential, in the policy's order, but
	// one job's status write, pod creations and Bindings need not wait for
	// the previous job's round trips.
	flights []*Flight
}

// Workers bounds the concurrent starts of one cycle, and the jobs
// reconciled at once. A start is three round trips (status, pod, Binding)
// one after another, so with 16 workers a cycle of 200 starts on a busy
// API server (100-300 ms a call) took 4 to 11 s; 64 keep the client's
// rate limit (200/s by default), not the round trips, the bound.
const Workers = 64

// Wait waits until every start of this cycle is done and returns their
// errors; it may be called more than once (the errors are returned once).
func (a *Cycle) Wait() error {
	var errs []error
	for _, f := range a.flights {
		<-f.done
		if f.err != nil {
			errs = append(errs, f.err)
		}
	}
	a.flights = nil
	return errors.Join(errs...)
}

// Late leaves the starts of this cycle in flight (Run's pipelined
// cycles): their errors are reported by the next cycle (Writer.LateErrs).
func (a *Cycle) Late() { a.wr.Late(a.flights) }

// NewCycle returns the applier of one cycle's actions on view v, read
// from world: its ledger starts from the view's free capacity
// (placeholders' counted free for a real job), pods, extended resources
// and quotas.
func NewCycle(wr *Writer, v *view.View, world *view.World) *Cycle {
	a := &Cycle{wr: wr, v: v, world: world, free: make([]dres.Vector, len(v.Snap.Nodes)), extra: view.CloneExtra(v.Extra), quota: view.CloneQuotas(v.Quotas)}
	for i, n := range v.Snap.Nodes {
		if n.Ready && !n.Gone {
			a.free[i] = n.Free().Add(n.Placeholder)
		}
	}
	return a
}

var (
	_ validate.State   = (*Cycle)(nil)
	_ validate.Limited = (*Cycle)(nil)
	_ validate.Extra   = (*Cycle)(nil)
)

// FitsExtra implements validate.Extra: the placement fits the pods and
// extended resources left on its nodes, and, for a TrainingJob, the
// ResourceQuotas of its namespace (hard minus used, less what this
// cycle's earlier starts and resizes took).
func (a *Cycle) FitsExtra(j *cluster.Job, p, current cluster.Placement) error {
	if err := a.v.PlacementExtra(a.extra, j, p, current); err != nil {
		return err
	}
	if jv := a.v.Jobs[j.ID]; jv != nil {
		if qs := a.quota[jv.TJ.Namespace]; len(qs) > 0 {
			if why := view.QuotaShort(jv.TJ.Namespace, qs, a.v.JobQuota(jv, delta(j, p, current))); why != "" {
				return fmt.Errorf("%s: %s", view.ReasonQuotaExceeded, why)
			}
		}
	}
	return nil
}

// delta returns the replicas per group placement p adds to current.
func delta(j *cluster.Job, p, current cluster.Placement) []int {
	d := p.Counts(len(j.Groups))
	for g, c := range current.Counts(len(j.Groups)) {
		d[g] -= c
	}
	return d
}

// Job implements validate.State: an opted-in pod or a TrainingJob whose
// spec converted.
func (a *Cycle) Job(id string) *cluster.JobState {
	if pj := a.v.PodJobs[id]; pj != nil {
		return pj.St
	}
	if jv := a.v.Jobs[id]; jv != nil {
		return jv.St
	}
	if gj := a.v.Gangs[id]; gj != nil && gj.St != nil {
		return gj.St
	}
	return nil
}

// Nodes implements validate.State.
func (a *Cycle) Nodes() []*cluster.NodeState { return a.v.Snap.Nodes }

// Free implements validate.State: the cycle's ledger.
func (a *Cycle) Free(i int) dres.Vector { return a.free[i] }

// Catalog implements validate.State.
func (a *Cycle) Catalog() []cluster.InstanceType { return a.v.Snap.Catalog }

// Unsupported implements validate.Limited: nodes are the cluster
// autoscaler's to add and remove, a plain pod cannot be moved, and a
// placeholder's name must be usable as a Kubernetes name and label.
func (a *Cycle) Unsupported(act policy.Action) error {
	switch act := act.(type) {
	case policy.ProvisionNode:
		return fmt.Errorf("node provisioning is left to the cluster autoscaler (drover expresses demand with placeholders)")
	case policy.ReleaseNode:
		return fmt.Errorf("node release is left to the cluster autoscaler")
	case policy.Migrate, policy.Resize:
		if pj := a.v.PodJobs[act.Target()]; pj != nil {
			return fmt.Errorf("job %s is a plain pod: it cannot be migrated or resized", pj.St.Job.ID)
		}
		if gj := a.v.Gangs[act.Target()]; gj != nil {
			return fmt.Errorf("job %s is a PodGroup gang: its operator owns the pods, so it cannot be migrated or resized", gj.St.Job.ID)
		}
	case policy.Start:
		if gj := a.v.Gangs[act.Job]; gj != nil && len(act.Placement) != len(gj.Members) {
			return fmt.Errorf("job %s is a PodGroup gang of %d pods: it is bound all or none, not %d", act.Job, len(gj.Members), len(act.Placement))
		}
	case policy.SetLabel:
		if js := a.Job(act.Job); js != nil {
			if err := view.CheckSetLabel(js.Labels, act.Key, act.Value); err != nil {
				return fmt.Errorf("job %s: cannot store the policy label: %w", act.Job, err)
			}
		}
	case policy.SetPlaceholders:
		for _, p := range act.Placeholders {
			if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
				return fmt.Errorf("placeholder name %q is not a DNS-1123 label", p.Name)
			}
		}
	}
	return nil
}

// Take charges (sign 1) or returns (sign -1) placement p of job j on the
// cycle's ledgers: node vectors, pods and extended resources, and the
// namespace's quotas.
func (a *Cycle) Take(j *cluster.Job, p cluster.Placement, sign int64) {
	for ni, d := range p.DemandOn(j) {
		a.free[ni] = a.free[ni].Sub(d.Scale(sign))
	}
	a.v.TakeExtra(a.extra, j, p, sign)
	if jv := a.v.Jobs[j.ID]; jv != nil {
		if qs := a.quota[jv.TJ.Namespace]; len(qs) > 0 {
			counts := p.Counts(len(j.Groups))
			for g := range counts {
				counts[g] *= int(sign)
			}
			view.ChargeQuota(qs, a.v.JobQuota(jv, counts))
		}
	}
}

// toStatus converts a placement to status assignments, sorted.
func (a *Cycle) toStatus(j *cluster.Job, p cluster.Placement) []v1alpha1.Assignment {
	m := map[[2]int]int32{}
	for _, as := range p {
		m[[2]int{as.Group, as.Node}]++
	}
	out := make([]v1alpha1.Assignment, 0, len(m))
	for k, c := range m {
		out = append(out, v1alpha1.Assignment{Group: j.Groups[k[0]].Name, Node: a.v.Snap.Nodes[k[1]].Name, Count: c})
	}
	slices.SortFunc(out, func(x, y v1alpha1.Assignment) int {
		return strings.Compare(x.Group+"/"+x.Node, y.Group+"/"+y.Node)
	})
	return out
}

func (a *Cycle) describe(p cluster.Placement) string {
	var names []string
	for _, ni := range p.Nodes() {
		names = append(names, a.v.Snap.Nodes[ni].Name)
	}
	return strings.Join(names, ",")
}

// Apply validates one action (validate.Check) and, when it is valid,
// carries it out. An error is a refusal unless it is an *APIError (the
// action was valid but an API call failed).
func (a *Cycle) Apply(ctx context.Context, act policy.Action) error {
	if err := validate.Check(a, act); err != nil {
		return err
	}
	w := a.wr
	now := metav1.Time{Time: w.Now()}
	// A start of the job still in flight (from this cycle, or from an
	// earlier one whose pods are still being created) finishes first, so
	// that two writers never share the job.
	w.AwaitFlight(act.Target())
	if pj := a.v.PodJobs[act.Target()]; pj != nil {
		return a.applyPod(ctx, pj, act)
	}
	if gj := a.v.Gangs[act.Target()]; gj != nil {
		return a.applyGang(ctx, gj, act)
	}
	switch act := act.(type) {
	case policy.Start:
		return a.applyStart(ctx, act, now)
	case policy.Preempt:
		return a.applyPreempt(ctx, act, now)
	case policy.Migrate:
		return a.applyMigrate(ctx, act, now)
	case policy.Resize:
		return a.applyResize(ctx, act, now)
	case policy.Reject:
		return a.applyReject(ctx, act, now)
	case policy.Wait:
		return a.applyWait(ctx, act)
	case policy.SetLabel:
		return a.applySetLabel(ctx, act)
	case policy.SetPlaceholders:
		w.M.Actions.WithLabelValues("placeholders").Inc()
		return a.setPlaceholders(ctx, act.Placeholders)
	}
	return fmt.Errorf("unsupported action %T", act)
}

// applyStart charges a Start to the cycle's free room, evicts the
// placeholders in its way and launches its status write, pods and
// Binding on the start workers.
func (a *Cycle) applyStart(ctx context.Context, act policy.Start, now metav1.Time) error {
	jv := a.v.Jobs[act.Job]
	place := a.toStatus(jv.St.Job, act.Placement)
	a.Take(jv.St.Job, act.Placement, 1)
	jv.St.Phase = cluster.Running
	jv.St.Placement = act.Placement
	if err := a.evictPlaceholders(ctx, jv.St.Job, act.Placement); err != nil {
		return err
	}
	desc := a.describe(act.Placement)
	a.async(act.Job, func(commit func()) error { return a.start(ctx, jv, act, place, desc, now, commit) })
	return nil
}

// applyPreempt marks the job Suspended (requeued at the head) and
// deletes its pods with the grace period to checkpoint.
func (a *Cycle) applyPreempt(ctx context.Context, act policy.Preempt, now metav1.Time) error {
	w := a.wr
	jv := a.v.Jobs[act.Job]
	grace := int64(math.Ceil(act.Grace))
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		if o.Status.Phase != v1alpha1.PhaseAdmitted && o.Status.Phase != v1alpha1.PhaseRunning {
			return &APIError{Err: fmt.Errorf("job %s is %s on the API server", act.Job, o.Status.Phase)}
		}
		o.Status.Phase = v1alpha1.PhaseSuspended
		o.Status.Placement = nil
		o.Status.Migrating = false
		o.Status.Preemptions++
		o.Status.RequeuedAt = &now
		o.Status.Reason = preemptReason(act)
		o.Status.Replicas = nil
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse,
			Reason: "Preempted", Message: o.Status.Reason})
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionTrue,
			Reason: "Preempted", Message: o.Status.Reason})
		return nil
	}); err != nil {
		return err
	}
	jv.St.Phase = cluster.Suspending
	w.M.Actions.WithLabelValues("preempt").Inc()
	w.Event(jv.TJ, false, "Preempted", "%s; grace %ds to checkpoint", preemptReason(act), grace)
	return w.DeletePods(ctx, jv, jv.Live(), grace)
}

// applyMigrate writes the job's new placement and next attempt and
// deletes its pods to checkpoint; reconcile recreates them there.
func (a *Cycle) applyMigrate(ctx context.Context, act policy.Migrate, now metav1.Time) error {
	w := a.wr
	jv := a.v.Jobs[act.Job]
	from := a.describe(jv.St.Placement)
	place := a.toStatus(jv.St.Job, act.Placement)
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		if o.Status.Phase != v1alpha1.PhaseAdmitted && o.Status.Phase != v1alpha1.PhaseRunning {
			return &APIError{Err: fmt.Errorf("job %s is %s on the API server", act.Job, o.Status.Phase)}
		}
		o.Status.Phase = v1alpha1.PhaseAdmitted
		o.Status.Placement = place
		o.Status.Attempt++
		o.Status.Migrating = true
		o.Status.Migrations++
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionMigrating, Status: metav1.ConditionTrue,
			Reason: "Checkpointing", Message: fmt.Sprintf("from %s to %s: %s", from, a.describe(act.Placement), act.Reason)})
		return nil
	}); err != nil {
		return err
	}
	a.Take(jv.St.Job, jv.St.Placement, -1)
	a.Take(jv.St.Job, act.Placement, 1)
	jv.St.Phase = cluster.Migrating
	jv.St.Placement = act.Placement
	w.M.Actions.WithLabelValues("migrate").Inc()
	w.Event(jv.TJ, false, "Migrated", "migrated from %s to %s: %s", from, a.describe(act.Placement), act.Reason)
	return w.DeletePods(ctx, jv, jv.Live(), jv.TJ.Grace())
}

// applyResize writes the job's new placement and brings its pods in
// line with it at once.
func (a *Cycle) applyResize(ctx context.Context, act policy.Resize, now metav1.Time) error {
	w := a.wr
	jv := a.v.Jobs[act.Job]
	j := jv.St.Job
	from, to := jv.St.Counts(), act.Placement.Counts(len(j.Groups))
	place := a.toStatus(j, act.Placement)
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		if o.Status.Phase != v1alpha1.PhaseAdmitted && o.Status.Phase != v1alpha1.PhaseRunning {
			return &APIError{Err: fmt.Errorf("job %s is %s on the API server", act.Job, o.Status.Phase)}
		}
		o.Status.Placement = place
		o.Status.Resizes++
		return nil
	}); err != nil {
		return err
	}
	a.Take(j, jv.St.Placement, -1)
	a.Take(j, act.Placement, 1)
	jv.St.Phase = cluster.Migrating // no second action on it this cycle (its pods are changing)
	jv.St.Placement = act.Placement
	w.M.Actions.WithLabelValues("resize").Inc()
	w.Event(jv.TJ, false, "Resized", "resized from %v to %v replicas (%s)", from, to, act.Reason)
	if err := a.evictPlaceholders(ctx, j, act.Placement); err != nil {
		return err
	}
	st := jv.TJ.Status
	if err := w.EnsurePods(ctx, jv, &st); err != nil {
		// The resize is written: whatever failed (a refused pod
		// included) is the next cycle's reconcile's to finish, not a
		// refusal of the action.
		return &APIError{Err: fmt.Errorf("job %s resized, pods not all in place: %w", act.Job, err)}
	}
	return nil
}

// applyReject ends the job as Rejected with the policy's reason.
func (a *Cycle) applyReject(ctx context.Context, act policy.Reject, now metav1.Time) error {
	w := a.wr
	jv := a.v.Jobs[act.Job]
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		if o.Status.Phase.Terminal() || len(o.Status.Placement) > 0 {
			return &APIError{Err: fmt.Errorf("job %s is %s on the API server", act.Job, o.Status.Phase)}
		}
		o.Status.Phase = v1alpha1.PhaseRejected
		o.Status.Reason = act.Reason
		o.Status.CompletionTime = &now
		SetTerminal(&o.Status, v1alpha1.PhaseRejected, act.Reason)
		return nil
	}); err != nil {
		return err
	}
	jv.St.Phase = cluster.Rejected
	w.M.Actions.WithLabelValues("reject").Inc()
	w.Event(jv.TJ, true, "Rejected", "rejected by %s: %s", w.Policy, act.Reason)
	return nil
}

// applyWait records why the job waits, when the reason changed.
func (a *Cycle) applyWait(ctx context.Context, act policy.Wait) error {
	w := a.wr
	jv := a.v.Jobs[act.Job]
	if jv.TJ.Status.Reason == act.Reason {
		return nil
	}
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		o.Status.Reason = act.Reason
		if o.Status.Phase == "" {
			o.Status.Phase = v1alpha1.PhasePending // a new job's first write
		}
		if meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionUnschedulable) {
			// Offered to the policy again: no longer held.
			meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionUnschedulable, Status: metav1.ConditionFalse,
				Reason: "Queued", Message: act.Reason})
		}
		return nil
	}); err != nil {
		return err
	}
	w.Event(jv.TJ, false, "Waiting", "%s", act.Reason)
	return nil
}

// applySetLabel writes one policy label to the job's status.
func (a *Cycle) applySetLabel(ctx context.Context, act policy.SetLabel) error {
	w := a.wr
	jv := a.v.Jobs[act.Job]
	if v, ok := jv.St.Labels[act.Key]; ok && v == act.Value {
		return nil
	}
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		labels, _ := view.PolicyLabels(o) // only valid labels are written back
		if err := view.CheckSetLabel(labels, act.Key, act.Value); err != nil {
			return &APIError{Err: fmt.Errorf("job %s: status.policyLabels: %w", act.Job, err)}
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[act.Key] = act.Value
		o.Status.PolicyLabels = labels
		return nil
	}); err != nil {
		return err
	}
	if jv.St.Labels == nil {
		jv.St.Labels = map[string]string{}
	}
	jv.St.Labels[act.Key] = act.Value
	return nil
}

// async runs the API calls of a validated start of job id on the
// executor's start workers (at most Workers at once, across cycles).
// f calls commit once the start is recorded on the API server (a
// TrainingJob's status write, which a later cycle reads back through
// Writer.written); a start that never calls it is committed when it is
// done. A later action on the job waits until it is done (awaitFlight).
func (a *Cycle) async(id string, f func(commit func()) error) {
	a.flights = append(a.flights, a.wr.Launch(id, f))
}

// start carries out a validated Start: the status write (which commits
// the placement, so a restarted scheduler finishes the start), then the
// replica pods and their Bindings. It runs concurrently with other starts
// and touches only its own job.
//
// commit is called once the status write succeeded: from then on a cycle
// that reads the job sees it placed (its capacity charged), while its
// pods may still be in flight (Writer.flights).
func (a *Cycle) start(ctx context.Context, jv *view.Job, act policy.Start, place []v1alpha1.Assignment, desc string, now metav1.Time, commit func()) error {
	w := a.wr
	if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
		if o.Status.Phase != v1alpha1.PhasePending && o.Status.Phase != v1alpha1.PhaseSuspended && o.Status.Phase != "" {
			return &APIError{Err: fmt.Errorf("job %s is %s on the API server", act.Job, o.Status.Phase)}
		}
		resumed := o.Status.StartTime != nil
		o.Status.Phase = v1alpha1.PhaseAdmitted
		o.Status.Placement = place
		o.Status.Attempt++
		o.Status.Reason = ""
		o.Status.RequeuedAt = nil
		o.Status.Migrating = false
		if !resumed {
			o.Status.StartTime = &now
		}
		// The replica counts the next reconcile would write (none of the
		// new attempt's pods runs yet), written now: one status write per
		// start instead of two.
		o.Status.Replicas = startReplicas(o, place)
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionTrue,
			Reason: "Placed", Message: "placed on " + desc})
		if meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionSuspended) != nil {
			meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionFalse,
				Reason: "Resumed", Message: "placed on " + desc})
		}
		if meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionUnschedulable) {
			meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionUnschedulable, Status: metav1.ConditionFalse,
				Reason: "Placed", Message: "placed on " + desc})
		}
		return nil
	}); err != nil {
		return err
	}
	commit()
	verb := "admitted"
	if jv.TJ.Status.Attempt > 1 {
		verb = "resumed"
	}
	w.M.Actions.WithLabelValues("start").Inc()
	w.Event(jv.TJ, false, "Admitted", "%s by %s: placed on %s", verb, w.Policy, desc)
	st := jv.TJ.Status
	err := w.EnsurePods(ctx, jv, &st)
	if ref := (*RefusedPod)(nil); errors.As(err, &ref) {
		// The pods this start created are gone again (ensurePods):
		// release the placement now, not a cycle later.
		attempt := jv.TJ.Status.Attempt
		if err := w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			if o.Status.Phase != v1alpha1.PhaseAdmitted || o.Status.Attempt != attempt {
				return &APIError{Err: fmt.Errorf("job %s changed on the API server while its pods were refused: %w", act.Job, ref)}
			}
			w.Refused(&o.Status, ref)
			return nil
		}); err != nil {
			return err
		}
		w.RefusedEvent(jv.TJ, ref)
		return nil
	}
	return err
}

// startReplicas is status.replicas of a job just placed: per group of the
// spec, the replicas the placement asks for, none running.
func startReplicas(tj *v1alpha1.TrainingJob, place []v1alpha1.Assignment) []v1alpha1.GroupStatus {
	out := make([]v1alpha1.GroupStatus, 0, len(tj.Spec.ReplicaGroups))
	for _, g := range tj.Spec.ReplicaGroups {
		gs := v1alpha1.GroupStatus{Name: g.Name}
		for _, a := range place {
			if a.Group == g.Name {
				gs.Desired += a.Count
			}
		}
		out = append(out, gs)
	}
	return out
}

func preemptReason(p policy.Preempt) string {
	s := "preempted"
	if p.By != "" {
		s += " by " + p.By
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	return s
}

// evictPlaceholders deletes placeholder pods on the nodes of a placement
// until the job's demand fits without them, as kube-scheduler's preemption
// evicts the -10 priority overprovisioning pods.
func (a *Cycle) evictPlaceholders(ctx context.Context, j *cluster.Job, p cluster.Placement) error {
	for ni, d := range p.DemandOn(j) {
		n := a.v.Snap.Nodes[ni]
		// Placeholder pods hold pod slots too, which the cycle's ledger
		// (charged with this job already) counted as free for a real job.
		x := &a.extra[ni]
		fits := func() bool { return d.Fits(n.Free()) && (x.PodCap < 0 || x.Pods <= x.PodCap) }
		if n.Placeholder.IsZero() || fits() {
			continue
		}
		for i := range a.world.Pods {
			pod := &a.world.Pods[i]
			if pod.Spec.NodeName != n.Name || pod.Labels[v1alpha1.LabelPlaceholder] == "" || pod.Namespace != a.wr.Cfg.PlaceholderNamespace || pod.DeletionTimestamp != nil {
				continue
			}
			if fits() {
				break
			}
			if err := a.wr.fault("evict placeholder " + pod.Name); err != nil {
				return err
			}
			if err := a.wr.C.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				return &APIError{Err: fmt.Errorf("evicting placeholder pod %s: %w", pod.Name, err)}
			}
			pd := view.PodDemand(&pod.Spec)
			n.Allocated = n.Allocated.Sub(pd)
			n.Placeholder = n.Placeholder.Sub(pd)
			x.Add(-1, view.ExtendedRequests(&pod.Spec), true)
			pod.DeletionTimestamp = &metav1.Time{Time: a.wr.Now()}
		}
	}
	return nil
}

// YieldPlaceholders deletes placeholder pods from nodes that they and the
// other pods there overfill. Two binders fill the nodes: drover binds the
// replica pods, the default scheduler the placeholders. When a node
// joins (an autoscaler's, for a pending placeholder), both may bind to it
// at once, each before it sees the other's pod, and the node then holds a
// job and a placeholder that do not fit together (a kubelet refuses
// whichever it admits second). evictPlaceholders never runs for that job
// again, so the placeholder yields here, newest first, as kube-scheduler's
// preemption would have made it: its Deployment recreates it, pending,
// and the autoscaler adds a node for it (TestKarpenterLoop).
func (w *Writer) YieldPlaceholders(ctx context.Context, world *view.World, v *view.View) error {
	var errs []error
	for ni, n := range v.Snap.Nodes {
		if n.Placeholder.IsZero() || n.Allocated.Fits(n.Capacity) {
			continue
		}
		var phs []*corev1.Pod
		for i := range world.Pods {
			pod := &world.Pods[i]
			if pod.Spec.NodeName == n.Name && pod.Labels[v1alpha1.LabelPlaceholder] != "" && pod.Namespace == w.Cfg.PlaceholderNamespace &&
				pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				phs = append(phs, pod)
			}
		}
		slices.SortFunc(phs, func(a, b *corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
		for _, pod := range phs {
			if n.Allocated.Fits(n.Capacity) {
				break
			}
			if err := w.fault("yield placeholder " + pod.Name); err != nil {
				return err
			}
			if err := w.C.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting placeholder pod %s from overfilled node %s: %w", pod.Name, n.Name, err))
				continue
			}
			pd := view.PodDemand(&pod.Spec)
			n.Allocated = n.Allocated.Sub(pd)
			n.Placeholder = n.Placeholder.Sub(pd)
			v.Extra[ni].Add(-1, view.ExtendedRequests(&pod.Spec), true)
			pod.DeletionTimestamp = &metav1.Time{Time: w.Now()}
		}
	}
	if len(errs) > 0 {
		return &APIError{Err: errors.Join(errs...)}
	}
	return nil
}

// PlaceholderDeployment names the Deployment of a placeholder.
func PlaceholderDeployment(name string) string { return "drover-placeholder-" + name }

// setPlaceholders makes the placeholder Deployments match: one Deployment
// of pause pods per placeholder at the placeholder PriorityClass (-10, the
// cluster-autoscaler's overprovisioning convention), scheduled by the
// default scheduler, so that a pending placeholder pod makes the
// autoscaler add a node and any real pod preempts it.
func (a *Cycle) setPlaceholders(ctx context.Context, ps []cluster.Placeholder) error {
	w := a.wr
	want := map[string]bool{}
	var errs []error
	for _, p := range ps {
		want[p.Name] = true
		replicas := int32(p.Count)
		labels := map[string]string{v1alpha1.LabelPlaceholder: p.Name}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: PlaceholderDeployment(p.Name), Namespace: w.Cfg.PlaceholderNamespace}}
		if err := w.fault("placeholders " + p.Name); err != nil {
			return err
		}
		zero := int64(0)
		spec := corev1.PodSpec{
			PriorityClassName:             w.Cfg.PlaceholderPriorityClass,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "pause", Image: w.Cfg.PauseImage,
				Resources: corev1.ResourceRequirements{Requests: ResourceList(p.Demand), Limits: ResourceList(p.Demand)}}},
		}
		if p.PlacementGroup != "" {
			spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: view.LabelPlacementGroup, Operator: corev1.NodeSelectorOpIn, Values: []string{p.PlacementGroup}}}}}}}}
		}
		err := w.createOrUpdate(ctx, d, func() {
			d.Labels = labels
			d.Spec.Replicas = &replicas
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
			d.Spec.Template.Labels = labels
			d.Spec.Template.Spec = spec
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	for i := range a.world.Deployments {
		d := &a.world.Deployments[i]
		if !want[d.Labels[v1alpha1.LabelPlaceholder]] {
			if err := w.C.Delete(ctx, d); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting placeholder deployment %s: %w", d.Name, err))
			}
		}
	}
	if len(errs) > 0 {
		return &APIError{Err: errors.Join(errs...)}
	}
	return nil
}

func (w *Writer) createOrUpdate(ctx context.Context, d *appsv1.Deployment, mutate func()) error {
	for try := 0; ; try++ {
		err := w.C.Get(ctx, client.ObjectKeyFromObject(d), d)
		if apierrors.IsNotFound(err) {
			mutate()
			err = w.C.Create(ctx, d)
			if err == nil || !apierrors.IsAlreadyExists(err) {
				return wrapAPI(err, "creating deployment "+d.Name)
			}
			continue
		}
		if err != nil {
			return wrapAPI(err, "reading deployment "+d.Name)
		}
		before := d.DeepCopy()
		mutate()
		if equalDeployment(before, d) {
			return nil
		}
		err = w.C.Update(ctx, d)
		if !apierrors.IsConflict(err) || try >= 5 {
			return wrapAPI(err, "updating deployment "+d.Name)
		}
		w.M.Conflicts.Inc()
		if err := w.API.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return wrapAPI(err, "re-reading deployment "+d.Name)
		}
	}
}

func equalDeployment(a, b *appsv1.Deployment) bool {
	return *a.Spec.Replicas == *b.Spec.Replicas && a.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().Equal(*b.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu()) &&
		a.Spec.Template.Spec.Containers[0].Resources.Requests.Memory().Equal(*b.Spec.Template.Spec.Containers[0].Resources.Requests.Memory())
}

func wrapAPI(err error, what string) error {
	if err == nil {
		return nil
	}
	return &APIError{Err: fmt.Errorf("%s: %w", what, err)}
}

// ResourceList converts a vector back to a resource list.
func ResourceList(v dres.Vector) corev1.ResourceList {
	l := corev1.ResourceList{}
	if v[dres.CPU] > 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(v[dres.CPU], resource.DecimalSI)
	}
	if v[dres.Memory] > 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(v[dres.Memory], resource.BinarySI)
	}
	if v[dres.GPU] > 0 {
		l[view.GPUResource] = *resource.NewQuantity(v[dres.GPU], resource.DecimalSI)
	}
	if v[dres.Storage] > 0 {
		l[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(v[dres.Storage], resource.BinarySI)
	}
	return l
}

// EnsurePriorityClass makes sure the placeholder PriorityClass exists. The
// chart creates it, so the scheduler's role has only get on it (by name):
// create on priorityclasses would let a stolen token add a globalDefault
// class. It is read from the API server (not the cache, which would need
// list and watch on every PriorityClass) and created, with value -10, only
// when missing, for installs without the chart that grant create.
func (w *Writer) EnsurePriorityClass(ctx context.Context) error {
	name := w.Cfg.PlaceholderPriorityClass
	err := w.API.Get(ctx, client.ObjectKey{Name: name}, &schedv1.PriorityClass{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading PriorityClass %s: %w", name, err)
	}
	pc := &schedv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: -10,
		Description: "drover overprovisioning placeholders: evicted by any real pod (cluster-autoscaler convention)"}
	if err := w.C.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("PriorityClass %s is missing and creating it failed (install the chart, or create it with value -10): %w", name, err)
	}
	return nil
}
