// Package registry is the one place where drover's policies and
// experiments are listed. It is explicit on purpose: no package registers
// itself from an init function, and a duplicate name is an error.
package registry

import (
	autoscaleexp "github.com/drover-sched/drover/internal/exp/autoscale"
	"github.com/drover-sched/drover/internal/exp/baselines"
	elasticexp "github.com/drover-sched/drover/internal/exp/elastic"
	expfitgpp "github.com/drover-sched/drover/internal/exp/fitgpp"
	expoasis "github.com/drover-sched/drover/internal/exp/oasis"
	expspecon "github.com/drover-sched/drover/internal/exp/specon"
	"github.com/drover-sched/drover/pkg/autoscale"
	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/fitgpp"
	"github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/specon"
)

// Policies returns a registry of every policy.
func Policies() (*policy.Registry, error) {
	r := policy.NewRegistry()
	for _, es := range [][]policy.Entry{
		baseline.Entries(),
		autoscale.Entries(),
		elastic.Entries(),
		fitgpp.Entries(),
		oasis.Entries(),
		specon.Entries(),
	} {
		if err := r.Add(es...); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Experiments returns a registry of every experiment.
func Experiments() (*experiment.Registry, error) {
	r := experiment.NewRegistry()
	for _, es := range [][]experiment.Experiment{
		baselines.Experiments(),
		autoscaleexp.Experiments(),
		elasticexp.Experiments(),
		expfitgpp.Experiments(),
		expoasis.Experiments(),
		expspecon.Experiments(),
	} {
		if err := r.Add(es...); err != nil {
			return nil, err
		}
	}
	return r, nil
}
