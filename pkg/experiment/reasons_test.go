package experiment

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/metrics"
)

func TestReasonKey(t *testing.T) {
	tests := []struct{ reason, id, want string }{
		{"unschedulable: a worker replica needs gpu=16, more gpu than any node has (largest cpu=48 memory=384Gi)", "a",
			"unschedulable: a worker replica needs gpu=N, more gpu than any node has (largest cpu=N memory=NGi)"},
		{"job philly-12 has no class (want TE or BE)", "philly-12", "job <job> has no class (want TE or BE)"},
		{"job a: ps: missing parameter-server parameters", "a", "job <job>: ps: missing parameter-server parameters"},
		{"oasis: payoff -1.5e-07 <= 0.25 (utility 3, priced cost 4.5)", "x", "oasis: payoff -N <= N (utility N, priced cost N)"},
		{"", "x", ""},
	}
	for _, tc := range tests {
		if d := cmp.Diff(tc.want, ReasonKey(tc.reason, tc.id)); d != "" {
			t.Errorf("ReasonKey(%q) (-want +got):\n%s", tc.reason, d)
		}
	}
}

// The table lists rejected and unfinished jobs by reason below the rows;
// a row with none adds nothing (issue 17 item 11).
func TestWriteTableReasons(t *testing.T) {
	recs := []metrics.JobRecord{
		{ID: "a", Rejected: true, Reason: "job a is too big: gpu=16", Finish: -1},
		{ID: "b", Rejected: true, Reason: "job b is too big: gpu=32", Finish: -1},
		{ID: "c", Reason: "waiting for gpu=4", Finish: -1},
		{ID: "d", Finish: 10},
	}
	rej, unf := countReasons(recs)
	r := &Report{Experiment: "x", Results: []Row{{Policy: "p", Metrics: map[string]float64{"jobs": 4}, Rejected: rej, Unfinished: unf},
		{Policy: "q", Metrics: map[string]float64{"jobs": 4}}}, Columns: []string{"jobs"}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "experiment x, seed 0\n  policy  jobs\n       p     4\n       q     4\n" +
		"rejected p: 2 jobs\n  2  job <job> is too big: gpu=N\nunfinished p: 1 jobs\n  1  waiting for gpu=N\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}

// meanCounts divides once, so means print as short decimals.
func TestMeanCounts(t *testing.T) {
	ms := []map[string]float64{{"a": 24}, {"a": 24}, {"a": 24}, {"a": 24, "b": 1}, {"a": 23}}
	if d := cmp.Diff(map[string]float64{"a": 23.8, "b": 0.2}, meanCounts(ms, 5)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := meanCounts([]map[string]float64{nil, nil}, 2); got != nil {
		t.Errorf("no reasons: %v, want nil", got)
	}
}
