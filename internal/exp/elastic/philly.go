package elasticexp

import (
	"context"
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// The Philly slice and how it becomes elastic parameter-server jobs. The
// trace has only a GPU count g and a duration per job, so:
//   - workers: g requested workers of (1 GPU, 6 cores, 48 GiB), the
//     Philly loader's per-GPU shape; min ceil(g/2), max 2g;
//   - parameter servers: ceil(g/4) of (4 cores, 16 GiB, no GPU), fixed;
//   - Work: the trace's duration (taken as the training time at g workers
//     on one node; for jobs of more than 8 GPUs no node holds them, so they
//     never reach speed 1 in any policy);
//   - priority 1 for the trial-and-error jobs (ran at most 300 s, the
//     loader's TE class: short debugging runs a user wants back quickly),
//     0 for the rest;
//   - the slice: jobs 5,001 to 5,300 by submit time (Quick: 80 jobs), a
//     stretch with a mix of 1- to 16-GPU jobs (the first jobs of the trace
//     are almost all 1-GPU jobs).
//
// The cluster has 16 nodes of 8 GPUs with 64 cores and 512 GiB, more CPU
// and memory per GPU than the Philly loader's nodes so that parameter
// servers fit beside a node's eight workers.
const (
	PhillySkip  = 5000
	PhillyLimit = 300
	PhillyQuick = 80
	PhillyNodes = 16
	PhillyTick  = 10
)

// PhillyNode is the node shape of elastic-philly.
var PhillyNode = resource.New(64, 512, 8)

// PhillyJobs converts Philly jobs (from workload.LoadPhilly) into elastic
// jobs by the rule above.
func PhillyJobs(src []*cluster.Job, speed elastic.PSSpeed) []*cluster.Job {
	out := make([]*cluster.Job, len(src))
	for i, j := range src {
		g := int(j.RequestedDemand()[resource.GPU])
		prio := 0
		if j.Class == cluster.ClassTE {
			prio = 1
		}
		ps := (g + 3) / 4
		out[i] = &cluster.Job{ID: j.ID, Class: j.Class, Tenant: j.Tenant, Model: "ps", Priority: prio, Submit: j.Submit,
			Work: j.Work, RescaleCost: RescaleCost, Speed: speed, Seed: j.Seed,
			Groups: []cluster.ReplicaGroup{
				{Name: "worker", Demand: resource.New(6, 48, 1), Replicas: g, Min: (g + 1) / 2, Max: 2 * g},
				{Name: "ps", Demand: resource.New(4, 16, 0), Replicas: ps, Min: ps, Max: ps},
			}}
	}
	return out
}

func philly(ctx context.Context, env *experiment.Env) (*experiment.Report, error) {
	po := workload.DefaultPhillyOptions()
	po.Skip, po.Limit = PhillySkip, PhillyLimit
	if env.Quick {
		po.Limit = PhillyQuick
	}
	src, err := workload.LoadPhilly(env.PhillyPath, po)
	if err != nil {
		return nil, fmt.Errorf("elastic-philly: %w", err)
	}
	speed := elastic.DefaultPSSpeed()
	nodes := func() []cluster.Node { return Nodes("node", PhillyNodes, PhillyNode) }
	jobs := PhillyJobs(src, speed)
	if err := elastic.ValidateJobs(jobs, nodes()); err != nil {
		return nil, fmt.Errorf("elastic-philly: %w", err)
	}
	setup := Setup{Nodes: nodes, Jobs: func(uint64) ([]*cluster.Job, error) { return jobs, nil }, Config: sim.Config{Tick: PhillyTick}}
	rows, runs, err := RunAll(ctx, env, "elastic-philly", setup, Policies, 1, nil)
	if err != nil {
		return nil, err
	}
	cols := append(append([]string{}, Columns...), "jct_p50_s", "jct_p95_s", "gpu_alloc_frac")
	rep := &experiment.Report{Experiment: "elastic-philly", Seed: env.Seed, Results: rows, Columns: cols,
		Notes: []string{fmt.Sprintf("Philly jobs %d-%d by submit time (%d jobs) on %d nodes x (%v); workers = GPUs (min g/2, max 2g), ceil(g/4) PS, TE jobs priority 1; scheduling every %d s; %s",
			po.Skip+1, po.Skip+len(jobs), len(jobs), PhillyNodes, PhillyNode, PhillyTick, speedNote(speed)),
			"Microsoft Philly cluster trace, Jeon et al., USENIX ATC 2019 (CC BY 4.0)"},
		Jobs: jobTables(runs), Charts: []experiment.ChartFile{TotalWorkersChart("Workers running, elastic-philly", runs),
			experiment.JCTCDF("JCT CDF, elastic-philly", toExpRuns(runs))}}
	rep.Notes = append(rep.Notes, comparisons(rows)...)
	return rep, nil
}

func toExpRuns(runs []Run) []experiment.Run {
	out := make([]experiment.Run, len(runs))
	for i, r := range runs {
		out[i] = experiment.Run{Policy: r.Label, Seed: r.Seed, Result: r.Result}
	}
	return out
}
