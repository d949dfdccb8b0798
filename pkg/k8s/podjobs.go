package k8s

import (
	"context"
	"fmt"
	"math"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
)

// Plain pods opt in to drover with schedulerName set to drover's, and the
// drover.dev/schedule label gives their class (value TE or BE; anything
// else, or no label, means BE). That
// covers the pods of Kubernetes Jobs and of Kubeflow PyTorchJob/TFJob,
// whose templates can carry both: each pod becomes a one-replica job that
// the policy places (a Binding), may preempt (a deletion with the pod's
// grace period; the owning controller recreates it, and the new pod queues
// again) or reject. Such jobs cannot be migrated or resized, and their
// policy labels are not persisted.

// applyPod carries out a validated action on an opted-in pod.
func (a *applier) applyPod(ctx context.Context, pj *view.PodJob, act policy.Action) error {
	e := a.e
	switch act := act.(type) {
	case policy.Start:
		node := a.v.Snap.Nodes[act.Placement[0].Node].Name
		a.take(pj.St.Job, act.Placement, 1)
		pj.St.Phase = cluster.Running
		pj.St.Placement = act.Placement
		if err := a.evictPlaceholders(ctx, pj.St.Job, act.Placement); err != nil {
			return err
		}
		// The Binding is the start's only API call: it runs on the
		// cycle's workers, as a TrainingJob's calls do, so that binding
		// many pods is not one round trip after another.
		a.async(act.Job, func(func()) error {
			if err := e.bind(ctx, pj.Pod, node); err != nil {
				return err
			}
			e.m.Actions.WithLabelValues("start").Inc()
			e.event(pj.Pod, false, "Scheduled", "drover (%s) bound %s/%s to %s", e.pol.Name(), pj.Pod.Namespace, pj.Pod.Name, node)
			return nil
		})
		return nil
	case policy.Preempt:
		pj.St.Phase = cluster.Suspending
		e.m.Actions.WithLabelValues("preempt").Inc()
		e.event(pj.Pod, false, "Preempted", "%s", preemptReason(act))
		grace := int64(math.Ceil(act.Grace))
		if err := e.fault("delete pod " + pj.Pod.Name); err != nil {
			return err
		}
		if err := e.c.Delete(ctx, pj.Pod, client.GracePeriodSeconds(grace)); err != nil && !apierrors.IsNotFound(err) {
			return &apiError{err: fmt.Errorf("preempting pod %s: %w", pj.Pod.Name, err)}
		}
		return nil
	case policy.Reject:
		pj.St.Phase = cluster.Rejected
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, view.AnnotationRejected, act.Reason)
		if err := e.c.Patch(ctx, pj.Pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
			return &apiError{err: fmt.Errorf("marking pod %s rejected: %w", pj.Pod.Name, err)}
		}
		e.m.Actions.WithLabelValues("reject").Inc()
		e.event(pj.Pod, true, "Rejected", "rejected by %s: %s", e.pol.Name(), act.Reason)
		return nil
	case policy.Wait:
		return e.setPodScheduled(ctx, pj.Pod, act.Reason)
	case policy.SetLabel:
		return nil // a plain pod has nowhere to keep them
	}
	// Migrate and Resize are refused by applier.Unsupported.
	return fmt.Errorf("unsupported action %T for a plain pod", act)
}
