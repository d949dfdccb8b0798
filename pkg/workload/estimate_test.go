package workload

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
)

func estimateJobs(ids ...string) []*cluster.Job {
	var jobs []*cluster.Job
	for i, id := range ids {
		jobs = append(jobs, &cluster.Job{ID: id, Work: float64(1000 * (i + 1))})
	}
	return jobs
}

// DrawEstimates: sigma 0 changes nothing; otherwise each job's estimate is
// Estimate of its own work, seed and ID.
func TestDrawEstimates(t *testing.T) {
	tests := []struct {
		name  string
		sigma float64
		seed  uint64
		want  []float64 // Estimate per job
	}{
		{"sigma 0 leaves the exact run time", 0, 1, []float64{0, 0, 0}},
		{"sigma 0.5", 0.5, 1, []float64{Estimate(1000, 0.5, 1, "a"), Estimate(2000, 0.5, 1, "b"), Estimate(3000, 0.5, 1, "c")}},
		{"sigma 1, another seed", 1, 7, []float64{Estimate(1000, 1, 7, "a"), Estimate(2000, 1, 7, "b"), Estimate(3000, 1, 7, "c")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jobs := estimateJobs("a", "b", "c")
			DrawEstimates(jobs, tc.sigma, tc.seed)
			var got []float64
			for _, j := range jobs {
				got = append(got, j.Estimate)
				if j.Work != float64(1000*len(got)) {
					t.Errorf("job %s: Work changed to %v", j.ID, j.Work)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("estimates (-want +got):\n%s", d)
			}
		})
	}
}

// Estimate: the log error is sigma times a standard normal. Over many
// jobs its mean is near 0 and its standard deviation near sigma; the
// estimate scales with the work; the same (seed, ID) gives the same
// draw, and another seed or ID another.
func TestEstimateDistribution(t *testing.T) {
	const n = 4000
	for _, sigma := range []float64{0.5, 1} {
		sum, sq := 0.0, 0.0
		for i := range n {
			l := math.Log(Estimate(3600, sigma, 1, fmt.Sprintf("job-%d", i)) / 3600)
			sum += l
			sq += l * l
		}
		mean := sum / n
		sd := math.Sqrt(sq/n - mean*mean)
		if math.Abs(mean) > 0.1*sigma || math.Abs(sd-sigma) > 0.1*sigma {
			t.Errorf("sigma %v: log error mean %.3f, sd %.3f", sigma, mean, sd)
		}
	}
	if a, b := Estimate(100, 1, 3, "x"), Estimate(200, 1, 3, "x"); b != 2*a {
		t.Errorf("estimate of twice the work %v, want twice %v", b, a)
	}
	if a, b := Estimate(100, 1, 3, "x"), Estimate(100, 1, 3, "x"); a != b {
		t.Errorf("same (seed, ID) drew %v and %v", a, b)
	}
	if a, b, c := Estimate(100, 1, 3, "x"), Estimate(100, 1, 4, "x"), Estimate(100, 1, 3, "y"); a == b || a == c {
		t.Errorf("another seed or ID drew the same estimate: %v %v %v", a, b, c)
	}
}

// One job's estimate does not change when other jobs are added, removed
// or reordered: each draws from its own (seed, ID) stream.
func TestEstimateIsPerJob(t *testing.T) {
	alone := estimateJobs("b")
	alone[0].Work = 2000
	DrawEstimates(alone, 1, 5)
	for _, ids := range [][]string{{"a", "b", "c"}, {"z", "b"}, {"c", "a", "q", "r", "s", "b"}} {
		jobs := estimateJobs(ids...)
		for _, j := range jobs {
			j.Work = 2000
		}
		DrawEstimates(jobs, 1, 5)
		for _, j := range jobs {
			if j.ID == "b" && j.Estimate != alone[0].Estimate {
				t.Errorf("with jobs %v, b's estimate is %v; alone %v", ids, j.Estimate, alone[0].Estimate)
			}
		}
	}
}
