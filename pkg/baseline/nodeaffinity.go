package baseline

import (
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// NodeAffinity is the built-in Score plugin for preferred node affinity
// (kube-scheduler's NodeAffinity score): the summed weights of the
// preferred terms a node matches, for group g (or, g < 0, summed over the
// groups of the gang being tried). placement.Place, the fast path, adds
// the same preference to its strategy's score by itself; a profile with
// Score plugins of its own lists node-affinity to honour preferences (its
// scores are normalised to [0, 100] and weighted like any other's).
type NodeAffinity struct{}

var _ framework.Score = NodeAffinity{}

// Name implements framework.Plugin.
func (NodeAffinity) Name() string { return "node-affinity" }

// Score implements framework.Score.
func (NodeAffinity) Score(c *framework.Cycle, js *cluster.JobState, g int, node int) float64 {
	n := &c.Snap.Nodes[node].Node
	if g >= 0 {
		if k := js.Job.Groups[g].Constraint; k != nil {
			return float64(k.Preference(n))
		}
		return 0
	}
	t, sum := c.Trying(), 0.0
	for k := range js.Job.Groups {
		if k < len(t) && t[k] > 0 && js.Job.Groups[k].Constraint != nil {
			sum += float64(js.Job.Groups[k].Constraint.Preference(n))
		}
	}
	return sum
}
