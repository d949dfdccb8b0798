package view

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	dres "github.com/drover-sched/drover/pkg/resource"
)

// Reasons a pending job is held out of the queue besides those of
// snapshot.go (ReasonSchedulingGated, ReasonUnschedulable).
const (
	// ReasonQuotaExceeded: the job's minimum replicas would exceed a
	// ResourceQuota of its namespace (hard minus used).
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPodRefused: the API server refused one of the job's pods
	// (other than for its quota, e.g. an admission webhook or a
	// LimitRange); the job released its placement and is retried after
	// RefusalBackoff.
	ReasonPodRefused = "PodRefused"
	// ReasonPodSecurity: the namespace's Pod Security admission refused a
	// pod; the job fails (the template will not change).
	ReasonPodSecurity = "PodSecurity"
	// ReasonInvalidPod: the API server refused a pod as invalid; the job
	// fails.
	ReasonInvalidPod = "InvalidPod"
)

// RefusalBackoff is how long a job whose pod the API server refused
// (PodRefused, or QuotaExceeded when the snapshot's quota model did not
// foresee it) waits before it is offered to the policy again, so that a
// refusal drover cannot predict costs a few API calls per backoff, not per
// cycle.
const RefusalBackoff = 30 * time.Second

// tooFew returns why the job could not start even on an empty cluster
// because its minimum replicas outnumber what the nodes that may run them
// hold, or "": a 1,024-replica gang on a 16-GPU cluster. Each node is
// judged empty (whatever runs there now will end); nodes that are not
// ready count (a cordoned node may come back), gone ones do not. A
// catalogue type that takes a replica of every group means an autoscaler
// may add nodes: then nothing is judged impossible. Both tests are
// necessary conditions for a start (a group's replicas per node are
// bounded by the node's capacity; all groups together by the summed
// capacity of the nodes any of them may use), so a job that could ever
// start is never held by them.
func (v *View) tooFew(j *cluster.Job, o Options) string {
	if len(o.Catalog) > 0 && v.catalogTakes(j, o) {
		return ""
	}
	var buf [4]cluster.NodeSet
	sets := buf[:0]
	if len(j.Groups) > len(buf) {
		sets = make([]cluster.NodeSet, 0, len(j.Groups))
	}
	sets = sets[:len(j.Groups)]
	var need dres.Vector
	for g := range j.Groups {
		grp := &j.Groups[g]
		need = need.Add(grp.Demand.Scale(int64(grp.Min)))
		static := static(grp.Constraint)
		sets[g] = v.Snap.Eligibility.Set(v.Snap.Nodes, static)
		ext := v.groupExtra(j.ID, g)
		total, nodes := 0, 0
		for i, n := range v.Snap.Nodes {
			if !v.may(j, g, i, sets[g], static) {
				continue
			}
			nodes++
			if total += perNode(grp.Demand, n.Capacity, ext, &v.Extra[i]); total >= grp.Min {
				break // enough: the common case ends at the first node or few
			}
		}
		if nodes > 0 && total < grp.Min {
			return fmt.Sprintf("%s: group %s needs at least %d replicas of %v; the %d node(s) that may run them hold %d even when empty",
				ReasonUnschedulable, grp.Name, grp.Min, grp.Demand, nodes, min(total, grp.Min))
		}
	}
	if len(j.Groups) < 2 {
		return "" // one group: the test above implies the next
	}
	var have dres.Vector
	for i, n := range v.Snap.Nodes {
		for g := range j.Groups {
			if v.may(j, g, i, sets[g], static(j.Groups[g].Constraint)) {
				have = have.Add(n.Capacity)
				break
			}
		}
		if need.Fits(have) {
			return ""
		}
	}
	if !have.IsZero() {
		return fmt.Sprintf("%s: the job's minimum replicas need %v, more %s than the nodes that may run them have even when empty (%v)",
			ReasonUnschedulable, need, need.Short(have), have)
	}
	return ""
}

// may reports whether node i (judged empty) may run a replica of group g
// of j: not gone, its role and constraint c (with set, c's eligible
// nodes) admit it, once the node lifecycle's transient taints are gone.
func (v *View) may(j *cluster.Job, g, i int, set cluster.NodeSet, c cluster.NodeConstraint) bool {
	n := v.Snap.Nodes[i]
	return !n.Gone && (n.Role == "" || n.Role == j.Groups[g].Name) && (set.Has(i) || admitsOnceReady(&n.Node, c))
}

// catalogTakes reports whether some catalogue type takes a replica of
// every group of j.
func (v *View) catalogTakes(j *cluster.Job, o Options) bool {
	for g := range j.Groups {
		grp := &j.Groups[g]
		if !slices.ContainsFunc(o.Catalog, func(t cluster.InstanceType) bool {
			return grp.Demand.Fits(t.Capacity) && cluster.Admits(&cluster.Node{Name: t.Name, InstanceType: t.Name, Capacity: t.Capacity}, static(grp.Constraint))
		}) {
			return false
		}
	}
	return true
}

// perNode returns how many replicas of demand d (and extended resources
// ext) an empty node of capacity c and extras x holds.
func perNode(d, c dres.Vector, ext corev1.ResourceList, x *NodeExtra) int {
	k := int64(math.MaxInt32)
	for i := range d {
		if d[i] > 0 {
			k = min(k, c[i]/d[i])
		}
	}
	if x.PodCap >= 0 {
		k = min(k, x.PodCap)
	}
	for r, q := range ext {
		if q.Value() > 0 {
			k = min(k, x.extCap[r]/q.Value())
		}
	}
	return int(k)
}

// nsQuota is one ResourceQuota that applies to every pod of its
// namespace (no scopes), as the snapshot saw it.
type NSQuota struct {
	name       string
	hard, used corev1.ResourceList
}

// buildQuotas keeps the namespaces' unscoped ResourceQuotas. A quota with
// scopes or a scope selector (Terminating, BestEffort, PriorityClass, ...)
// applies to some pods only: it is not modelled, and a pod it refuses
// takes the refusal path (ReasonPodRefused) instead.
func buildQuotas(qs []corev1.ResourceQuota) map[string][]*NSQuota {
	if len(qs) == 0 {
		return nil
	}
	out := map[string][]*NSQuota{}
	for i := range qs {
		q := &qs[i]
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil || len(q.Spec.Hard) == 0 {
			continue
		}
		// The quota controller fills status.hard from spec.hard; until it
		// has, spec.hard is what admission enforces.
		out[q.Namespace] = append(out[q.Namespace], &NSQuota{name: q.Name, hard: q.Spec.Hard, used: q.Status.Used.DeepCopy()})
	}
	for _, l := range out {
		slices.SortFunc(l, func(a, b *NSQuota) int { return strings.Compare(a.name, b.name) })
	}
	return out
}

// floorQuotaUsed raises each quota's used amount to at least what the
// cluster holds as the view sees it: the replicas of every started job
// (its placement's counts, which include pods the executor created that
// the informer has not delivered yet) plus every other unfinished pod of
// the namespace. status.used, as the informer cache has it, lags the API
// server's quota admission, which charges each pod as it is created: read
// alone, a quota still showing 0 used right after a job's start would let
// an elastic job grow past the quota (capToQuota) and its pods be refused
// (TestElasticJobWithinQuota). Taking the larger of the two never
// undercounts either: status.used also keeps a deleted pod charged until
// the quota controller recomputes, which the pods no longer show.
func (v *View) floorQuotaUsed(w *World) {
	if len(v.Quotas) == 0 {
		return
	}
	sums := map[string]corev1.ResourceList{}
	add := func(ns string, usage corev1.ResourceList) {
		sum := sums[ns]
		if sum == nil {
			sum = corev1.ResourceList{}
			sums[ns] = sum
		}
		for r, q := range usage {
			t := sum[r]
			t.Add(q)
			sum[r] = t
		}
	}
	counted := map[*corev1.Pod]bool{}
	for _, key := range v.Order {
		jv := v.Jobs[key]
		if jv.Invalid != nil || jv.St.Phase == cluster.Pending || len(v.Quotas[jv.TJ.Namespace]) == 0 {
			continue
		}
		add(jv.TJ.Namespace, v.JobQuota(jv, jv.St.Counts()))
		for _, p := range jv.Pods {
			counted[p] = true
		}
	}
	for i := range w.Pods {
		p := &w.Pods[i]
		if counted[p] || len(v.Quotas[p.Namespace]) == 0 || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		add(p.Namespace, quotaUsage(&p.Spec))
	}
	for ns, sum := range sums {
		for _, q := range v.Quotas[ns] {
			for r := range q.hard {
				n, ok := sum[r]
				if !ok {
					continue
				}
				if u, had := q.used[r]; had && u.Cmp(n) >= 0 {
					continue
				}
				if q.used == nil {
					q.used = corev1.ResourceList{}
				}
				q.used[r] = n.DeepCopy()
			}
		}
	}
}

// cloneQuotas copies the quotas' used amounts (apply.Cycle's ledger).
func CloneQuotas(m map[string][]*NSQuota) map[string][]*NSQuota {
	out := make(map[string][]*NSQuota, len(m))
	for ns, l := range m {
		for _, q := range l {
			out[ns] = append(out[ns], &NSQuota{name: q.name, hard: q.hard, used: q.used.DeepCopy()})
		}
	}
	return out
}

// quotaUsage is what one pod of spec s counts against a ResourceQuota,
// as the API server's pod evaluator counts it: pods and count/pods 1,
// requests.R for every resource requested (and the bare names cpu,
// memory, ephemeral-storage), limits.R for every limit; requests and
// limits as component-helpers computes them for admission.
func quotaUsage(s *corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePods:               *resource.NewQuantity(1, resource.DecimalSI),
		corev1.ResourceName("count/pods"): *resource.NewQuantity(1, resource.DecimalSI),
	}
	for r, q := range podRequests(s) {
		out[corev1.ResourceName("requests."+string(r))] = q
		switch r {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			out[r] = q
		}
	}
	for r, q := range podLimits(s) {
		out[corev1.ResourceName("limits."+string(r))] = q
	}
	return out
}

// jobQuota returns what counts[g] replicas of each group of TrainingJob
// jv count against its namespace's quotas (nil when the namespace has
// none). Negative counts give usage back.
func (v *View) JobQuota(jv *Job, counts []int) corev1.ResourceList {
	if len(v.Quotas[jv.TJ.Namespace]) == 0 {
		return nil
	}
	if jv.quota == nil {
		jv.quota = make([]corev1.ResourceList, len(jv.TJ.Spec.ReplicaGroups))
		for i := range jv.TJ.Spec.ReplicaGroups {
			jv.quota[i] = quotaUsage(&jv.TJ.Spec.ReplicaGroups[i].Template.Spec)
		}
	}
	out := corev1.ResourceList{}
	for g, c := range counts {
		if c == 0 || g >= len(jv.quota) {
			continue
		}
		for r, q := range jv.quota[g] {
			q = q.DeepCopy()
			q.Mul(int64(c))
			sum := out[r]
			sum.Add(q)
			out[r] = sum
		}
	}
	return out
}

// quotaShort returns why usage need does not fit the quotas qs of
// namespace ns (hard minus used), in the words of the API server's quota
// admission, or "" when it fits. Only resources a quota limits count.
func QuotaShort(ns string, qs []*NSQuota, need corev1.ResourceList) string {
	for _, q := range qs {
		var req, used, lim []string
		for _, r := range sortedNames(q.hard) {
			n, ok := need[r]
			if !ok || n.Sign() <= 0 {
				continue
			}
			total := q.used[r].DeepCopy()
			total.Add(n)
			if h := q.hard[r]; total.Cmp(h) > 0 {
				u := q.used[r]
				req = append(req, fmt.Sprintf("%s=%s", r, n.String()))
				used = append(used, fmt.Sprintf("%s=%s", r, u.String()))
				lim = append(lim, fmt.Sprintf("%s=%s", r, h.String()))
			}
		}
		if len(req) > 0 {
			return fmt.Sprintf("namespace %s: exceeded quota: %s, requested: %s, used: %s, limited: %s",
				ns, q.name, strings.Join(req, ","), strings.Join(used, ","), strings.Join(lim, ","))
		}
	}
	return ""
}

// chargeQuota adds usage to the quotas of namespace ns.
func ChargeQuota(qs []*NSQuota, usage corev1.ResourceList) {
	for _, q := range qs {
		for r, n := range usage {
			if _, ok := q.hard[r]; !ok {
				continue
			}
			if q.used == nil {
				q.used = corev1.ResourceList{}
			}
			u := q.used[r].DeepCopy()
			u.Add(n)
			q.used[r] = u
		}
	}
}

// minCounts returns each group's minimum replicas.
func minCounts(j *cluster.Job) []int {
	out := make([]int, len(j.Groups))
	for g := range j.Groups {
		out[g] = j.Groups[g].Min
	}
	return out
}

// overQuota returns why TrainingJob jv's minimum replicas do not fit its
// namespace's quotas, hard minus used minus what the jobs before it in the
// queue reserve, or "" (and then reserves them). Called in queue order:
// the jobs offered to the policy in one cycle fit their quotas together,
// so no policy starts a set of jobs that the quota admission would refuse
// part of; a job that waits for nodes keeps its reservation, so the
// namespace's later jobs wait behind it (Kueue's StrictFIFO), while other
// namespaces' jobs are not held back.
func (v *View) overQuota(jv *Job) string {
	if len(v.Quotas[jv.TJ.Namespace]) == 0 {
		return ""
	}
	if v.reserved == nil {
		v.reserved = CloneQuotas(v.Quotas)
	}
	qs := v.reserved[jv.TJ.Namespace]
	need := v.JobQuota(jv, minCounts(jv.St.Job))
	if why := QuotaShort(jv.TJ.Namespace, qs, need); why != "" {
		return ReasonQuotaExceeded + ": " + why
	}
	ChargeQuota(qs, need)
	return ""
}

// backingOff returns the reason of a job whose pod the API server refused
// less than RefusalBackoff ago (the Admitted condition says so), or "".
func backingOff(tj *v1alpha1.TrainingJob, now time.Time) string {
	c := meta.FindStatusCondition(tj.Status.Conditions, v1alpha1.ConditionAdmitted)
	if c == nil || c.Status != "False" || (c.Reason != ReasonPodRefused && c.Reason != ReasonQuotaExceeded) {
		return ""
	}
	if now.Sub(c.LastTransitionTime.Time) >= RefusalBackoff {
		return ""
	}
	return tj.Status.Reason
}

// capToQuota lowers, for this cycle's snapshot, the maximum replicas
// (and the requested count, which policies try first) of each elastic
// group of TrainingJob jv to what its namespace's quotas leave room for
// after what is used and what the queued jobs reserve: policies do not
// see quotas, and one that starts or grows an elastic job past its
// quota would be refused by the validator every cycle (an elastic job
// that asks for 4 workers first under a quota of 2 would never start).
// The job's minimum is never lowered (the job was admitted for it, or is
// held). Groups grow one at a time in the validator's check, so a job of
// several elastic groups may still be refused once when all grow
// together. The cached Job is not modified: the state gets a copy.
func (v *View) capToQuota(jv *Job) {
	qs := v.reserved[jv.TJ.Namespace]
	if len(qs) == 0 || jv.St == nil {
		return
	}
	j := jv.St.Job
	cur := jv.St.Counts()
	var groups []cluster.ReplicaGroup
	for g := range j.Groups {
		grp := &j.Groups[g]
		base := grp.Min // pending: the minimum is reserved
		if jv.St.Phase != cluster.Pending {
			base = cur[g] // running: its pods are in used
		}
		if grp.Max <= base {
			continue
		}
		one := make([]int, len(j.Groups))
		one[g] = 1
		usage := v.JobQuota(jv, one)
		room := 0
		for c := base; c < grp.Max; c++ {
			need := corev1.ResourceList{}
			for r, q := range usage {
				q = q.DeepCopy()
				q.Mul(int64(room + 1))
				need[r] = q
			}
			if QuotaShort(jv.TJ.Namespace, qs, need) != "" {
				break
			}
			room++
		}
		if max(base+room, grp.Min) >= grp.Max {
			continue
		}
		if groups == nil {
			groups = slices.Clone(j.Groups)
		}
		groups[g].Max = max(base+room, grp.Min) // a partial start below its minimum may still complete
		groups[g].Replicas = min(groups[g].Replicas, groups[g].Max)
	}
	if groups != nil {
		cp := *j
		cp.Groups = groups
		jv.St.Job = &cp
	}
}
