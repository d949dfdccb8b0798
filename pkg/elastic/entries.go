package elastic

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// Entries returns the registry entries of the elastic scheduler and its two
// baselines.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "elastic", Description: "Kubeflow dynamic scheduler (Bestari 2020): priority-weighted queue, gang placement on one node, scale-up to max workers, scale-down of lighter jobs for a high-priority one; placement=spread|pack|first-fit for jobs no node holds; scaleup=any|local (local: never add a node to a job)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("elastic", "placement", "scaleup"); err != nil {
					return nil, err
				}
				local := false
				switch v := p.String("scaleup", "any"); v {
				case "any":
				case "local":
					local = true
				default:
					return nil, fmt.Errorf("parameter scaleup=%q: want any or local", v)
				}
				st := placement.Spread
				if v, ok := p["placement"]; ok {
					var err error
					if st, err = placement.ParseStrategy(v); err != nil {
						return nil, err
					}
				}
				return &Elastic{Strategy: st, LocalScaleUp: local}, nil
			}},
		{Name: "tf-operator", Description: "Kubeflow tf-operator with kube-scheduler: fixed replicas, pods bound one by one with spread placement, no gang (partial starts hold resources)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("tf-operator"); err != nil {
					return nil, err
				}
				return &TFOperator{}, nil
			}},
		{Name: "dragon", Description: "DRAGON (NTHU-LSALAB): FIFO, one-node-first placement, scale-down for a job waiting 30 s (starve_s), scale-up after 60 s without action (scaleup_s)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("dragon", "starve_s", "scaleup_s"); err != nil {
					return nil, err
				}
				d := NewDragon()
				var err error
				if d.StarveAfter, err = p.Float("starve_s", d.StarveAfter); err != nil {
					return nil, err
				}
				if d.ScaleUpAfter, err = p.Float("scaleup_s", d.ScaleUpAfter); err != nil {
					return nil, err
				}
				if !(d.StarveAfter >= 0) || !(d.ScaleUpAfter >= 0) {
					return nil, fmt.Errorf("starve_s=%v and scaleup_s=%v must be >= 0", d.StarveAfter, d.ScaleUpAfter)
				}
				return d, nil
			}},
	}
}
