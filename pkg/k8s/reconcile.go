package k8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/report"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// maxEvals bounds the metric history kept in a TrainingJob's status.
const maxEvals = 64

// reconcile brings a job's pods and status in line with what was decided
// in earlier cycles and with what its pods did: completion and failure,
// progress reports, pods to create, bind or delete, stuck terminations. It
// reports whether the job's phase changed.
func (e *Executor) reconcile(ctx context.Context, v *view.View, jv *view.Job) (bool, error) {
	tj := jv.TJ
	if jv.Invalid != nil {
		err := e.w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			o.Status.Phase = v1alpha1.PhaseFailed
			o.Status.Reason = "invalid spec: " + jv.Invalid.Error()
			apply.SetTerminal(&o.Status, v1alpha1.PhaseFailed, o.Status.Reason)
			return nil
		})
		if err == nil {
			e.w.Event(jv.TJ, true, "InvalidSpec", "%v", jv.Invalid)
		}
		return true, err
	}
	e.reportStuck(jv)
	before := tj.Status.Phase
	next := tj.Status.DeepCopy()
	e.copyProgress(jv, next)
	stuckCondition(jv, next)

	if jv.BadLabels != nil {
		// Someone wrote labels the scheduler would not have: keep the
		// valid ones, drop the rest, and say so.
		next.PolicyLabels = maps.Clone(jv.St.Labels)
		e.w.Event(tj, true, "PolicyLabelsDropped", "%v", jv.BadLabels)
		e.log.Info("dropped invalid policy labels", "job", view.JobKey(tj), "error", jv.BadLabels.Error())
	}
	var podErr error
	switch tj.Status.Phase {
	case v1alpha1.PhaseAdmitted, v1alpha1.PhaseRunning:
		podErr = e.reconcilePlaced(ctx, jv, next)
	case v1alpha1.PhaseSuspended, v1alpha1.PhasePending, "":
		// Replica pods of a job that holds no placement are leftovers (a
		// scheduler that stopped between the status write and the
		// deletions): delete them.
		podErr = e.w.DeletePods(ctx, jv, jv.Live(), tj.Grace())
		if next.Phase == "" {
			next.Phase = v1alpha1.PhasePending
		}
	}
	next.ProgressCategory = category(jv, next)
	// The tenant the job is charged to, once for a job written before it
	// was shown or after the config's mapping changed (every status
	// write sets it too).
	next.Tenant = view.Options{Tenants: e.cfg.Tenants}.Tenant(tj.Namespace)
	return e.writeReconciled(ctx, jv, before, next, podErr)
}

// reportStuck raises an Event, once per pod, for the job's pods
// terminating past their grace period.
func (e *Executor) reportStuck(jv *view.Job) {
	tj := jv.TJ
	for _, p := range jv.Stuck {
		e.reports.mu.Lock()
		first := !e.reports.stuck[p.UID]
		e.reports.stuck[p.UID] = true
		e.reports.mu.Unlock()
		if first {
			e.w.Event(tj, true, "TerminationStuck", "pod %s is still terminating %s after its grace period ended; no longer waiting for it",
				p.Name, e.Now().Sub(p.DeletionTimestamp.Time).Round(time.Second))
		}
	}
}

// stuckCondition sets or clears the Stuck condition in next.
func stuckCondition(jv *view.Job, next *v1alpha1.TrainingJobStatus) {
	if len(jv.Stuck) > 0 {
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionStuck, Status: metav1.ConditionTrue,
			Reason: "PastGracePeriod", Message: fmt.Sprintf("%d replica pods terminating past their grace period", len(jv.Stuck))})
	} else if meta.IsStatusConditionTrue(next.Conditions, v1alpha1.ConditionStuck) {
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionStuck, Status: metav1.ConditionFalse, Reason: "Gone"})
	}
}

// reconcilePlaced reconciles a job that holds a placement (Admitted or
// Running): its end, a placement it cannot keep, or its pods; it
// returns the pod calls' error.
func (e *Executor) reconcilePlaced(ctx context.Context, jv *view.Job, next *v1alpha1.TrainingJobStatus) error {
	tj := jv.TJ
	var podErr error
	desired := map[string]int32{}
	for _, a := range tj.Status.Placement {
		desired[a.Group] += a.Count
	}
	first := tj.Spec.ReplicaGroups[0].Name
	switch {
	case len(jv.Failed) > 0:
		p := jv.Failed[0]
		e.w.Finish(next, v1alpha1.PhaseFailed, fmt.Sprintf("pod %s failed: %s", p.Name, podMessage(p)))
		podErr = e.w.DeletePods(ctx, jv, jv.Live(), 0)
		e.w.Event(tj, true, "Failed", "%s", next.Reason)
	case desired[first] > 0 && int32(jv.Succeeded[first]) >= desired[first]:
		e.w.Finish(next, v1alpha1.PhaseSucceeded, "training replicas completed")
		podErr = e.w.DeletePods(ctx, jv, jv.Live(), tj.Grace())
		e.w.Event(tj, false, "Completed", "all %d %s replicas completed", desired[first], first)
	case jv.BadPlacement != nil:
		// The stored placement fails the checks a policy's Start is
		// held to (someone edited the status): never act on it.
		// Requeue the job at the head, like a lost node; the policy
		// places it afresh.
		next.Phase = v1alpha1.PhaseSuspended
		next.Placement = nil
		next.Migrating = false
		next.RequeuedAt = &metav1.Time{Time: e.Now()}
		next.Reason = view.ReasonPlacementRefused + ": " + jv.BadPlacement.Error() + "; requeued"
		podErr = e.w.DeletePods(ctx, jv, jv.Live(), tj.Grace())
		e.w.Event(tj, true, view.ReasonPlacementRefused, "%s", next.Reason)
	case len(jv.MissingNodes) > 0:
		// A node of the placement is gone: the job cannot run as
		// placed. Requeue it at the head like a preemption.
		next.Phase = v1alpha1.PhaseSuspended
		next.Placement = nil
		next.Migrating = false
		next.RequeuedAt = &metav1.Time{Time: e.Now()}
		next.Reason = "node " + jv.MissingNodes[0] + " is gone"
		podErr = e.w.DeletePods(ctx, jv, jv.Live(), tj.Grace())
		e.w.Event(tj, true, "Requeued", "node %s of its placement is gone; requeued", jv.MissingNodes[0])
	default:
		podErr = e.reconcileRunning(ctx, jv, next, desired)
	}
	return podErr
}

// reconcileRunning creates and binds the pods of a job that keeps its
// placement and counts its running replicas into next.
func (e *Executor) reconcileRunning(ctx context.Context, jv *view.Job, next *v1alpha1.TrainingJobStatus, desired map[string]int32) error {
	tj := jv.TJ
	var podErr error
	if next.Migrating && !jv.Waiting() {
		next.Migrating = false
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionMigrating, Status: metav1.ConditionFalse,
			Reason: "Restored", Message: "new replicas created from the last checkpoint"})
	}
	podErr = e.w.EnsurePods(ctx, jv, next)
	if ref := (*apply.RefusedPod)(nil); errors.As(podErr, &ref) {
		// The API server refuses the job's pods: release the
		// placement (or fail the job for a refusal that cannot
		// change) rather than hold it while retrying every cycle.
		e.w.Refused(next, ref)
		e.w.RefusedEvent(tj, ref)
		podErr = e.w.DeletePods(ctx, jv, jv.Live(), 0)
		return podErr
	}
	running := map[string]int32{}
	for _, p := range jv.Pods {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Labels[v1alpha1.LabelAttempt] == strconv.Itoa(int(tj.Status.Attempt)) {
			running[p.Labels[v1alpha1.LabelGroup]]++
		}
	}
	next.Replicas = next.Replicas[:0]
	all := !next.Migrating
	for _, g := range tj.Spec.ReplicaGroups {
		next.Replicas = append(next.Replicas, v1alpha1.GroupStatus{Name: g.Name, Desired: desired[g.Name], Running: running[g.Name]})
		if running[g.Name] < desired[g.Name] {
			all = false
		}
	}
	if all && next.Phase == v1alpha1.PhaseAdmitted {
		next.Phase = v1alpha1.PhaseRunning
	}
	return podErr
}

// writeReconciled writes the status reconcile computed (next; before is
// the phase it started from), deferred, skipped or in flight as the job
// allows, and reports whether the phase changed.
func (e *Executor) writeReconciled(ctx context.Context, jv *view.Job, before v1alpha1.TrainingJobPhase, next *v1alpha1.TrainingJobStatus, podErr error) (bool, error) {
	tj := jv.TJ
	if e.w.DeferProgress(view.JobKey(tj), next, &tj.Status) {
		// Nothing to write, or only what a running job reports: kept in
		// memory (and in this cycle's snapshot) until ProgressPeriod
		// passes or another status write of the job carries it.
		s := &jv.TJ.Status
		s.Phase, s.Replicas = next.Phase, next.Replicas
		s.Progress, s.Evals, s.ProgressCategory = next.Progress, next.Evals, next.ProgressCategory
		return before != s.Phase, podErr
	}
	if (tj.Status.Phase == "" || tj.Status.Phase == v1alpha1.PhasePending) && next.Phase == v1alpha1.PhasePending {
		// A new job: most are started in the cycle that first sees them,
		// and the start's status write says Admitted (and the tenant).
		// Pending is written after the policy ran, for the jobs it did
		// not start (Cycle), unless the API server shows it already (the
		// CRD's default): a waiting job costs no write.
		unset := *next
		unset.Phase, unset.Tenant = tj.Status.Phase, tj.Status.Tenant
		if apply.StatusEqual(&unset, &tj.Status) {
			jv.Fresh = true
			return false, podErr
		}
	}
	write := func() error {
		err := e.w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			if o.Generation != tj.Generation || o.Status.Phase != tj.Status.Phase || o.Status.Attempt != tj.Status.Attempt {
				return apply.Precondition{Msg: "job changed since the cycle started"}
			}
			o.Status = *next.DeepCopy()
			return nil
		})
		if _, ok := err.(apply.Precondition); ok {
			err = nil
		}
		return err
	}
	if e.pipelined && next.Phase.Terminal() {
		// The job's end, once its pods are finished or deleted: the
		// write that records it need not hold up this cycle's decision.
		// The cycle sees the job ended (jv.ended; it leaves the
		// snapshot), the next one waits until the write is done before
		// it reads (a failed write: the job is read running again and
		// its end decided again).
		// The flight gets a copy of its own: jv.tj points into the
		// cycle's World, which the cycle rewrites (with ended) to rebuild
		// its snapshot.
		tj = tj.DeepCopy()
		jv.TJ = tj
		ended := tj.DeepCopy()
		ended.Status = *next.DeepCopy()
		jv.Ended = ended
		e.w.Late([]*apply.Flight{e.w.Launch(view.JobKey(tj), func(func()) error { return write() })})
		return true, podErr
	}
	err := write()
	if err == nil && podErr != nil {
		err = podErr
	}
	return before != jv.TJ.Status.Phase, err
}

func podMessage(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			return fmt.Sprintf("container %s exited %d (%s)", c.Name, t.ExitCode, t.Reason)
		}
	}
	if p.Status.Message != "" {
		return p.Status.Message
	}
	return "phase Failed"
}

// category is the policy's "category" label when set, else the progress
// quartile.
func category(jv *view.Job, s *v1alpha1.TrainingJobStatus) string {
	for k, v := range jv.St.Labels {
		if k == "category" || strings.HasSuffix(k, "/category") {
			return v
		}
	}
	if s.Progress == nil {
		return ""
	}
	f := s.Progress.Fraction
	switch {
	case f >= 1:
		return "done"
	case f >= 0.75:
		return "late"
	case f >= 0.25:
		return "middle"
	default:
		return "early"
	}
}

// copyProgress copies the newest trainer report found on the job's pods
// into the status, and appends its metric to the eval history. Only pods
// the job controls (the owner reference the scheduler sets, with the
// job's UID) are read: a pod that merely carries the drover.dev/job label
// is not the job's replica. Reports
// dated more than ReportClockSkew ahead of the scheduler's clock are not
// read (a report from 2099 would otherwise stay the newest for good), and
// a status.progress dated that far ahead, written by such a report before
// this check or by hand, is dropped with its checkpoint, so that the
// trainers' real reports are read again and no replacement pod resumes
// from a checkpoint that a forged report named.
func (e *Executor) copyProgress(jv *view.Job, s *v1alpha1.TrainingJobStatus) {
	now := e.Now()
	best := e.observedReport(view.JobKey(jv.TJ), jv.TJ.UID)
	if best != nil && e.future(best, now) {
		best = nil
	}
	for _, p := range jv.Pods {
		if !metav1.IsControlledBy(p, jv.TJ) {
			continue
		}
		r, err := report.Parse(p.Annotations[v1alpha1.AnnotationReport])
		if err != nil || r == nil || e.future(r, now) {
			continue
		}
		if best == nil || r.Time.After(best.Time) {
			best = r
		}
	}
	if s.Progress != nil && s.Progress.ReportedAt.After(now.Add(e.cfg.ReportClockSkew.Duration)) {
		s.Progress = nil
	}
	if best == nil || (s.Progress != nil && !best.Time.After(s.Progress.ReportedAt.Time)) {
		return
	}
	ps := &v1alpha1.ProgressStatus{Fraction: view.Clamp01(best.Progress), Metric: best.Metric, ReportedAt: v1alpha1.NewReportTime(best.Time)}
	if s.Progress != nil {
		ps.Checkpoint, ps.CheckpointFraction = s.Progress.Checkpoint, s.Progress.CheckpointFraction
	}
	if best.Checkpoint != "" {
		ps.Checkpoint = best.Checkpoint
		ps.CheckpointFraction = view.Clamp01(best.CheckpointProgress)
	}
	s.Progress = ps
	if best.Metric != nil {
		s.Evals = append(s.Evals, v1alpha1.EvalSample{Time: v1alpha1.NewReportTime(best.Time), Value: *best.Metric})
		if len(s.Evals) > maxEvals {
			s.Evals = append([]v1alpha1.EvalSample(nil), s.Evals[len(s.Evals)-maxEvals:]...)
		}
	}
}
