package elastic

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// MaxWaitSeconds bounds DRAGON's starve_s and scaleup_s: a year.
const MaxWaitSeconds = 365 * 24 * 3600

// Entries returns the registry entries of the elastic scheduler and its two
// baselines, as framework presets.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "elastic", Description: "Kubeflow dynamic scheduler (Bestari 2020): priority-weighted queue, gang placement on one node, scale-up to max workers, scale-down of lighter jobs for a high-priority one; order=one-node-first|size-first (default one-node-first: the largest worker count >= min whose gang fits one node, before spreading; size-first: the requested count first, spread if no node holds it); placement=spread|pack|first-fit for jobs no node holds; scaleup=any|local|node (any: a job's own nodes first, then any node; local: never add a node to a job; node: the article's literal loop, node by node in index order, every job on a node before the next node)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("elastic", "order", "placement", "scaleup"); err != nil {
					return nil, err
				}
				var o ElasticOptions
				switch v := p.String("scaleup", "any"); v {
				case "any":
				case "local":
					o.LocalScaleUp = true
				case "node":
					o.NodeScaleUp = true
				default:
					return nil, fmt.Errorf("parameter scaleup=%q: want any, local or node", v)
				}
				o.Placement = placement.Spread
				if v, ok := p["placement"]; ok {
					var err error
					if o.Placement, err = placement.ParseStrategy(v); err != nil {
						return nil, err
					}
				}
				var err error
				if o.Order, err = orderParam(p); err != nil {
					return nil, err
				}
				return scheduler.New(ElasticProfile(o))
			}},
		{Name: "tf-operator", Description: "Kubeflow tf-operator with kube-scheduler: fixed replicas, pods bound one by one with spread placement, no gang (partial starts hold resources)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("tf-operator"); err != nil {
					return nil, err
				}
				return scheduler.New(TFOperatorProfile())
			}},
		{Name: "dragon", Description: "DRAGON (NTHU-LSALAB): FIFO, one-node-first placement, scale-down for a job waiting 30 s (starve_s), scale-up after 60 s without action (scaleup_s)",
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check("dragon", "starve_s", "scaleup_s"); err != nil {
					return nil, err
				}
				starve, err := p.FloatIn("starve_s", DefaultStarveAfter, 0, MaxWaitSeconds)
				if err != nil {
					return nil, err
				}
				scaleUp, err := p.FloatIn("scaleup_s", DefaultScaleUpAfter, 0, MaxWaitSeconds)
				if err != nil {
					return nil, err
				}
				return scheduler.New(DragonProfile(starve, scaleUp))
			}},
	}
}

// Plugins returns the registry entries of the plugins the three presets
// are made of.
func Plugins() []profile.PluginEntry {
	none := func(name string, p framework.Plugin) func(policy.Params) (framework.Plugin, error) {
		return func(a policy.Params) (framework.Plugin, error) { return p, a.Check(name) }
	}
	seconds := func(a policy.Params, name, key string, def float64) (float64, error) {
		if err := a.Check(name, key); err != nil {
			return 0, err
		}
		return a.FloatIn(key, def, 0, MaxWaitSeconds)
	}
	return []profile.PluginEntry{
		{Name: WeightedName, Description: "queueSort: the elastic article's weight, heaviest first: priority, then utility, then CPU + memory share; ties keep queue order",
			New: none(WeightedName, Weighted{})},
		{Name: WorkersName, Description: "size: the requested counts, then one worker fewer at a time down to the worker group's minimum (parameter servers fixed); order=one-node-first (default: the largest of these counts that the profile places on one node goes first) or size-first (largest first)",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(WorkersName, "order"); err != nil {
					return nil, err
				}
				o, err := orderParam(a)
				if err != nil {
					return nil, err
				}
				return Workers{Order: o}, nil
			}},
		{Name: OnePerCycleName, Description: "admit: at most one job starts per cycle (the elastic and DRAGON controllers' loops); time-driven",
			New: none(OnePerCycleName, OnePerCycle{})},
		{Name: ScaleDownName, Description: "preempt, admit: for the heaviest waiting job when it outranks every running job, shrink lighter running jobs towards their minimum workers until it fits, all or nothing; if that fails no other job starts",
			New: none(ScaleDownName, ScaleDown{})},
		{Name: ScaleUpName, Description: "rebalance: grow running jobs, heaviest first, towards their maximum workers (own nodes first; local=true: only those; node=true: node by node in index order, the article's loop), unless the cycle started an ordinary job; time-driven",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(ScaleUpName, "local", "node"); err != nil {
					return nil, err
				}
				local, err := a.Bool("local", false)
				if err != nil {
					return nil, err
				}
				node, err := a.Bool("node", false)
				if err != nil {
					return nil, err
				}
				if local && node {
					return nil, fmt.Errorf("%s: local and node are exclusive", ScaleUpName)
				}
				return ScaleUp{Local: local, NodeMajor: node}, nil
			}},
		{Name: FCFSName, Description: "queueSort: earliest enqueued first (DRAGON's waiting queue)",
			New: none(FCFSName, FCFS{})},
		{Name: DragonPlaceName, Description: "place: DRAGON's ScheduleJob: parameter servers then workers on the first node that holds them all, else fill nodes from the one holding the most replicas; at least the minimum workers",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(DragonPlaceName); err != nil {
					return nil, err
				}
				return NewDragonPlace(), nil
			}},
		{Name: DragonScaleDownName, Description: "preempt, admit: once the head of the queue waited starve_s (default 30), shrink running jobs in start order towards their minimum until its minimum workers fit; if that fails no job starts; time-driven",
			New: func(a policy.Params) (framework.Plugin, error) {
				v, err := seconds(a, DragonScaleDownName, "starve_s", DefaultStarveAfter)
				if err != nil {
					return nil, err
				}
				return &DragonScaleDown{StarveAfter: v}, nil
			}},
		{Name: DragonScaleUpName, Description: "rebalance: after scaleup_s (default 60) without a start or a job starving (the head of the queue waiting starve_s, default 30), grow running jobs in start order towards their maximum, filling nodes in order; time-driven",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(DragonScaleUpName, "scaleup_s", "starve_s"); err != nil {
					return nil, err
				}
				v, err := a.FloatIn("scaleup_s", DefaultScaleUpAfter, 0, MaxWaitSeconds)
				if err != nil {
					return nil, err
				}
				st, err := a.FloatIn("starve_s", DefaultStarveAfter, 0, MaxWaitSeconds)
				if err != nil {
					return nil, err
				}
				return &DragonScaleUp{ScaleUpAfter: v, StarveAfter: st}, nil
			}},
		{Name: PodPriorityName, Description: "queueSort: priority, highest first, then submit time, then job ID (kube-scheduler's PrioritySort over pods created at submission)",
			New: none(PodPriorityName, PodPriority{})},
		{Name: PodByPodName, Description: "place, rebalance: no gang: bind pods one at a time with spread placement, parameter servers first, keeping whatever fits (partial starts); bind the remaining pods of partly started jobs as room appears",
			New: none(PodByPodName, PodByPod{})},
	}
}

// orderParam reads the order parameter (default one-node-first).
func orderParam(p policy.Params) (Order, error) {
	v, err := p.Enum("order", OneNodeFirst.String(), Orders...)
	if err != nil {
		return 0, err
	}
	return ParseOrder(v)
}
