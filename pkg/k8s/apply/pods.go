package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/report"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// Finish ends a job in status s: phase (Succeeded or Failed), reason,
// completion time, the matching condition; a success reports full
// progress.
func (w *Writer) Finish(s *v1alpha1.TrainingJobStatus, phase v1alpha1.TrainingJobPhase, reason string) {
	s.Phase = phase
	s.Reason = reason
	s.CompletionTime = &metav1.Time{Time: w.Now()}
	s.Migrating = false
	SetTerminal(s, phase, reason)
	if s.Progress != nil && phase == v1alpha1.PhaseSucceeded {
		s.Progress.Fraction = 1
	}
}

// SetTerminal sets the Succeeded or Failed condition of a finished job
// (Failed for a rejected or invalid one too) and clears Suspended.
func SetTerminal(s *v1alpha1.TrainingJobStatus, phase v1alpha1.TrainingJobPhase, reason string) {
	typ, why := v1alpha1.ConditionFailed, string(phase)
	if phase == v1alpha1.PhaseSucceeded {
		typ = v1alpha1.ConditionSucceeded
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: why, Message: reason})
	if meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionSuspended) != nil {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionFalse, Reason: string(phase)})
	}
}

// EnsurePods creates, binds and deletes the replica pods of an admitted
// job so that they match its placement in status s. Pod names are
// deterministic (job, group, attempt, index), so creating a pod twice
// fails harmlessly with AlreadyExists; a pod records its node before it is
// bound, so a restarted scheduler completes the same binding; binding a
// pod that is already bound is refused by the API server. Together these
// make every step safe to repeat.
func (w *Writer) EnsurePods(ctx context.Context, jv *view.Job, s *v1alpha1.TrainingJobStatus) error {
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
	if err := w.DeletePods(ctx, jv, stale, tj.Grace()); err != nil {
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
			if err := w.DeletePods(ctx, jv, pods[len(pods)-extra:], tj.Grace()); err != nil {
				errs = append(errs, err)
			}
			pods = pods[:len(pods)-extra]
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				if err := w.bind(ctx, p, a.Node); err != nil {
					errs = append(errs, err)
				}
			}
		}
		added, stop := w.createReplicas(ctx, jv, s, a, int(a.Count)-len(pods), used, &created)
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
			if err := w.DeletePods(ctx, jv, pods, tj.Grace()); err != nil {
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
func (w *Writer) createReplicas(ctx context.Context, jv *view.Job, s *v1alpha1.TrainingJobStatus, a v1alpha1.Assignment, n int,
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
		p, err := w.newPod(tj, s, a.Group, idx, a.Node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := w.createPod(ctx, p); err != nil {
			if ref := (*RefusedPod)(nil); errors.As(err, &ref) {
				// The rest would be refused too, or start a job that
				// cannot have all its pods: stop, and take back the
				// pods this call created (they have not run).
				if derr := w.DeletePods(ctx, jv, *created, 0); derr != nil {
					return nil, joinErrs([]error{err, derr})
				}
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		*created = append(*created, p)
		if err := w.bind(ctx, p, a.Node); err != nil {
			errs = append(errs, err)
		}
	}
	return errs, nil
}

// RefusedPod is a replica pod the API server refused to create, with
// the typed reason: ReasonInvalidPod (the spec is invalid) and
// ReasonPodSecurity (the namespace's Pod Security level forbids it) cannot
// change, so the job fails; ReasonQuotaExceeded (a ResourceQuota) and
// ReasonPodRefused (any other admission refusal: a webhook, a LimitRange,
// a terminating namespace, drover's own RBAC) may, so the job releases
// its placement and waits.
type RefusedPod struct {
	reason string
	err    error
}

func (r *RefusedPod) Error() string { return r.err.Error() }
func (r *RefusedPod) Unwrap() error { return r.err }

// permanent reports whether the refusal cannot change without a new spec.
func (r *RefusedPod) permanent() bool {
	return r.reason == view.ReasonInvalidPod || r.reason == view.ReasonPodSecurity
}

// classifyRefusal returns the refusal of pod p that err is, or nil when
// err is not one (a conflict, a timeout: retried as any API error).
func classifyRefusal(p *corev1.Pod, err error) *RefusedPod {
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
	return &RefusedPod{reason: reason, err: fmt.Errorf("the API server refuses replica pod %s/%s: %w", p.Namespace, p.Name, err)}
}

// Refused records in status s that the API server refused one of the
// job's pods: a permanent refusal fails the job; any other releases its
// placement (the job is Pending again, with the server's message as its
// reason and as the Admitted=False condition, and is offered to the
// policy again after RefusalBackoff). It may run more than once (a status
// write retried after a conflict); the caller deletes the pods and then
// calls RefusedEvent.
func (w *Writer) Refused(s *v1alpha1.TrainingJobStatus, ref *RefusedPod) {
	s.Placement = nil
	s.Replicas = nil
	if ref.permanent() {
		w.Finish(s, v1alpha1.PhaseFailed, ref.reason+": "+ref.Error())
		return
	}
	s.Phase = v1alpha1.PhasePending
	s.Reason = ref.reason + ": " + ref.Error()
	// The transition time is the backoff's start (backingOff): the
	// executor's clock, not the condition helper's.
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse,
		Reason: ref.reason, Message: ref.Error(), LastTransitionTime: metav1.NewTime(w.Now())})
	if s.Migrating {
		s.Migrating = false
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionMigrating, Status: metav1.ConditionFalse,
			Reason: ref.reason, Message: ref.Error()})
	}
}

// RefusedEvent is the Warning Event of a refusal (see Refused): Failed
// with the reason for a permanent one, else the reason (QuotaExceeded,
// PodRefused), so that `kubectl describe` shows the server's message.
func (w *Writer) RefusedEvent(tj *v1alpha1.TrainingJob, ref *RefusedPod) {
	if ref.permanent() {
		w.Event(tj, true, "Failed", "%s: %s", ref.reason, ref.Error())
		return
	}
	w.Event(tj, true, ref.reason, "%s; placement released, retrying in %v at the earliest", ref.Error(), view.RefusalBackoff)
}

func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	for _, e := range errs {
		if ref := (*RefusedPod)(nil); errors.As(e, &ref) {
			return e
		}
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &APIError{Err: fmt.Errorf("%d errors: %s", len(errs), strings.Join(msgs, "; "))}
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
func (w *Writer) newPod(tj *v1alpha1.TrainingJob, s *v1alpha1.TrainingJobStatus, group string, idx int, node string) (*corev1.Pod, error) {
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
	work := w.Cfg.DefaultDurationSeconds
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
	p.Spec.SchedulerName = w.Cfg.SchedulerName
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

func (w *Writer) createPod(ctx context.Context, p *corev1.Pod) error {
	if err := w.fault("create pod " + p.Name); err != nil {
		return err
	}
	err := w.C.Create(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		// Created in an earlier cycle that the cache has not shown yet, or
		// by a scheduler that died before binding it.
		cur := &corev1.Pod{}
		if gerr := w.API.Get(ctx, client.ObjectKeyFromObject(p), cur); gerr != nil {
			return &APIError{Err: fmt.Errorf("reading existing pod %s: %w", p.Name, gerr)}
		}
		*p = *cur
		return nil
	}
	if ref := classifyRefusal(p, err); ref != nil {
		return ref
	}
	if err != nil {
		return &APIError{Err: fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)}
	}
	w.remember(p)
	return nil
}

// bind binds a pod through the Binding subresource. A pod that is already
// bound is left alone (the API server refuses to bind it again).
func (w *Writer) bind(ctx context.Context, p *corev1.Pod, node string) error {
	if p.Spec.NodeName != "" {
		return nil
	}
	if err := w.fault("bind pod " + p.Name); err != nil {
		return err
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	err := w.C.SubResource("binding").Create(ctx, p, b)
	switch {
	case err == nil:
		w.M.Bindings.Inc()
		if p.Labels[v1alpha1.LabelJob] != "" {
			bound := p.DeepCopy()
			bound.Spec.NodeName = node
			w.remember(bound)
		}
		return nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// Already bound (by an earlier run of this step) or gone.
		return nil
	}
	return &APIError{Err: fmt.Errorf("binding pod %s/%s to %s: %w", p.Namespace, p.Name, node, err)}
}

// DeletePods deletes pods with the given grace period (the container gets
// SIGTERM and that long to checkpoint).
func (w *Writer) DeletePods(ctx context.Context, jv *view.Job, pods []*corev1.Pod, grace int64) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := w.fault("delete pod " + p.Name); err != nil {
			return err
		}
		err := w.C.Delete(ctx, p, client.GracePeriodSeconds(grace), client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		w.forget(p)
	}
	if len(errs) > 0 {
		return &APIError{Err: joinErrs(errs)}
	}
	return nil
}

// deferredProgress is what the scheduler saw of a running job but has not
// written yet (k8s.Config.ProgressPeriod): progress copied from trainer
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

// DeferProgress reports whether the change from cur to next may wait in
// memory: it touches only what a running job's trainers and kubelets
// report (progress, evals, category, running replica counts, Admitted to
// Running), and the oldest unwritten change is younger than
// ProgressPeriod. A change of a group's desired count once the status
// has counts (a resize) is the scheduler's decision and is written at
// once, so that the Replicas column agrees with the Resized event; the
// first counts of a job that just started may wait. It then
// records next for the following cycles (Settle lays it over the cache).
// With no change at all it reports whether a deferred change is still
// young enough to wait.
func (w *Writer) DeferProgress(key string, next, cur *v1alpha1.TrainingJobStatus) bool {
	if next.Phase != cur.Phase && !(cur.Phase == v1alpha1.PhaseAdmitted && next.Phase == v1alpha1.PhaseRunning) {
		return false
	}
	if len(cur.Replicas) > 0 && !slices.EqualFunc(next.Replicas, cur.Replicas, func(a, b v1alpha1.GroupStatus) bool {
		return a.Name == b.Name && a.Desired == b.Desired
	}) {
		return false
	}
	other := *next
	other.Phase, other.Replicas = cur.Phase, cur.Replicas
	other.Progress, other.Evals, other.ProgressCategory = cur.Progress, cur.Evals, cur.ProgressCategory
	if !StatusEqual(&other, cur) {
		return false
	}
	now := w.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	dp := w.progress[key]
	if dp == nil {
		// next is other with its own phase, replicas and progress: equal
		// to cur when those are (other is), which spares a second walk of
		// the whole status for every waiting job every cycle.
		if next.Phase == cur.Phase && next.ProgressCategory == cur.ProgressCategory &&
			Semantic.DeepEqual(next.Replicas, cur.Replicas) && Semantic.DeepEqual(next.Progress, cur.Progress) &&
			Semantic.DeepEqual(next.Evals, cur.Evals) {
			return true // nothing to write
		}
		dp = &deferredProgress{since: now}
		w.progress[key] = dp
	}
	if now.Sub(dp.since) >= w.Cfg.ProgressPeriod {
		return false // written now; the write clears dp
	}
	dp.set(next)
	return true
}
