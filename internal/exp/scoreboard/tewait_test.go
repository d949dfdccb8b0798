package scoreboard

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/sim"
)

// TestMeasureTEWait buckets TE waits (first cycle, one grace, longer),
// ignores BE and unfinished jobs, and finds the trials at or above the
// run's TE p95 slowdown.
func TestMeasureTEWait(t *testing.T) {
	rec := func(class cluster.Class, work, wait float64, gpus int64) metrics.JobRecord {
		return metrics.JobRecord{Class: class, Submit: 100, FirstStart: 100 + wait, Finish: 100 + wait + work, Work: work, GPUs: gpus}
	}
	unfinished := rec(cluster.ClassTE, 600, 5000, 1)
	unfinished.Finish = -1
	recs := []metrics.JobRecord{
		rec(cluster.ClassTE, 600, 30, 1),  // first cycle, slowdown 1.05
		rec(cluster.ClassTE, 600, 60, 1),  // first cycle, 1.1
		rec(cluster.ClassTE, 60, 90, 4),   // one grace, 2.5: the tail
		rec(cluster.ClassTE, 600, 400, 2), // longer, 1.67
		rec(cluster.ClassBE, 600, 9000, 8),
		unfinished,
	}
	got := MeasureTEWait([]experiment.Run{{Result: &sim.Result{Records: recs}}})
	want := TEWait{Jobs: 4, FirstCycle: 0.5, OneGrace: 0.25, Longer: 0.25, WaitP50: 75, WaitP95: 353.5, WaitMax: 400,
		TailJobs: 1, TailWork: 60, TailWait: 90, TailGPUs: 4, TailOneGrace: 1}
	if d := gocmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
