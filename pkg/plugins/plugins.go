// Package plugins is the one place where drover's scheduling plugins and
// presets (named profiles) are listed. It is explicit on purpose: no
// package registers itself from an init function, and a duplicate name is
// an error. It links only the policy packages, never the experiments, so
// the production scheduler (cmd/drover-scheduler) carries no experiment
// code or embedded trace.
package plugins

import (
	"github.com/drover-sched/drover/pkg/autoscale"
	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/drover"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/fitgpp"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/specon"
	"github.com/drover-sched/drover/pkg/tiresias"
)

// Registry returns a registry of every plugin, for profiles given as
// configuration (profile.Spec).
func Registry() (*profile.Registry, error) {
	r := profile.NewRegistry()
	for _, es := range [][]profile.PluginEntry{
		baseline.Plugins(),
		specon.Plugins(),
		autoscale.Plugins(),
		oasis.Plugins(),
		elastic.Plugins(),
		fitgpp.Plugins(),
		drover.Plugins(),
		tiresias.Plugins(),
	} {
		if err := r.Add(es...); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Policies returns a registry of every preset, by name (`--policy
// fitgpp:lambda=2`).
func Policies() (*policy.Registry, error) {
	r := policy.NewRegistry()
	for _, es := range [][]policy.Entry{
		baseline.Entries(),
		autoscale.Entries(),
		elastic.Entries(),
		fitgpp.Entries(),
		oasis.Entries(),
		specon.Entries(),
		drover.Entries(),
		tiresias.Entries(),
	} {
		if err := r.Add(es...); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Profile builds a policy from a profile spec with every registered
// plugin.
func Profile(spec profile.Spec) (*framework.Runtime, error) {
	r, err := Registry()
	if err != nil {
		return nil, err
	}
	return r.Build(spec)
}
