package fitgpp

import (
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
)

// LRTP's victim is the job with the most estimated work left (the stated
// run time times the fraction not yet done), not the most true work left:
// production has only the estimate.
func TestLRTPReadsTheEstimate(t *testing.T) {
	mk := func(id string, work, left, estimate float64) *cluster.JobState {
		js := cluster.NewJobState(&cluster.Job{ID: id, Work: work, Estimate: estimate})
		js.WorkLeft = left
		return js
	}
	p := &Preemptor{Rule: LRTP, P: Unlimited}
	tests := []struct {
		name  string
		avail []*cluster.JobState
		want  int
	}{
		{"exact", []*cluster.JobState{mk("a", 1000, 500, 0), mk("b", 4000, 1000, 0)}, 1},
		// b has more work left (1,000) but is estimated at a quarter of
		// its run time: 250 left, against a's 500.
		{"b underestimated", []*cluster.JobState{mk("a", 1000, 500, 0), mk("b", 4000, 1000, 1000)}, 0},
		// a's estimate is four times its run time: 2,000 left.
		{"a overestimated", []*cluster.JobState{mk("a", 1000, 500, 4000), mk("b", 4000, 1000, 0)}, 0},
	}
	for _, tc := range tests {
		if got := p.longestRemainingOpen(tc.avail, 0); got != tc.want {
			t.Errorf("%s: victim %d, want %d", tc.name, got, tc.want)
		}
	}
}
