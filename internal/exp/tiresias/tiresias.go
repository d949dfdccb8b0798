// Package tiresias holds the experiments that compare Tiresias' 2D-LAS
// (the tiresias preset, pkg/tiresias) with drover's baselines and the
// drover profile: the overview experiment's synthetic workload and the
// Philly replay, unchanged, with a different set of policies.
package tiresias

import (
	"context"
	"fmt"

	"github.com/drover-sched/drover/internal/exp/baselines"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// Policies are the presets compared: strict FIFO, skip-ahead packing,
// FitGpp, the drover profile, and Tiresias with its defaults and with
// the starvation knob the authors' runs also used (dlas-gpu-2).
var Policies = []string{"fifo", "binpack", "fitgpp", "drover", "tiresias", "tiresias:starve=2"}

var columns = []string{"completed", "jct_mean_s", "jct_p95_s", "te_slowdown_p95", "be_slowdown_p95", "preemptions", "makespan_s", "gpu_util"}

// Experiments returns tiresias and tiresias-philly.
func Experiments() []experiment.Experiment {
	return []experiment.Experiment{
		{Name: "tiresias", Description: "Tiresias 2D-LAS against fifo, binpack, fitgpp, drover on the overview workload (600 jobs, load 1.2, 16 nodes of 8 GPUs, 3 seeds)",
			Run: mixed},
		{Name: "tiresias-philly", Description: "Tiresias 2D-LAS against fifo, binpack, fitgpp, drover replaying the embedded Philly trace on 96 nodes of 8 GPUs",
			Run: philly},
	}
}

func mixed(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	nodes, jobs := 16, 600
	if env.Quick {
		nodes, jobs = 8, 150
	}
	po := workload.DefaultPhillyOptions()
	node := workload.PhillyNode(po)
	setup := experiment.Setup{
		Nodes: func(uint64) []cluster.Node { return baselines.Nodes("node", nodes, node, 24.48) },
		Jobs: func(seed uint64) ([]*cluster.Job, error) {
			return workload.Mixed(seed, workload.MixedOptions{Jobs: jobs, Load: 1.2, ClusterGPUs: int64(nodes) * node[resource.GPU],
				TEShare: 0.3, CoresPerGPU: po.CoresPerGPU, MemGiBPerGPU: po.MemGiBPerGPU}), nil
		},
		Config: sim.Config{Tick: 60},
	}
	seeds := env.SeedCount(3)
	rows, _, err := experiment.RunPolicies(ctx, env, "tiresias", setup, Policies, seeds)
	if err != nil {
		return nil, err
	}
	return &experiment.Report{Experiment: "tiresias", Seed: env.Seed, Seeds: seeds, Results: rows, Columns: columns,
		Notes: []string{fmt.Sprintf("the overview workload: %d nodes x (%v), %d jobs, offered GPU load 1.2, scheduling every 60 s", nodes, node, jobs)}}, nil
}

func philly(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	po := workload.DefaultPhillyOptions()
	nodes := baselines.PhillyNodes
	if env.Quick {
		po.Limit = 1000
		nodes = 16
	}
	all, err := workload.LoadPhilly(env.PhillyPath, po)
	if err != nil {
		return nil, err
	}
	node := workload.PhillyNode(po)
	setup := experiment.Setup{
		Nodes:  func(uint64) []cluster.Node { return baselines.Nodes("node", nodes, node, 24.48) },
		Jobs:   func(uint64) ([]*cluster.Job, error) { return all, nil },
		Config: sim.Config{Tick: 60},
	}
	// Without starve=2, which thrashes (see the tiresias experiment) and
	// would cost the most simulation time of the set.
	rows, _, err := experiment.RunPolicies(ctx, env, "tiresias-philly", setup, Policies[:5], 1)
	if err != nil {
		return nil, err
	}
	return &experiment.Report{Experiment: "tiresias-philly", Seed: env.Seed, Results: rows, Columns: columns,
		Notes: []string{fmt.Sprintf("%d Philly jobs on %d nodes x (%v), scheduling every 60 s", len(all), nodes, node),
			"Microsoft Philly cluster trace, Jeon et al., USENIX ATC 2019 (CC BY 4.0)"}}, nil
}
