package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Limits the resource vector does not carry.
//
// resource.Vector holds CPU, memory, GPU (nvidia.com/gpu), storage
// (ephemeral-storage) and bandwidth as a fixed array: the simulator's fit
// checks allocate nothing, and its experiments' outputs depend on exactly
// those kinds (OASiS's per-kind prices, Dorm's per-kind LP, DRF's shares).
// A node also limits the number of pods it runs (allocatable `pods`,
// usually 110) and may advertise any number of extended resources
// (hugepages-2Mi, rdma/hca, amd.com/gpu, ...), which kube-scheduler's
// NodeResourcesFit checks as well. Those are kept here, per node, by the
// Kubernetes executor alone: adding a kind to the vector would change every
// vector loop of the simulator and the OASiS price parameters' format for
// a limit the simulator never has, so the simulator keeps its vector (and
// its outputs) and the executor checks the rest:
//
//   - the snapshot counts, on every node, every pod that is not finished
//     (drover's replicas, committed placements whose pods do not exist
//     yet, opted-in and gang pods, placeholders and pods of other
//     schedulers) and their extended-resource requests;
//   - a node with no pod slot left is offered to policies as not ready
//     (as a cordoned node is), so no policy places anything there; so is
//     a node where a placement was refused for want of slots, to
//     placements as large, until its pod count changes (Crowded);
//   - a replica group that requests extended resources has them in its
//     node constraint (extConstraint): a node without enough free refuses
//     it, so every policy places it only where it fits;
//   - the shared validator asks the executor (validate.Extra) whether a
//     placement fits these limits too, after the cycle's earlier actions,
//     and refuses one that does not, so nothing is ever bound over a
//     node's pods or extended resources;
//   - a replica group whose extended resources no node has enough of is
//     held Unschedulable (View.nowhere), as one that no node's vector fits.

// podsResource is the allocatable count of pods of a node.
const podsResource = corev1.ResourcePods

// inVector reports whether resource r is carried by resource.Vector (see
// Vector), or is the pod count.
func inVector(r corev1.ResourceName) bool {
	switch r {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, GPUResource, podsResource:
		return true
	}
	return false
}

// nodeExtra is what a node holds beyond its vector.
type NodeExtra struct {
	// podCap is the node's allocatable pods; -1 when it reports none (a
	// kubelet always does; hand-made nodes in tests may not): unlimited.
	PodCap int64
	// pods counts the pods charged to the node; placeholder pods are
	// counted in phPods too (a real job may take their slots: they are
	// evicted for it).
	Pods, phPods int64
	// extCap and ext are the extended resources allocatable and charged
	// (nil when none); phExt the part held by placeholders.
	extCap, ext, phExt map[corev1.ResourceName]int64
}

// newNodeExtra reads a node's allocatable pods and extended resources.
func newNodeExtra(n *corev1.Node) NodeExtra {
	x := NodeExtra{PodCap: -1}
	for r, q := range n.Status.Allocatable {
		switch {
		case r == podsResource:
			x.PodCap = q.Value()
		case !inVector(r) && !q.IsZero():
			if x.extCap == nil {
				x.extCap = map[corev1.ResourceName]int64{}
			}
			x.extCap[r] = q.Value()
		}
	}
	return x
}

// add charges n pods each requesting ext; placeholder marks them as
// placeholder pods.
func (x *NodeExtra) Add(n int64, ext corev1.ResourceList, placeholder bool) {
	x.Pods += n
	if placeholder {
		x.phPods += n
	}
	for r, q := range ext {
		if x.ext == nil {
			x.ext = map[corev1.ResourceName]int64{}
		}
		x.ext[r] += n * q.Value()
		if placeholder {
			if x.phExt == nil {
				x.phExt = map[corev1.ResourceName]int64{}
			}
			x.phExt[r] += n * q.Value()
		}
	}
}

// full reports whether the node cannot take one more pod, even with its
// placeholders evicted.
func (x *NodeExtra) full() bool { return x.PodCap >= 0 && x.Pods-x.phPods >= x.PodCap }

// short returns why n more pods each requesting ext do not fit, counting
// placeholder pods as free (they are evicted for a real job), or "".
func (x *NodeExtra) short(n int64, ext corev1.ResourceList) string {
	if x.PodCap >= 0 && x.Pods-x.phPods+n > x.PodCap {
		return fmt.Sprintf("Too many pods: %d more, %d of %d allocatable in use", n, x.Pods-x.phPods, x.PodCap)
	}
	for _, r := range sortedNames(ext) {
		q := ext[r]
		need := n * q.Value()
		if used := x.ext[r] - x.phExt[r]; used+need > x.extCap[r] {
			return fmt.Sprintf("Insufficient %s: needs %d, %d of %d allocatable in use", r, need, used, x.extCap[r])
		}
	}
	return ""
}

// extendedRequests is what one pod of spec s requests of resources the
// vector does not carry (nil when none). It is computed by
// k8s.io/component-helpers' PodRequests (kube-scheduler's own: containers
// summed, restartable init containers as sidecars, the largest init
// container, pod overhead), with each container's missing requests taken
// from its limits as the API server defaults them for a pod (a
// TrainingJob's template is not defaulted).
func ExtendedRequests(s *corev1.PodSpec) corev1.ResourceList {
	if !hasExtended(s) {
		return nil // the common case: no allocation
	}
	out := corev1.ResourceList{}
	for r, q := range podRequests(s) {
		if !inVector(r) && !q.IsZero() {
			out[r] = q
		}
	}
	return out
}

func hasExtended(s *corev1.PodSpec) bool {
	has := func(cs []corev1.Container) bool {
		for i := range cs {
			for r := range cs[i].Resources.Requests {
				if !inVector(r) {
					return true
				}
			}
			for r := range cs[i].Resources.Limits {
				if !inVector(r) {
					return true
				}
			}
		}
		return false
	}
	if has(s.Containers) || has(s.InitContainers) {
		return true
	}
	for r := range s.Overhead {
		if !inVector(r) {
			return true
		}
	}
	return false
}

// podRequests returns a pod's requests as kube-scheduler and the
// ResourceQuota admission plugin compute them (component-helpers'
// PodRequests), after filling each container's missing requests from its
// limits.
func podRequests(s *corev1.PodSpec) corev1.ResourceList {
	return resourcehelper.PodRequests(&corev1.Pod{Spec: *defaulted(s)}, resourcehelper.PodResourcesOptions{})
}

// podLimits is podRequests for limits.
func podLimits(s *corev1.PodSpec) corev1.ResourceList {
	return resourcehelper.PodLimits(&corev1.Pod{Spec: *defaulted(s)}, resourcehelper.PodResourcesOptions{})
}

// defaulted returns s with every container's unset requests set to its
// limits, as the API server's defaulting does for a pod; s is not
// modified.
func defaulted(s *corev1.PodSpec) *corev1.PodSpec {
	out := s.DeepCopy()
	fill := func(cs []corev1.Container) {
		for i := range cs {
			c := &cs[i]
			for r, q := range c.Resources.Limits {
				if _, ok := c.Resources.Requests[r]; ok {
					continue
				}
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				c.Resources.Requests[r] = q
			}
		}
	}
	fill(out.Containers)
	fill(out.InitContainers)
	return out
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for r := range l {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// maxList returns the per-resource maximum of a and b (nil when both are).
func maxList(a, b corev1.ResourceList) corev1.ResourceList {
	if len(b) == 0 {
		return a
	}
	out := corev1.ResourceList{}
	for r, q := range a {
		out[r] = q
	}
	for r, q := range b {
		if cur, ok := out[r]; !ok || q.Cmp(cur) > 0 {
			out[r] = q
		}
	}
	return out
}

// chargeExtra charges pod p to node ni's pods and extended resources.
func (v *View) chargeExtra(ni int, p *corev1.Pod, placeholder bool) {
	v.Extra[ni].Add(1, ExtendedRequests(&p.Spec), placeholder)
}

// groupExtra returns the extended resources one replica of group g of job
// id requests (nil when none).
func (v *View) groupExtra(id string, g int) corev1.ResourceList {
	switch {
	case v.PodJobs[id] != nil:
		return ExtendedRequests(&v.PodJobs[id].Pod.Spec)
	case v.Jobs[id] != nil:
		jv := v.Jobs[id]
		if !jv.extDone { // once per cycle; no allocation when no group has any
			jv.extDone = true
			for i := range jv.TJ.Spec.ReplicaGroups {
				if e := ExtendedRequests(&jv.TJ.Spec.ReplicaGroups[i].Template.Spec); e != nil {
					if jv.ext == nil {
						jv.ext = make([]corev1.ResourceList, len(jv.TJ.Spec.ReplicaGroups))
					}
					jv.ext[i] = e
				}
			}
		}
		if g < len(jv.ext) {
			return jv.ext[g]
		}
	case v.Gangs[id] != nil:
		gj := v.Gangs[id]
		var out corev1.ResourceList
		for k, p := range gj.Members {
			if gj.group[k] == g {
				out = maxList(out, ExtendedRequests(&p.Spec))
			}
		}
		return out
	}
	return nil
}

// tooManyPods is the validator's refusal of a placement that puts more
// pods on a node than it has slots left.
type TooManyPods struct {
	node string
	// pods is the node's pod count when it was refused (placeholders not
	// counted), want how many more the placement needed there.
	pods, want int64
	why        string
}

func (t *TooManyPods) Error() string {
	return fmt.Sprintf("over capacity on node %s: %s", t.node, t.why)
}

// Crowded remembers nodes where a placement was refused for want of pod
// slots, by name: policies do not count pods, and one that chose the node
// once would choose it again every cycle. Until the node's pod count
// changes, the snapshot offers it only while it has at least as many
// slots free as the refused placement wanted there.
type Crowded map[string]crowd

type crowd struct{ pods, want int64 }

// note records a refusal.
func (c Crowded) Note(t *TooManyPods) {
	if c != nil {
		c[t.node] = crowd{pods: t.pods, want: t.want}
	}
}

// markFull offers to policies as not ready every node with no pod slot
// left, or fewer than a placement refused there wanted while its pod count
// is still what it was then (see Crowded; stale entries are dropped):
// nothing is placed there until a pod leaves. Its running jobs are
// unaffected.
func (v *View) markFull(crowded Crowded) {
	for i, n := range v.Snap.Nodes {
		x := &v.Extra[i]
		c, ok := crowded[n.Name]
		if ok && (n.Gone || c.pods != x.Pods-x.phPods) {
			delete(crowded, n.Name)
			ok = false
		}
		if !n.Ready || n.Gone {
			continue
		}
		if x.full() || (ok && x.PodCap-(x.Pods-x.phPods) < c.want) {
			n.Ready = false
		}
	}
}

// shortExt returns the first extended resource (by name) of which one
// replica requesting ext needs more than capacity c.
func shortExt(c map[corev1.ResourceName]int64, ext corev1.ResourceList) corev1.ResourceName {
	for _, r := range sortedNames(ext) {
		q := ext[r]
		if q.Value() > c[r] {
			return r
		}
	}
	return ""
}

// placementExtra checks that placement p of job j, once its current
// placement is given back, fits the pods and extended resources left on
// its nodes in ledger x, node by node in first-use order. It allocates
// nothing: it runs for every Start a policy returns.
func (v *View) PlacementExtra(x []NodeExtra, j *cluster.Job, p, current cluster.Placement) error {
	var ext [8]corev1.ResourceList // per group, for the usual few groups
	anyExt := false
	for g := range j.Groups {
		e := v.groupExtra(j.ID, g)
		if g < len(ext) {
			ext[g] = e
		} else if e != nil {
			return v.placementExtraSlow(x, j, p, current)
		}
		anyExt = anyExt || e != nil
	}
	count := func(pl cluster.Placement, g, ni int) int64 { // g < 0: any group
		n := int64(0)
		for _, a := range pl {
			if a.Node == ni && (g < 0 || a.Group == g) {
				n++
			}
		}
		return n
	}
	for k, a := range p {
		ni := a.Node
		if slices.ContainsFunc(p[:k], func(b cluster.Assignment) bool { return b.Node == ni }) {
			continue // node checked at its first use
		}
		xn := &x[ni]
		if xn.PodCap >= 0 {
			if d := count(p, -1, ni) - count(current, -1, ni); d > 0 {
				if why := xn.short(d, nil); why != "" {
					return &TooManyPods{node: v.Snap.Nodes[ni].Name, pods: xn.Pods - xn.phPods, want: d, why: why}
				}
			}
		}
		if !anyExt {
			continue
		}
		// Extended resources, summed over the groups placed here.
		for _, r := range extNames(ext[:min(len(j.Groups), len(ext))]) {
			need := int64(0)
			for g := range min(len(j.Groups), len(ext)) {
				if q, ok := ext[g][r]; ok {
					need += (count(p, g, ni) - count(current, g, ni)) * q.Value()
				}
			}
			if used := xn.ext[r] - xn.phExt[r]; need > 0 && used+need > xn.extCap[r] {
				return fmt.Errorf("over capacity on node %s: Insufficient %s: needs %d, %d of %d allocatable in use", v.Snap.Nodes[ni].Name, r, need, used, xn.extCap[r])
			}
		}
	}
	return nil
}

// placementExtraSlow is placementExtra for a job with more than 8 groups
// (a gang of many replica types): one group at a time, on a scratch copy.
func (v *View) placementExtraSlow(x []NodeExtra, j *cluster.Job, p, current cluster.Placement) error {
	tmp := CloneExtra(x)
	v.TakeExtra(tmp, j, current, -1)
	for _, ni := range p.Nodes() {
		for g := range j.Groups {
			d := int64(0)
			for _, a := range p {
				if a.Node == ni && a.Group == g {
					d++
				}
			}
			if d == 0 {
				continue
			}
			ext := v.groupExtra(j.ID, g)
			if why := tmp[ni].short(d, ext); why != "" {
				return fmt.Errorf("over capacity on node %s: %s", v.Snap.Nodes[ni].Name, why)
			}
			tmp[ni].Add(d, ext, false)
		}
	}
	return nil
}

// extNames returns the resources named in any of ls, sorted.
func extNames(ls []corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, l := range ls {
		for r := range l {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

// takeExtra charges (sign 1) or returns (sign -1) placement p of job j on
// ledger x.
func (v *View) TakeExtra(x []NodeExtra, j *cluster.Job, p cluster.Placement, sign int64) {
	for _, a := range p {
		ext := v.groupExtra(j.ID, a.Group)
		if x[a.Node].ext == nil && len(ext) > 0 {
			x[a.Node].ext = map[corev1.ResourceName]int64{}
		}
		x[a.Node].Pods += sign
		for r, q := range ext {
			x[a.Node].ext[r] += sign * q.Value()
		}
	}
}

// cloneExtra copies a ledger (its maps too).
func CloneExtra(x []NodeExtra) []NodeExtra {
	out := slices.Clone(x)
	for i := range out {
		out[i].ext = maps.Clone(out[i].ext)
		out[i].phExt = maps.Clone(out[i].phExt)
	}
	return out
}

// extFree is every node's free extended resources as of the latest
// snapshot (capacity less what is charged, placeholders' share counted
// free), by node name. The NodeTable owns it, so it lives as long as the
// executor; the constraints of jobs that request extended resources read
// it (extConstraint).
type extFree struct {
	m map[string]map[corev1.ResourceName]int64
}

// update records this snapshot's free extended resources and reports
// whether they changed (then node constraints' eligible sets are stale).
func (f *extFree) update(v *View) bool {
	var cur map[string]map[corev1.ResourceName]int64
	for i, n := range v.Snap.Nodes {
		x := &v.Extra[i]
		if n.Gone || x.extCap == nil {
			continue
		}
		if cur == nil {
			cur = map[string]map[corev1.ResourceName]int64{}
		}
		free := make(map[corev1.ResourceName]int64, len(x.extCap))
		for r, c := range x.extCap {
			free[r] = c - x.ext[r] + x.phExt[r]
		}
		cur[n.Name] = free
	}
	same := len(cur) == len(f.m)
	for name, free := range cur {
		if !same {
			break
		}
		same = maps.Equal(free, f.m[name])
	}
	f.m = cur
	return !same
}

// extConstraint adds to a replica group's node constraint (nodeSelector,
// affinity, tolerations; nil for none) that a node has the extended
// resources one replica requests free now, so that every policy places
// such replicas only where they fit, through the same eligible sets as
// node selectors (cluster.Eligibility, reset whenever the free amounts
// change). The resource vector cannot carry them (see the top of this
// file). What one cycle's placements take is checked by the validator
// (validate.Extra): two replicas placed in one cycle on a node with room
// for one are refused, and the next snapshot shows the node full.
type extConstraint struct {
	inner cluster.NodeConstraint
	need  corev1.ResourceList
	free  *extFree
	key   string
}

var _ cluster.NodeConstraint = (*extConstraint)(nil)

// withExtended wraps c when s requests extended resources; free nil
// (a conversion outside the executor) admits every node.
func withExtended(c cluster.NodeConstraint, s *corev1.PodSpec, free *extFree) cluster.NodeConstraint {
	need := ExtendedRequests(s)
	if len(need) == 0 || free == nil {
		return c
	}
	var b strings.Builder
	if c != nil {
		b.WriteString(c.Key())
	}
	b.WriteString("|extended:")
	for _, r := range sortedNames(need) {
		q := need[r]
		fmt.Fprintf(&b, "%s=%d,", r, q.Value())
	}
	return &extConstraint{inner: c, need: need, free: free, key: b.String()}
}

// static returns the part of c that does not depend on what runs on the
// nodes (its node selector, affinity and tolerations), for judging what a
// node could ever take.
func static(c cluster.NodeConstraint) cluster.NodeConstraint {
	if x, ok := c.(*extConstraint); ok {
		return x.inner
	}
	return c
}

func (c *extConstraint) Key() string { return c.key }

func (c *extConstraint) Admits(n *cluster.Node) bool {
	return (c.inner == nil || c.inner.Admits(n)) && c.short(n) == ""
}

func (c *extConstraint) Why(n *cluster.Node) string {
	if c.inner != nil {
		if w := c.inner.Why(n); w != "" {
			return w
		}
	}
	if r := c.short(n); r != "" {
		return "Insufficient " + string(r)
	}
	return ""
}

func (c *extConstraint) Preference(n *cluster.Node) int64 {
	if c.inner == nil {
		return 0
	}
	return c.inner.Preference(n)
}

func (c *extConstraint) Prefers() bool { return c.inner != nil && c.inner.Prefers() }

// short names the first resource node n has too little of free, or "".
func (c *extConstraint) short(n *cluster.Node) corev1.ResourceName {
	free := c.free.m[n.Name]
	for _, r := range sortedNames(c.need) {
		q := c.need[r]
		if free[r] < q.Value() {
			return r
		}
	}
	return ""
}
