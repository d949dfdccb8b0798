package sim

import (
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// TestInterference: with Config.Interference, k jobs oversubscribing a
// node run at 1/k speed times 1/(1 + Interference·(k-1)); a job alone on
// a node is not slowed.
func TestInterference(t *testing.T) {
	mk := func(id string) *cluster.Job {
		j := gjob(id, 0, 100, 0)
		j.Groups[0].Demand = resource.New(1, 1, 0)
		j.Groups[0].Usage = resource.New(8, 1, 0)
		return j
	}
	tests := []struct {
		name  string
		beta  float64
		jobs  int
		nodes int
		want  float64
	}{
		{"fair sharing", 0, 3, 1, 300},
		{"three jobs, beta 0.1", 0.1, 3, 1, 360}, // 100 / (1/3 / 1.2)
		{"two jobs, beta 0.5", 0.5, 2, 1, 300},   // 100 / (1/2 / 1.5)
		{"alone on a node: no overhead", 0.5, 1, 1, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var jobs []*cluster.Job
			for i := range tc.jobs {
				jobs = append(jobs, mk(string(rune('a'+i))))
			}
			r := run(t, Config{Interference: tc.beta, Check: true}, nodes(tc.nodes, 0), jobs, fifo())
			for _, rc := range r.Records {
				if d := rc.Finish - tc.want; d > 1e-6 || d < -1e-6 {
					t.Errorf("%s finished at %v, want %v", rc.ID, rc.Finish, tc.want)
				}
			}
		})
	}
}

func TestInterferenceRejectsNegative(t *testing.T) {
	if _, err := New(Config{Interference: -0.1}, nodes(1, 0), nil, fifo()); err == nil {
		t.Error("negative interference accepted")
	}
}
