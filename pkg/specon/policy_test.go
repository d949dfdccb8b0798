package specon

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/sim"
)

func TestParseParams(t *testing.T) {
	tests := []struct {
		params  policy.Params
		wantErr string // "" for valid
	}{
		{policy.Params{}, ""},
		{policy.Params{"alpha": "0.05", "interval": "20"}, ""},
		{policy.Params{"wpc": "1", "wwc": "1", "wcc": "1"}, ""},
		{policy.Params{"wpc": "2", "wwc": "1.5", "wcc": "0"}, ""},
		{policy.Params{"alpha": "0"}, "alpha=0: must be in (0, 1)"},
		{policy.Params{"alpha": "1"}, "alpha=1"},
		{policy.Params{"alpha": "-0.1"}, "alpha=-0.1"},
		{policy.Params{"alpha": "NaN"}, `alpha="NaN": not a finite number`}, // rejected by policy.Params.Float
		{policy.Params{"interval": "0"}, "interval=0: must be a positive"},
		{policy.Params{"interval": "-30"}, "interval=-30"},
		{policy.Params{"wcc": "-1"}, "wcc=-1: must be a finite weight >= 0"},
		{policy.Params{"wpc": "1", "wwc": "1.5"}, "must be ordered wpc >= wwc >= wcc"},
		{policy.Params{"wcc": "1.6"}, "must be ordered"},
		{policy.Params{"alpha": "x"}, `alpha="x": not a number`},
		{policy.Params{"beta": "1"}, `unknown parameter "beta"`},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.params), func(t *testing.T) {
			_, err := ParseParams(tc.params)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	r := policy.NewRegistry()
	if err := r.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	if _, err := r.New("specon:alpha=2"); err == nil || !strings.Contains(err.Error(), "policy specon") {
		t.Errorf("registry error %v does not name the policy", err)
	}
	if _, err := r.New("default:alpha=0.1"); err == nil {
		t.Error("default accepted a parameter")
	}
}

// snapshot builds a cluster of the manager and n workers at time now with
// the given running jobs: each is (id, worker number, category label,
// growths of the last two intervals as eval samples).
type fakeJob struct {
	id       string
	worker   int // 1-based worker number
	labels   map[string]string
	evals    []float64 // samples at now-60, now-30, now
	migrated int
}

func snapshot(now float64, workers int, jobs []fakeJob) *cluster.Snapshot {
	s := &cluster.Snapshot{Now: now, Pending: cluster.NewQueue()}
	for i, n := range Cluster(workers) {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: n, Index: i, Ready: true})
	}
	m, _ := ModelByName("vae")
	for k, f := range jobs {
		j := NewJob(f.id, m, 0, uint64(k+1))
		js := cluster.NewJobState(j)
		js.Phase = cluster.Running
		js.Placement = cluster.Placement{{Group: 0, Node: f.worker}}
		js.Labels = f.labels
		js.Migrations = f.migrated
		for i, v := range f.evals {
			js.Evals = append(js.Evals, cluster.EvalSample{T: now - float64(len(f.evals)-1-i)*30, Value: v})
		}
		n := s.Nodes[f.worker]
		n.Jobs = append(n.Jobs, js)
		n.Allocated = n.Allocated.Add(j.Groups[0].Demand)
		n.Usage = n.Usage.Add(j.Groups[0].Usage)
		s.Running = append(s.Running, js)
	}
	return s
}

func cat(c string) map[string]string { return map[string]string{LabelCategory: c} }

func actionsOf[T policy.Action](as []policy.Action) []T {
	var out []T
	for _, a := range as {
		if x, ok := a.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// TestScheduleMigratesConvergedJob: a CC job whose growth falls again asks
// for reallocation; Alg. 2 moves it to the lowest-score worker, marks it
// migrated and records the move in labels.
func TestScheduleMigratesConvergedJob(t *testing.T) {
	falling := []float64{0.3, 0.295, 0.292} // growths 0.005 then 0.003
	rising := []float64{0.3, 0.299, 0.296}  // growths 0.001 then 0.003
	fast := []float64{0.9, 0.7, 0.5}
	jobs := []fakeJob{
		{id: "conv", worker: 1, labels: cat("CC"), evals: falling},
		{id: "p1", worker: 1, labels: cat("PC"), evals: fast},
		{id: "p2", worker: 2, labels: cat("PC"), evals: fast},
		{id: "p3", worker: 2, labels: cat("PC"), evals: fast},
		{id: "c3", worker: 3, labels: cat("CC"), evals: rising},
		{id: "w3", worker: 3, labels: cat("WC"), evals: rising},
	}
	// Scores: worker-1 = 2 (p1) + 1 (conv) = 3, worker-2 = 4, worker-3 =
	// 1 + 1.5 = 2.5: conv moves to worker-3 (node index 3).
	p := New(DefaultParams)
	as := p.Schedule(snapshot(300, 3, jobs))
	mig := actionsOf[policy.Migrate](as)
	if len(mig) != 1 || mig[0].Job != "conv" || mig[0].Placement[0].Node != 3 {
		t.Fatalf("migrations %+v, want conv -> node 3", mig)
	}
	labels := map[string]string{}
	for _, l := range actionsOf[policy.SetLabel](as) {
		if l.Job == "conv" {
			labels[l.Key] = l.Value
		}
	}
	if labels[LabelMigrated] != "true" || labels[LabelMove] != MoveMigrate || labels[LabelRound] != "10" {
		t.Errorf("labels of conv: %v", labels)
	}
	// c3's growth rose: it stays CC and does not ask.
	for _, m := range mig {
		if m.Job == "c3" {
			t.Error("bouncing CC job was migrated")
		}
	}
	// The same round again (a second cycle at the same time): nothing new.
	if as := p.Schedule(snapshot(300.5, 3, jobs)); len(actionsOf[policy.Migrate](as)) != 0 {
		t.Errorf("second cycle of the round migrated again: %v", as)
	}
}

// TestScheduleStaysOnMinimumHost: when the host already has the minimum
// score, the job stays but is marked migrated and never asks again.
func TestScheduleStaysOnMinimumHost(t *testing.T) {
	falling := []float64{0.3, 0.295, 0.292}
	fast := []float64{0.9, 0.7, 0.5}
	jobs := []fakeJob{
		{id: "conv", worker: 1, labels: cat("CC"), evals: falling},
		{id: "p2", worker: 2, labels: cat("PC"), evals: fast},
		{id: "p3", worker: 2, labels: cat("PC"), evals: fast},
	}
	as := New(DefaultParams).Schedule(snapshot(300, 2, jobs))
	if len(actionsOf[policy.Migrate](as)) != 0 {
		t.Fatalf("job moved off a minimum-score host: %v", as)
	}
	found := false
	for _, l := range actionsOf[policy.SetLabel](as) {
		found = found || l.Job == "conv" && l.Key == LabelMigrated && l.Value == "true"
	}
	if !found {
		t.Error("staying job not marked migrated")
	}
}

// TestScheduleNeedsOtherActiveJobs: line 15 asks for more than one PC/WC
// job in the cluster.
func TestScheduleNeedsOtherActiveJobs(t *testing.T) {
	falling := []float64{0.3, 0.295, 0.292}
	fast := []float64{0.9, 0.7, 0.5}
	jobs := []fakeJob{
		{id: "conv", worker: 1, labels: cat("CC"), evals: falling},
		{id: "c2", worker: 1, labels: cat("CC"), evals: falling},
		{id: "p", worker: 1, labels: cat("PC"), evals: fast},
	}
	as := New(DefaultParams).Schedule(snapshot(300, 2, jobs))
	if mig := actionsOf[policy.Migrate](as); len(mig) != 0 {
		t.Errorf("moved with only one PC job in the cluster: %+v", mig)
	}
}

// TestScheduleRebalancesToIdleWorker: with every job converged and a
// worker idle, Alg. 3 moves the most recently converged job there; a job
// already moved once is never moved again.
func TestScheduleRebalancesToIdleWorker(t *testing.T) {
	flat := []float64{0.1, 0.1, 0.1}
	conv := func(at string, extra ...string) map[string]string {
		l := map[string]string{LabelCategory: "CC", LabelConvergedAt: at, LabelMigrated: "true"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	jobs := []fakeJob{
		{id: "old", worker: 1, labels: conv("60"), evals: flat},
		{id: "new", worker: 1, labels: conv("240", LabelMove, MoveMigrate), evals: flat, migrated: 1},
		{id: "mid", worker: 1, labels: conv("180"), evals: flat},
		{id: "x", worker: 2, labels: conv("30"), evals: flat},
	}
	as := New(DefaultParams).Schedule(snapshot(300, 3, jobs))
	mig := actionsOf[policy.Migrate](as)
	if len(mig) != 1 || mig[0].Job != "mid" || mig[0].Placement[0].Node != 3 {
		t.Fatalf("rebalance %+v, want mid -> node 3", mig)
	}
	ok := false
	for _, l := range actionsOf[policy.SetLabel](as) {
		ok = ok || l.Job == "mid" && l.Key == LabelMove && l.Value == MoveRebalance
	}
	if !ok {
		t.Error("rebalanced job not labelled R")
	}
}

// TestDefaultRoundRobin: the n-th job goes to worker n mod |W|; the
// manager never runs a job, and nothing ever moves.
func TestDefaultRoundRobin(t *testing.T) {
	m, _ := ModelByName("rnn")
	var jobs []*cluster.Job
	for i := range 7 {
		jobs = append(jobs, NewJob(fmt.Sprintf("j%d", i), m, float64(i*10), uint64(i)))
	}
	var where []string
	cfg := sim.Config{Tick: 1, SampleEvery: 5, Check: true, Observe: func(_ float64, kind string, js *cluster.JobState, d string) {
		if kind == "start" {
			where = append(where, js.Job.ID+"@"+d)
		}
	}}
	s, err := sim.New(cfg, Cluster(3), jobs, NewDefault())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"j0@worker-1", "j1@worker-2", "j2@worker-3", "j3@worker-1", "j4@worker-2", "j5@worker-3", "j6@worker-1"}
	if !reflect.DeepEqual(where, want) {
		t.Errorf("starts %v, want %v", where, want)
	}
	if mm := res.Metrics(); mm["migrations"] != 0 || mm["completed"] != 7 {
		t.Errorf("metrics %v", mm)
	}
}
