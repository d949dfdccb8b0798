// Package registry is the one place where drover's experiments are
// listed. It is explicit on purpose: no package registers itself from an
// init function, and a duplicate name is an error. Policies, presets and
// plugins are listed in pkg/plugins, which the production scheduler links
// without the experiments.
package registry

import (
	autoscaleexp "github.com/drover-sched/drover/internal/exp/autoscale"
	"github.com/drover-sched/drover/internal/exp/baselines"
	"github.com/drover-sched/drover/internal/exp/combined"
	elasticexp "github.com/drover-sched/drover/internal/exp/elastic"
	expfitgpp "github.com/drover-sched/drover/internal/exp/fitgpp"
	expoasis "github.com/drover-sched/drover/internal/exp/oasis"
	"github.com/drover-sched/drover/internal/exp/scoreboard"
	expspecon "github.com/drover-sched/drover/internal/exp/specon"
	exptiresias "github.com/drover-sched/drover/internal/exp/tiresias"
	"github.com/drover-sched/drover/pkg/experiment"
)

// Experiments returns a registry of every experiment.
func Experiments() (*experiment.Registry, error) {
	r := experiment.NewRegistry()
	for _, es := range [][]experiment.Experiment{
		baselines.Experiments(),
		combined.Experiments(),
		autoscaleexp.Experiments(),
		elasticexp.Experiments(),
		expfitgpp.Experiments(),
		expoasis.Experiments(),
		expspecon.Experiments(),
		exptiresias.Experiments(),
		scoreboard.Experiments(),
	} {
		if err := r.Add(es...); err != nil {
			return nil, err
		}
	}
	return r, nil
}
