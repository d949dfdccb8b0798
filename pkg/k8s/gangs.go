package k8s

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
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
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/policy"
	dres "github.com/drover-sched/drover/pkg/resource"
)

// Gangs from PodGroups. Pods with drover's schedulerName and the label
// scheduling.x-k8s.io/pod-group (scheduler-plugins' coscheduling, which the
// Kubeflow training-operator creates with --gang-scheduler-name), or the
// Volcano-style annotation scheduling.k8s.io/group-name, form one job keyed
// by their PodGroup. Its replica groups are the pods' replica types
// (training.kubeflow.org/replica-type: master, worker, ps, launcher; or
// jobset.sigs.k8s.io/replicatedjob-name), each group's demand the largest
// of its pods' requests and its node constraints those of its first pod.
// The job is held until minMember pods exist (operators create them one by
// one), then the policy places it like any other job and the executor
// binds all its pods or none. Preemption deletes every pod of the gang
// with the grace period; the owning operator recreates them and they queue
// again as the same job, whose preemption count and requeue time are kept
// on the PodGroup (annotations). Migrate and Resize are refused.

// Labels and annotations of gang pods and PodGroups.
const (
	LabelPodGroup          = schedv1alpha1.PodGroupLabel    // scheduling.x-k8s.io/pod-group
	AnnotationVolcanoGroup = "scheduling.k8s.io/group-name" // Volcano's pod annotation
	LabelReplicaType       = "training.kubeflow.org/replica-type"
	LabelReplicatedJob     = "jobset.sigs.k8s.io/replicatedjob-name"
	// On the PodGroup: drover's bookkeeping for the gang.
	AnnotationPreemptions = "drover.dev/preemptions"
	AnnotationRequeuedAt  = "drover.dev/requeued-at"
	AnnotationReason      = "drover.dev/reason"
)

// GangJobID is the snapshot job ID of the gang of PodGroup ns/name.
func GangJobID(ns, name string) string { return "podgroup:" + ns + "/" + name }

// gangJob is a PodGroup's pods as one job.
type gangJob struct {
	ns, name string
	pg       *schedv1alpha1.PodGroup // nil: a Volcano-style group without a scheduler-plugins PodGroup
	// pods are the member pods not finished, sorted by name; members are
	// the ones not terminating, with their group index in group.
	pods    []*corev1.Pod
	members []*corev1.Pod
	group   []int
	st      *cluster.JobState
	gates   []corev1.PodSchedulingGate
	// waiting says why the gang is incomplete ("" once minMember pods
	// exist); rejected is set once the policy rejected it.
	waiting   string
	rejected  bool
	succeeded int
	failed    int
	running   int
	created   time.Time
	requeued  *time.Time
}

func gangOf(p *corev1.Pod, schedulerName string) string {
	if schedulerName == "" || p.Spec.SchedulerName != schedulerName {
		return ""
	}
	if n := p.Labels[LabelPodGroup]; n != "" {
		return n
	}
	return p.Annotations[AnnotationVolcanoGroup]
}

func replicaType(p *corev1.Pod) string {
	if t := p.Labels[LabelReplicaType]; t != "" {
		return strings.ToLower(t)
	}
	if t := p.Labels[LabelReplicatedJob]; t != "" {
		return t
	}
	return "pod"
}

// addGangPod files pod p under its gang.
func (v *View) addGangPod(p *corev1.Pod, name string) {
	key := p.Namespace + "/" + name
	gj := v.gangs[GangJobID(p.Namespace, name)]
	if gj == nil {
		gj = &gangJob{ns: p.Namespace, name: name}
		if v.gangs == nil {
			v.gangs = map[string]*gangJob{}
		}
		v.gangs[GangJobID(p.Namespace, name)] = gj
		v.gangOrder = append(v.gangOrder, key)
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		gj.succeeded++
		return
	case corev1.PodFailed:
		gj.failed++
		return
	case corev1.PodRunning:
		gj.running++
	}
	if p.Annotations[AnnotationRejected] != "" {
		gj.rejected = true
	}
	gj.pods = append(gj.pods, p)
}

// buildGangs turns the collected gang pods into jobs; pending ones are
// returned for the queue (with their requeue time, if preempted before).
func (v *View) buildGangs(w *World, now time.Time, o Options) (queued []qItem, requeued []rqItem) {
	pgs := map[string]*schedv1alpha1.PodGroup{}
	for i := range w.PodGroups {
		pg := &w.PodGroups[i]
		pgs[pg.Namespace+"/"+pg.Name] = pg
	}
	slices.Sort(v.gangOrder)
	for _, key := range v.gangOrder {
		ns, name, _ := strings.Cut(key, "/")
		gj := v.gangs[GangJobID(ns, name)]
		gj.pg = pgs[key]
		if st := v.buildGang(gj, now, o); st != nil {
			if gj.requeued != nil {
				requeued = append(requeued, rqItem{*gj.requeued, st})
			} else {
				queued = append(queued, qItem{gj.created, st.Job.ID, st})
			}
		}
	}
	return queued, requeued
}

// buildGang makes the gang's job and state and charges its pods to their
// nodes; it returns the state when the job is pending.
func (v *View) buildGang(gj *gangJob, now time.Time, o Options) *cluster.JobState {
	slices.SortFunc(gj.pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(gj.pods) == 0 || gj.rejected || gj.pg != nil && gj.pg.Annotations[AnnotationRejected] != "" {
		return nil
	}
	gj.created = gj.pods[0].CreationTimestamp.Time
	for _, p := range gj.pods {
		if p.CreationTimestamp.Time.Before(gj.created) {
			gj.created = p.CreationTimestamp.Time
		}
	}
	minMember := 0
	if pg := gj.pg; pg != nil {
		gj.created = pg.CreationTimestamp.Time
		minMember = int(pg.Spec.MinMember)
		if s := pg.Annotations[AnnotationRequeuedAt]; s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				gj.requeued = &t
			}
		}
	}
	// Members: pods not terminating, grouped by replica type (master and
	// launcher first, then by name).
	var terminating []*corev1.Pod
	for _, p := range gj.pods {
		if p.DeletionTimestamp != nil {
			terminating = append(terminating, p)
			continue
		}
		gj.members = append(gj.members, p)
	}
	var types []string
	for _, p := range gj.members {
		if t := replicaType(p); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	rank := func(t string) int {
		switch t {
		case "master", "launcher", "chief":
			return 0
		}
		return 1
	}
	slices.SortFunc(types, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b)) })

	id := GangJobID(gj.ns, gj.name)
	h := fnv.New64a()
	h.Write([]byte(id))
	j := &cluster.Job{ID: id, Class: cluster.ClassBE, Tenant: o.Tenant(gj.ns), Work: o.DefaultDuration, GracePeriod: 0,
		Submit: max(0, o.Seconds(gj.created)), Seed: h.Sum64()}
	gj.group = make([]int, len(gj.members))
	var invalid error
	for gi, t := range types {
		grp := cluster.ReplicaGroup{Name: t}
		for k, p := range gj.members {
			if replicaType(p) != t {
				continue
			}
			gj.group[k] = gi
			if grp.Replicas == 0 {
				c, err := constraint.FromPod(&p.Spec)
				if err != nil && invalid == nil {
					invalid = fmt.Errorf("pod %s: spec.%w", p.Name, err)
				}
				grp.Constraint = withExtended(c, &p.Spec, o.Nodes.extFree())
			}
			grp.Replicas++
			d := PodDemand(&p.Spec)
			if d.IsZero() {
				d[dres.CPU] = 1
			}
			grp.Demand = grp.Demand.Max(d)
			if p.Spec.Priority != nil {
				j.Priority = max(j.Priority, int(*p.Spec.Priority))
			}
			if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
				j.GracePeriod = max(j.GracePeriod, float64(*g))
			} else {
				j.GracePeriod = max(j.GracePeriod, 30)
			}
			if strings.EqualFold(p.Labels[v1alpha1.OptInLabel], "TE") {
				j.Class = cluster.ClassTE
			}
			if p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) > 0 {
				gj.gates = append(gj.gates, p.Spec.SchedulingGates...)
			}
		}
		grp.Min, grp.Max = grp.Replicas, grp.Replicas
		j.Groups = append(j.Groups, grp)
	}
	st := cluster.NewJobState(j)
	gj.st = st
	st.Updated = v.Snap.Now
	st.Enqueued = j.Submit
	if gj.requeued != nil {
		st.Enqueued = o.Seconds(*gj.requeued)
	}
	if pg := gj.pg; pg != nil {
		st.Preemptions, _ = strconv.Atoi(pg.Annotations[AnnotationPreemptions])
		st.Reason = pg.Annotations[AnnotationReason]
		if s := pg.Annotations[v1alpha1.AnnotationLabels]; s != "" {
			// An annotation whoever may edit the PodGroup can write:
			// malformed reads as none, and each entry is bounded as a
			// TrainingJob's status.policyLabels are.
			var stored map[string]string
			if json.Unmarshal([]byte(s), &stored) == nil {
				st.Labels, _ = keepLabels(stored, "podgroup "+gj.ns+"/"+pg.Name+": annotation "+v1alpha1.AnnotationLabels)
			}
		}
	}

	// Terminating members hold their nodes until they are gone: the gang
	// is Suspending (preempted) while any do, whatever was recreated.
	var graceEnds float64
	for _, p := range terminating {
		if ni, ok := v.nodeIdx[podNode(p)]; ok {
			v.charge(ni, p, true)
			st.Placement = append(st.Placement, cluster.Assignment{Group: 0, Node: ni})
		}
		if d := p.DeletionTimestamp.Time; !now.After(d.Add(o.StuckAfter)) {
			graceEnds = max(graceEnds, o.Seconds(d))
		}
	}
	if len(terminating) > 0 {
		for _, p := range gj.members {
			if ni, ok := v.nodeIdx[podNode(p)]; ok {
				v.charge(ni, p, false)
			}
		}
		if len(st.Placement) == 0 || len(j.Groups) == 0 {
			gj.waiting = "waiting for the preempted pods to terminate"
			return nil
		}
		st.Phase = cluster.Suspending
		st.GraceEnds = graceEnds
		// The placement of terminating pods is charged as Releasing above;
		// keep it in the state for policies that wait for it.
		v.Snap.Running = append(v.Snap.Running, st)
		v.linkGang(st)
		return nil
	}
	if invalid != nil {
		gj.waiting = "invalid pod spec: " + invalid.Error()
		return nil
	}
	// Bound (or assigned by drover, binding not yet done) members run.
	placed := 0
	for k, p := range gj.members {
		ni, ok := v.nodeIdx[podNode(p)]
		if !ok {
			continue
		}
		placed++
		st.Placement = append(st.Placement, cluster.Assignment{Group: gj.group[k], Node: ni})
		v.chargeExtra(ni, p, false)
		if p.Status.StartTime != nil && (st.FirstStart < 0 || o.Seconds(p.Status.StartTime.Time) < st.FirstStart) {
			st.FirstStart = o.Seconds(p.Status.StartTime.Time)
			st.LastStart = st.FirstStart
		}
	}
	if placed > 0 {
		st.Phase = cluster.Running
		st.Rate = 1
		for _, a := range st.Placement {
			n := v.Snap.Nodes[a.Node]
			g := &j.Groups[a.Group]
			n.Allocated = n.Allocated.Add(g.Demand)
			n.Usage = n.Usage.Add(g.Demand)
		}
		v.Snap.Running = append(v.Snap.Running, st)
		v.linkGang(st)
		return nil
	}
	if have := len(gj.members); have < minMember {
		gj.waiting = fmt.Sprintf("waiting for the gang's pods: %d of minMember %d exist", have, minMember)
		return nil
	}
	if pg := gj.pg; pg != nil && len(pg.Spec.MinResources) > 0 {
		need := Vector(pg.Spec.MinResources)
		var capSum dres.Vector
		for _, n := range v.Snap.Nodes {
			if !n.Gone {
				capSum = capSum.Add(n.Capacity)
			}
		}
		if !need.Fits(capSum) {
			gj.waiting = fmt.Sprintf("%s: minResources %v exceed the cluster's capacity %v", ReasonUnschedulable, need, capSum)
			return nil
		}
	}
	return st
}

func (v *View) linkGang(st *cluster.JobState) {
	for _, ni := range st.Placement.Nodes() {
		n := v.Snap.Nodes[ni]
		if !slices.Contains(n.Jobs, st) {
			n.Jobs = append(n.Jobs, st)
		}
	}
}

// gangPods pairs each assignment of p with a member pod of its group, in
// name order.
func (gj *gangJob) gangPods(p cluster.Placement) ([]*corev1.Pod, error) {
	used := make([]bool, len(gj.members))
	out := make([]*corev1.Pod, len(p))
	for i, a := range p {
		for k, pod := range gj.members {
			if !used[k] && gj.group[k] == a.Group {
				used[k], out[i] = true, pod
				break
			}
		}
		if out[i] == nil {
			return nil, fmt.Errorf("placement has more replicas of group %d than the gang has pods", a.Group)
		}
	}
	return out, nil
}

// applyGang carries out a validated action on a gang.
func (a *applier) applyGang(ctx context.Context, gj *gangJob, act policy.Action) error {
	e := a.e
	switch act := act.(type) {
	case policy.Start:
		pods, err := gj.gangPods(act.Placement)
		if err != nil {
			return err
		}
		if len(pods) != len(gj.members) {
			return fmt.Errorf("placement binds %d of the gang's %d pods: all or none", len(pods), len(gj.members))
		}
		a.take(gj.st.Job, act.Placement, 1)
		gj.st.Phase = cluster.Running
		gj.st.Placement = act.Placement
		if err := a.evictPlaceholders(ctx, gj.st.Job, act.Placement); err != nil {
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
				if err := e.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					return &apiError{err: fmt.Errorf("assigning pod %s to %s: %w", p.Name, nodes[i], err)}
				}
			}
			for i, p := range pods {
				if err := e.bind(ctx, p, nodes[i]); err != nil {
					return err
				}
			}
			if gj.pg != nil && gj.pg.Annotations[AnnotationReason] != "" {
				if err := e.annotatePodGroup(ctx, gj.pg, map[string]string{AnnotationReason: ""}); err != nil {
					return err
				}
			}
			e.m.Actions.WithLabelValues("start").Inc()
			e.gangEvent(gj, false, "Scheduled", "drover (%s) bound the gang's %d pods to %s", e.pol.Name(), len(pods), desc)
			return nil
		})
		return nil
	case policy.Preempt:
		gj.st.Phase = cluster.Suspending
		e.m.Actions.WithLabelValues("preempt").Inc()
		if gj.pg != nil {
			now := e.Now().UTC().Format(time.RFC3339Nano)
			n := gj.st.Preemptions + 1
			if err := e.annotatePodGroup(ctx, gj.pg, map[string]string{AnnotationPreemptions: strconv.Itoa(n), AnnotationRequeuedAt: now}); err != nil {
				return err
			}
		}
		e.gangEvent(gj, false, "Preempted", "%s; deleting its %d pods", preemptReason(act), len(gj.members))
		grace := int64(math.Ceil(act.Grace))
		for _, p := range gj.members {
			if err := e.fault("delete pod " + p.Name); err != nil {
				return err
			}
			if err := e.c.Delete(ctx, p, client.GracePeriodSeconds(grace)); err != nil && !apierrors.IsNotFound(err) {
				return &apiError{err: fmt.Errorf("preempting pod %s: %w", p.Name, err)}
			}
		}
		return nil
	case policy.Reject:
		gj.st.Phase = cluster.Rejected
		if gj.pg != nil {
			if err := e.annotatePodGroup(ctx, gj.pg, map[string]string{AnnotationRejected: act.Reason, AnnotationReason: act.Reason}); err != nil {
				return err
			}
		}
		for _, p := range gj.members {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationRejected, act.Reason)
			if err := e.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
				return &apiError{err: fmt.Errorf("marking pod %s rejected: %w", p.Name, err)}
			}
		}
		e.m.Actions.WithLabelValues("reject").Inc()
		e.gangEvent(gj, true, "Rejected", "rejected by %s: %s", e.pol.Name(), act.Reason)
		return nil
	case policy.Wait:
		return e.gangWaiting(ctx, gj, act.Reason)
	case policy.SetLabel:
		if gj.pg == nil || gj.st.Labels[act.Key] == act.Value {
			return nil
		}
		labels := map[string]string{}
		for k, v := range gj.st.Labels {
			labels[k] = v
		}
		labels[act.Key] = act.Value
		b, _ := json.Marshal(labels)
		gj.st.Labels = labels
		return e.annotatePodGroup(ctx, gj.pg, map[string]string{v1alpha1.AnnotationLabels: string(b)})
	}
	return fmt.Errorf("unsupported action %T for a PodGroup gang", act)
}

// gangWaiting records why a gang waits: drover.dev/reason on its
// PodGroup and PodScheduled=False (reason Unschedulable, or
// SchedulingGated) on its unbound pods, each only when it changed.
func (e *Executor) gangWaiting(ctx context.Context, gj *gangJob, reason string) error {
	if gj.pg != nil && gj.pg.Annotations[AnnotationReason] != reason {
		if err := e.annotatePodGroup(ctx, gj.pg, map[string]string{AnnotationReason: reason}); err != nil {
			return err
		}
		e.gangEvent(gj, false, "Waiting", "%s", reason)
	}
	for _, p := range gj.members {
		if podNode(p) == "" {
			if err := e.setPodScheduled(ctx, p, reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// annotatePodGroup merges annotations into a PodGroup.
func (e *Executor) annotatePodGroup(ctx context.Context, pg *schedv1alpha1.PodGroup, ann map[string]string) error {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	if err := e.c.Patch(ctx, pg, client.RawPatch(types.MergePatchType, b)); err != nil && !apierrors.IsNotFound(err) {
		return &apiError{err: fmt.Errorf("annotating podgroup %s/%s: %w", pg.Namespace, pg.Name, err)}
	}
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	for k, v := range ann {
		pg.Annotations[k] = v
	}
	return nil
}

func (e *Executor) gangEvent(gj *gangJob, warning bool, reason, format string, args ...any) {
	if gj.pg != nil {
		e.event(gj.pg, warning, reason, format, args...)
		return
	}
	if len(gj.pods) > 0 {
		e.event(gj.pods[0], warning, reason, format, args...)
	}
}

// reconcileGang binds members drover assigned but did not bind (a crash
// between the two), reports why an incomplete gang waits, and writes the
// PodGroup's status: phase (Pending until minMember pods exist and while
// unbound, Running once bound, Finished or Failed when its pods are),
// running, succeeded and failed counts, and the time scheduling started.
func (e *Executor) reconcileGang(ctx context.Context, v *View, gj *gangJob) error {
	var errs []error
	if gj.st != nil && gj.st.Phase == cluster.Running {
		for _, p := range gj.members {
			if p.Spec.NodeName == "" && p.Annotations[v1alpha1.AnnotationNode] != "" {
				if err := e.bind(ctx, p, p.Annotations[v1alpha1.AnnotationNode]); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if gj.waiting != "" {
		if err := e.gangWaiting(ctx, gj, gj.waiting); err != nil {
			errs = append(errs, err)
		}
	}
	if pg := gj.pg; pg != nil {
		want := pg.Status
		switch {
		case len(gj.pods) == 0 && gj.failed > 0:
			want.Phase = schedv1alpha1.PodGroupFailed
		case len(gj.pods) == 0 && gj.succeeded > 0:
			want.Phase = schedv1alpha1.PodGroupFinished
		case gj.st != nil && gj.st.Phase == cluster.Running && len(gj.st.Placement) >= int(pg.Spec.MinMember):
			want.Phase = schedv1alpha1.PodGroupRunning
		case gj.st != nil && gj.st.Phase == cluster.Running:
			want.Phase = schedv1alpha1.PodGroupScheduling
		default:
			want.Phase = schedv1alpha1.PodGroupPending
		}
		want.Running, want.Succeeded, want.Failed = int32(gj.running), int32(gj.succeeded), int32(gj.failed)
		if want.ScheduleStartTime.IsZero() {
			want.ScheduleStartTime = metav1.Time{Time: e.Now()}
		}
		if want.Phase != pg.Status.Phase || want.Running != pg.Status.Running || want.Succeeded != pg.Status.Succeeded ||
			want.Failed != pg.Status.Failed || pg.Status.ScheduleStartTime.IsZero() {
			obj := pg.DeepCopy()
			obj.Status = want
			if err := e.c.Status().Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("podgroup %s/%s status: %w", pg.Namespace, pg.Name, err))
			} else if err == nil {
				*pg = *obj
			}
		}
	}
	return joinErrs(errs)
}

// setPodScheduled sets the pod's PodScheduled condition to False with
// drover's reason as the message (reason SchedulingGated for a gated
// pod, else Unschedulable), as kube-scheduler does for a pod it cannot
// place, so that cluster-autoscaler and kubectl see why it waits. Nothing
// is written when the condition already says so.
func (e *Executor) setPodScheduled(ctx context.Context, p *corev1.Pod, message string) error {
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
		LastTransitionTime: metav1.Time{Time: e.Now()}}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	if err := e.c.Status().Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, b)); err != nil && !apierrors.IsNotFound(err) {
		return &apiError{err: fmt.Errorf("setting PodScheduled on pod %s: %w", p.Name, err)}
	}
	return nil
}
