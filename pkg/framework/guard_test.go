package framework_test

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// bomb is a plugin that panics on the jobs named in jobs, at Reserve
// after it recorded a label and took more from the ledger inside a fork
// it leaves open (what a real bug half way through would leave), and in
// Rebalance when rebalance is set.
type bomb struct {
	jobs      map[string]bool
	rebalance bool
}

func (*bomb) Name() string { return "bomb" }
func (b *bomb) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	c.St.Record(js, policy.SetLabel{Job: js.Job.ID, Key: "drover.dev/x", Value: "1"})
	if b.jobs[js.Job.ID] {
		c.St.Fork()
		c.St.Now().Fork()
		c.St.Now().Take(0, js.Job.Groups[0].Demand)
		var idx []int
		_ = idx[len(js.Job.ID)-10] // index out of range, as SpeCon's rr-slot overflow did
	}
}
func (b *bomb) Rebalance(c *framework.Cycle) *framework.Status {
	c.St.Record(nil, policy.Wait{Job: "rebalance-was-here"})
	if b.rebalance {
		panic("rebalance bug")
	}
	return nil
}

func bombProfile(b *bomb) framework.Profile {
	return framework.Profile{Name: "bomb", Reserve: []framework.Reserve{b}, Rebalance: []framework.Rebalance{b}}
}

// Issue 17, item 1: a plugin that panics on one job costs that job, not
// the cycle: the job's actions are discarded (its start, its label, the
// what-if it left open), the jobs behind it are decided as if it were not
// there, and the fault names the job and where the plugin panicked.
func TestScheduleGuardedContainsAPanic(t *testing.T) {
	w := func() *cluster.Snapshot {
		return newWorld().node("n0", 8).pending(job("a", 4, 1), job("bad", 4, 1), job("c", 4, 1)).s
	}
	rt, err := scheduler.New(bombProfile(&bomb{jobs: map[string]bool{"bad": true}}))
	if err != nil {
		t.Fatal(err)
	}
	acts, faults := rt.ScheduleGuarded(w())
	want := []string{"start a [0]", "label a", "start c [0]", "label c", "wait rebalance-was-here"}
	if d := gocmp.Diff(want, summary(acts)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if len(faults) != 1 || faults[0].Job != "bad" || faults[0].Stage != policy.StageJob ||
		!strings.Contains(faults[0].Value, "index out of range") || !strings.Contains(faults[0].At, "guard_test.go") {
		t.Errorf("faults %+v, want one for job bad at guard_test.go", faults)
	}
	// The next cycle runs normally: no half-open fork is left behind.
	acts, faults = rt.ScheduleGuarded(newWorld().node("n0", 8).pending(job("d", 4, 1)).s)
	if d := gocmp.Diff([]string{"start d [0]", "label d", "wait rebalance-was-here"}, summary(acts)); d != "" || len(faults) != 0 {
		t.Errorf("next cycle (-want +got):\n%s\nfaults %v", d, faults)
	}
}

func TestScheduleGuardedRebalancePanic(t *testing.T) {
	rt, err := scheduler.New(bombProfile(&bomb{rebalance: true}))
	if err != nil {
		t.Fatal(err)
	}
	acts, faults := rt.ScheduleGuarded(newWorld().node("n0", 8).pending(job("a", 4, 1)).s)
	if d := gocmp.Diff([]string{"start a [0]", "label a"}, summary(acts)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if len(faults) != 1 || faults[0].Stage != policy.StageRebalance || faults[0].Plugin != "bomb" || faults[0].Value != "rebalance bug" {
		t.Errorf("faults %+v, want one in rebalance bomb", faults)
	}
}

// Schedule itself still panics: the simulator wants to see the bug.
func TestScheduleStillPanics(t *testing.T) {
	rt, err := scheduler.New(bombProfile(&bomb{jobs: map[string]bool{"bad": true}}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Schedule did not panic")
		}
	}()
	rt.Schedule(newWorld().node("n0", 8).pending(job("bad", 4, 1)).s)
}
