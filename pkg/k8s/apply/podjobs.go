package apply

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
func (a *Cycle) applyPod(ctx context.Context, pj *view.PodJob, act policy.Action) error {
	w := a.wr
	switch act := act.(type) {
	case policy.Start:
		node := a.v.Snap.Nodes[act.Placement[0].Node].Name
		a.Take(pj.St.Job, act.Placement, 1)
		pj.St.Phase = cluster.Running
		pj.St.Placement = act.Placement
		if err := a.evictPlaceholders(ctx, pj.St.Job, act.Placement); err != nil {
			return err
		}
		// The Binding is the start's only API call: it runs on the
		// cycle's workers, as a TrainingJob's calls do, so that binding
		// many pods is not one round trip after another.
		a.async(act.Job, func(func()) error {
			if err := w.bind(ctx, pj.Pod, node); err != nil {
				return err
			}
			w.M.Actions.WithLabelValues("start").Inc()
			w.Event(pj.Pod, false, "Scheduled", "drover (%s) bound %s/%s to %s", w.Policy, pj.Pod.Namespace, pj.Pod.Name, node)
			return nil
		})
		return nil
	case policy.Preempt:
		pj.St.Phase = cluster.Suspending
		w.M.Actions.WithLabelValues("preempt").Inc()
		w.Event(pj.Pod, false, "Preempted", "%s", preemptReason(act))
		grace := int64(math.Ceil(act.Grace))
		if err := w.fault("delete pod " + pj.Pod.Name); err != nil {
			return err
		}
		if err := w.C.Delete(ctx, pj.Pod, client.GracePeriodSeconds(grace)); err != nil && !apierrors.IsNotFound(err) {
			return &APIError{Err: fmt.Errorf("preempting pod %s: %w", pj.Pod.Name, err)}
		}
		return nil
	case policy.Reject:
		pj.St.Phase = cluster.Rejected
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, view.AnnotationRejected, act.Reason)
		if err := w.C.Patch(ctx, pj.Pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
			return &APIError{Err: fmt.Errorf("marking pod %s rejected: %w", pj.Pod.Name, err)}
		}
		w.M.Actions.WithLabelValues("reject").Inc()
		w.Event(pj.Pod, true, "Rejected", "rejected by %s: %s", w.Policy, act.Reason)
		return nil
	case policy.Wait:
		return w.SetPodScheduled(ctx, pj.Pod, act.Reason)
	case policy.SetLabel:
		return nil // a plain pod has nowhere to keep them
	}
	// Migrate and Resize are refused by Cycle.Unsupported.
	return fmt.Errorf("unsupported action %T for a plain pod", act)
}
