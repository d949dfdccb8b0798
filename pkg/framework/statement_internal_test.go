package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// TestWaitForgetsDiscardedWaits: a Wait recorded on a fork that is then
// discarded (a guarded job that panicked, a what-if) does not count as
// this cycle's Wait: the job's reason is the executor's again, and a Wait
// for that reason is not sent.
func TestWaitForgetsDiscardedWaits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		discard bool
		// then: the reason waited for after the fork
		then       string
		wantReason string
		wantActs   []policy.Action
	}{
		{"kept, then the shown reason", false, "shown", "shown",
			[]policy.Action{policy.Wait{Job: "a", Reason: "new"}, policy.Wait{Job: "a", Reason: "shown"}}},
		{"discarded, then the shown reason", true, "shown", "shown", []policy.Action{}},
		{"discarded, then another", true, "other", "other", []policy.Action{policy.Wait{Job: "a", Reason: "other"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := cluster.NewJobState(&cluster.Job{ID: "a"})
			js.Reason = "shown"
			var st Statement
			var now, soon placement.Ledger
			st.reset(&now, &soon, false)
			st.Fork()
			st.wait(js, "new")
			if tc.discard {
				st.Discard()
			} else {
				st.Commit()
			}
			st.wait(js, tc.then)
			if got := st.reason(js); got != tc.wantReason {
				t.Errorf("reason %q, want %q", got, tc.wantReason)
			}
			if d := cmp.Diff(tc.wantActs, st.acts); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}
