package specon

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
		{policy.Params{"alpha": "-0.1"}, `alpha="-0.1": want a number in [0, 1]`},
		{policy.Params{"alpha": "NaN"}, `alpha="NaN": not a finite number`}, // rejected by policy.Params.Float
		{policy.Params{"interval": "0"}, `interval="0": want a number in [1, 86400]`},
		{policy.Params{"interval": "1e-300"}, `interval="1e-300": want a number in [1, 86400]`}, // issue 17 item 10: never advanced the clock
		{policy.Params{"wpc": "1e300"}, `wpc="1e300": want a number in [0, 1e+06]`},
		{policy.Params{"interval": "-30"}, `interval="-30"`},
		{policy.Params{"wcc": "-1"}, `wcc="-1": want a number in [0, 1e+06]`},
		{policy.Params{"wpc": "1", "wwc": "1.5"}, "must be ordered wpc >= wwc >= wcc"},
		{policy.Params{"wcc": "1.6"}, "must be ordered"},
		{policy.Params{"alpha": "x"}, `alpha="x": not a number`},
		{policy.Params{"beta": "1"}, `unknown parameter "beta"`},
		{policy.Params{"scope": "cluster", "rebalance": "gated", "candidates": "converged"}, ""},
		{policy.Params{"scope": "worker", "rebalance": "always", "candidates": "migrated"}, ""},
		{policy.Params{"scope": "node"}, `parameter scope="node": want one of worker, cluster`},
		{policy.Params{"rebalance": "never"}, `parameter rebalance="never": want one of always, gated`},
		{policy.Params{"candidates": "cc"}, `parameter candidates="cc": want one of migrated, converged`},
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
	for _, tc := range []struct {
		name string
		p    Params
		want string
	}{
		{"scope", Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights, Rebalance: RebalanceAlways, Candidates: CandidatesMigrated}, `scope="": must be worker or cluster`},
		{"rebalance", Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights, Scope: ScopeWorker, Rebalance: "x", Candidates: CandidatesMigrated}, `rebalance="x": must be always or gated`},
		{"candidates", Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights, Scope: ScopeWorker, Rebalance: RebalanceAlways}, `candidates="": must be migrated or converged`},
	} {
		if err := tc.p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate with a bad %s: %v, want %q", tc.name, err, tc.want)
		}
	}
	_, ps, err := policy.ParseSpec(FirstReadingSpec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseParams(ps)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(FirstReading, got); d != "" {
		t.Errorf("FirstReadingSpec parses to (-want +got):\n%s", d)
	}
	if d := cmp.Diff(DefaultParams, Params{Alpha: 0.01, Interval: 30, Weights: Weights{2, 1.5, 1},
		Scope: ScopeCluster, Rebalance: RebalanceAlways, Candidates: CandidatesMigrated}); d != "" {
		t.Errorf("DefaultParams (-want +got):\n%s", d)
	}
	_, ps, err = policy.ParseSpec(WorkerReadingSpec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = ParseParams(ps); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(WorkerReading, got); d != "" {
		t.Errorf("WorkerReadingSpec parses to (-want +got):\n%s", d)
	}
	r := policy.NewRegistry()
	if err := r.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries() {
		if e.Name != "specon" {
			continue
		}
		for _, k := range paramKeys {
			if !strings.Contains(e.Description, k+"=") {
				t.Errorf("the specon preset's description does not document %s", k)
			}
		}
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
		{id: "w1", worker: 1, labels: cat("WC"), evals: rising},
		{id: "p2", worker: 2, labels: cat("PC"), evals: fast},
		{id: "p3", worker: 2, labels: cat("PC"), evals: fast},
		{id: "c3", worker: 3, labels: cat("CC"), evals: rising},
		{id: "w3", worker: 3, labels: cat("WC"), evals: rising},
	}
	// conv's worker holds two other active jobs (p1, w1: line 15). Scores:
	// worker-1 = 2 (p1) + 1.5 (w1) + 1 (conv) = 4.5, worker-2 = 4,
	// worker-3 = 1 + 1.5 = 2.5: conv moves to worker-3 (node index 3).
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
		{id: "p1", worker: 1, labels: cat("PC"), evals: fast},
		{id: "p1b", worker: 1, labels: cat("PC"), evals: fast},
		{id: "p2", worker: 2, labels: cat("PC"), evals: fast},
		{id: "p3", worker: 2, labels: cat("PC"), evals: fast},
		{id: "p4", worker: 2, labels: cat("PC"), evals: fast},
	}
	// Scores: worker-1 = 2 + 2 + 1 = 5, worker-2 = 6: the host is the
	// minimum.
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

// TestLine15Scope: Alg. 1 line 15 asks for more than one progressing or
// watching job (|PC| + |WC| > 1) before a converged job's request goes to
// Alg. 2: on the job's own worker (scope=worker, the paper's sets PC_wi
// and WC_wi, the default) or anywhere in the cluster (scope=cluster).
// A request that is not granted leaves the job unmarked, so it asks again
// at a later round.
func TestLine15Scope(t *testing.T) {
	falling := []float64{0.3, 0.295, 0.292}
	fast := []float64{0.9, 0.7, 0.5}
	conv := fakeJob{id: "conv", worker: 1, labels: cat("CC"), evals: falling}
	pc := func(id string, w int) fakeJob { return fakeJob{id: id, worker: w, labels: cat("PC"), evals: fast} }
	wc := func(id string, w int) fakeJob {
		return fakeJob{id: id, worker: w, labels: cat("WC"), evals: []float64{0.3, 0.299, 0.296}}
	}
	cc := func(id string, w int) fakeJob {
		return fakeJob{id: id, worker: w, labels: cat("CC"), evals: []float64{0.3, 0.299, 0.296}}
	}
	type want struct{ worker, cluster []string }
	tests := []struct {
		name string
		jobs []fakeJob
		want want
	}{
		{"two PC on the job's worker: both scopes move it",
			[]fakeJob{conv, pc("a", 1), pc("b", 1), cc("x", 2)},
			want{[]string{"conv@2"}, []string{"conv@2"}}},
		{"a PC and a WC on the job's worker count alike",
			[]fakeJob{conv, pc("a", 1), wc("b", 1), cc("x", 2)},
			want{[]string{"conv@2"}, []string{"conv@2"}}},
		{"two PC elsewhere, none on its worker: only the cluster reading moves it",
			[]fakeJob{conv, cc("y", 1), pc("a", 2), pc("b", 2), cc("x", 3)},
			want{nil, []string{"conv@3"}}},
		{"one PC on its worker, one elsewhere: only the cluster reading",
			[]fakeJob{conv, pc("a", 1), pc("b", 2), cc("x", 3)},
			want{nil, []string{"conv@3"}}},
		{"a single PC in the cluster: neither",
			[]fakeJob{conv, cc("c2", 1), pc("p", 1)},
			want{nil, nil}},
	}
	for _, tc := range tests {
		for _, scope := range []Scope{ScopeWorker, ScopeCluster} {
			t.Run(tc.name+"/"+string(scope), func(t *testing.T) {
				workers := 0
				for _, j := range tc.jobs {
					workers = max(workers, j.worker)
				}
				as := schedule(t, "specon:scope="+string(scope), snapshot(300, workers, tc.jobs))
				var got []string
				for _, m := range actionsOf[policy.Migrate](as) {
					got = append(got, fmt.Sprintf("%s@%d", m.Job, m.Placement[0].Node))
				}
				w := tc.want.worker
				if scope == ScopeCluster {
					w = tc.want.cluster
				}
				if d := cmp.Diff(w, got); d != "" {
					t.Errorf("migrations (-want +got):\n%s", d)
				}
				if marked := labelsOf(as, "conv")[LabelMigrated] == "true"; marked != (w != nil) {
					t.Errorf("conv marked migrated = %v, want %v (marked exactly when Alg. 2 ran)", marked, w != nil)
				}
			})
		}
	}
}

// TestScheduleRebalancesToIdleWorker: a worker is idle, so Alg. 3 moves
// the job marked migrated most recently there; a job already moved once is
// never moved again.
func TestScheduleRebalancesToIdleWorker(t *testing.T) {
	flat := []float64{0.1, 0.1, 0.1}
	conv := func(at string, extra ...string) map[string]string {
		l := map[string]string{LabelCategory: "CC", LabelConvergedAt: "30", LabelMigrated: "true", LabelMarkedAt: at}
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

// TestAlg3Readings: when Alg. 3 runs (rebalance=always: every cycle, the
// paper's pseudo-code and its Job-1 example; gated: only when a worker is
// idle or every job has converged) and which jobs it moves (candidates=
// migrated: marked by Alg. 2, timed from the mark; converged: CC jobs,
// timed from convergence).
func TestAlg3Readings(t *testing.T) {
	flat := []float64{0.1, 0.1, 0.1}
	fast := []float64{0.9, 0.7, 0.5}
	lab := func(kv ...string) map[string]string {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	marked := func(conv, at string) map[string]string {
		return lab(LabelCategory, "CC", LabelConvergedAt, conv, LabelMigrated, "true", LabelMarkedAt, at)
	}
	unmarked := func(conv string) map[string]string { return lab(LabelCategory, "CC", LabelConvergedAt, conv) }
	pc := func(id string, w int) fakeJob { return fakeJob{id: id, worker: w, labels: cat("PC"), evals: fast} }
	// No worker idle, a PC job running: workers hold 5, 4, 1, 2 jobs, so
	// bf = 3 and worker-3 (below bf-1 = 2) is T.
	busy := []fakeJob{
		{id: "a", worker: 1, labels: marked("60", "90"), evals: flat},
		{id: "b", worker: 1, labels: marked("60", "150"), evals: flat},
		pc("p1", 1), pc("p2", 1), pc("p3", 1),
		{id: "c", worker: 2, labels: unmarked("200"), evals: flat},
		pc("p4", 2), pc("p5", 2), pc("p6", 2),
		pc("p7", 3),
		pc("p8", 4), pc("p9", 4),
	}
	// A worker idle: the job marked most recently is not the one that
	// converged most recently.
	idle := []fakeJob{
		{id: "early", worker: 1, labels: marked("200", "240"), evals: flat},
		{id: "late", worker: 1, labels: marked("100", "120"), evals: flat},
		{id: "fresh", worker: 1, labels: unmarked("270"), evals: flat},
		pc("p", 2),
	}
	tests := []struct {
		name string
		jobs []fakeJob
		spec string
		want []string
	}{
		{"busy cluster, always: the last-marked job goes to the worker below bf-1",
			busy, "specon", []string{"b@3"}},
		{"busy cluster, gated: nothing (a job still progresses, no worker idle)",
			busy, "specon:rebalance=gated", nil},
		{"busy cluster, always, CC candidates: the last-converged CC job",
			busy, "specon:candidates=converged", []string{"c@3"}},
		{"idle worker, marked candidates: smallest time since the mark",
			idle, "specon", []string{"early@3"}},
		{"idle worker, CC candidates: smallest time since convergence, marked or not",
			idle, "specon:candidates=converged", []string{"fresh@3"}},
		{"idle worker, gated reading runs too",
			idle, "specon:rebalance=gated;candidates=converged", []string{"fresh@3"}},
		{"no job marked: nothing to move under the paper's reading",
			[]fakeJob{{id: "u", worker: 1, labels: unmarked("60"), evals: flat}, {id: "v", worker: 1, labels: unmarked("90"), evals: flat}},
			"specon", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			workers := 3
			for _, j := range tc.jobs {
				workers = max(workers, j.worker)
			}
			var got []string
			for _, m := range actionsOf[policy.Migrate](schedule(t, tc.spec, snapshot(300, workers, tc.jobs))) {
				got = append(got, fmt.Sprintf("%s@%d", m.Job, m.Placement[0].Node))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("rebalanced (-want +got):\n%s", d)
			}
		})
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
	cfg := sim.Config{Tick: 1, SampleEvery: 5, Check: true, Observe: func(_ float64, kind sim.Observed, js *cluster.JobState, d string) {
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
