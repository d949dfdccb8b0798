package elasticexp

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

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

// row finds the row of a policy spec ("elastic", "elastic:order=size-first")
// in one arrival pattern.
func row(t *testing.T, rep *experiment.Report, spec, arrivals string) map[string]float64 {
	t.Helper()
	for _, r := range rep.Results {
		if rowSpec(r) == spec && r.Params["arrivals"] == arrivals {
			return r.Metrics
		}
	}
	t.Fatalf("%s: no row for %s (%s)", rep.Experiment, spec, arrivals)
	return nil
}

func rowSpec(r experiment.Row) string {
	s := r.Policy
	for _, k := range []string{"order", "placement", "scaleup"} {
		if v := r.Params[k]; v != "" {
			s += ":" + k + "=" + v
		}
	}
	return s
}

// TestSmallExperiments runs the three small experiments at Quick scale and
// checks what docs/elastic.md says of them: every job finishes; elastic
// beats tf-operator on mean JCT in every mix, by most in the low-demand
// mix; elastic gang-places every job of the low mix while tf-operator
// spreads them; in the high mix, where no job fits a node at its request,
// one node first gang-places more jobs than size first, which makes jobs
// queue; tf-operator starts a job partially there.
func TestSmallExperiments(t *testing.T) {
	e := env(t)
	gain := map[string]float64{}
	reps := map[string]*experiment.Report{}
	for _, m := range Mixes() {
		rep, err := small(context.Background(), e, m)
		if err != nil {
			t.Fatal(err)
		}
		reps[m.Name] = rep
		if len(rep.Results) != len(Policies)*len(Arrivals) {
			t.Fatalf("%s: %d rows", m.Name, len(rep.Results))
		}
		for _, r := range rep.Results {
			for _, k := range []string{"scale_ups", "scale_downs", "gang_placed_frac", "partial_start_frac", "train_time_mean_s", "jct_mean_s", "makespan_s"} {
				if _, ok := r.Metrics[k]; !ok {
					t.Errorf("%s %s: no %s", m.Name, r.Policy, k)
				}
			}
			if r.Metrics["completed"] != 4 {
				t.Errorf("%s %s %v: completed %v of 4", m.Name, r.Policy, r.Params, r.Metrics["completed"])
			}
		}
		for _, arr := range Arrivals {
			el, tf := row(t, rep, "elastic", arr), row(t, rep, "tf-operator", arr)
			if g := experiment.Change(tf["jct_mean_s"], el["jct_mean_s"]); g >= 0 {
				t.Errorf("%s %s: elastic vs tf-operator mean JCT %+.3f, want < 0", m.Name, arr, g)
			} else if arr == "staggered" {
				gain[m.Name] = g
			}
		}
		starts := 0
		for _, n := range rep.Notes {
			if strings.Contains(n, "workers x nodes at start") && strings.Contains(n, " j4 ") {
				starts++
			}
		}
		if starts != len(Policies)*len(Arrivals) {
			t.Errorf("%s: %d per-job start notes, want %d", m.Name, starts, len(Policies)*len(Arrivals))
		}
		if len(rep.Charts) == 0 || rep.Charts[0].Line == nil || !rep.Charts[0].Line.Step {
			t.Errorf("%s: no replica step chart", m.Name)
		}
	}
	if !(gain["elastic-1"] < gain["elastic-2"] && gain["elastic-1"] < gain["elastic-3"]) {
		t.Errorf("elastic's advantage over tf-operator is not largest in the low-demand mix: %v", gain)
	}
	low := reps["elastic-1"]
	if g := row(t, low, "elastic", "staggered")["gang_placed_frac"]; g != 1 {
		t.Errorf("elastic-1: elastic gang-placed %v of jobs, want all", g)
	}
	if g := row(t, low, "tf-operator", "staggered")["gang_placed_frac"]; g >= 1 {
		t.Errorf("elastic-1: tf-operator gang-placed %v of jobs, want fewer than all (spread)", g)
	}
	high := reps["elastic-3"]
	for _, arr := range Arrivals {
		one, size := row(t, high, "elastic", arr), row(t, high, "elastic:order=size-first", arr)
		if !(one["gang_placed_frac"] > size["gang_placed_frac"]) || !(one["queue_delay_mean_s"] < size["queue_delay_mean_s"]) {
			t.Errorf("elastic-3 %s: one node first gang %v queue %v, size first gang %v queue %v; want more gangs and less queueing",
				arr, one["gang_placed_frac"], one["queue_delay_mean_s"], size["gang_placed_frac"], size["queue_delay_mean_s"])
		}
		if p := row(t, high, "tf-operator", arr)["partial_start_frac"]; p <= 0 {
			t.Errorf("elastic-3 %s: tf-operator partial_start_frac %v, want > 0", arr, p)
		}
		if p := one["partial_start_frac"]; p != 0 {
			t.Errorf("elastic-3 %s: elastic partial_start_frac %v, want 0 (gang)", arr, p)
		}
	}
}

// TestMixShapes checks what the doc comment of Mixes says of the mixes:
// four different shapes per mix, a weight order that CPU alone would not
// give, and the demand levels against the nodes.
func TestMixShapes(t *testing.T) {
	capacity := SmallNode.Add(SmallNode).Add(SmallNode)
	fits := func(j *cluster.Job, w int) bool {
		c := j.RequestedCounts()
		c[0] = w
		return j.Demand(c).Fits(SmallNode)
	}
	type level struct{ atMax, atRequest, atMin int }
	want := map[string]level{"elastic-1": {4, 4, 4}, "elastic-2": {0, 4, 4}, "elastic-3": {0, 0, 4}}
	for _, m := range Mixes() {
		jobs := BuildJobs(m, 1, elastic.DefaultPSSpeed(), true)
		type shape struct {
			worker, ps resource.Vector
			n          int
		}
		shapes := map[shape]bool{}
		var got level
		for _, j := range jobs {
			shapes[shape{j.Groups[0].Demand, j.Groups[1].Demand, j.Groups[0].Replicas}] = true
			g := j.Groups[0]
			for _, x := range []struct {
				n int
				c *int
			}{{g.Max, &got.atMax}, {g.Replicas, &got.atRequest}, {g.Min, &got.atMin}} {
				if fits(j, x.n) {
					(*x.c)++
				}
			}
		}
		if len(shapes) != 4 {
			t.Errorf("%s: %d distinct shapes (worker, PS, workers requested), want 4", m.Name, len(shapes))
		}
		if w := want[m.Name]; got != w {
			t.Errorf("%s: jobs fitting one node at max / request / min %+v, want %+v", m.Name, got, w)
		}
		// The weight order of the three priority-0 jobs differs from their
		// order by CPU alone (ties in queue order).
		var js []*cluster.JobState
		for _, j := range jobs[:3] {
			js = append(js, cluster.NewJobState(j))
		}
		byCPU := slices.Clone(js)
		slices.SortStableFunc(byCPU, func(a, b *cluster.JobState) int {
			return cmp.Compare(b.Job.RequestedDemand()[resource.CPU], a.Job.RequestedDemand()[resource.CPU])
		})
		if slices.Equal(elastic.ByWeight(js, capacity), byCPU) {
			t.Errorf("%s: the CPU + memory weight orders the jobs as CPU alone does", m.Name)
		}
	}
}

// TestGammaQuick runs elastic-gamma at Quick scale: every row present,
// every job finished, and the notes' summary for both mix sets.
func TestGammaQuick(t *testing.T) {
	rep, err := gammaSweep(context.Background(), env(t))
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * len(Gammas) * 3 * len(Arrivals) * len(GammaPolicies)
	if len(rep.Results) != want {
		t.Fatalf("%d rows, want %d", len(rep.Results), want)
	}
	for _, r := range rep.Results {
		if r.Metrics["completed"] != 4 {
			t.Errorf("%s %v: completed %v of 4", r.Policy, r.Params, r.Metrics["completed"])
		}
		if r.Params["gamma"] == "" || r.Params["mix"] == "" {
			t.Errorf("%s: params %v lack gamma or mix", r.Policy, r.Params)
		}
	}
	n := 0
	for _, note := range rep.Notes {
		if strings.Contains(note, "settings") {
			n++
		}
	}
	if n != 2*len(Gammas)*len(Readings) {
		t.Errorf("%d summary notes, want %d", n, 2*len(Gammas)*len(Readings))
	}
}

// TestCompare checks the comparison notes on hand-made rows.
func TestCompare(t *testing.T) {
	mk := func(policy string, params map[string]string, jct, makespan float64) experiment.Row {
		return experiment.Row{Policy: policy, Params: params, Metrics: map[string]float64{"jct_mean_s": jct, "makespan_s": makespan,
			"train_time_mean_s": jct, "jct_total_s": 4 * jct}}
	}
	st := map[string]string{"arrivals": "staggered"}
	rows := []experiment.Row{
		mk("elastic", st, 80, 150),
		mk("elastic", map[string]string{"arrivals": "staggered", "order": "size-first"}, 120, 300),
		mk("elastic", map[string]string{"arrivals": "staggered", "scaleup": "local"}, 1, 1),
		mk("tf-operator", st, 100, 200),
		mk("dragon", st, 100, 100),
		mk("dragon", map[string]string{"arrivals": "together"}, 1, 1),
	}
	got := comparisons(rows)
	want := []string{
		"elastic vs tf-operator (staggered): mean JCT -20.0%, makespan -25.0%, mean training time -20.0%, total JCT -20.0%",
		"elastic vs dragon (staggered): mean JCT -20.0%, makespan +50.0%, mean training time -20.0%, total JCT -20.0%",
		"elastic:order=size-first vs tf-operator (staggered): mean JCT +20.0%, makespan +50.0%, mean training time +20.0%, total JCT +20.0%",
		"elastic:order=size-first vs dragon (staggered): mean JCT +20.0%, makespan +200.0%, mean training time +20.0%, total JCT +20.0%",
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("comparisons (-want +got):\n%s", d)
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
