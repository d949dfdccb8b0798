package view

import (
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	dres "github.com/drover-sched/drover/pkg/resource"
)

// podJob is an opted-in pod as a job.
type PodJob struct {
	Pod *corev1.Pod
	St  *cluster.JobState
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
	v.PodJobs[j.ID] = &PodJob{Pod: p, St: st}
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

// AnnotationRejected marks an opted-in pod the policy rejected; drover
// leaves it unscheduled from then on.
const AnnotationRejected = "drover.dev/rejected"
