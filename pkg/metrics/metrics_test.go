package metrics

import (
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
)

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	tests := []struct{ p, want float64 }{{0, 1}, {50, 3}, {100, 5}, {25, 2}, {95, 4.8}}
	for _, tc := range tests {
		if got := Percentile(xs, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if Percentile(nil, 50) != 0 || Mean(nil) != 0 {
		t.Error("empty inputs should give 0")
	}
}

func TestSummary(t *testing.T) {
	recs := []JobRecord{
		{ID: "a", Class: cluster.ClassTE, Submit: 0, FirstStart: 10, Finish: 110, Work: 100, Utility: 2},
		{ID: "b", Class: cluster.ClassBE, Submit: 0, FirstStart: 0, Finish: 300, Work: 100, Preemptions: 2},
		{ID: "c", Class: cluster.ClassBE, Submit: 5, FirstStart: -1, Finish: -1, Work: 50, Rejected: true},
	}
	m := Summary(recs, RunStats{Makespan: 300, Cost: 12})
	want := map[string]float64{"jobs": 3, "completed": 2, "rejected": 1, "jct_mean_s": 205, "te_slowdown_p50": 1.1,
		"be_slowdown_p50": 3, "te_jct_mean_s": 110, "be_jct_p95_s": 300, "queue_delay_mean_s": 5, "preemptions": 2, "preempted_jobs": 1, "utility_total": 2, "cost": 12, "makespan_s": 300}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	for _, k := range []string{"jct_p50_s", "jct_p95_s", "jct_p99_s", "slowdown_p50", "slowdown_p95", "slowdown_p99",
		"te_slowdown_p95", "te_slowdown_p99", "be_slowdown_p95", "be_slowdown_p99", "migrations"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary lacks the contract key %s", k)
		}
	}
}
