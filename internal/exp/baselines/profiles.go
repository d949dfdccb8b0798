package baselines

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
)

// MostFreeGPUs is a Score plugin as a newcomer writes one from the
// framework's interfaces alone: "prefer the node with the most free GPUs".
// It implements Name and Score and nothing else: no hints (it does not
// say which events could make a job it saw fail fit), no keys. The
// long-queue benchmarks (BenchmarkLongQueues here and in pkg/k8s) run it
// to see that a plugin without hints keeps the queue fast and correct (the
// scheduling queue's safe default).
type MostFreeGPUs struct{}

var _ framework.Score = MostFreeGPUs{}

// Name implements framework.Plugin.
func (MostFreeGPUs) Name() string { return "most-free-gpus" }

// Score implements framework.Score: the GPUs free on the node on the
// ledger being placed on, before this replica takes its share.
func (MostFreeGPUs) Score(c *framework.Cycle, _ *cluster.JobState, _ int, node int) float64 {
	free := c.Ledger().Free(node)
	return float64(free[resource.GPU])
}

// LongPresets are the presets the long-queue benchmarks replay (issue 23,
// item 5: every preset within 10 times fifo).
var LongPresets = []string{"fifo", "k8s-default", "binpack", "drf", "fitgpp", "lrtp", "rand",
	"elastic", "dragon", "tf-operator", "specon", "default", "drover"}

// NewcomerSpecs are the long-queue benchmarks' custom profiles, built from
// specs as a user's profile file would be:
//
//   - newcomer: queue (arrival) order without head-of-line blocking, so a
//     job that does not fit is skipped, the node-role filter, and
//     most-free-gpus plus the built-in node-affinity score;
//   - k8s-default+newcomer: the k8s-default preset's plugins (priority
//     order, node-role, least-allocated) plus node-affinity and
//     most-free-gpus.
var NewcomerSpecs = []profile.Spec{
	{Name: "newcomer", Plugins: profile.PluginsSpec{
		Filter: []profile.PluginRef{{Name: "node-role"}},
		Score:  []profile.PluginRef{{Name: "most-free-gpus"}, {Name: "node-affinity"}},
	}},
	{Name: "k8s-default+newcomer", Plugins: profile.PluginsSpec{
		QueueSort: &profile.PluginRef{Name: baseline.PriorityName},
		Filter:    []profile.PluginRef{{Name: "node-role"}},
		Score:     []profile.PluginRef{{Name: "least-allocated"}, {Name: "node-affinity"}, {Name: "most-free-gpus"}},
	}},
}

// NewcomerRegistry is every registered plugin plus most-free-gpus.
func NewcomerRegistry() (*profile.Registry, error) {
	r, err := plugins.Registry()
	if err != nil {
		return nil, err
	}
	if err := r.Add(profile.PluginEntry{Name: "most-free-gpus", Description: "score: the node with the most free GPUs",
		New: func(a policy.Params) (framework.Plugin, error) { return MostFreeGPUs{}, a.Check("most-free-gpus") }}); err != nil {
		return nil, fmt.Errorf("newcomer registry: %w", err)
	}
	return r, nil
}

// LongProfile makes a fresh policy for one replay of a long queue.
type LongProfile struct {
	Name string
	New  func() (policy.Policy, error)
}

// LongProfiles returns LongPresets and the custom profiles of
// NewcomerSpecs, in that order.
func LongProfiles() ([]LongProfile, error) {
	reg, err := plugins.Policies()
	if err != nil {
		return nil, err
	}
	var out []LongProfile
	for _, name := range LongPresets {
		out = append(out, LongProfile{Name: name, New: func() (policy.Policy, error) { return reg.New(name) }})
	}
	freg, err := NewcomerRegistry()
	if err != nil {
		return nil, err
	}
	for _, spec := range NewcomerSpecs {
		out = append(out, LongProfile{Name: spec.Name, New: func() (policy.Policy, error) { return freg.Build(spec) }})
	}
	return out, nil
}
