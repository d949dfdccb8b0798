package elasticexp

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

func env(t *testing.T) *experiment.Env {
	t.Helper()
	r := policy.NewRegistry()
	if err := r.Add(elastic.Entries()...); err != nil {
		t.Fatal(err)
	}
	return &experiment.Env{Seed: 1, Policies: r, Quick: true}
}

func row(t *testing.T, rep *experiment.Report, policy, arrivals string) map[string]float64 {
	t.Helper()
	for _, r := range rep.Results {
		if r.Policy == policy && r.Params["arrivals"] == arrivals && r.Params["scaleup"] == "" && r.Params["placement"] == "" {
			return r.Metrics
		}
	}
	t.Fatalf("%s: no row for %s (%s)", rep.Experiment, policy, arrivals)
	return nil
}

// TestSmallExperiments runs the three small experiments at Quick scale and
// checks what the model shows (docs/elastic.md): every job finishes; elastic
// beats tf-operator on mean JCT in the low- and medium-demand mixes, by
// most where jobs are small against the cluster; elastic gang-places every
// job of the low mix while tf-operator spreads them; tf-operator starts
// the late high-priority job partially when the cluster is full.
func TestSmallExperiments(t *testing.T) {
	e := env(t)
	gain := map[string]float64{}
	for _, m := range Mixes() {
		rep, err := small(context.Background(), e, m)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != len(Policies)*len(Arrivals) {
			t.Fatalf("%s: %d rows", m.Name, len(rep.Results))
		}
		for _, r := range rep.Results {
			for _, k := range []string{"scale_ups", "scale_downs", "gang_placed_frac", "partial_start_frac", "train_time_mean_s", "jct_mean_s"} {
				if _, ok := r.Metrics[k]; !ok {
					t.Errorf("%s %s: no %s", m.Name, r.Policy, k)
				}
			}
			if r.Metrics["completed"] != 4 {
				t.Errorf("%s %s %v: completed %v of 4", m.Name, r.Policy, r.Params, r.Metrics["completed"])
			}
		}
		el, tf := row(t, rep, "elastic", "staggered"), row(t, rep, "tf-operator", "staggered")
		gain[m.Name] = experiment.Change(tf["jct_mean_s"], el["jct_mean_s"])
		if len(rep.Charts) == 0 || rep.Charts[0].Line == nil || !rep.Charts[0].Line.Step {
			t.Errorf("%s: no replica step chart", m.Name)
		}
	}
	if !(gain["elastic-1"] < 0 && gain["elastic-2"] < 0) {
		t.Errorf("elastic does not beat tf-operator in the low and medium mixes: %v", gain)
	}
	if !(gain["elastic-1"] < gain["elastic-2"] && gain["elastic-1"] < gain["elastic-3"]) {
		t.Errorf("elastic's advantage over tf-operator is not largest in the low-demand mix: %v", gain)
	}
	rep, err := small(context.Background(), e, Mixes()[0])
	if err != nil {
		t.Fatal(err)
	}
	if g := row(t, rep, "elastic", "staggered")["gang_placed_frac"]; g != 1 {
		t.Errorf("elastic-1: elastic gang-placed %v of jobs, want all", g)
	}
	if g := row(t, rep, "tf-operator", "staggered")["gang_placed_frac"]; g != 0 {
		t.Errorf("elastic-1: tf-operator gang-placed %v of jobs, want none (spread)", g)
	}
	rep2, err := small(context.Background(), e, Mixes()[1])
	if err != nil {
		t.Fatal(err)
	}
	if p := row(t, rep2, "tf-operator", "staggered")["partial_start_frac"]; p <= 0 {
		t.Errorf("elastic-2: tf-operator partial_start_frac %v, want > 0", p)
	}
	if p := row(t, rep2, "elastic", "staggered")["partial_start_frac"]; p != 0 {
		t.Errorf("elastic-2: elastic partial_start_frac %v, want 0 (gang)", p)
	}
}

func TestDeterministicReport(t *testing.T) {
	var out [2]bytes.Buffer
	for i := range out {
		rep, err := small(context.Background(), env(t), Mixes()[2])
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteJSON(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if out[0].String() != out[1].String() {
		t.Error("same seed, different JSON")
	}
}

func TestPhillyQuick(t *testing.T) {
	rep, err := philly(context.Background(), env(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Metrics["completed"] != PhillyQuick {
			t.Errorf("%s %v: completed %v of %d", r.Policy, r.Params, r.Metrics["completed"], PhillyQuick)
		}
	}
}

func TestPhillyJobsRule(t *testing.T) {
	src := []*cluster.Job{
		{ID: "a", Class: cluster.ClassTE, Work: 100, Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(6, 48, 1), Replicas: 1, Min: 1, Max: 1}}},
		{ID: "b", Class: cluster.ClassBE, Work: 100, Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(48, 384, 8), Replicas: 2, Min: 2, Max: 2}}},
	}
	got := PhillyJobs(src, elastic.DefaultPSSpeed())
	tests := []struct {
		j                   *cluster.Job
		prio, w, lo, hi, ps int
	}{
		{got[0], 1, 1, 1, 2, 1},
		{got[1], 0, 16, 8, 32, 4},
	}
	for _, tc := range tests {
		g := tc.j.Groups
		if tc.j.Priority != tc.prio || g[0].Replicas != tc.w || g[0].Min != tc.lo || g[0].Max != tc.hi || g[1].Replicas != tc.ps {
			t.Errorf("%s: prio %d groups %+v", tc.j.ID, tc.j.Priority, g)
		}
	}
}

func TestBadMixRejected(t *testing.T) {
	m := Mixes()[0]
	m.Jobs = append([]JobSpec(nil), m.Jobs...)
	m.Jobs[1].Worker = resource.New(12, 2, 0)
	m.Jobs[2].Min, m.Jobs[2].Max = 5, 4
	_, err := small(context.Background(), env(t), m)
	if err == nil {
		t.Fatal("bad mix accepted")
	}
	for _, want := range []string{"job j2: groups[worker].demand", "job j3: groups[worker].min_replicas"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
