package specon

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/sim"
)

// scenarioJobs is a small mixed workload: 12 jobs of every model, one
// every 20 s, on 3 workers, so that jobs converge while others progress.
func scenarioJobs() []*cluster.Job {
	ms := Models()
	var jobs []*cluster.Job
	for i := range 12 {
		jobs = append(jobs, NewJob(fmt.Sprintf("job-%02d", i+1), ms[i%len(ms)], float64(i*20), uint64(100+i)))
	}
	return jobs
}

func runScenario(t *testing.T, p policy.Policy) *sim.Result {
	t.Helper()
	s, err := sim.New(sim.Config{Seed: 1, Tick: 1, SampleEvery: 5, Check: true}, Cluster(3), scenarioJobs(), p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readings are the parameter sets the scenario tests run: the paper's
// reading (the default) and drover's first reading.
var readings = []struct {
	name string
	p    Params
}{{"paper", DefaultParams}, {"first", FirstReading}}

// TestScenario runs SpeCon through the simulator with invariant checks,
// under both readings: every job finishes, nothing is refused, every job
// ends labelled with a category, moves at most once, and some converged
// jobs do move.
func TestScenario(t *testing.T) {
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) { testScenario(t, r.p) })
	}
}

func testScenario(t *testing.T, p Params) {
	res := runScenario(t, New(p))
	if len(res.Refusals) > 0 {
		t.Fatalf("refused: %v", res.Refusals)
	}
	moved, kinds := 0, map[string]int{}
	for _, js := range res.Final {
		kinds[js.Labels[LabelMove]]++
		if js.Phase != cluster.Done {
			t.Errorf("%s ended %s", js.Job.ID, js.Phase)
		}
		if _, err := ParseCategory(js.Labels[LabelCategory]); err != nil {
			t.Errorf("%s: %v", js.Job.ID, err)
		}
		if js.Migrations > 1 {
			t.Errorf("%s migrated %d times", js.Job.ID, js.Migrations)
		}
		if js.Migrations == 1 {
			moved++
			if js.Labels[LabelCategory] != "CC" || js.Labels[LabelMove] == "" {
				t.Errorf("%s moved but labels say %v", js.Job.ID, js.Labels)
			}
		}
		if js.Labels[LabelMove] != "" && (js.Labels[LabelMigrated] != "true" || js.Labels[LabelMarkedAt] == "") {
			t.Errorf("%s: move without migrated mark: %v", js.Job.ID, js.Labels)
		}
	}
	if kinds[MoveMigrate] == 0 || kinds[MoveRebalance] == 0 {
		t.Errorf("moves by kind %v: the scenario does not exercise both Alg. 2 (M) and Alg. 3 (R)", kinds)
	}
	if m := res.Metrics(); m["migrations"] != float64(moved) {
		t.Errorf("migrations metric %v, moved %d", m["migrations"], moved)
	}
}

// rebuilt throws its SpeCon instance away before every cycle, so that all
// state comes from labels and the snapshot, as after a controller restart.
type rebuilt struct{ p Params }

func (r rebuilt) Name() string                                 { return "specon" }
func (r rebuilt) TimeDriven() bool                             { return true }
func (r rebuilt) Schedule(s *cluster.Snapshot) []policy.Action { return New(r.p).Schedule(s) }

// TestRebuiltFromLabels: a policy rebuilt from labels on every cycle makes
// exactly the same decisions as one that keeps its memory, under both
// readings.
func TestRebuiltFromLabels(t *testing.T) {
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) { testRebuilt(t, r.p) })
	}
}

func testRebuilt(t *testing.T, p Params) {
	a := runScenario(t, New(p))
	b := runScenario(t, rebuilt{p})
	if !reflect.DeepEqual(a.Records, b.Records) {
		for i := range a.Records {
			if !reflect.DeepEqual(a.Records[i], b.Records[i]) {
				t.Errorf("%s: %+v vs rebuilt %+v", a.Records[i].ID, a.Records[i], b.Records[i])
			}
		}
	}
	for i := range a.Final {
		if !reflect.DeepEqual(a.Final[i].Labels, b.Final[i].Labels) {
			t.Errorf("%s labels %v vs rebuilt %v", a.Final[i].Job.ID, a.Final[i].Labels, b.Final[i].Labels)
		}
	}
}

// TestDeterministic: the same seed gives the same result.
func TestDeterministic(t *testing.T) {
	a := runScenario(t, New(DefaultParams))
	b := runScenario(t, New(DefaultParams))
	if !reflect.DeepEqual(a.Records, b.Records) {
		t.Error("two runs of the same scenario differ")
	}
}

// recorder keeps every cycle's actions of the policy it wraps.
type recorder struct {
	p    policy.Policy
	acts [][]policy.Action
}

func (r *recorder) Name() string     { return r.p.Name() }
func (r *recorder) TimeDriven() bool { return true }
func (r *recorder) Schedule(s *cluster.Snapshot) []policy.Action {
	as := r.p.Schedule(s)
	r.acts = append(r.acts, slices.Clone(as))
	return as
}

// TestActionsAsRebuilt: the Speculator's memory (job states, label values
// and working buffers kept from cycle to cycle) is only a cache of what
// the labels and the snapshot say: an instance that keeps it sends, cycle
// by cycle, exactly the actions (label writes included) of one rebuilt
// from labels on every cycle, under both readings.
func TestActionsAsRebuilt(t *testing.T) {
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) {
			kept, fresh := &recorder{p: New(r.p)}, &recorder{p: rebuilt{r.p}}
			runScenario(t, kept)
			runScenario(t, fresh)
			if len(kept.acts) != len(fresh.acts) {
				t.Fatalf("%d cycles, rebuilt %d", len(kept.acts), len(fresh.acts))
			}
			labels := 0
			for i := range kept.acts {
				labels += len(actionsOf[policy.SetLabel](kept.acts[i]))
				if d := cmp.Diff(fresh.acts[i], kept.acts[i]); d != "" {
					t.Fatalf("cycle %d: actions (-rebuilt +kept):\n%s", i, d)
				}
			}
			if labels == 0 {
				t.Fatal("no label written: the test compares nothing")
			}
		})
	}
}
