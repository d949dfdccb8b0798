package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
)

// Gangs from PodGroups. Pods with drover's schedulerName and the label
// scheduling.x-k8s.io/pod-group (scheduler-plugins' coscheduling, which the
// Kubeflow training-operator creates with --gang-scheduler-name), or the
// Volcano-style annotation scheduling.k8s.io/group-name, form one job keyed
// by their PodGroup. Its replica groups are the pods' replica types
// (training.kubeflow.org/replica-type: master, worker, ps, launcher; or
// jobset.sigs.k8s.io/replicatedjob-name), each group's demand the largest
// of its pods' requests and its node constraints those of its first pod.
// It keeps scheduler-plugins v0.33.5 coscheduling's contract
// (pkg/coscheduling/core, pkg/controllers/podgroup_controller.go): pods
// whose PodGroup is not visible wait (PodGroupNotFound); the job is held
// until minMember pods exist (operators create them one by one) and while
// minResources exceed the free room; then the policy places its first
// minMember pods like any other job and the executor binds them all or
// none; pods beyond minMember, and a running gang's recreated members,
// follow as Permit lets them (gangJob); the PodGroup's status is written
// as its controller would (podGroupPhase). Preemption deletes every pod
// of the gang with the grace period; the owning operator recreates them
// and they queue again as the same job, whose preemption count and
// requeue time are kept on the PodGroup (annotations). Migrate and Resize
// are refused.

// applyGang carries out a validated action on a gang.
func (a *Cycle) applyGang(ctx context.Context, gj *view.Gang, act policy.Action) error {
	w := a.wr
	switch act := act.(type) {
	case policy.Start:
		return a.startGang(ctx, gj, act)
	case policy.Preempt:
		return a.preemptGang(ctx, gj, act)
	case policy.Reject:
		return a.rejectGang(ctx, gj, act)
	case policy.Wait:
		return w.GangWaiting(ctx, gj, act.Reason)
	case policy.SetLabel:
		return a.labelGang(ctx, gj, act)
	}
	return fmt.Errorf("unsupported action %T for a PodGroup gang", act)
}

// startGang binds all of the gang's pods or none: each pod is marked
// with its node, then bound, on the start workers.
func (a *Cycle) startGang(ctx context.Context, gj *view.Gang, act policy.Start) error {
	w := a.wr
	pods, err := gj.PlacedPods(act.Placement)
	if err != nil {
		return err
	}
	if len(pods) != len(gj.Members) {
		return fmt.Errorf("placement binds %d of the gang's %d pods: all or none", len(pods), len(gj.Members))
	}
	a.Take(gj.St.Job, act.Placement, 1)
	gj.St.Phase = cluster.Running
	gj.St.Placement = act.Placement
	if err := a.evictPlaceholders(ctx, gj.St.Job, act.Placement); err != nil {
		return err
	}
	nodes := make([]string, len(pods))
	for i := range pods {
		nodes[i] = a.v.Snap.Nodes[act.Placement[i].Node].Name
	}
	desc := a.describe(act.Placement)
	// The API calls run on the cycle's start workers, as a
	// TrainingJob's do: one gang's calls stay in order, but gangs do
	// not wait for each other's round trips.
	a.async(act.Job, func(func()) error {
		// Every pod is marked with its node before any is bound, so
		// that a scheduler that dies half way binds the rest to the
		// same nodes (reconcileGang) rather than leaving a partial
		// gang.
		for i, p := range pods {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationNode, nodes[i])
			if err := w.C.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				return &APIError{Err: fmt.Errorf("assigning pod %s to %s: %w", p.Name, nodes[i], err)}
			}
		}
		for i, p := range pods {
			if err := w.bind(ctx, p, nodes[i]); err != nil {
				return err
			}
		}
		if gj.PG != nil && gj.PG.Annotations[view.AnnotationReason] != "" {
			if err := w.annotatePodGroup(ctx, gj.PG, map[string]string{view.AnnotationReason: ""}); err != nil {
				return err
			}
		}
		w.M.Actions.WithLabelValues("start").Inc()
		w.gangEvent(gj, false, "Scheduled", "drover (%s) bound the gang's %d pods to %s", w.Policy, len(pods), desc)
		return nil
	})
	return nil
}

// preemptGang records the preemption on the PodGroup and deletes every
// pod of the gang with the grace period.
func (a *Cycle) preemptGang(ctx context.Context, gj *view.Gang, act policy.Preempt) error {
	w := a.wr
	gj.St.Phase = cluster.Suspending
	w.M.Actions.WithLabelValues("preempt").Inc()
	if gj.PG != nil {
		now := w.Now().UTC().Format(time.RFC3339Nano)
		n := gj.St.Preemptions + 1
		if err := w.annotatePodGroup(ctx, gj.PG, map[string]string{view.AnnotationPreemptions: strconv.Itoa(n), view.AnnotationRequeuedAt: now}); err != nil {
			return err
		}
	}
	// Every pod of the gang goes, its unbound members too: the gang
	// queues again whole.
	var victims []*corev1.Pod
	for _, p := range gj.Pods {
		if p.DeletionTimestamp == nil {
			victims = append(victims, p)
		}
	}
	w.gangEvent(gj, false, "Preempted", "%s; deleting its %d pods", preemptReason(act), len(victims))
	grace := int64(math.Ceil(act.Grace))
	for _, p := range victims {
		if err := w.fault("delete pod " + p.Name); err != nil {
			return err
		}
		if err := w.C.Delete(ctx, p, client.GracePeriodSeconds(grace)); err != nil && !apierrors.IsNotFound(err) {
			return &APIError{Err: fmt.Errorf("preempting pod %s: %w", p.Name, err)}
		}
	}
	return nil
}

// rejectGang marks the PodGroup and the gang's pods rejected.
func (a *Cycle) rejectGang(ctx context.Context, gj *view.Gang, act policy.Reject) error {
	w := a.wr
	gj.St.Phase = cluster.Rejected
	if gj.PG != nil {
		if err := w.annotatePodGroup(ctx, gj.PG, map[string]string{view.AnnotationRejected: act.Reason, view.AnnotationReason: act.Reason}); err != nil {
			return err
		}
	}
	for _, p := range gj.Members {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, view.AnnotationRejected, act.Reason)
		if err := w.C.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
			return &APIError{Err: fmt.Errorf("marking pod %s rejected: %w", p.Name, err)}
		}
	}
	w.M.Actions.WithLabelValues("reject").Inc()
	w.gangEvent(gj, true, "Rejected", "rejected by %s: %s", w.Policy, act.Reason)
	return nil
}

// labelGang writes one policy label to the PodGroup's annotation.
func (a *Cycle) labelGang(ctx context.Context, gj *view.Gang, act policy.SetLabel) error {
	w := a.wr
	if gj.PG == nil || gj.St.Labels[act.Key] == act.Value {
		return nil
	}
	labels := map[string]string{}
	for k, v := range gj.St.Labels {
		labels[k] = v
	}
	labels[act.Key] = act.Value
	b, _ := json.Marshal(labels)
	gj.St.Labels = labels
	return w.annotatePodGroup(ctx, gj.PG, map[string]string{v1alpha1.AnnotationLabels: string(b)})
}

// GangWaiting records why a gang waits: drover.dev/reason on its
// PodGroup and PodScheduled=False (reason Unschedulable, or
// SchedulingGated) on its unbound pods, each only when it changed; with
// no PodGroup, an Event on each pod whose reason changed.
func (w *Writer) GangWaiting(ctx context.Context, gj *view.Gang, reason string) error {
	if gj.PG != nil && gj.PG.Annotations[view.AnnotationReason] != reason {
		if err := w.annotatePodGroup(ctx, gj.PG, map[string]string{view.AnnotationReason: reason}); err != nil {
			return err
		}
		w.gangEvent(gj, false, "Waiting", "%s", reason)
	}
	for _, p := range gj.Pods {
		if view.PodNode(p) != "" || p.DeletionTimestamp != nil {
			continue
		}
		if gj.PG == nil && !podScheduledSays(p, reason) {
			// No PodGroup to carry the Event: each pod gets one when its
			// reason changes (PodGroupNotFound, a Warning).
			kind := "Waiting"
			if code, _, _ := strings.Cut(reason, ":"); code == view.ReasonPodGroupNotFound {
				kind = code
			}
			w.Event(p, kind != "Waiting", kind, "%s", reason)
		}
		if err := w.SetPodScheduled(ctx, p, reason); err != nil {
			return err
		}
	}
	return nil
}

// podScheduledSays reports whether the pod's PodScheduled condition is
// False with message msg.
func podScheduledSays(p *corev1.Pod, msg string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message == msg {
			return true
		}
	}
	return false
}

// annotatePodGroup merges annotations into a PodGroup.
func (w *Writer) annotatePodGroup(ctx context.Context, pg *schedv1alpha1.PodGroup, ann map[string]string) error {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	if err := w.C.Patch(ctx, pg, client.RawPatch(types.MergePatchType, b)); err != nil && !apierrors.IsNotFound(err) {
		return &APIError{Err: fmt.Errorf("annotating podgroup %s/%s: %w", pg.Namespace, pg.Name, err)}
	}
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	for k, v := range ann {
		pg.Annotations[k] = v
	}
	return nil
}

func (w *Writer) gangEvent(gj *view.Gang, warning bool, reason, format string, args ...any) {
	if gj.PG != nil {
		w.Event(gj.PG, warning, reason, format, args...)
		return
	}
	if len(gj.Pods) > 0 {
		w.Event(gj.Pods[0], warning, reason, format, args...)
	}
}

// ReconcileGang binds members drover assigned but did not bind (a crash
// between the two), reports why an incomplete gang waits, and writes the
// PodGroup's status as scheduler-plugins' PodGroup controller does
// (podGroupPhase): phase, running, succeeded and failed counts, occupiedBy,
// and the time scheduling started.
func (w *Writer) ReconcileGang(ctx context.Context, v *view.View, gj *view.Gang) error {
	var errs []error
	if gj.St != nil && gj.St.Phase == cluster.Running {
		for _, p := range gj.Members {
			if p.Spec.NodeName == "" && p.Annotations[v1alpha1.AnnotationNode] != "" {
				if err := w.bind(ctx, p, p.Annotations[v1alpha1.AnnotationNode]); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if gj.Waiting != "" {
		if err := w.GangWaiting(ctx, gj, gj.Waiting); err != nil {
			errs = append(errs, err)
		}
	}
	if pg := gj.PG; pg != nil {
		want := pg.Status
		want.Phase = podGroupPhase(pg, len(gj.Pods)+gj.Succeeded+gj.Failed, int32(gj.Running), int32(gj.Succeeded), int32(gj.Failed))
		want.Running, want.Succeeded, want.Failed = int32(gj.Running), int32(gj.Succeeded), int32(gj.Failed)
		if want.OccupiedBy == "" && want.Phase != schedv1alpha1.PodGroupPending && len(gj.Pods) > 0 {
			want.OccupiedBy = occupiedBy(gj.Pods[0])
		}
		if want.ScheduleStartTime.IsZero() {
			want.ScheduleStartTime = metav1.Time{Time: w.Now()}
		}
		if want.Phase != pg.Status.Phase || want.Running != pg.Status.Running || want.Succeeded != pg.Status.Succeeded ||
			want.Failed != pg.Status.Failed || want.OccupiedBy != pg.Status.OccupiedBy || pg.Status.ScheduleStartTime.IsZero() {
			obj := pg.DeepCopy()
			obj.Status = want
			if err := w.C.Status().Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("podgroup %s/%s status: %w", pg.Namespace, pg.Name, err))
			} else if err == nil {
				*pg = *obj
			}
		}
	}
	return joinErrs(errs)
}

// podGroupPhase is the phase scheduler-plugins v0.33.5's PodGroup
// controller (pkg/controllers/podgroup_controller.go) settles on for a
// PodGroup with pods pods in all (finished ones included), of which
// running run, succeeded ok and failed bad: it reconciles again after each
// status write, so its steps are taken here until the phase stays. Finished
// and Failed are final.
func podGroupPhase(pg *schedv1alpha1.PodGroup, pods int, run, ok, bad int32) schedv1alpha1.PodGroupPhase {
	phase := pg.Status.Phase
	for range 3 {
		next := phase
		switch phase {
		case schedv1alpha1.PodGroupFinished, schedv1alpha1.PodGroupFailed:
			return phase
		case "":
			next = schedv1alpha1.PodGroupPending
		case schedv1alpha1.PodGroupPending:
			if pods >= int(pg.Spec.MinMember) {
				next = schedv1alpha1.PodGroupScheduling
			}
		default:
			mm := pg.Spec.MinMember
			switch {
			case pods < int(mm):
				next = schedv1alpha1.PodGroupPending
			case ok+run < mm:
				next = schedv1alpha1.PodGroupScheduling
			default:
				next = schedv1alpha1.PodGroupRunning
			}
			if pods >= int(mm) {
				if bad != 0 && bad+run+ok >= mm {
					next = schedv1alpha1.PodGroupFailed
				}
				if ok >= mm {
					next = schedv1alpha1.PodGroupFinished
				}
			}
		}
		if next == phase {
			break
		}
		phase = next
	}
	return phase
}

// occupiedBy is the PodGroup controller's status.occupiedBy: the pod's
// owners as namespace/name, sorted and comma-separated.
func occupiedBy(p *corev1.Pod) string {
	var refs []string
	for _, r := range p.OwnerReferences {
		refs = append(refs, p.Namespace+"/"+r.Name)
	}
	slices.Sort(refs)
	return strings.Join(refs, ",")
}

// SetPodScheduled sets the pod's PodScheduled condition to False with
// drover's reason as the message (reason SchedulingGated for a gated
// pod, else Unschedulable), as kube-scheduler does for a pod it cannot
// place, so that cluster-autoscaler and kubectl see why it waits. Nothing
// is written when the condition already says so.
func (w *Writer) SetPodScheduled(ctx context.Context, p *corev1.Pod, message string) error {
	reason := corev1.PodReasonUnschedulable
	if len(p.Spec.SchedulingGates) > 0 {
		reason = corev1.PodReasonSchedulingGated
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == reason && c.Message == message {
			return nil
		}
	}
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: message,
		LastTransitionTime: metav1.Time{Time: w.Now()}}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	if err := w.C.Status().Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, b)); err != nil && !apierrors.IsNotFound(err) {
		return &APIError{Err: fmt.Errorf("setting PodScheduled on pod %s: %w", p.Name, err)}
	}
	return nil
}
