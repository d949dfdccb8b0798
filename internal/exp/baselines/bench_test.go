package baselines

import (
	"context"
	"testing"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// BenchmarkPhillyFIFO replays the whole Philly trace (82,247 jobs) under
// FIFO on the philly experiment's cluster. Target: under 2 s per op.
func BenchmarkPhillyFIFO(b *testing.B) {
	po := workload.DefaultPhillyOptions()
	jobs, err := workload.LoadPhilly("", po)
	if err != nil {
		b.Fatal(err)
	}
	nodes := Nodes("node", PhillyNodes, workload.PhillyNode(po), 24.48)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := sim.New(sim.Config{Tick: 60}, nodes, jobs, baseline.NewFIFO(placement.Pack))
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if n := res.Metrics()["completed"]; n != float64(len(jobs)) {
			b.Fatalf("completed %v of %d", n, len(jobs))
		}
	}
	_ = cluster.ClassTE
}
