package k8s

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// trimFinished is the scheduler cache's transform (cacheOptions): every
// object loses its managedFields; a finished TrainingJob (trimJob) and a
// finished replica pod of one (trimPod) are cut down to what the
// scheduler reads of them, so that the jobs that ever ran, which stay in
// the API server until someone deletes them, cost the scheduler's memory
// little per job (issue 17 item 13). An object that is not finished is
// stored whole; an update that finds a trimmed object replaces it with
// the server's, trimmed again if still finished.
func trimFinished(schedulerName string) toolscache.TransformFunc {
	return func(o any) (any, error) {
		switch x := o.(type) {
		case *v1alpha1.TrainingJob:
			x.ManagedFields = nil
			if x.Status.Phase.Terminal() && x.DeletionTimestamp == nil {
				return trimJob(x), nil
			}
		case *corev1.Pod:
			x.ManagedFields = nil
			if finishedReplica(x, schedulerName) {
				return trimPod(x), nil
			}
		case metav1.Object:
			x.SetManagedFields(nil)
		}
		return o, nil
	}
}

// trimJob is a finished TrainingJob as the scheduler keeps it. A cycle
// never reads it (the IndexJobLive index leaves it out); what reads it is
// the index (phase, deletionTimestamp) and the drover_jobs count
// (finishedJobs: namespace, name, phase, class). It keeps the identity and
// ownership (name, namespace, UID, resourceVersion, generation, labels,
// owner references, timestamps), the spec's class, priority and tenant,
// and the status's phase, reason, attempt, times, counters and tenant. It
// drops the annotations (kubectl's last-applied copy of the spec among
// them), the replica templates and the rest of the spec, and the
// placement, replicas, progress, evals, labels and conditions of the
// status.
func trimJob(tj *v1alpha1.TrainingJob) *v1alpha1.TrainingJob {
	out := &v1alpha1.TrainingJob{TypeMeta: tj.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: tj.Name, Namespace: tj.Namespace, UID: tj.UID, ResourceVersion: tj.ResourceVersion, Generation: tj.Generation,
		CreationTimestamp: tj.CreationTimestamp, DeletionTimestamp: tj.DeletionTimestamp, Labels: tj.Labels,
		OwnerReferences: tj.OwnerReferences, Finalizers: tj.Finalizers,
	}}
	out.Spec.Class, out.Spec.Priority, out.Spec.Tenant = tj.Spec.Class, tj.Spec.Priority, tj.Spec.Tenant
	s := &tj.Status
	out.Status = v1alpha1.TrainingJobStatus{Phase: s.Phase, Reason: s.Reason, Attempt: s.Attempt,
		StartTime: s.StartTime, CompletionTime: s.CompletionTime, Preemptions: s.Preemptions, Migrations: s.Migrations,
		Resizes: s.Resizes, Tenant: s.Tenant}
	return out
}

// finishedReplica reports whether p is a finished (Succeeded or Failed)
// replica pod of a TrainingJob: labelled with its job and controlled by a
// TrainingJob, not a member of a PodGroup gang (whose finished members a
// cycle reads whole).
func finishedReplica(p *corev1.Pod, schedulerName string) bool {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return false
	}
	owner := metav1.GetControllerOf(p)
	return p.Labels[v1alpha1.LabelJob] != "" && owner != nil && owner.Kind == "TrainingJob" && view.GangOf(p, schedulerName) == ""
}

// trimPod is a finished replica pod as the scheduler keeps it. A cycle
// reads it only while its job runs (IndexPod: how the job completes or
// fails): its labels (job, group, attempt), deletionTimestamp, node and
// phase (Build, View.todo), the terminated state of its containers and
// its message (why the job failed), and, in the informer's handler, its
// controller and its report annotation (ObserveReport). It keeps the
// whole metadata (managedFields aside), spec.nodeName and
// spec.schedulerName, and the status's phase, reason, message, times and
// containers' names and terminated states; it drops the rest of the spec
// (containers, environment, volumes, tolerations) and of the status
// (conditions, addresses, images).
func trimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta}
	out.Spec.NodeName, out.Spec.SchedulerName = p.Spec.NodeName, p.Spec.SchedulerName
	out.Status = corev1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message, StartTime: p.Status.StartTime}
	for _, c := range p.Status.ContainerStatuses {
		cs := corev1.ContainerStatus{Name: c.Name}
		if t := c.State.Terminated; t != nil {
			cs.State.Terminated = t.DeepCopy()
		}
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, cs)
	}
	return out
}
