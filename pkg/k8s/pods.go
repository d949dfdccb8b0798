package k8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/report"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// semantic is equality.Semantic, which compares metav1.Time by instant,
// also comparing v1alpha1.ReportTime by instant: a time.Time has
// unexported fields, which the reflective comparison refuses (it panics).
var semantic = func() conversion.Equalities {
	e := equality.Semantic.Copy()
	if err := e.AddFunc(func(a, b v1alpha1.ReportTime) bool { return a.Equal(b.Time) }); err != nil {
		panic(err)
	}
	return e
}()

// maxEvals bounds the metric history kept in a TrainingJob's status.
const maxEvals = 64

// reconcile brings a job's pods and status in line with what was decided
// in earlier cycles and with what its pods did: completion and failure,
// progress reports, pods to create, bind or delete, stuck terminations. It
// reports whether the job's phase changed.
func (e *Executor) reconcile(ctx context.Context, v *view.View, jv *view.Job) (bool, error) {
	tj := jv.TJ
	if jv.Invalid != nil {
		err := e.updateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			o.Status.Phase = v1alpha1.PhaseFailed
			o.Status.Reason = "invalid spec: " + jv.Invalid.Error()
			setTerminal(&o.Status, v1alpha1.PhaseFailed, o.Status.Reason)
			return nil
		})
		if err == nil {
			e.event(jv.TJ, true, "InvalidSpec", "%v", jv.Invalid)
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
		e.event(tj, true, "PolicyLabelsDropped", "%v", jv.BadLabels)
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
		podErr = e.deletePods(ctx, jv, jv.Live(), tj.Grace())
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
		e.mu.Lock()
		first := !e.reported[p.UID]
		e.reported[p.UID] = true
		e.mu.Unlock()
		if first {
			e.event(tj, true, "TerminationStuck", "pod %s is still terminating %s after its grace period ended; no longer waiting for it",
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
		e.finish(next, v1alpha1.PhaseFailed, fmt.Sprintf("pod %s failed: %s", p.Name, podMessage(p)))
		podErr = e.deletePods(ctx, jv, jv.Live(), 0)
		e.event(tj, true, "Failed", "%s", next.Reason)
	case desired[first] > 0 && int32(jv.Succeeded[first]) >= desired[first]:
		e.finish(next, v1alpha1.PhaseSucceeded, "training replicas completed")
		podErr = e.deletePods(ctx, jv, jv.Live(), tj.Grace())
		e.event(tj, false, "Completed", "all %d %s replicas completed", desired[first], first)
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
		podErr = e.deletePods(ctx, jv, jv.Live(), tj.Grace())
		e.event(tj, true, view.ReasonPlacementRefused, "%s", next.Reason)
	case len(jv.MissingNodes) > 0:
		// A node of the placement is gone: the job cannot run as
		// placed. Requeue it at the head like a preemption.
		next.Phase = v1alpha1.PhaseSuspended
		next.Placement = nil
		next.Migrating = false
		next.RequeuedAt = &metav1.Time{Time: e.Now()}
		next.Reason = "node " + jv.MissingNodes[0] + " is gone"
		podErr = e.deletePods(ctx, jv, jv.Live(), tj.Grace())
		e.event(tj, true, "Requeued", "node %s of its placement is gone; requeued", jv.MissingNodes[0])
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
	podErr = e.ensurePods(ctx, jv, next)
	if ref := (*refusedPod)(nil); errors.As(podErr, &ref) {
		// The API server refuses the job's pods: release the
		// placement (or fail the job for a refusal that cannot
		// change) rather than hold it while retrying every cycle.
		e.refused(next, ref)
		e.refusedEvent(tj, ref)
		podErr = e.deletePods(ctx, jv, jv.Live(), 0)
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
	if e.deferProgress(view.JobKey(tj), next, &tj.Status) {
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
		if semantic.DeepEqual(&unset, &tj.Status) {
			jv.Fresh = true
			return false, podErr
		}
	}
	write := func() error {
		err := e.updateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
			if o.Generation != tj.Generation || o.Status.Phase != tj.Status.Phase || o.Status.Attempt != tj.Status.Attempt {
				return errPrecondition{"job changed since the cycle started"}
			}
			o.Status = *next.DeepCopy()
			return nil
		})
		if _, ok := err.(errPrecondition); ok {
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
		e.late([]*flight{e.launch(view.JobKey(tj), func(func()) error { return write() })})
		return true, podErr
	}
	err := write()
	if err == nil && podErr != nil {
		err = podErr
	}
	return before != jv.TJ.Status.Phase, err
}

func (e *Executor) finish(s *v1alpha1.TrainingJobStatus, phase v1alpha1.TrainingJobPhase, reason string) {
	s.Phase = phase
	s.Reason = reason
	s.CompletionTime = &metav1.Time{Time: e.Now()}
	s.Migrating = false
	setTerminal(s, phase, reason)
	if s.Progress != nil && phase == v1alpha1.PhaseSucceeded {
		s.Progress.Fraction = 1
	}
}

// setTerminal sets the Succeeded or Failed condition of a finished job
// (Failed for a rejected or invalid one too) and clears Suspended.
func setTerminal(s *v1alpha1.TrainingJobStatus, phase v1alpha1.TrainingJobPhase, reason string) {
	typ, why := v1alpha1.ConditionFailed, string(phase)
	if phase == v1alpha1.PhaseSucceeded {
		typ = v1alpha1.ConditionSucceeded
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: why, Message: reason})
	if meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionSuspended) != nil {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionFalse, Reason: string(phase)})
	}
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

// ensurePods creates, binds and deletes the replica pods of an admitted
// job so that they match its placement in status s. Pod names are
// deterministic (job, group, attempt, index), so creating a pod twice
// fails harmlessly with AlreadyExists; a pod records its node before it is
// bound, so a restarted scheduler completes the same binding; binding a
// pod that is already bound is refused by the API server. Together these
// make every step safe to repeat.
func (e *Executor) ensurePods(ctx context.Context, jv *view.Job, s *v1alpha1.TrainingJobStatus) error {
	tj := jv.TJ
	attempt := strconv.Itoa(int(s.Attempt))
	type key struct{ group, node string }
	have := map[key][]*corev1.Pod{}
	used := map[string]map[int]bool{}
	var stale []*corev1.Pod
	for _, p := range jv.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels[v1alpha1.LabelAttempt] != attempt {
			stale = append(stale, p)
			continue
		}
		g := p.Labels[v1alpha1.LabelGroup]
		k := key{g, view.PodNode(p)}
		have[k] = append(have[k], p)
		if used[g] == nil {
			used[g] = map[int]bool{}
		}
		used[g][podIndex(p.Name)] = true
	}
	var errs []error
	var created []*corev1.Pod
	if err := e.deletePods(ctx, jv, stale, tj.Grace()); err != nil {
		errs = append(errs, err)
	}
	if s.Migrating {
		// The old replicas are checkpointing; the new ones start once they
		// are gone.
		return joinErrs(errs)
	}
	for _, a := range s.Placement {
		k := key{a.Group, a.Node}
		pods := have[k]
		slices.SortFunc(pods, func(x, y *corev1.Pod) int { return podIndex(x.Name) - podIndex(y.Name) })
		if extra := len(pods) - int(a.Count); extra > 0 {
			if err := e.deletePods(ctx, jv, pods[len(pods)-extra:], tj.Grace()); err != nil {
				errs = append(errs, err)
			}
			pods = pods[:len(pods)-extra]
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				if err := e.bind(ctx, p, a.Node); err != nil {
					errs = append(errs, err)
				}
			}
		}
		added, stop := e.createReplicas(ctx, jv, s, a, int(a.Count)-len(pods), used, &created)
		if stop != nil {
			return stop
		}
		errs = append(errs, added...)
	}
	// Pods of the current attempt on (group, node) pairs no longer in the
	// placement (a resize moved them).
	for k, pods := range have {
		found := false
		for _, a := range s.Placement {
			if a.Group == k.group && a.Node == k.node {
				found = true
			}
		}
		if !found {
			if err := e.deletePods(ctx, jv, pods, tj.Grace()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return joinErrs(errs)
}

// createReplicas creates and binds n new pods of assignment a for
// ensurePods, each at the lowest index of its group not in used, and
// adds them to created. A refused pod stops it: the pods created so far
// are deleted and the refusal returned as stop.
func (e *Executor) createReplicas(ctx context.Context, jv *view.Job, s *v1alpha1.TrainingJobStatus, a v1alpha1.Assignment, n int,
	used map[string]map[int]bool, created *[]*corev1.Pod) (errs []error, stop error) {
	tj := jv.TJ
	for range n {
		if used[a.Group] == nil {
			used[a.Group] = map[int]bool{}
		}
		idx := 0
		for used[a.Group][idx] {
			idx++
		}
		used[a.Group][idx] = true
		p, err := e.newPod(tj, s, a.Group, idx, a.Node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := e.createPod(ctx, p); err != nil {
			if ref := (*refusedPod)(nil); errors.As(err, &ref) {
				// The rest would be refused too, or start a job that
				// cannot have all its pods: stop, and take back the
				// pods this call created (they have not run).
				if derr := e.deletePods(ctx, jv, *created, 0); derr != nil {
					return nil, joinErrs([]error{err, derr})
				}
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		*created = append(*created, p)
		if err := e.bind(ctx, p, a.Node); err != nil {
			errs = append(errs, err)
		}
	}
	return errs, nil
}

// refusedPod is a replica pod the API server refused to create, with
// the typed reason: ReasonInvalidPod (the spec is invalid) and
// ReasonPodSecurity (the namespace's Pod Security level forbids it) cannot
// change, so the job fails; ReasonQuotaExceeded (a ResourceQuota) and
// ReasonPodRefused (any other admission refusal: a webhook, a LimitRange,
// a terminating namespace, drover's own RBAC) may, so the job releases
// its placement and waits.
type refusedPod struct {
	reason string
	err    error
}

func (r *refusedPod) Error() string { return r.err.Error() }
func (r *refusedPod) Unwrap() error { return r.err }

// permanent reports whether the refusal cannot change without a new spec.
func (r *refusedPod) permanent() bool {
	return r.reason == view.ReasonInvalidPod || r.reason == view.ReasonPodSecurity
}

// classifyRefusal returns the refusal of pod p that err is, or nil when
// err is not one (a conflict, a timeout: retried as any API error).
func classifyRefusal(p *corev1.Pod, err error) *refusedPod {
	reason := ""
	switch {
	case apierrors.IsInvalid(err):
		reason = view.ReasonInvalidPod
	case !apierrors.IsForbidden(err):
		return nil
	case strings.Contains(err.Error(), "violates PodSecurity"):
		reason = view.ReasonPodSecurity
	case strings.Contains(err.Error(), "exceeded quota"):
		reason = view.ReasonQuotaExceeded
	default:
		reason = view.ReasonPodRefused
	}
	return &refusedPod{reason: reason, err: fmt.Errorf("the API server refuses replica pod %s/%s: %w", p.Namespace, p.Name, err)}
}

// refused records in status s that the API server refused one of the
// job's pods: a permanent refusal fails the job; any other releases its
// placement (the job is Pending again, with the server's message as its
// reason and as the Admitted=False condition, and is offered to the
// policy again after RefusalBackoff). It may run more than once (a status
// write retried after a conflict); the caller deletes the pods and then
// calls refusedEvent.
func (e *Executor) refused(s *v1alpha1.TrainingJobStatus, ref *refusedPod) {
	s.Placement = nil
	s.Replicas = nil
	if ref.permanent() {
		e.finish(s, v1alpha1.PhaseFailed, ref.reason+": "+ref.Error())
		return
	}
	s.Phase = v1alpha1.PhasePending
	s.Reason = ref.reason + ": " + ref.Error()
	// The transition time is the backoff's start (backingOff): the
	// executor's clock, not the condition helper's.
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse,
		Reason: ref.reason, Message: ref.Error(), LastTransitionTime: metav1.NewTime(e.Now())})
	if s.Migrating {
		s.Migrating = false
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionMigrating, Status: metav1.ConditionFalse,
			Reason: ref.reason, Message: ref.Error()})
	}
}

// refusedEvent is the Warning Event of a refusal (see refused): Failed
// with the reason for a permanent one, else the reason (QuotaExceeded,
// PodRefused), so that `kubectl describe` shows the server's message.
func (e *Executor) refusedEvent(tj *v1alpha1.TrainingJob, ref *refusedPod) {
	if ref.permanent() {
		e.event(tj, true, "Failed", "%s: %s", ref.reason, ref.Error())
		return
	}
	e.event(tj, true, ref.reason, "%s; placement released, retrying in %v at the earliest", ref.Error(), view.RefusalBackoff)
}

func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	for _, e := range errs {
		if ref := (*refusedPod)(nil); errors.As(e, &ref) {
			return e
		}
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &apiError{err: fmt.Errorf("%d errors: %s", len(errs), strings.Join(msgs, "; "))}
}

// PodName is the name of a replica pod.
func PodName(job, group string, attempt int32, idx int) string {
	return fmt.Sprintf("%s-%s-a%d-%d", job, group, attempt, idx)
}

func podIndex(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// newPod builds a replica pod from the group's template.
func (e *Executor) newPod(tj *v1alpha1.TrainingJob, s *v1alpha1.TrainingJobStatus, group string, idx int, node string) (*corev1.Pod, error) {
	var tpl *corev1.PodTemplateSpec
	for i := range tj.Spec.ReplicaGroups {
		if tj.Spec.ReplicaGroups[i].Name == group {
			tpl = &tj.Spec.ReplicaGroups[i].Template
		}
	}
	if tpl == nil {
		return nil, fmt.Errorf("placement names group %q, which the spec does not have", group)
	}
	p := &corev1.Pod{ObjectMeta: *tpl.ObjectMeta.DeepCopy(), Spec: *tpl.Spec.DeepCopy()}
	p.Name = PodName(tj.Name, group, s.Attempt, idx)
	p.GenerateName = ""
	p.Namespace = tj.Namespace
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[v1alpha1.LabelJob] = tj.Name
	p.Labels[v1alpha1.LabelGroup] = group
	p.Labels[v1alpha1.LabelAttempt] = strconv.Itoa(int(s.Attempt))
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1alpha1.AnnotationNode] = node
	// A report in the template would be one no trainer made, and the
	// chart's admission policy refuses a pod created with one.
	delete(p.Annotations, v1alpha1.AnnotationReport)
	work := e.cfg.DefaultDurationSeconds
	if d := tj.Spec.EstimatedDurationSeconds; d != nil {
		work = float64(*d)
	}
	p.Annotations[v1alpha1.AnnotationWork] = strconv.FormatFloat(work, 'g', -1, 64)
	resume := ""
	if pr := s.Progress; pr != nil && pr.Checkpoint != "" {
		resume = pr.Checkpoint
		p.Annotations[v1alpha1.AnnotationResume] = pr.Checkpoint
		p.Annotations[v1alpha1.AnnotationResumeProgress] = strconv.FormatFloat(pr.CheckpointFraction, 'g', -1, 64)
	}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tj, v1alpha1.GroupVersion.WithKind("TrainingJob"))}
	p.Spec.SchedulerName = e.cfg.SchedulerName
	p.Spec.NodeName = ""
	g := tj.Grace()
	p.Spec.TerminationGracePeriodSeconds = &g
	if p.Spec.RestartPolicy == "" || p.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		// A replica that exits must stay exited so its job can complete.
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	env := []corev1.EnvVar{
		{Name: report.EnvPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: report.EnvPodNamespace, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: report.EnvResumeFrom, Value: resume},
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env...)
	}
	return p, nil
}

func (e *Executor) createPod(ctx context.Context, p *corev1.Pod) error {
	if err := e.fault("create pod " + p.Name); err != nil {
		return err
	}
	err := e.c.Create(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		// Created in an earlier cycle that the cache has not shown yet, or
		// by a scheduler that died before binding it.
		cur := &corev1.Pod{}
		if gerr := e.api.Get(ctx, client.ObjectKeyFromObject(p), cur); gerr != nil {
			return &apiError{err: fmt.Errorf("reading existing pod %s: %w", p.Name, gerr)}
		}
		*p = *cur
		return nil
	}
	if ref := classifyRefusal(p, err); ref != nil {
		return ref
	}
	if err != nil {
		return &apiError{err: fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)}
	}
	e.remember(p)
	return nil
}

// bind binds a pod through the Binding subresource. A pod that is already
// bound is left alone (the API server refuses to bind it again).
func (e *Executor) bind(ctx context.Context, p *corev1.Pod, node string) error {
	if p.Spec.NodeName != "" {
		return nil
	}
	if err := e.fault("bind pod " + p.Name); err != nil {
		return err
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	err := e.c.SubResource("binding").Create(ctx, p, b)
	switch {
	case err == nil:
		e.m.Bindings.Inc()
		if p.Labels[v1alpha1.LabelJob] != "" {
			bound := p.DeepCopy()
			bound.Spec.NodeName = node
			e.remember(bound)
		}
		return nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// Already bound (by an earlier run of this step) or gone.
		return nil
	}
	return &apiError{err: fmt.Errorf("binding pod %s/%s to %s: %w", p.Namespace, p.Name, node, err)}
}

// deletePods deletes pods with the given grace period (the container gets
// SIGTERM and that long to checkpoint).
func (e *Executor) deletePods(ctx context.Context, jv *view.Job, pods []*corev1.Pod, grace int64) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := e.fault("delete pod " + p.Name); err != nil {
			return err
		}
		err := e.c.Delete(ctx, p, client.GracePeriodSeconds(grace), client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		e.forget(p)
	}
	if len(errs) > 0 {
		return &apiError{err: joinErrs(errs)}
	}
	return nil
}

// ObserveReport records the report on a replica pod as the informer
// delivers it. A trainer that checkpoints on SIGTERM writes its report and
// exits at once, so the pod may be gone before the next cycle reads it;
// the informer's update event still carries it. A report dated more than
// ReportClockSkew ahead of the scheduler's clock is not recorded; it gets
// a Warning Event (ReportRejected) on the pod, once per report.
func (e *Executor) ObserveReport(p *corev1.Pod) {
	name := p.Labels[v1alpha1.LabelJob]
	owner := metav1.GetControllerOf(p)
	if name == "" || owner == nil || owner.Kind != "TrainingJob" || owner.Name != name {
		return
	}
	r, err := report.Parse(p.Annotations[v1alpha1.AnnotationReport])
	if err != nil || r == nil {
		return
	}
	key := p.Namespace + "/" + name
	if now := e.Now(); e.future(r, now) {
		e.mu.Lock()
		seen := e.rejected[key].Equal(r.Time)
		e.rejected[key] = r.Time
		e.mu.Unlock()
		if !seen {
			e.log.V(1).Info("report dated in the future ignored", "pod", p.Namespace+"/"+p.Name, "time", r.Time, "now", now)
			e.event(p, true, "ReportRejected", "drover.dev/report dated %s is more than %v ahead of the scheduler's clock (%s); ignored",
				r.Time.UTC().Format(time.RFC3339), e.cfg.ReportClockSkew.Duration, now.UTC().Format(time.RFC3339))
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.reports[key]; !ok || old.owner != owner.UID || r.Time.After(old.r.Time) {
		e.reports[key] = observed{r: r, owner: owner.UID}
	}
}

// future reports whether r is dated more than ReportClockSkew after now.
func (e *Executor) future(r *report.Report, now time.Time) bool {
	return r.Time.After(now.Add(e.cfg.ReportClockSkew.Duration))
}

// observed is a report the informer delivered, with the UID of the
// TrainingJob that controls its pod.
type observed struct {
	r     *report.Report
	owner types.UID
}

// observedReport is the newest report seen on a pod controlled by the job
// with this key and UID (a job deleted and created again under the same
// name does not inherit its predecessor's reports).
func (e *Executor) observedReport(key string, uid types.UID) *report.Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	if o, ok := e.reports[key]; ok && o.owner == uid {
		return o.r
	}
	return nil
}

// deferredProgress is what the scheduler saw of a running job but has not
// written yet (Config.ProgressPeriod): progress copied from trainer
// reports, the metric history, replica counts, and the move from
// Admitted to Running once every replica runs.
type deferredProgress struct {
	attempt  int32
	phase    v1alpha1.TrainingJobPhase
	replicas []v1alpha1.GroupStatus
	progress *v1alpha1.ProgressStatus
	evals    []v1alpha1.EvalSample
	category string
	// since is when the oldest unwritten change was seen.
	since time.Time
}

// overlay lays the deferred status over a job read from the cache or the
// API server, whose copy is older (only this scheduler writes status, and
// any status write of the job clears the deferred one). A job on another
// attempt is left alone.
func (dp *deferredProgress) overlay(tj *v1alpha1.TrainingJob) {
	s := &tj.Status
	if s.Attempt != dp.attempt || (s.Phase != v1alpha1.PhaseAdmitted && s.Phase != v1alpha1.PhaseRunning) {
		return
	}
	s.Phase = dp.phase
	s.Replicas = slices.Clone(dp.replicas)
	s.Progress = dp.progress.DeepCopy()
	s.Evals = slices.Clone(dp.evals)
	s.ProgressCategory = dp.category
}

func (dp *deferredProgress) set(s *v1alpha1.TrainingJobStatus) {
	dp.attempt, dp.phase = s.Attempt, s.Phase
	dp.replicas = slices.Clone(s.Replicas)
	dp.progress, dp.evals, dp.category = s.Progress.DeepCopy(), slices.Clone(s.Evals), s.ProgressCategory
}

// deferProgress reports whether the change from cur to next may wait in
// memory: it touches only what a running job's trainers and kubelets
// report (progress, evals, category, replica counts, Admitted to Running),
// and the oldest unwritten change is younger than ProgressPeriod. It then
// records next for the following cycles (Read lays it over the cache).
// With no change at all it reports whether a deferred change is still
// young enough to wait.
func (e *Executor) deferProgress(key string, next, cur *v1alpha1.TrainingJobStatus) bool {
	if next.Phase != cur.Phase && !(cur.Phase == v1alpha1.PhaseAdmitted && next.Phase == v1alpha1.PhaseRunning) {
		return false
	}
	other := *next
	other.Phase, other.Replicas = cur.Phase, cur.Replicas
	other.Progress, other.Evals, other.ProgressCategory = cur.Progress, cur.Evals, cur.ProgressCategory
	if !semantic.DeepEqual(&other, cur) {
		return false
	}
	now := e.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	dp := e.progress[key]
	if dp == nil {
		if semantic.DeepEqual(next, cur) {
			return true // nothing to write
		}
		dp = &deferredProgress{since: now}
		e.progress[key] = dp
	}
	if now.Sub(dp.since) >= e.cfg.ProgressPeriod.Duration {
		return false // written now; the write clears dp
	}
	dp.set(next)
	return true
}
