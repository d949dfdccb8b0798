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

// gangJob is a PodGroup's pods as one job. A gang whose members are all
// unbound is one pending job of its first minMember members (or all of
// them when minMember is 0 or not below the pod count); a gang with bound
// members is one running job of those, and its unbound members (an
// operator's replacement for a lost pod, the pods beyond minMember of an
// elastic job) queue as coscheduling's Permit lets them through: one by
// one as plain pods once the bound members reach minMember, else as a
// second pending gang (fill) of the members still missing.
type gangJob struct {
	ns, name string
	pg       *schedv1alpha1.PodGroup // nil: no PodGroup visible
	// labelled is set when the pods name their group with the
	// scheduler-plugins label, whose PodGroup must exist
	// (PodGroupNotFound otherwise); Volcano-style annotated pods without
	// a PodGroup form a gang of all their pods.
	labelled bool
	// pods are the member pods not finished, sorted by name; members are
	// the ones this job stands for (bound ones for a running gang, the
	// core for a pending one), with their group index in group.
	pods    []*corev1.Pod
	members []*corev1.Pod
	group   []int
	st      *cluster.JobState
	gates   []corev1.PodSchedulingGate
	// waiting says why the gang is incomplete ("" once minMember pods
	// exist); rejected is set once the policy rejected it.
	waiting     string
	rejected    bool
	podRejected bool
	succeeded   int
	failed      int
	running     int
	created     time.Time
	requeued    *time.Time
	// fillOf is the running gang a fill gang completes; fill is the
	// running gang's fill gang, if any.
	fillOf, fill *gangJob
}

// ReasonPodGroupNotFound starts the reason of a gang pod whose PodGroup is
// not visible (coscheduling's Permit status of the same name): it is not
// bound until the PodGroup exists.
const ReasonPodGroupNotFound = "PodGroupNotFound"

// FillJobID is the snapshot job ID of the missing members of the running
// gang of PodGroup ns/name, bound together when more than one is needed
// to reach minMember.
func FillJobID(ns, name string) string { return GangJobID(ns, name) + "/fill" }

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

// typeRank orders replica types: master, launcher and chief first.
func typeRank(t string) int {
	switch t {
	case "master", "launcher", "chief":
		return 0
	}
	return 1
}

// ranked returns the pods in the order a gang's members are taken: by
// replica type (master, launcher and chief first, then by name), then by
// pod name.
func ranked(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		ta, tb := replicaType(a), replicaType(b)
		return cmp.Or(cmp.Compare(typeRank(ta), typeRank(tb)), strings.Compare(ta, tb), strings.Compare(a.Name, b.Name))
	})
	return out
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
	if p.Labels[LabelPodGroup] != "" {
		gj.labelled = true
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
		gj.podRejected = true
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
		st, more := v.buildGang(gj, now, o)
		if st != nil {
			if gj.requeued != nil {
				requeued = append(requeued, rqItem{*gj.requeued, st})
			} else {
				queued = append(queued, qItem{gj.created, st.Job.ID, st})
			}
		}
		queued = append(queued, more...)
	}
	return queued, requeued
}

// gangState builds the job of gang gj standing for pods core (in ranked
// order) under id, and sets gj's members, groups, gates and state. It
// returns the first pod spec that does not compile.
func (v *View) gangState(gj *gangJob, core []*corev1.Pod, id string, o Options) error {
	var types []string
	for _, p := range core {
		if t := replicaType(p); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	slices.SortFunc(types, func(a, b string) int { return cmp.Or(cmp.Compare(typeRank(a), typeRank(b)), strings.Compare(a, b)) })
	h := fnv.New64a()
	h.Write([]byte(id))
	j := &cluster.Job{ID: id, Class: cluster.ClassBE, Tenant: o.Tenant(gj.ns), Work: o.DefaultDuration, GracePeriod: 0,
		Submit: max(0, o.Seconds(gj.created)), Seed: h.Sum64()}
	gj.members = core
	gj.group = make([]int, len(core))
	gj.gates = nil
	var invalid error
	for gi, t := range types {
		grp := cluster.ReplicaGroup{Name: t}
		for k, p := range core {
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
	return invalid
}

// buildGang makes the gang's jobs and states and charges its pods to
// their nodes. It returns the gang's state when it is pending, and the
// queue items of its unbound members when the gang runs (a fill gang, or
// one plain-pod job per member).
func (v *View) buildGang(gj *gangJob, now time.Time, o Options) (*cluster.JobState, []qItem) {
	slices.SortFunc(gj.pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(gj.pods) == 0 {
		return nil, nil
	}
	gj.created = gj.pods[0].CreationTimestamp.Time
	for _, p := range gj.pods {
		if p.CreationTimestamp.Time.Before(gj.created) {
			gj.created = p.CreationTimestamp.Time
		}
	}
	minMember := 0
	gj.rejected = gj.podRejected
	if pg := gj.pg; pg != nil {
		gj.created = pg.CreationTimestamp.Time
		minMember = int(pg.Spec.MinMember)
		gj.rejected = pg.Annotations[AnnotationRejected] != ""
		if s := pg.Annotations[AnnotationRequeuedAt]; s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				gj.requeued = &t
			}
		}
	}
	id := GangJobID(gj.ns, gj.name)
	// Members: pods not terminating, bound (or assigned by drover, the
	// binding not yet done) or not.
	var terminating, members, bound, unbound []*corev1.Pod
	for _, p := range ranked(gj.pods) {
		switch {
		case p.DeletionTimestamp != nil:
			terminating = append(terminating, p)
			continue
		case podNode(p) != "":
			bound = append(bound, p)
		default:
			unbound = append(unbound, p)
		}
		members = append(members, p)
	}

	// Terminating members hold their nodes until they are gone: the gang
	// is Suspending (preempted) while any do, whatever was recreated.
	if len(terminating) > 0 {
		_ = v.gangState(gj, members, id, o)
		st := gj.st
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
		for _, p := range members {
			if ni, ok := v.nodeIdx[podNode(p)]; ok {
				v.charge(ni, p, false)
			}
		}
		if len(st.Placement) == 0 || len(st.Job.Groups) == 0 {
			gj.waiting = "waiting for the preempted pods to terminate"
			return nil, nil
		}
		st.Phase = cluster.Suspending
		st.GraceEnds = graceEnds
		// The placement of terminating pods is charged as Releasing above;
		// keep it in the state for policies that wait for it.
		v.Snap.Running = append(v.Snap.Running, st)
		v.linkGang(st)
		return nil, nil
	}
	if gj.pg == nil && gj.labelled {
		// Coscheduling's Permit refuses a pod whose PodGroup it cannot
		// get (PodGroupNotFound): such pods are never a gang of 0.
		gj.members = members
		for _, p := range bound {
			if ni, ok := v.nodeIdx[podNode(p)]; ok {
				v.charge(ni, p, false)
			}
		}
		gj.waiting = fmt.Sprintf("%s: PodGroup %s/%s is not visible (not created yet, or its CRD is not installed); the pods wait until it exists",
			ReasonPodGroupNotFound, gj.ns, gj.name)
		return nil, nil
	}
	if len(bound) > 0 {
		return nil, v.runningGang(gj, bound, unbound, minMember, o)
	}
	if gj.rejected {
		gj.members = members
		return nil, nil
	}
	if len(members) < minMember {
		gj.members = members
		gj.waiting = fmt.Sprintf("waiting for the gang's pods: %d of minMember %d exist", len(members), minMember)
		return nil, nil
	}
	core := members
	if minMember > 0 && minMember < len(members) {
		// Coscheduling binds at least minMember, then each further pod
		// as it fits: the first minMember are the gang, the rest queue
		// one by one once it is bound.
		core = members[:minMember]
	}
	if err := v.gangState(gj, core, id, o); err != nil {
		gj.waiting = "invalid pod spec: " + err.Error()
		return nil, nil
	}
	return gj.st, nil
}

// runningGang makes the running job of a gang's bound members, charged to
// their nodes, and the queue items of its unbound members: one plain-pod
// job each when the bound members reach minMember less one (Permit lets
// each through alone), else a fill gang of the members still needed.
func (v *View) runningGang(gj *gangJob, bound, unbound []*corev1.Pod, minMember int, o Options) []qItem {
	id := GangJobID(gj.ns, gj.name)
	invalid := v.gangState(gj, bound, id, o)
	_ = invalid // bound pods run whatever their spec says
	st := gj.st
	for k, p := range bound {
		ni, ok := v.nodeIdx[podNode(p)]
		if !ok {
			continue
		}
		st.Placement = append(st.Placement, cluster.Assignment{Group: gj.group[k], Node: ni})
		v.chargeExtra(ni, p, false)
		if p.Status.StartTime != nil && (st.FirstStart < 0 || o.Seconds(p.Status.StartTime.Time) < st.FirstStart) {
			st.FirstStart = o.Seconds(p.Status.StartTime.Time)
			st.LastStart = st.FirstStart
		}
	}
	if len(st.Placement) == 0 {
		// Bound to nodes that are gone: nothing to run or charge, and a
		// bound pod cannot be bound again; they go with their nodes.
		gj.waiting = "waiting for the pods bound to departed nodes to be deleted"
		return nil
	}
	st.Phase = cluster.Running
	st.Rate = 1
	for _, a := range st.Placement {
		n := v.Snap.Nodes[a.Node]
		g := &st.Job.Groups[a.Group]
		n.Allocated = n.Allocated.Add(g.Demand)
		n.Usage = n.Usage.Add(g.Demand)
	}
	v.Snap.Running = append(v.Snap.Running, st)
	v.linkGang(st)
	var rest []*corev1.Pod
	for _, p := range unbound {
		if p.Annotations[AnnotationRejected] == "" {
			rest = append(rest, p)
		}
	}
	if len(rest) == 0 || gj.rejected {
		return nil
	}
	need := minMember - len(bound)
	if need <= 1 {
		var out []qItem
		for _, p := range rest {
			if pst := v.addPodJob(p, o); pst != nil {
				out = append(out, qItem{p.CreationTimestamp.Time, pst.Job.ID, pst})
			}
		}
		return out
	}
	fill := &gangJob{ns: gj.ns, name: gj.name, pg: gj.pg, labelled: gj.labelled, pods: rest, created: gj.created, fillOf: gj}
	if len(rest) < need {
		gj.waiting = fmt.Sprintf("waiting for the gang's pods: %d bound and %d unbound of minMember %d exist", len(bound), len(rest), minMember)
		fill.members = rest
		gj.fill = fill
		return nil
	}
	fid := FillJobID(gj.ns, gj.name)
	if err := v.gangState(fill, rest[:need], fid, o); err != nil {
		gj.waiting = "invalid pod spec: " + err.Error()
		return nil
	}
	// The fill keeps the gang's place in the queue (its PodGroup's age).
	fill.st.Job.Submit = gj.st.Job.Submit
	fill.st.Enqueued = gj.st.Enqueued
	v.gangs[fid] = fill
	gj.fill = fill
	return []qItem{{gj.created, fid, fill.st}}
}

// minResourcesShort returns why a pending gang's PodGroup minResources do
// not fit in the cluster's free room, as coscheduling's PreFilter checks
// them: the nodes' free capacity (placeholders' counted as free), plus
// what the gang's own bound pods hold, plus, for a TE gang, what running
// BE jobs hold. "" when they fit or are unset.
func (v *View) minResourcesShort(gj *gangJob) string {
	pg := gj.pg
	if pg == nil || len(pg.Spec.MinResources) == 0 {
		return ""
	}
	need := Vector(pg.Spec.MinResources)
	var free dres.Vector
	for _, n := range v.Snap.Nodes {
		if n.Gone {
			continue
		}
		f := n.Free().Add(n.Placeholder)
		for i := range f {
			f[i] = max(f[i], 0)
		}
		free = free.Add(f)
	}
	if run := gj.fillOf; run != nil {
		for _, p := range run.members {
			free = free.Add(PodDemand(&p.Spec))
		}
	}
	if gj.st != nil && gj.st.Job.Class == cluster.ClassTE {
		// A TE gang may have BE jobs preempted for it (fitgpp): what
		// they hold is room for it. (Coscheduling never preempts for a
		// PodGroup short of minResources; the operators fill
		// minResources in by default, so counting only free room would
		// take preemption away from every operator gang.)
		for _, st := range v.Snap.Running {
			if st.Job.Class != cluster.ClassBE || st.Phase != cluster.Running {
				continue
			}
			for _, a := range st.Placement {
				free = free.Add(st.Job.Groups[a.Group].Demand)
			}
		}
	}
	if need.Fits(free) {
		return ""
	}
	return fmt.Sprintf("%s: PodGroup %s/%s minResources %v exceed the cluster's free room %v", ReasonUnschedulable, gj.ns, gj.name, need, free)
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
		// Every pod of the gang goes, its unbound members too: the gang
		// queues again whole.
		var victims []*corev1.Pod
		for _, p := range gj.pods {
			if p.DeletionTimestamp == nil {
				victims = append(victims, p)
			}
		}
		e.gangEvent(gj, false, "Preempted", "%s; deleting its %d pods", preemptReason(act), len(victims))
		grace := int64(math.Ceil(act.Grace))
		for _, p := range victims {
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
// SchedulingGated) on its unbound pods, each only when it changed; with
// no PodGroup, an Event on each pod whose reason changed.
func (e *Executor) gangWaiting(ctx context.Context, gj *gangJob, reason string) error {
	if gj.pg != nil && gj.pg.Annotations[AnnotationReason] != reason {
		if err := e.annotatePodGroup(ctx, gj.pg, map[string]string{AnnotationReason: reason}); err != nil {
			return err
		}
		e.gangEvent(gj, false, "Waiting", "%s", reason)
	}
	for _, p := range gj.pods {
		if podNode(p) != "" || p.DeletionTimestamp != nil {
			continue
		}
		if gj.pg == nil && !podScheduledSays(p, reason) {
			// No PodGroup to carry the Event: each pod gets one when its
			// reason changes (PodGroupNotFound, a Warning).
			kind := "Waiting"
			if code, _, _ := strings.Cut(reason, ":"); code == ReasonPodGroupNotFound {
				kind = code
			}
			e.event(p, kind != "Waiting", kind, "%s", reason)
		}
		if err := e.setPodScheduled(ctx, p, reason); err != nil {
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
// PodGroup's status as scheduler-plugins' PodGroup controller does
// (podGroupPhase): phase, running, succeeded and failed counts, occupiedBy,
// and the time scheduling started.
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
		want.Phase = podGroupPhase(pg, len(gj.pods)+gj.succeeded+gj.failed, int32(gj.running), int32(gj.succeeded), int32(gj.failed))
		want.Running, want.Succeeded, want.Failed = int32(gj.running), int32(gj.succeeded), int32(gj.failed)
		if want.OccupiedBy == "" && want.Phase != schedv1alpha1.PodGroupPending && len(gj.pods) > 0 {
			want.OccupiedBy = occupiedBy(gj.pods[0])
		}
		if want.ScheduleStartTime.IsZero() {
			want.ScheduleStartTime = metav1.Time{Time: e.Now()}
		}
		if want.Phase != pg.Status.Phase || want.Running != pg.Status.Running || want.Succeeded != pg.Status.Succeeded ||
			want.Failed != pg.Status.Failed || want.OccupiedBy != pg.Status.OccupiedBy || pg.Status.ScheduleStartTime.IsZero() {
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
