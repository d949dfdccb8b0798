package view

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	dres "github.com/drover-sched/drover/pkg/resource"
)

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
type Gang struct {
	ns, name string
	PG       *schedv1alpha1.PodGroup // nil: no PodGroup visible
	// labelled is set when the pods name their group with the
	// scheduler-plugins label, whose PodGroup must exist
	// (PodGroupNotFound otherwise); Volcano-style annotated pods without
	// a PodGroup form a gang of all their pods.
	labelled bool
	// pods are the member pods not finished, sorted by name; members are
	// the ones this job stands for (bound ones for a running gang, the
	// core for a pending one), with their group index in group.
	Pods    []*corev1.Pod
	Members []*corev1.Pod
	group   []int
	St      *cluster.JobState
	gates   []corev1.PodSchedulingGate
	// waiting says why the gang is incomplete ("" once minMember pods
	// exist); rejected is set once the policy rejected it.
	Waiting     string
	rejected    bool
	podRejected bool
	Succeeded   int
	Failed      int
	Running     int
	created     time.Time
	requeued    *time.Time
	// fillOf is the running gang a fill gang completes; fill is the
	// running gang's fill gang, if any.
	fillOf, fill *Gang
}

// ReasonPodGroupNotFound starts the reason of a gang pod whose PodGroup is
// not visible (coscheduling's Permit status of the same name): it is not
// bound until the PodGroup exists.
const ReasonPodGroupNotFound = "PodGroupNotFound"

// FillJobID is the snapshot job ID of the missing members of the running
// gang of PodGroup ns/name, bound together when more than one is needed
// to reach minMember.
func FillJobID(ns, name string) string { return GangJobID(ns, name) + "/fill" }

func GangOf(p *corev1.Pod, schedulerName string) string {
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
	gj := v.Gangs[GangJobID(p.Namespace, name)]
	if gj == nil {
		gj = &Gang{ns: p.Namespace, name: name}
		if v.Gangs == nil {
			v.Gangs = map[string]*Gang{}
		}
		v.Gangs[GangJobID(p.Namespace, name)] = gj
		v.GangOrder = append(v.GangOrder, key)
	}
	if p.Labels[LabelPodGroup] != "" {
		gj.labelled = true
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		gj.Succeeded++
		return
	case corev1.PodFailed:
		gj.Failed++
		return
	case corev1.PodRunning:
		gj.Running++
	}
	if p.Annotations[AnnotationRejected] != "" {
		gj.podRejected = true
	}
	gj.Pods = append(gj.Pods, p)
}

// buildGangs turns the collected gang pods into jobs; pending ones are
// returned for the queue (with their requeue time, if preempted before).
func (v *View) buildGangs(w *World, now time.Time, o Options) (queued []qItem, requeued []rqItem) {
	pgs := map[string]*schedv1alpha1.PodGroup{}
	for i := range w.PodGroups {
		pg := &w.PodGroups[i]
		pgs[pg.Namespace+"/"+pg.Name] = pg
	}
	slices.Sort(v.GangOrder)
	for _, key := range v.GangOrder {
		ns, name, _ := strings.Cut(key, "/")
		gj := v.Gangs[GangJobID(ns, name)]
		gj.PG = pgs[key]
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
func (v *View) gangState(gj *Gang, core []*corev1.Pod, id string, o Options) error {
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
	gj.Members = core
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
	gj.St = st
	st.Updated = v.Snap.Now
	st.Enqueued = j.Submit
	if gj.requeued != nil {
		st.Enqueued = o.Seconds(*gj.requeued)
	}
	if pg := gj.PG; pg != nil {
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
func (v *View) buildGang(gj *Gang, now time.Time, o Options) (*cluster.JobState, []qItem) {
	slices.SortFunc(gj.Pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(gj.Pods) == 0 {
		return nil, nil
	}
	minMember := gangMeta(gj)
	id := GangJobID(gj.ns, gj.name)
	terminating, members, bound, unbound := splitMembers(gj.Pods)

	// Terminating members hold their nodes until they are gone: the gang
	// is Suspending (preempted) while any do, whatever was recreated.
	if len(terminating) > 0 {
		v.suspendedGang(gj, terminating, members, id, now, o)
		return nil, nil
	}
	if gj.PG == nil && gj.labelled {
		// Coscheduling's Permit refuses a pod whose PodGroup it cannot
		// get (PodGroupNotFound): such pods are never a gang of 0.
		gj.Members = members
		for _, p := range bound {
			if ni, ok := v.nodeIdx[PodNode(p)]; ok {
				v.charge(ni, p, false)
			}
		}
		gj.Waiting = fmt.Sprintf("%s: PodGroup %s/%s is not visible (not created yet, or its CRD is not installed); the pods wait until it exists",
			ReasonPodGroupNotFound, gj.ns, gj.name)
		return nil, nil
	}
	if len(bound) > 0 {
		return nil, v.runningGang(gj, bound, unbound, minMember, o)
	}
	if gj.rejected {
		gj.Members = members
		return nil, nil
	}
	if len(members) < minMember {
		gj.Members = members
		gj.Waiting = fmt.Sprintf("waiting for the gang's pods: %d of minMember %d exist", len(members), minMember)
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
		gj.Waiting = "invalid pod spec: " + err.Error()
		return nil, nil
	}
	return gj.St, nil
}

// gangMeta reads when the gang was created, whether it was rejected
// and when requeued, from its pods and PodGroup, and returns its
// minMember (0 without a PodGroup).
func gangMeta(gj *Gang) (minMember int) {
	gj.created = gj.Pods[0].CreationTimestamp.Time
	for _, p := range gj.Pods {
		if p.CreationTimestamp.Time.Before(gj.created) {
			gj.created = p.CreationTimestamp.Time
		}
	}
	gj.rejected = gj.podRejected
	if pg := gj.PG; pg != nil {
		gj.created = pg.CreationTimestamp.Time
		minMember = int(pg.Spec.MinMember)
		gj.rejected = pg.Annotations[AnnotationRejected] != ""
		if s := pg.Annotations[AnnotationRequeuedAt]; s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				gj.requeued = &t
			}
		}
	}
	return minMember
}

// splitMembers sorts a gang's pods (ranked) into the terminating ones
// and the members, bound (or assigned by drover, the binding not yet
// done) or not.
func splitMembers(pods []*corev1.Pod) (terminating, members, bound, unbound []*corev1.Pod) {
	for _, p := range ranked(pods) {
		switch {
		case p.DeletionTimestamp != nil:
			terminating = append(terminating, p)
			continue
		case PodNode(p) != "":
			bound = append(bound, p)
		default:
			unbound = append(unbound, p)
		}
		members = append(members, p)
	}
	return terminating, members, bound, unbound
}

// suspendedGang makes a gang with terminating members Suspending,
// charged to their nodes, unless nothing of it is placed.
func (v *View) suspendedGang(gj *Gang, terminating, members []*corev1.Pod, id string, now time.Time, o Options) {
	_ = v.gangState(gj, members, id, o)
	st := gj.St
	var graceEnds float64
	for _, p := range terminating {
		if ni, ok := v.nodeIdx[PodNode(p)]; ok {
			v.charge(ni, p, true)
			st.Placement = append(st.Placement, cluster.Assignment{Group: 0, Node: ni})
		}
		if d := p.DeletionTimestamp.Time; !now.After(d.Add(o.StuckAfter)) {
			graceEnds = max(graceEnds, o.Seconds(d))
		}
	}
	for _, p := range members {
		if ni, ok := v.nodeIdx[PodNode(p)]; ok {
			v.charge(ni, p, false)
		}
	}
	if len(st.Placement) == 0 || len(st.Job.Groups) == 0 {
		gj.Waiting = "waiting for the preempted pods to terminate"
		return
	}
	st.Phase = cluster.Suspending
	st.GraceEnds = graceEnds
	// The placement of terminating pods is charged as Releasing above;
	// keep it in the state for policies that wait for it.
	v.Snap.Running = append(v.Snap.Running, st)
	v.linkGang(st)
}

// runningGang makes the running job of a gang's bound members, charged to
// their nodes, and the queue items of its unbound members: one plain-pod
// job each when the bound members reach minMember less one (Permit lets
// each through alone), else a fill gang of the members still needed.
func (v *View) runningGang(gj *Gang, bound, unbound []*corev1.Pod, minMember int, o Options) []qItem {
	id := GangJobID(gj.ns, gj.name)
	invalid := v.gangState(gj, bound, id, o)
	_ = invalid // bound pods run whatever their spec says
	st := gj.St
	for k, p := range bound {
		ni, ok := v.nodeIdx[PodNode(p)]
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
		gj.Waiting = "waiting for the pods bound to departed nodes to be deleted"
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
	fill := &Gang{ns: gj.ns, name: gj.name, PG: gj.PG, labelled: gj.labelled, Pods: rest, created: gj.created, fillOf: gj}
	if len(rest) < need {
		gj.Waiting = fmt.Sprintf("waiting for the gang's pods: %d bound and %d unbound of minMember %d exist", len(bound), len(rest), minMember)
		fill.Members = rest
		gj.fill = fill
		return nil
	}
	fid := FillJobID(gj.ns, gj.name)
	if err := v.gangState(fill, rest[:need], fid, o); err != nil {
		gj.Waiting = "invalid pod spec: " + err.Error()
		return nil
	}
	// The fill keeps the gang's place in the queue (its PodGroup's age).
	fill.St.Job.Submit = gj.St.Job.Submit
	fill.St.Enqueued = gj.St.Enqueued
	v.Gangs[fid] = fill
	gj.fill = fill
	return []qItem{{gj.created, fid, fill.St}}
}

// minResourcesShort returns why a pending gang's PodGroup minResources do
// not fit in the cluster's free room, as coscheduling's PreFilter checks
// them: the nodes' free capacity (placeholders' counted as free), plus
// what the gang's own bound pods hold, plus, for a TE gang, what running
// BE jobs hold. "" when they fit or are unset.
func (v *View) minResourcesShort(gj *Gang) string {
	pg := gj.PG
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
		for _, p := range run.Members {
			free = free.Add(PodDemand(&p.Spec))
		}
	}
	if gj.St != nil && gj.St.Job.Class == cluster.ClassTE {
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
func (gj *Gang) PlacedPods(p cluster.Placement) ([]*corev1.Pod, error) {
	used := make([]bool, len(gj.Members))
	out := make([]*corev1.Pod, len(p))
	for i, a := range p {
		for k, pod := range gj.Members {
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
