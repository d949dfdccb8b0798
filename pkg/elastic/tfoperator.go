package elastic

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// TFOperator models Kubeflow's tf-operator with the default Kubernetes
// scheduler. tf-operator creates every pod of a TFJob at its requested
// replica count at once and never resizes it; kube-scheduler then binds
// pods one at a time, in priority then creation order, each to the
// least-allocated node with room (spread), and moves on to the next pod
// when one does not fit. There is no gang: a job whose pods only partly fit
// starts partially, holds what it got, and makes no progress while a group
// is below its minimum (see PSSpeed); its remaining pods are bound as room
// appears (a Resize that adds them).
//
// Within a job, parameter-server pods are bound before worker pods. (The
// operator iterates a Go map of replica types, so the real order varies;
// putting the servers first is the order most favourable to progress.)
type TFOperator struct{}

var _ policy.Policy = (*TFOperator)(nil)

// Name implements policy.Policy.
func (*TFOperator) Name() string { return "tf-operator" }

// Schedule implements policy.Policy.
func (*TFOperator) Schedule(s *cluster.Snapshot) []policy.Action {
	var cands []*cluster.JobState
	for _, js := range s.Running {
		if js.Phase == cluster.Running && incomplete(js) {
			cands = append(cands, js)
		}
	}
	for js := range s.Pending.All() {
		cands = append(cands, js)
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortStableFunc(cands, func(a, b *cluster.JobState) int {
		if c := cmp.Compare(b.Job.Priority, a.Job.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Job.Submit, b.Job.Submit); c != 0 {
			return c
		}
		return cmp.Compare(a.Job.ID, b.Job.ID)
	})
	l := placement.NewLedger(s, true)
	var out []policy.Action
	for _, js := range cands {
		j := js.Job
		have := js.Counts()
		p := slices.Clone(js.Placement)
		added := 0
		for _, g := range podOrder(j) {
			one := make([]int, len(j.Groups))
			one[g] = 1
			for c := have[g]; c < j.Groups[g].Replicas; c++ {
				a, err := placement.Place(l, j, one, placement.Options{Strategy: placement.Spread})
				if err != nil {
					break // the same pod shape fits nowhere; try the next group
				}
				p = append(p, a...)
				added++
			}
		}
		switch {
		case added == 0:
			if js.Phase == cluster.Pending {
				out = append(out, policy.Wait{Job: j.ID, Reason: "no node has room for any of its pods"})
			}
		case js.Phase == cluster.Pending:
			out = append(out, policy.Start{Job: j.ID, Placement: p})
		default:
			out = append(out, policy.Resize{Job: j.ID, Placement: p, Reason: "bind pending pods"})
		}
	}
	return out
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
