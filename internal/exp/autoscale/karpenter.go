package autoscaleexp

import (
	"context"
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// RampOptions fix the `autoscale-karpenter` experiment: the demand ramp of
// the Karpenter e2e test (pkg/k8s/e2e TestKarpenterLoop) replayed in the
// simulator, in the test's wall-clock seconds.
type RampOptions struct {
	// Waves are the jobs submitted per wave, Gap the seconds between waves.
	Waves []int
	Gap   float64
	// Work is a job's run time: the test's 1,200 s of training at the
	// stand-in's time scale 20.
	Work float64
	// LaunchDelay is the real loop's, from a pending pod to a Ready node:
	// Karpenter's batching window (1 s idle, at most 3 s), the kwok node
	// class's NodeRegistrationDelay (2 s), and the stand-in's registration.
	LaunchDelay float64
	// IdleTimeout is the real loop's time from a node's emptiness to its
	// removal: the NodePool's consolidateAfter (5 s), then Karpenter's
	// disruption poll (every 10 s) and its 15 s validation wait.
	IdleTimeout float64
	// Tick is the scheduling interval: the predictive profile's tick in
	// the test (1 s; drover's cycle there is 100 ms).
	Tick float64
	// Horizon ends the run: node-hours and cost are counted up to it, as
	// the test counts them (its rampHorizon).
	Horizon float64
}

// DefaultRampOptions are the e2e test's settings.
func DefaultRampOptions() RampOptions {
	return RampOptions{Waves: []int{1, 2, 3}, Gap: 20, Work: 60, LaunchDelay: 4, IdleTimeout: 27.5, Tick: 1, Horizon: 160}
}

// RampCatalog is the e2e test's catalogue (pkg/k8s/e2e gpuCatalog): a
// g4dn.xlarge (4 CPU, 16 GiB, 1 GPU) and a g4dn.12xlarge (48 CPU, 192
// GiB, 4 GPUs) at their on-demand prices.
func RampCatalog() []cluster.InstanceType {
	return []cluster.InstanceType{
		{Name: "g4dn.xlarge", PricePerHour: 0.526, Capacity: resource.New(4, 16, 1)},
		{Name: "g4dn.12xlarge", PricePerHour: 3.912, Capacity: resource.New(48, 192, 4)},
	}
}

// RampJobs are the test's TrainingJobs: one replica of 3 CPUs, 8 GiB and
// one GPU each, submitted in waves.
func RampJobs(o RampOptions) []*cluster.Job {
	var out []*cluster.Job
	for w, n := range o.Waves {
		for range n {
			out = append(out, &cluster.Job{ID: fmt.Sprintf("ramp-%d", len(out)+1), Class: cluster.ClassBE,
				Submit: float64(w) * o.Gap, Work: o.Work,
				Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(3, 8, 1), Replicas: 1, Min: 1, Max: 1}}})
		}
	}
	return out
}

// RampColumns are the columns of the report.
var RampColumns = []string{"jobs", "completed", "pending_mean_s", "pending_p95_s", "node_hours", "cost", "cost_per_job",
	"nodes_peak", "nodes_provisioned"}

// RunRamp runs the ramp under `reactive` and `predictive` (ladder, tick 1).
func RunRamp(ctx context.Context, env *experiment.Env, o RampOptions) (*experiment.Report, error) {
	jobs := RampJobs(o)
	setup := experiment.Setup{Nodes: func(uint64) []cluster.Node { return nil },
		Jobs: func(uint64) ([]*cluster.Job, error) {
			out := make([]*cluster.Job, len(jobs))
			for i, j := range jobs {
				c := *j
				out[i] = &c
			}
			return out, nil
		},
		Config: sim.Config{Tick: o.Tick, LaunchDelay: o.LaunchDelay, Catalog: RampCatalog(), Horizon: o.Horizon,
			Autoscaler: &sim.Autoscaler{IdleTimeout: o.IdleTimeout}}}
	rows, _, err := experiment.RunPolicies(ctx, env, "autoscale-karpenter", setup,
		[]string{"reactive:base=binpack", fmt.Sprintf("predictive:model=ladder;tick=%g;base=binpack", o.Tick)}, 1)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		m := rows[i].Metrics
		m["cost_per_job"] = m["cost"] / float64(len(jobs))
		if mo := rows[i].Params["model"]; mo != "" {
			rows[i].Params = map[string]string{"model": mo}
		} else {
			rows[i].Params = nil
		}
	}
	notes := []string{
		fmt.Sprintf("the Karpenter e2e's ramp (pkg/k8s/e2e TestKarpenterLoop) in its wall-clock seconds: waves of %v jobs %g s apart, "+
			"each one replica of 3 CPU, 8 GiB, 1 GPU running %g s", o.Waves, o.Gap, o.Work),
		fmt.Sprintf("no initial node; catalogue g4dn.xlarge ($0.526/h), g4dn.12xlarge ($3.912/h); nodes ready %g s after the request, "+
			"released after %g s empty; scheduling every %g s", o.LaunchDelay, o.IdleTimeout, o.Tick),
		fmt.Sprintf("node_hours and cost: every node from its request to its release or the end of the run at %g s", o.Horizon),
	}
	return &experiment.Report{Experiment: "autoscale-karpenter", Seed: env.Seed, Results: rows, Columns: RampColumns, Notes: notes}, nil
}
