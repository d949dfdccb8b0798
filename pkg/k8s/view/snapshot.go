// Package k8s is drover's Kubernetes executor: it rebuilds a
// cluster.Snapshot from the API server (nodes, TrainingJobs, their pods and
// the placeholder Deployments), runs the configured policy on it and turns
// the policy's actions into API calls: replica pods bound through the
// Binding subresource, deletions with the job's grace period, status
// updates, annotations, Events and placeholder Deployments.
//
// All scheduler state lives in the API server (TrainingJob status and
// annotations, and the pods themselves), so a restarted scheduler, or a new
// leader, carries on where the old one stopped. See docs/kubernetes.md.
package view

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/resource"
)

// Node labels the snapshot reads.
const (
	LabelRole           = "drover.dev/role"
	LabelPlacementGroup = "drover.dev/placement-group"
	GPUResource         = corev1.ResourceName("nvidia.com/gpu")
)

// World is what one cycle reads from the API server (through the informer
// cache).
type World struct {
	Nodes       []corev1.Node
	Pods        []corev1.Pod
	Jobs        []v1alpha1.TrainingJob
	Deployments []appsv1.Deployment
	// PodGroups are scheduler-plugins PodGroups (empty when the CRD is
	// not installed).
	PodGroups []schedv1alpha1.PodGroup
	// Quotas are the ResourceQuotas of the namespaces drover schedules
	// TrainingJobs in.
	Quotas []corev1.ResourceQuota
}

// jobView ties a TrainingJob to its JobState and its pods.
type Job struct {
	TJ *v1alpha1.TrainingJob
	// ended is the job as a pipelined reconcile ended it, its status
	// write in flight (the flight owns tj meanwhile).
	Ended *v1alpha1.TrainingJob
	St    *cluster.JobState
	// pods are the job's replica pods that are not finished, any attempt.
	Pods []*corev1.Pod
	// finished are pods of the current attempt that completed.
	Succeeded map[string]int // per group; nil until one has
	Failed    []*corev1.Pod
	// stuck are terminating pods past their deadline plus the slack.
	Stuck []*corev1.Pod
	// ext is each group's per-replica extended resources (see
	// View.groupExtra), computed on first use; quota what one replica
	// counts against a ResourceQuota (View.jobQuota).
	ext, quota []corev1.ResourceList
	extDone    bool
	// missingNodes lists placement nodes that no longer exist.
	MissingNodes []string
	Invalid      error
	// badLabels says which stored policy labels were dropped (reconcile
	// writes the kept ones back and reports it).
	BadLabels error
	// badPlacement says why status.placement cannot be acted on
	// (committed.go); reconcile requeues the job.
	BadPlacement error
	// done are the current attempt's pods that succeeded.
	done []*corev1.Pod
	// fresh is set by reconcile on a new job (no phase yet) whose only
	// status change would be Pending: the cycle writes it after the
	// policy ran, and only if the job is still pending then.
	Fresh bool
}

// group returns the index of the job's replica group with this name.
// Jobs have a few groups: a walk costs less than a map per job per cycle.
func (jv *Job) group(name string) (int, bool) {
	for g := range jv.St.Job.Groups {
		if jv.St.Job.Groups[g].Name == name {
			return g, true
		}
	}
	return 0, false
}

// View is a snapshot together with the objects it was built from.
type View struct {
	Snap    *cluster.Snapshot
	nodeIdx map[string]int
	// extra is each node's pods and extended resources (extra.go), by
	// index.
	Extra []NodeExtra
	// quotas are each namespace's unscoped ResourceQuotas (admission.go);
	// reserved the same with the minimum of each queued job charged.
	Quotas, reserved map[string][]*NSQuota
	Jobs             map[string]*Job
	PodJobs          map[string]*PodJob // opted-in plain pods, by job ID
	Order            []string           // job keys, sorted
	// held are pending jobs kept out of the policy's queue, with the
	// reason: a pod still carrying scheduling gates, or a job that no
	// node could ever accept (Unschedulable). They are never bound and
	// never make a policy preempt anything.
	held map[string]string
	// heldOrder lists held job IDs in queue order.
	heldOrder []string
	// gangs are PodGroup gangs by job ID; gangOrder their ns/name keys.
	Gangs     map[string]*Gang
	GangOrder []string
}

// Options tune how the snapshot is built.
type Options struct {
	// Seed seeds policies' random choices.
	Seed uint64
	// Cycle is the cycle counter.
	Cycle uint64
	// DefaultDuration is the work assumed for a job without
	// spec.estimatedDurationSeconds, in seconds.
	DefaultDuration float64
	// StuckAfter is how long past its deletion deadline a terminating pod
	// may stay before it is reported and no longer waited for.
	StuckAfter time.Duration
	// Origin is time 0 of the snapshot clock.
	Origin time.Time
	// Jobs, when set, caches the cluster.Job of each TrainingJob between
	// cycles (see JobCache).
	Jobs *JobCache
	// Nodes, when set, keeps each node's index in the snapshot from one
	// cycle to the next (see NodeTable). Nil indexes the nodes in name
	// order, as on a first cycle.
	Nodes *NodeTable
	// Catalog is the instance types an autoscaler can add.
	Catalog []cluster.InstanceType
	// SchedulerName is drover's; plain pods with it and the opt-in label
	// become one-replica jobs. Empty disables opt-in.
	SchedulerName string
	// Tenants maps namespaces to tenants (Config.Tenants); a namespace not
	// in it is its own tenant. It must not change while a JobCache made
	// with it is in use.
	Tenants map[string]string
	// Crowded, when set, remembers nodes where a start was refused for want
	// of pod slots (see Crowded); Build drops entries that are stale.
	Crowded Crowded
	// Eligibility, when set, keeps node constraints' eligible sets from one
	// cycle to the next (reset when a node's labels or taints change). Nil
	// computes them afresh.
	Eligibility *cluster.Eligibility
	// InScope, when set, says which namespaces the scheduler works in
	// (Config.Namespaces): gang and opted-in pods elsewhere are not jobs,
	// only capacity taken on their nodes, since the scheduler may not be
	// allowed to bind them. Nil: every namespace.
	InScope func(namespace string) bool
	// PlaceholderNamespace, when set, is the only namespace whose pods
	// with the drover.dev/placeholder label are placeholders (capacity a
	// job may take by deleting them with grace 0); elsewhere the label
	// means nothing, so a tenant's pod carrying it is not force-deleted.
	PlaceholderNamespace string
}

// Seconds converts a time to the snapshot clock: seconds since the
// origin. The origin is persisted in the cluster (see Executor.Origin), so
// a restarted scheduler's clock agrees with the timestamps stored in the
// API server, while times stay small as policies written for the
// simulator (whose runs start at 0) expect. A zero origin means the Unix
// epoch.
func (o Options) Seconds(t time.Time) float64 {
	if o.Origin.IsZero() {
		return float64(t.UnixNano()) / 1e9
	}
	return t.Sub(o.Origin).Seconds()
}

// Tenant is the tenant of the jobs of namespace ns: its mapping in
// Tenants, else ns. Never what a job says of itself (spec.tenant), which
// any user who may create jobs could set to another team's tenant.
func (o Options) Tenant(ns string) string {
	if t, ok := o.Tenants[ns]; ok {
		return t
	}
	return ns
}

// JobKey is the snapshot job ID of a TrainingJob: namespace/name.
func JobKey(tj *v1alpha1.TrainingJob) string { return tj.Namespace + "/" + tj.Name }

// Build turns the world into a snapshot. It never fails as a whole: a
// TrainingJob that cannot be converted is kept aside with its error (the
// executor marks it Failed) and left out of the snapshot.
func Build(w *World, now time.Time, o Options) *View {
	t := o.Seconds(now)
	v := &View{
		Snap:    &cluster.Snapshot{Now: t, Cycle: o.Cycle, Seed: o.Seed, Catalog: o.Catalog},
		nodeIdx: make(map[string]int, len(w.Nodes)),
		Jobs:    make(map[string]*Job, len(w.Jobs)),
		PodJobs: map[string]*PodJob{},
		Quotas:  buildQuotas(w.Quotas),
	}
	table := o.Nodes
	if table == nil {
		table = NewNodeTable()
		o.Nodes = table // jobs' extended-resource constraints read its extFree
	}
	v.readNodes(w, o, table)

	// Jobs first, so pods can be attached to them.
	v.readJobs(w, o)

	queued := v.readPods(w, o)

	gq, requeued := v.buildGangs(w, now, o)
	queued = append(queued, gq...)
	for _, key := range v.Order {
		jv := v.Jobs[key]
		if jv.Invalid != nil {
			continue
		}
		v.fillJob(jv, now, o)
		switch jv.St.Phase {
		case cluster.Pending:
			if jv.TJ.Status.RequeuedAt != nil {
				requeued = append(requeued, rqItem{jv.TJ.Status.RequeuedAt.Time, jv.St})
			} else {
				queued = append(queued, qItem{jv.TJ.CreationTimestamp.Time, jv.St.Job.ID, jv.St})
			}
		default:
			v.Snap.Running = append(v.Snap.Running, jv.St)
		}
	}
	// The jobs' phases and pods are known: no quota is read as less used
	// than the cluster is.
	v.floorQuotaUsed(w)
	// Every pod is charged: the free extended resources are known.
	if table.ext.update(v) {
		v.Snap.Eligibility.Reset()
	}
	v.enqueue(queued, requeued, now, o)
	v.checkCommitted()
	v.markFull(o.Crowded)
	if len(v.Quotas) > 0 {
		if v.reserved == nil {
			v.reserved = CloneQuotas(v.Quotas)
		}
		for _, key := range v.Order {
			if jv := v.Jobs[key]; jv.Invalid == nil && v.held[key] == "" {
				v.capToQuota(jv)
			}
		}
	}

	v.readPlaceholders(w)
	return v
}

// readNodes indexes w's nodes through table (o.Eligibility reset when
// a node changed) into the snapshot's nodes and their extra resources.
func (v *View) readNodes(w *World, o Options, table *NodeTable) {
	seen := table.assign(w.Nodes)
	v.Snap.Eligibility = o.Eligibility
	if v.Snap.Eligibility == nil {
		v.Snap.Eligibility = cluster.NewEligibility()
	} else if table.changed {
		v.Snap.Eligibility.Reset()
	}
	v.Snap.Nodes = make([]*cluster.NodeState, len(seen))
	v.Extra = make([]NodeExtra, len(seen))
	for i, n := range seen {
		if n == nil { // gone: kept as last seen, so that indices stay
			v.Snap.Nodes[i] = &cluster.NodeState{Node: table.last[i], Index: i, Gone: true}
			v.Extra[i] = NodeExtra{PodCap: -1}
			continue
		}
		v.Snap.Nodes[i] = &cluster.NodeState{Node: table.last[i], Index: i, Ready: nodeReady(n)}
		v.Extra[i] = newNodeExtra(n)
		v.nodeIdx[n.Name] = i
	}
}

// readJobs adds w's unfinished TrainingJobs, converted (or kept aside
// with their error), in key order.
func (v *View) readJobs(w *World, o Options) {
	// Jobs first, so pods can be attached to them.
	for i := range w.Jobs {
		tj := &w.Jobs[i]
		if tj.Status.Phase.Terminal() || tj.DeletionTimestamp != nil {
			continue
		}
		jv := &Job{TJ: tj}
		job, err := o.Jobs.get(tj, o)
		key := ""
		if err != nil {
			jv.Invalid = err
			key = JobKey(tj)
		} else {
			jv.St = cluster.NewJobState(job)
			key = job.ID // JobKey(tj), converted once
		}
		v.Jobs[key] = jv
		v.Order = append(v.Order, key)
	}
	slices.Sort(v.Order)
	o.Jobs.sweep()

}

// readPods attaches replica pods to their jobs and gang pods to their
// gangs, makes opted-in plain pods jobs (returned for the queue), and
// charges every other unfinished bound pod to its node.
func (v *View) readPods(w *World, o Options) []qItem {
	queued := make([]qItem, 0, len(w.Jobs))
	// Pods: replica pods go to their job, opted-in plain pods become jobs; everything else bound to a node
	// and not finished takes capacity there (placeholders as placeholder
	// capacity, which any real job may take).
	for i := range w.Pods {
		p := &w.Pods[i]
		done := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		inScope := o.InScope == nil || o.InScope(p.Namespace)
		if name := GangOf(p, o.SchedulerName); name != "" && inScope {
			v.addGangPod(p, name)
			continue
		}
		if !done && inScope && optedIn(p, o.SchedulerName) {
			if st := v.addPodJob(p, o); st != nil {
				queued = append(queued, qItem{p.CreationTimestamp.Time, st.Job.ID, st})
			}
			continue
		}
		if name, ok := p.Labels[v1alpha1.LabelJob]; ok {
			jv := v.Jobs[p.Namespace+"/"+name]
			if jv == nil || jv.Invalid != nil {
				if !done {
					v.chargeForeign(p)
				}
				continue
			}
			cur := p.Labels[v1alpha1.LabelAttempt] == strconv.Itoa(int(jv.TJ.Status.Attempt))
			switch {
			case done && cur && p.Status.Phase == corev1.PodSucceeded:
				if jv.Succeeded == nil {
					jv.Succeeded = map[string]int{}
				}
				jv.Succeeded[p.Labels[v1alpha1.LabelGroup]]++
				jv.done = append(jv.done, p)
			case done && cur:
				jv.Failed = append(jv.Failed, p)
			case !done:
				jv.Pods = append(jv.Pods, p)
			}
			continue
		}
		if done {
			continue
		}
		if p.Labels[v1alpha1.LabelPlaceholder] != "" && (o.PlaceholderNamespace == "" || p.Namespace == o.PlaceholderNamespace) {
			if ni, ok := v.nodeIdx[p.Spec.NodeName]; ok {
				d := PodDemand(&p.Spec)
				n := v.Snap.Nodes[ni]
				n.Allocated = n.Allocated.Add(d)
				n.Placeholder = n.Placeholder.Add(d)
				v.chargeExtra(ni, p, true)
			}
			continue
		}
		v.chargeForeign(p)
	}
	return queued
}

// enqueue builds the pending queue from the requeued and the queued
// jobs, leaving out the ones held.
func (v *View) enqueue(queued []qItem, requeued []rqItem, now time.Time, o Options) {
	// A preempted job goes back to the head of the queue, the most recently
	// preempted first (as the simulator's PushFront does); the rest wait in
	// arrival order.
	slices.SortStableFunc(requeued, func(a, b rqItem) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return cmp.Compare(a.st.Job.ID, b.st.Job.ID)
	})
	slices.SortStableFunc(queued, func(a, b qItem) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	queue := cluster.NewQueue()
	for _, r := range requeued {
		if !v.hold(r.st, now, o) {
			queue.PushBack(r.st)
		}
	}
	for _, q := range queued {
		if !v.hold(q.st, now, o) {
			queue.PushBack(q.st)
		}
	}
	v.Snap.Pending = queue.ReadOnly()
}

// readPlaceholders reads the placeholder Deployments into the snapshot,
// by name.
func (v *View) readPlaceholders(w *World) {
	for i := range w.Deployments {
		d := &w.Deployments[i]
		name := d.Labels[v1alpha1.LabelPlaceholder]
		if name == "" {
			continue
		}
		c := 0
		if d.Spec.Replicas != nil {
			c = int(*d.Spec.Replicas)
		}
		v.Snap.Placeholders = append(v.Snap.Placeholders, cluster.Placeholder{
			Name: name, Demand: PodDemand(&d.Spec.Template.Spec), Count: c,
			PlacementGroup: d.Spec.Template.Spec.NodeSelector[LabelPlacementGroup],
		})
	}
	slices.SortFunc(v.Snap.Placeholders, func(a, b cluster.Placeholder) int { return strings.Compare(a.Name, b.Name) })
}

// NodeTable gives each node a fixed index in the snapshot for as long as
// the executor runs, as the simulator does: a node that departs stays in
// the snapshot, marked Gone, at its index; a new node is appended (the
// new nodes of one cycle in name order); a node that comes back under a
// name seen before gets its old index back. Policies may therefore keep
// node indices from one cycle to the next (OASiS does). The first cycle
// indexes the nodes in name order. Entries are never dropped: a table
// grows by one entry per node name ever seen. Not safe for concurrent
// use.
type NodeTable struct {
	index map[string]int
	// last is each node as last seen, by index.
	last []cluster.Node
	// changed is set by assign when a known node's labels or taints
	// changed (node constraints' eligible sets must be recomputed).
	changed bool
	// ext is the nodes' free extended resources (extra.go).
	ext *extFree
}

// NewNodeTable returns an empty table.
func NewNodeTable() *NodeTable { return &NodeTable{index: map[string]int{}, ext: &extFree{}} }

// assign indexes this cycle's nodes, appending unknown ones, and returns
// the node at each index, nil for one that is gone.
func (t *NodeTable) assign(nodes []corev1.Node) []*corev1.Node {
	var fresh []*corev1.Node
	for i := range nodes {
		if _, ok := t.index[nodes[i].Name]; !ok {
			fresh = append(fresh, &nodes[i])
		}
	}
	slices.SortFunc(fresh, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range fresh {
		if _, ok := t.index[n.Name]; ok {
			continue // listed twice
		}
		t.index[n.Name] = len(t.last)
		t.last = append(t.last, cluster.Node{})
	}
	out := make([]*corev1.Node, len(t.last))
	t.changed = false
	for i := range nodes {
		n := &nodes[i]
		k := t.index[n.Name]
		out[k] = n
		taints := constraint.Taints(n.Spec.Taints)
		if prev := &t.last[k]; prev.Name != "" && (!maps.Equal(prev.Labels, n.Labels) || !slices.Equal(prev.Taints, taints)) {
			t.changed = true
		}
		t.last[k] = cluster.Node{
			Labels:         n.Labels,
			Taints:         taints,
			Name:           n.Name,
			InstanceType:   n.Labels[corev1.LabelInstanceTypeStable],
			Zone:           n.Labels[corev1.LabelTopologyZone],
			PlacementGroup: n.Labels[LabelPlacementGroup],
			Role:           n.Labels[LabelRole],
			Capacity:       Vector(n.Status.Allocatable),
		}
	}
	return out
}

// rqItem is a preempted job going back to the head of the queue.
type rqItem struct {
	at time.Time
	st *cluster.JobState
}

// qItem is a pending job in arrival order.
type qItem struct {
	created time.Time
	key     string
	st      *cluster.JobState
}

// chargeForeign charges a pod drover does not manage to its node.
func (v *View) chargeForeign(p *corev1.Pod) {
	ni, ok := v.nodeIdx[p.Spec.NodeName]
	if !ok {
		return
	}
	n := v.Snap.Nodes[ni]
	d := PodDemand(&p.Spec)
	n.Allocated = n.Allocated.Add(d)
	n.Usage = n.Usage.Add(d)
	if p.DeletionTimestamp != nil {
		n.Releasing = n.Releasing.Add(d)
	}
	v.chargeExtra(ni, p, false)
}

// podNode is the node a replica pod runs on or was assigned to.
func PodNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return p.Annotations[v1alpha1.AnnotationNode]
}

// fillJob derives the job's phase, placement and progress from its status
// and pods, and charges its resources to nodes.
func (v *View) fillJob(jv *Job, now time.Time, o Options) {
	tj, st := jv.TJ, jv.St
	fillStatus(jv, now, o)
	live, graceEnds := v.chargeTerminating(jv, now, o)
	waiting := graceEnds > 0 // terminating pods not yet stuck
	switch tj.Status.Phase {
	case v1alpha1.PhaseAdmitted, v1alpha1.PhaseRunning:
		st.Phase = cluster.Running
		v.fillPlaced(jv, live, graceEnds)
	case v1alpha1.PhaseSuspended:
		// Preempted: Suspending while its pods checkpoint, then pending.
		for _, p := range live {
			if ni, ok := v.nodeIdx[PodNode(p)]; ok {
				v.charge(ni, p, true)
			}
		}
		if waiting || len(live) > 0 {
			st.Phase = cluster.Suspending
			st.GraceEnds = graceEnds
			for _, p := range jv.Pods {
				g, gok := jv.group(p.Labels[v1alpha1.LabelGroup])
				ni, nok := v.nodeIdx[PodNode(p)]
				if gok && nok && p.DeletionTimestamp != nil && !slices.Contains(jv.Stuck, p) {
					st.Placement = append(st.Placement, cluster.Assignment{Group: g, Node: ni})
				}
			}
			v.linkNodes(jv)
		} else {
			st.Phase = cluster.Pending
		}
	default: // Pending or unset
		st.Phase = cluster.Pending
		for _, p := range live {
			if ni, ok := v.nodeIdx[PodNode(p)]; ok {
				v.charge(ni, p, true)
			}
		}
	}
}

// fillStatus copies what a TrainingJob's status says of it (counts,
// times, policy labels, evaluations, progress) into its JobState.
func fillStatus(jv *Job, now time.Time, o Options) {
	tj, st := jv.TJ, jv.St
	t := o.Seconds(now)
	st.Preemptions = int(tj.Status.Preemptions)
	st.Migrations = int(tj.Status.Migrations)
	st.Resizes = int(tj.Status.Resizes)
	st.Reason = tj.Status.Reason
	st.Enqueued = st.Job.Submit
	if tj.Status.RequeuedAt != nil {
		st.Enqueued = o.Seconds(tj.Status.RequeuedAt.Time)
	}
	if tj.Status.StartTime != nil {
		st.FirstStart = o.Seconds(tj.Status.StartTime.Time)
	}
	st.LastStart = st.FirstStart
	for _, c := range tj.Status.Conditions {
		if c.Type == v1alpha1.ConditionAdmitted && c.Status == "True" {
			st.LastStart = o.Seconds(c.LastTransitionTime.Time)
		}
	}
	st.Labels, jv.BadLabels = PolicyLabels(tj)
	for _, e := range tj.Status.Evals {
		st.Evals = append(st.Evals, cluster.EvalSample{T: o.Seconds(e.Time.Time), Value: e.Value})
	}
	st.Updated = t
	if p := tj.Status.Progress; p != nil {
		st.WorkLeft = st.Job.Work * (1 - Clamp01(p.Fraction))
		st.Updated = o.Seconds(p.ReportedAt.Time)
	}
}

// chargeTerminating charges the job's terminating pods to their nodes
// as releasing until they are gone (one stuck past its deadline is
// reported and no longer waited for, but its resources stay charged);
// it returns the live pods and when the last grace period not yet
// stuck ends (0: none).
func (v *View) chargeTerminating(jv *Job, now time.Time, o Options) (live []*corev1.Pod, graceEnds float64) {
	// Terminating pods hold their node's resources until they are gone,
	// marked as releasing; one stuck past its deadline is reported and no
	// longer waited for, but its resources stay charged.
	for _, p := range jv.Pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
			continue
		}
		d := p.DeletionTimestamp.Time
		if now.After(d.Add(o.StuckAfter)) {
			jv.Stuck = append(jv.Stuck, p)
		} else if s := o.Seconds(d); s > graceEnds {
			graceEnds = s
		}
		if ni, ok := v.nodeIdx[PodNode(p)]; ok {
			n := v.Snap.Nodes[ni]
			dm := PodDemand(&p.Spec)
			n.Allocated = n.Allocated.Add(dm)
			n.Usage = n.Usage.Add(dm)
			n.Releasing = n.Releasing.Add(dm)
			v.chargeExtra(ni, p, false)
		}
	}
	return live, graceEnds
}

// fillPlaced fills an Admitted or Running job: its stored placement,
// charged whole, and its phase and rate.
func (v *View) fillPlaced(jv *Job, live []*corev1.Pod, graceEnds float64) {
	tj, st := jv.TJ, jv.St
	st.Placement, jv.BadPlacement = v.storedPlacement(jv)
	// Charge the placement (pods to be created included) rather than
	// the pods seen: the informer cache may not show pods created a
	// moment ago, and the placement is what the scheduler committed to.
	// Live pods beyond the placement (about to be deleted) are charged
	// too.
	want := map[[2]int]int{}
	for _, a := range st.Placement {
		want[[2]int{a.Group, a.Node}]++
	}
	for _, p := range live {
		g, gok := jv.group(p.Labels[v1alpha1.LabelGroup])
		ni, nok := v.nodeIdx[PodNode(p)]
		if !gok || !nok || p.Labels[v1alpha1.LabelAttempt] != strconv.Itoa(int(tj.Status.Attempt)) {
			if nok {
				v.charge(ni, p, false)
			}
			continue
		}
		k := [2]int{g, ni}
		if want[k] > 0 {
			want[k]--
			continue
		}
		v.charge(ni, p, false)
	}
	for _, a := range st.Placement {
		v.chargeJob(jv, a)
	}
	switch {
	case tj.Status.Migrating && graceEnds > 0: // terminating pods not yet stuck
		st.Phase = cluster.Migrating
		st.PauseEnds = graceEnds
	case tj.Status.Phase == v1alpha1.PhaseRunning:
		st.Rate = st.Job.SpeedAt(st.Counts(), len(st.Placement.Nodes()))
	}
}

// charge charges pod p to node ni (its vector, pod slot and extended
// resources); releasing marks it terminating or about to be.
func (v *View) charge(ni int, p *corev1.Pod, releasing bool) {
	d := PodDemand(&p.Spec)
	v.chargeExtra(ni, p, false)
	n := v.Snap.Nodes[ni]
	n.Allocated = n.Allocated.Add(d)
	n.Usage = n.Usage.Add(d)
	if releasing {
		n.Releasing = n.Releasing.Add(d)
	}
}

func (v *View) chargeJob(jv *Job, a cluster.Assignment) {
	g := &jv.St.Job.Groups[a.Group]
	n := v.Snap.Nodes[a.Node]
	n.Allocated = n.Allocated.Add(g.Demand)
	n.Usage = n.Usage.Add(g.EffectiveUsage())
	v.Extra[a.Node].Add(1, v.groupExtra(jv.St.Job.ID, a.Group), false)
	if !slices.Contains(n.Jobs, jv.St) {
		n.Jobs = append(n.Jobs, jv.St)
	}
}

func (v *View) linkNodes(jv *Job) {
	for _, ni := range jv.St.Placement.Nodes() {
		n := v.Snap.Nodes[ni]
		if !slices.Contains(n.Jobs, jv.St) {
			n.Jobs = append(n.Jobs, jv.St)
		}
	}
}

// JobCache keeps the cluster.Job made from each TrainingJob, keyed by UID,
// and makes it again only when something ToJob reads changes: the spec
// (generation), the model label, the clock origin or the default duration.
// Converting 10,000 specs is about a third of a cycle at that size, and a
// pending job's spec rarely changes between cycles. Jobs are immutable
// once made (policies must not modify them), so sharing them across cycles
// is safe. A nil *JobCache converts every time.
type JobCache struct {
	m map[types.UID]*cachedJob
	// sweeps counts sweeps; an entry seen since the last one has seen ==
	// sweeps.
	sweeps uint64
}

type cachedJob struct {
	gen    int64
	model  string
	origin time.Time
	def    float64
	job    *cluster.Job
	err    error
	seen   uint64
}

// NewJobCache returns an empty cache.
func NewJobCache() *JobCache {
	return &JobCache{m: map[types.UID]*cachedJob{}}
}

func (c *JobCache) get(tj *v1alpha1.TrainingJob, o Options) (*cluster.Job, error) {
	if c == nil || tj.UID == "" { // objects not from an API server have no UID
		return ToJob(tj, o)
	}
	model := tj.Labels["drover.dev/model"]
	if e, ok := c.m[tj.UID]; ok && e.gen == tj.Generation && e.model == model && e.origin.Equal(o.Origin) &&
		e.def == o.DefaultDuration && (e.job == nil || isKey(e.job.ID, tj)) {
		e.seen = c.sweeps
		return e.job, e.err
	}
	j, err := ToJob(tj, o)
	c.m[tj.UID] = &cachedJob{gen: tj.Generation, model: model, origin: o.Origin, def: o.DefaultDuration, job: j, err: err, seen: c.sweeps}
	return j, err
}

// isKey reports whether id is JobKey(tj), without building the key.
func isKey(id string, tj *v1alpha1.TrainingJob) bool {
	ns := len(tj.Namespace)
	return len(id) == ns+1+len(tj.Name) && id[:ns] == tj.Namespace && id[ns] == '/' && id[ns+1:] == tj.Name
}

// sweep forgets jobs not seen since the last sweep (deleted or finished).
func (c *JobCache) sweep() {
	if c == nil {
		return
	}
	for uid, e := range c.m {
		if e.seen != c.sweeps {
			delete(c.m, uid)
		}
	}
	c.sweeps++
}

// ToJob converts a TrainingJob's spec to the policy's job model. Errors
// name the field.
func ToJob(tj *v1alpha1.TrainingJob, o Options) (*cluster.Job, error) {
	// A job created before the clock's origin arrived at time 0.
	submit := max(0, o.Seconds(tj.CreationTimestamp.Time))
	j := &cluster.Job{
		ID:          JobKey(tj),
		Tenant:      o.Tenant(tj.Namespace),
		Priority:    int(tj.Spec.Priority),
		Submit:      submit,
		Work:        o.DefaultDuration,
		GracePeriod: float64(tj.Grace()),
		Model:       tj.Labels["drover.dev/model"],
	}
	switch tj.Spec.Class {
	case v1alpha1.ClassTE:
		j.Class = cluster.ClassTE
	case v1alpha1.ClassBE, "":
		j.Class = cluster.ClassBE
	default:
		return nil, fmt.Errorf("spec.class: %q is not TE or BE", tj.Spec.Class)
	}
	// Work is what the user stated (Estimate stays 0: the scheduler is
	// told Work); without a statement it is the default duration, and
	// NoEstimate says so, for the policies that can do without a run time
	// (SRSF keys such a job by its attained service).
	if d := tj.Spec.EstimatedDurationSeconds; d != nil {
		j.Work = float64(*d)
	} else {
		j.NoEstimate = true
	}
	if ps := tj.Spec.ParameterServer; ps != nil {
		j.PS = &cluster.PSParams{Epochs: int(ps.Epochs), Chunks: int(ps.Chunks), MiniBatches: int(ps.MiniBatches),
			MiniBatchTime: ps.MiniBatchSeconds, GradientMB: ps.GradientMB, WorkerBW: ps.WorkerBandwidthMBps, PSBW: ps.PSBandwidthMBps}
	}
	if u := tj.Spec.Utility; u != nil {
		j.Utility = cluster.Sigmoid{G1: u.Weight, G2: u.Decay, G3: u.TargetSeconds}
	}
	h := fnv.New64a()
	h.Write([]byte(tj.UID))
	h.Write([]byte(j.ID))
	j.Seed = h.Sum64()
	for i := range tj.Spec.ReplicaGroups {
		g := &tj.Spec.ReplicaGroups[i]
		lo, hi := g.Bounds()
		c, err := constraint.FromPod(&g.Template.Spec)
		if err != nil {
			return nil, fmt.Errorf("spec.replicaGroups[%d].template.spec.%w", i, err)
		}
		if err := checkDemand(&g.Template.Spec, hi); err != nil {
			return nil, fmt.Errorf("spec.replicaGroups[%d].%w", i, err)
		}
		j.Groups = append(j.Groups, cluster.ReplicaGroup{
			Name: g.Name, Demand: PodDemand(&g.Template.Spec),
			Replicas: int(g.Replicas), Min: int(lo), Max: int(hi), Constraint: withExtended(c, &g.Template.Spec, o.Nodes.extFree()),
		})
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j, nil
}

// maxQuantity bounds each resource quantity a pod template may request, in
// the resource's own unit (cores, bytes, GPUs): a million cores, a PiB of
// memory or storage, a million GPUs. Beyond these, Quantity.MilliValue and
// Value overflow int64 (cpu: 1e18 read as zero demand, memory: 8Ei as a
// negative one).
var maxQuantity = map[corev1.ResourceName]float64{
	corev1.ResourceCPU:              1e6,
	corev1.ResourceMemory:           1 << 50,
	GPUResource:                     1e6,
	corev1.ResourceEphemeralStorage: 1 << 50,
}

// maxGroupDemand bounds a group's demand at its largest replica count, in
// drover's units, leaving a factor of 1000 below int64's maximum for the
// sums over jobs and nodes.
const maxGroupDemand = math.MaxInt64 / 1000

// checkDemand fails when a quantity of the pod template is beyond
// maxQuantity, or when the template's demand times maxReplicas overflows
// maxGroupDemand; errors name the field below the replica group.
func checkDemand(s *corev1.PodSpec, maxReplicas int32) error {
	lists := func(prefix string, cs []corev1.Container) error {
		for i := range cs {
			for _, l := range []struct {
				name string
				rl   corev1.ResourceList
			}{{"requests", cs[i].Resources.Requests}, {"limits", cs[i].Resources.Limits}} {
				for r, q := range l.rl {
					if max, ok := maxQuantity[r]; ok {
						if x := q.AsApproximateFloat64(); !(x <= max) {
							return fmt.Errorf("template.spec.%s[%d].resources.%s.%s: %s is above the limit %v", prefix, i, l.name, r, q.String(), max)
						}
					}
				}
			}
		}
		return nil
	}
	if err := lists("containers", s.Containers); err != nil {
		return err
	}
	if err := lists("initContainers", s.InitContainers); err != nil {
		return err
	}
	for r, q := range s.Overhead {
		if max, ok := maxQuantity[r]; ok && !(q.AsApproximateFloat64() <= max) {
			return fmt.Errorf("template.spec.overhead.%s: %s is above the limit %v", r, q.String(), max)
		}
	}
	d := PodDemand(s)
	for k, v := range d {
		if float64(v)*float64(max(maxReplicas, 1)) > maxGroupDemand {
			return fmt.Errorf("template: %s demand %d x %d replicas overflows", resource.Kind(k), v, maxReplicas)
		}
	}
	return nil
}

// Vector converts a resource list to drover's vector.
func Vector(l corev1.ResourceList) resource.Vector {
	var v resource.Vector
	if q, ok := l[corev1.ResourceCPU]; ok {
		v[resource.CPU] = q.MilliValue()
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		v[resource.Memory] = q.Value()
	}
	if q, ok := l[GPUResource]; ok {
		v[resource.GPU] = q.Value()
	}
	if q, ok := l[corev1.ResourceEphemeralStorage]; ok {
		v[resource.Storage] = q.Value()
	}
	return v
}

// PodDemand is what a pod requests, as kube-scheduler computes it: the sum
// over containers (limits where requests are unset), at least the largest
// init container, plus the pod overhead.
func PodDemand(s *corev1.PodSpec) resource.Vector {
	var sum resource.Vector
	for i := range s.Containers {
		sum = sum.Add(containerDemand(&s.Containers[i]))
	}
	for i := range s.InitContainers {
		sum = sum.Max(containerDemand(&s.InitContainers[i]))
	}
	return sum.Add(Vector(s.Overhead))
}

func containerDemand(c *corev1.Container) resource.Vector {
	r := Vector(c.Resources.Requests)
	l := Vector(c.Resources.Limits)
	for k := range r {
		if r[k] == 0 {
			r[k] = l[k]
		}
	}
	return r
}

func nodeReady(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func Clamp01(x float64) float64 { return min(max(x, 0), 1) }

// Reasons a pending job is held out of the queue.
const (
	ReasonSchedulingGated = "SchedulingGated"
	ReasonUnschedulable   = "Unschedulable"
)

// hold reports whether pending job st must be kept out of the policy's
// queue, recording why in v.held, so that it neither blocks the jobs
// behind it (a head-of-line policy would wait for it for ever) nor makes a
// policy preempt anything:
//
//   - a pod that still has scheduling gates (kube-scheduler's PreEnqueue
//     keeps such pods out of its queue too);
//   - Unschedulable: a group that no node could ever take one replica of,
//     whatever runs there (its role, taints, labels, capacity, pod count
//     or extended resources refuse it on every node), or minimum replicas
//     that outnumber what all the nodes that may run them hold when empty
//     (tooFew), unless a catalogue type the cluster autoscaler could add
//     would take it;
//   - a TrainingJob whose pod the API server refused less than
//     RefusalBackoff ago (backingOff);
//   - QuotaExceeded: a TrainingJob whose minimum replicas exceed a
//     ResourceQuota of its namespace, hard minus used (as Kueue admits
//     against quota before placing);
//   - Unschedulable: a PodGroup gang whose minResources exceed the
//     cluster's free room (coscheduling's PreFilter).
//
// All are judged against the cluster as it is now and re-examined every
// cycle: a node that joins (or an autoscaler adds) or changes its labels,
// a pod that ends, a raised quota lets the job in.
func (v *View) hold(st *cluster.JobState, now time.Time, o Options) bool {
	if why := v.gated(st.Job.ID); why != "" {
		v.setHeld(st.Job.ID, why)
		return true
	}
	j := st.Job
	for g := range j.Groups {
		if why := v.nowhere(j, g, o); why != "" {
			v.setHeld(st.Job.ID, why)
			return true
		}
	}
	if why := v.tooFew(j, o); why != "" {
		v.setHeld(st.Job.ID, why)
		return true
	}
	if gj := v.Gangs[st.Job.ID]; gj != nil {
		if why := v.minResourcesShort(gj); why != "" {
			v.setHeld(st.Job.ID, why)
			return true
		}
	}
	if jv := v.Jobs[st.Job.ID]; jv != nil {
		if why := backingOff(jv.TJ, now); why != "" {
			v.setHeld(st.Job.ID, why)
			return true
		}
		if why := v.overQuota(jv); why != "" {
			v.setHeld(st.Job.ID, why)
			return true
		}
	}
	return false
}

func (v *View) setHeld(id, why string) {
	if v.held == nil {
		v.held = map[string]string{}
	}
	v.held[id] = why
	v.heldOrder = append(v.heldOrder, id)
}

// Held returns the jobs held out of the queue this cycle and why, in
// queue order.
func (v *View) Held() ([]string, map[string]string) { return v.heldOrder, v.held }

// gated returns why the job's pods may not be bound yet: a scheduling
// gate on an opted-in pod or on a TrainingJob replica template.
func (v *View) gated(id string) string {
	var gates []corev1.PodSchedulingGate
	if pj := v.PodJobs[id]; pj != nil {
		gates = pj.Pod.Spec.SchedulingGates
	} else if jv := v.Jobs[id]; jv != nil {
		for i := range jv.TJ.Spec.ReplicaGroups {
			gates = append(gates, jv.TJ.Spec.ReplicaGroups[i].Template.Spec.SchedulingGates...)
		}
	} else if gj := v.Gangs[id]; gj != nil {
		gates = gj.gates
	}
	if len(gates) == 0 {
		return ""
	}
	names := make([]string, len(gates))
	for i, g := range gates {
		names[i] = g.Name
	}
	return ReasonSchedulingGated + ": waiting for scheduling gates to be removed: " + strings.Join(names, ", ")
}

// nowhere returns why no node (ready or not, not gone) nor catalogue type
// could ever take one replica of group g, or "".
func (v *View) nowhere(j *cluster.Job, g int, o Options) string {
	grp := &j.Groups[g]
	var order []string
	count := map[string]int{}
	nodes := 0
	static := static(grp.Constraint)
	set := v.Snap.Eligibility.Set(v.Snap.Nodes, static)
	ext := v.groupExtra(j.ID, g)
	for i, n := range v.Snap.Nodes {
		if n.Gone {
			continue
		}
		nodes++
		why := ""
		switch {
		case n.Role != "" && n.Role != grp.Name:
			why = "node-role: node(s) are for other replica groups"
		case !set.Has(i) && !admitsOnceReady(&n.Node, static):
			why = cluster.WhyNot(&n.Node, static)
		case !grp.Demand.Fits(n.Capacity):
			why = "Insufficient " + grp.Demand.Short(n.Capacity)
		case ext != nil && (&NodeExtra{PodCap: -1, extCap: v.Extra[i].extCap}).short(1, ext) != "":
			why = "Insufficient " + string(shortExt(v.Extra[i].extCap, ext))
		default:
			return ""
		}
		if count[why] == 0 {
			order = append(order, why)
		}
		count[why]++
	}
	if nodes == 0 {
		return "" // no node yet (a scheduler starting before its nodes registered): nothing to judge
	}
	for _, t := range o.Catalog {
		if grp.Demand.Fits(t.Capacity) && cluster.Admits(&cluster.Node{Name: t.Name, InstanceType: t.Name, Capacity: t.Capacity}, static) {
			return ""
		}
	}
	slices.Sort(order) // kube-scheduler's order: by reason
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = fmt.Sprintf("%d %s", count[w], w)
	}
	return fmt.Sprintf("%s: no node can ever run a %s replica (%v): 0/%d nodes are available: %s",
		ReasonUnschedulable, grp.Name, grp.Demand, nodes, strings.Join(parts, ", "))
}

// transientTaints are the taints the node lifecycle controller adds and
// removes with a node's conditions (not ready, unreachable, cordoned,
// under pressure): a node that refuses a replica only because of them may
// take it later, so they do not make a job Unschedulable.
var transientTaints = map[string]bool{
	corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true, corev1.TaintNodeUnschedulable: true,
	corev1.TaintNodeNetworkUnavailable: true, corev1.TaintNodeMemoryPressure: true, corev1.TaintNodeDiskPressure: true,
	corev1.TaintNodePIDPressure: true, corev1.TaintNodeOutOfService: true,
}

// admitsOnceReady reports whether node n admits c when its transient
// taints are gone.
func admitsOnceReady(n *cluster.Node, c cluster.NodeConstraint) bool {
	if !slices.ContainsFunc(n.Taints, func(t cluster.Taint) bool { return transientTaints[t.Key] }) {
		return false // refused for good (the caller saw it refused)
	}
	m := *n
	m.Taints = slices.DeleteFunc(slices.Clone(n.Taints), func(t cluster.Taint) bool { return transientTaints[t.Key] })
	return cluster.Admits(&m, c)
}

// extFree returns the table's free extended resources; nil for a nil
// table.
func (t *NodeTable) extFree() *extFree {
	if t == nil {
		return nil
	}
	return t.ext
}

// Live returns the job's pods that are not terminating.
func (jv *Job) Live() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range jv.Pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// Waiting reports whether terminating pods (not yet stuck) remain.
func (jv *Job) Waiting() bool {
	for _, p := range jv.Pods {
		if p.DeletionTimestamp != nil && !slices.Contains(jv.Stuck, p) {
			return true
		}
	}
	return false
}
