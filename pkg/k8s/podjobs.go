package k8s

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/policy"
	dres "github.com/drover-sched/drover/pkg/resource"
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

// AnnotationRejected marks an opted-in pod the policy rejected; drover
// leaves it unscheduled from then on.
const AnnotationRejected = "drover.dev/rejected"

// podJob is an opted-in pod as a job.
type podJob struct {
	pod *corev1.Pod
	st  *cluster.JobState
}

// PodJobID is the snapshot job ID of an opted-in pod.
func PodJobID(p *corev1.Pod) string { return "pod:" + p.Namespace + "/" + p.Name }

// optedIn reports whether p is a plain pod drover schedules: one that
// names drover as its scheduler and is neither a TrainingJob's replica
// pod nor a placeholder. The drover.dev/schedule label only chooses its
// class; a pod without it is scheduled as BE rather than left unbound
// with no word (kube-scheduler leaves a pod of another scheduler's name
// alone, so drover is the only one that would ever bind it).
func optedIn(p *corev1.Pod, schedulerName string) bool {
	return schedulerName != "" && p.Spec.SchedulerName == schedulerName &&
		p.Labels[v1alpha1.LabelJob] == "" && p.Labels[v1alpha1.LabelPlaceholder] == "" &&
		p.DeletionTimestamp == nil && p.Annotations[AnnotationRejected] == ""
}

// addPodJob adds an opted-in pod to the view; it returns the pending job
// state, or nil when the pod is already bound (then it is running).
func (v *View) addPodJob(p *corev1.Pod, o Options) *cluster.JobState {
	class := cluster.ClassBE
	if strings.EqualFold(p.Labels[v1alpha1.OptInLabel], "TE") {
		class = cluster.ClassTE
	}
	prio := 0
	if p.Spec.Priority != nil {
		prio = int(*p.Spec.Priority)
	}
	d := PodDemand(&p.Spec)
	if d.IsZero() {
		d[dres.CPU] = 1 // a pod without requests still takes a slot
	}
	grace := 30.0
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = float64(*g)
	}
	h := fnv.New64a()
	h.Write([]byte(p.UID))
	c, err := constraint.FromPod(&p.Spec)
	if err != nil {
		c = nil // the API server validated the pod; a spec it accepts compiles
	}
	j := &cluster.Job{ID: PodJobID(p), Class: class, Tenant: o.Tenant(p.Namespace), Priority: prio,
		Submit: max(0, o.Seconds(p.CreationTimestamp.Time)), Work: o.DefaultDuration, GracePeriod: grace, Seed: h.Sum64(),
		Groups: []cluster.ReplicaGroup{{Name: "pod", Demand: d, Replicas: 1, Min: 1, Max: 1, Constraint: withExtended(c, &p.Spec, o.Nodes.extFree())}}}
	st := cluster.NewJobState(j)
	st.Updated = v.Snap.Now
	st.Enqueued = j.Submit
	v.pods[j.ID] = &podJob{pod: p, st: st}
	ni, ok := v.nodeIdx[p.Spec.NodeName]
	if !ok {
		return st
	}
	st.Phase = cluster.Running
	st.Placement = cluster.Placement{{Group: 0, Node: ni}}
	if p.Status.StartTime != nil {
		st.FirstStart = o.Seconds(p.Status.StartTime.Time)
		st.LastStart = st.FirstStart
	}
	st.Rate = 1
	n := v.Snap.Nodes[ni]
	n.Allocated = n.Allocated.Add(d)
	n.Usage = n.Usage.Add(d)
	v.chargeExtra(ni, p, false)
	n.Jobs = append(n.Jobs, st)
	v.Snap.Running = append(v.Snap.Running, st)
	return nil
}

// applyPod carries out a validated action on an opted-in pod.
func (a *applier) applyPod(ctx context.Context, pj *podJob, act policy.Action) error {
	e := a.e
	switch act := act.(type) {
	case policy.Start:
		node := a.v.Snap.Nodes[act.Placement[0].Node].Name
		a.take(pj.st.Job, act.Placement, 1)
		pj.st.Phase = cluster.Running
		pj.st.Placement = act.Placement
		if err := a.evictPlaceholders(ctx, pj.st.Job, act.Placement); err != nil {
			return err
		}
		// The Binding is the start's only API call: it runs on the
		// cycle's workers, as a TrainingJob's calls do, so that binding
		// many pods is not one round trip after another.
		a.async(act.Job, func(func()) error {
			if err := e.bind(ctx, pj.pod, node); err != nil {
				return err
			}
			e.m.Actions.WithLabelValues("start").Inc()
			e.event(pj.pod, false, "Scheduled", "drover (%s) bound %s/%s to %s", e.pol.Name(), pj.pod.Namespace, pj.pod.Name, node)
			return nil
		})
		return nil
	case policy.Preempt:
		pj.st.Phase = cluster.Suspending
		e.m.Actions.WithLabelValues("preempt").Inc()
		e.event(pj.pod, false, "Preempted", "%s", preemptReason(act))
		grace := int64(math.Ceil(act.Grace))
		if err := e.fault("delete pod " + pj.pod.Name); err != nil {
			return err
		}
		if err := e.c.Delete(ctx, pj.pod, client.GracePeriodSeconds(grace)); err != nil && !apierrors.IsNotFound(err) {
			return &apiError{err: fmt.Errorf("preempting pod %s: %w", pj.pod.Name, err)}
		}
		return nil
	case policy.Reject:
		pj.st.Phase = cluster.Rejected
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationRejected, act.Reason)
		if err := e.c.Patch(ctx, pj.pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
			return &apiError{err: fmt.Errorf("marking pod %s rejected: %w", pj.pod.Name, err)}
		}
		e.m.Actions.WithLabelValues("reject").Inc()
		e.event(pj.pod, true, "Rejected", "rejected by %s: %s", e.pol.Name(), act.Reason)
		return nil
	case policy.Wait:
		return e.setPodScheduled(ctx, pj.pod, act.Reason)
	case policy.SetLabel:
		return nil // a plain pod has nowhere to keep them
	}
	// Migrate and Resize are refused by applier.Unsupported.
	return fmt.Errorf("unsupported action %T for a plain pod", act)
}
