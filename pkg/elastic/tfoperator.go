package elastic

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
)

// Plugin names.
const (
	PodPriorityName = "pod-priority"
	PodByPodName    = "pod-by-pod"
)

// PodPriority orders pending jobs as kube-scheduler's PrioritySort orders
// their pods, which tf-operator creates at submission: priority, highest
// first, then submit time, then job ID.
type PodPriority struct{}

var _ framework.QueueSort = PodPriority{}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// order is priority, submission time and ID, fixed.
func (PodPriority) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (PodPriority) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (PodPriority) Name() string { return PodPriorityName }

// Compare implements framework.QueueSort.
func (PodPriority) Compare(_ *framework.Cycle, a, b *cluster.JobState) int { return podCompare(a, b) }

func podCompare(a, b *cluster.JobState) int {
	if c := cmp.Compare(b.Job.Priority, a.Job.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Job.Submit, b.Job.Submit); c != 0 {
		return c
	}
	return cmp.Compare(a.Job.ID, b.Job.ID)
}

// PodByPod is placement without gangs, pod by pod. As a Place plugin it
// binds a job's pods one at a time, parameter-server groups first, each to
// the least-allocated node with room, and moves on to the next group at
// the first pod that fits nowhere; the job starts with whatever was bound,
// below its groups' minimums if need be (a partial start), and fails only
// when no pod was bound. As a Rebalance plugin it binds the remaining pods
// of running jobs with fewer replicas than requested, in PodPriority
// order, and records a Resize that adds them.
type PodByPod struct{}

var (
	_ framework.Place             = PodByPod{}
	_ framework.EnqueueExtensions = PodByPod{}
	_ framework.Rebalance         = PodByPod{}
)

// Name implements framework.Plugin.
func (PodByPod) Name() string { return PodByPodName }

// Events implements framework.EnqueueExtensions: Place fails exactly
// when, for every group with pods to bind, one pod of it fits on no node:
// a function of the room and of the groups, monotone in the room, which
// the queue checks itself.
func (PodByPod) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (PodByPod) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Place implements framework.Place.
func (PodByPod) Place(_ *framework.Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *framework.Status) {
	p := bindPods(l, js.Job, make([]int, len(counts)), counts)
	if len(p) == 0 {
		return nil, framework.NewStatus(framework.Unschedulable, "no node has room for any of its pods")
	}
	return p, nil
}

// Rebalance implements framework.Rebalance.
func (PodByPod) Rebalance(c *framework.Cycle) *framework.Status {
	var cands []*cluster.JobState
	for _, js := range c.Snap.Running {
		if js.Phase == cluster.Running && c.St.Op(js) == framework.OpNone && incomplete(js) {
			cands = append(cands, js)
		}
	}
	slices.SortStableFunc(cands, podCompare)
	l := c.St.Now()
	for _, js := range cands {
		l.Fork()
		p := bindPods(l, js.Job, js.Counts(), js.Job.RequestedCounts())
		l.Revert()
		if len(p) > 0 {
			c.St.Resize(js, append(slices.Clone(js.Placement), p...), "bind pending pods")
		}
	}
	return nil
}

// bindPods binds pods of j from have up to want replicas per group, in
// podOrder, each with spread placement taken from l, skipping the rest of
// a group at its first pod that fits nowhere; it returns the new
// assignments.
func bindPods(l *placement.Ledger, j *cluster.Job, have, want []int) cluster.Placement {
	var p cluster.Placement
	one := make([]int, len(j.Groups))
	for _, g := range podOrder(j) {
		clear(one)
		one[g] = 1
		for c := have[g]; c < want[g]; c++ {
			a, err := placement.Place(l, j, one, placement.Options{Strategy: placement.Spread})
			if err != nil {
				break // the same pod shape fits nowhere; try the next group
			}
			p = append(p, a...)
		}
	}
	return p
}

// incomplete reports whether a running job has fewer replicas than it
// requested in some group (some of its pods are still pending).
func incomplete(js *cluster.JobState) bool {
	c := js.Counts()
	for g := range js.Job.Groups {
		if c[g] < js.Job.Groups[g].Replicas {
			return true
		}
	}
	return false
}

// podOrder is the order in which a job's pods are bound: parameter-server
// groups, then the workers.
func podOrder(j *cluster.Job) []int {
	out := make([]int, 0, len(j.Groups))
	for g := 1; g < len(j.Groups); g++ {
		out = append(out, g)
	}
	return append(out, 0)
}

// TFOperatorProfile is the tf-operator preset, which models Kubeflow's
// tf-operator with the default Kubernetes scheduler. tf-operator creates every pod of a TFJob at its
// requested replica count at once and never resizes it; kube-scheduler
// then binds pods one at a time, in priority then creation order, each to
// the least-allocated node with room (spread), and moves on to the next
// pod when one does not fit. There is no gang: a job whose pods only
// partly fit starts partially, holds what it got, and makes no progress
// while a group is below its minimum (see PSSpeed); its remaining pods are
// bound as room appears (a Resize that adds them).
//
// As plugins: PodPriority orders the queue; PodByPod binds a pending job's
// pods (Place) and, after the queue, the remaining pods of partly started
// jobs in the same order (Rebalance). kube-scheduler retries a pod that did
// not fit after a back-off or a cluster event, so binding the remaining
// pods of running jobs after this cycle's pending jobs is as faithful as
// binding them in creation order; the experiments give the same results
// either way.
//
// Within a job, parameter-server pods are bound before worker pods. (The
// operator iterates a Go map of replica types, so the real order varies;
// putting the servers first is the order most favourable to progress.)
func TFOperatorProfile() framework.Profile {
	return framework.Profile{
		Name:      "tf-operator",
		QueueSort: PodPriority{},
		Place:     PodByPod{},
		Rebalance: []framework.Rebalance{PodByPod{}},
	}
}

// NewTFOperator returns the tf-operator preset's runtime.
func NewTFOperator() *framework.Runtime { return mustNew(TFOperatorProfile()) }
