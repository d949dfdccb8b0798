package specon

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/sim"
)

func TestScratch(t *testing.T) {
	m, _ := ModelByName("vae")
	var jobs []*cluster.Job
	for i := 0; i < 20; i++ {
		jobs = append(jobs, NewJob(fmt.Sprintf("j%02d", i), m, float64(i*50), uint64(i+1)))
	}
	for _, pol := range []policy.Policy{&Default{}, New(DefaultParams)} {
		s, err := sim.New(sim.Config{Tick: 1, SampleEvery: 5}, Cluster(4), jobs, pol)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		mm := res.Metrics()
		t.Logf("%s jct %.1f makespan %.1f migr %v refused %v", pol.Name(), mm["jct_mean_s"], mm["makespan_s"], mm["migrations"], len(res.Refusals))
	}
}
