package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/workload"
)

// script is a test policy: at each cycle it calls fn, which may return
// actions; it records every snapshot time it saw.
type script struct {
	fn    func(s *cluster.Snapshot) []policy.Action
	times []float64
}

func (p *script) Name() string     { return "script" }
func (p *script) TimeDriven() bool { return true }
func (p *script) Schedule(s *cluster.Snapshot) []policy.Action {
	p.times = append(p.times, s.Now)
	return p.fn(s)
}

func nodes(n int, gpus int64) []cluster.Node {
	out := make([]cluster.Node, n)
	for i := range out {
		out[i] = cluster.Node{Name: "n" + string(rune('0'+i)), Capacity: resource.New(8, 64, gpus), PricePerHour: 3.6}
	}
	return out
}

func gjob(id string, submit, work float64, gpus int64) *cluster.Job {
	return &cluster.Job{ID: id, Submit: submit, Work: work, Class: cluster.ClassBE,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(1, 1, gpus), Replicas: 1, Min: 1, Max: 1}}}
}

func run(t *testing.T, cfg Config, ns []cluster.Node, jobs []*cluster.Job, p policy.Policy) *Result {
	t.Helper()
	cfg.Check = true
	s, err := New(cfg, ns, jobs, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func rec(r *Result, id string) *cluster.JobState {
	for _, s := range r.Final {
		if s.Job.ID == id {
			return s
		}
	}
	return nil
}

func fifo() policy.Policy {
	return baseline.NewFIFO(placement.Pack)
}

func TestFIFOHeadOfLineBlocking(t *testing.T) {
	// Node has 8 GPUs. a (8 GPUs) runs 0-100; b (8 GPUs) waits; c (1 GPU)
	// arrives later but must wait behind b under FIFO.
	jobs := []*cluster.Job{gjob("a", 0, 100, 8), gjob("b", 1, 100, 8), gjob("c", 2, 10, 1)}
	r := run(t, Config{}, nodes(1, 8), jobs, fifo())
	want := map[string][2]float64{"a": {0, 100}, "b": {100, 200}, "c": {200, 210}}
	for _, rc := range r.Records {
		w := want[rc.ID]
		if rc.FirstStart != w[0] || rc.Finish != w[1] {
			t.Errorf("%s: start %v finish %v, want %v", rc.ID, rc.FirstStart, rc.Finish, w)
		}
	}
	m := r.Metrics()
	if m["completed"] != 3 || m["makespan_s"] != 210 {
		t.Errorf("metrics %v", m)
	}
}

func TestTickDelaysScheduling(t *testing.T) {
	jobs := []*cluster.Job{gjob("a", 5, 100, 1)}
	r := run(t, Config{Tick: 60}, nodes(1, 8), jobs, fifo())
	if got := r.Records[0].FirstStart; got != 60 {
		t.Fatalf("job submitted at 5 s started at %v, want the next tick at 60 s", got)
	}
}

func TestPreemptGraceSuspendResume(t *testing.T) {
	// a (BE, 8 GPUs, 1000 s of work) starts at 0. At t=100 the policy
	// preempts it with 50 s grace: it runs until 150, is suspended with
	// 850 s left, goes to the head of the queue and resumes at once.
	a := gjob("a", 0, 1000, 8)
	a.GracePeriod = 50
	preempted := false
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		var out []policy.Action
		if s.Now >= 100 && !preempted && len(s.Running) == 1 {
			preempted = true
			out = append(out, policy.Preempt{Job: "a", Grace: a.GracePeriod})
		}
		if h := s.Pending.Head(); h != nil {
			out = append(out, policy.Start{Job: h.Job.ID, Placement: cluster.Placement{{Node: 0}}})
		}
		return out
	}
	r := run(t, Config{Tick: 50}, nodes(1, 8), []*cluster.Job{a}, p)
	got := r.Records[0]
	if got.Preemptions != 1 {
		t.Fatalf("preemptions = %d", got.Preemptions)
	}
	// The grace is spent checkpointing, not training: suspended at 150
	// with 900 s left; restarted at the 150 tick (the grace-end event
	// precedes the cycle at the same time); done at 1050.
	if got.Finish != 1050 {
		t.Errorf("finish = %v, want 1050 (no work lost or created)", got.Finish)
	}
	if len(got.RescheduleDelays) != 1 || got.RescheduleDelays[0] != 0 {
		t.Errorf("reschedule delays = %v", got.RescheduleDelays)
	}
}

func TestMigrationPausesAndMoves(t *testing.T) {
	a := gjob("a", 0, 1000, 1)
	a.CheckpointCost, a.RestoreCost = 3, 2
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		if h := s.Pending.Head(); h != nil {
			return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		}
		if s.Now == 100 {
			js := s.Running[0]
			if js.Phase != cluster.Running || math.Abs(js.Progress(s.Now)-0.1) > 1e-9 {
				t.Errorf("at 100 s: phase %s progress %v", js.Phase, js.Progress(s.Now))
			}
			return []policy.Action{policy.Migrate{Job: "a", Placement: cluster.Placement{{Node: 1}}}}
		}
		return nil
	}
	r := run(t, Config{Tick: 100}, nodes(2, 8), []*cluster.Job{a}, p)
	if got := r.Records[0]; got.Migrations != 1 || got.Finish != 1005 {
		t.Fatalf("migrations %d finish %v, want 1 and 1005 (5 s pause)", got.Migrations, got.Finish)
	}
	if n := rec(r, "a").Placement; n != nil {
		t.Errorf("finished job still placed: %v", n)
	}
}

func TestResizeChangesSpeed(t *testing.T) {
	a := gjob("a", 0, 1000, 1)
	a.Groups[0].Max = 2
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		if s.Pending.Head() != nil {
			return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		}
		if s.Now == 500 {
			return []policy.Action{policy.Resize{Job: "a", Placement: cluster.Placement{{Node: 0}, {Node: 1}}}}
		}
		return nil
	}
	r := run(t, Config{Tick: 500}, nodes(2, 8), []*cluster.Job{a}, p)
	// 500 s of work at speed 1, the other 500 at speed 2: done at 750.
	if got := r.Records[0]; got.Resizes != 1 || got.Finish != 750 {
		t.Fatalf("resizes %d finish %v, want 1 and 750", got.Resizes, got.Finish)
	}
}

func TestContentionSlowsCoLocatedJobs(t *testing.T) {
	// Two jobs each use the whole node's 8 cores but request 1: together
	// they run at half speed.
	mk := func(id string) *cluster.Job {
		j := gjob(id, 0, 100, 0)
		j.Groups[0].Demand = resource.New(1, 1, 0)
		j.Groups[0].Usage = resource.New(8, 1, 0)
		return j
	}
	r := run(t, Config{}, nodes(1, 0), []*cluster.Job{mk("a"), mk("b")}, fifo())
	for _, rc := range r.Records {
		if rc.Finish != 200 {
			t.Errorf("%s finished at %v, want 200 (two jobs sharing 8 cores)", rc.ID, rc.Finish)
		}
	}
}

func TestRefusals(t *testing.T) {
	jobs := []*cluster.Job{gjob("a", 0, 100, 8), gjob("b", 0, 100, 4)}
	tests := []struct {
		name   string
		action policy.Action
		want   string
	}{
		{"over capacity", policy.Start{Job: "b", Placement: cluster.Placement{{Node: 0}}}, "over capacity"},
		{"unknown job", policy.Start{Job: "zz", Placement: cluster.Placement{{Node: 0}}}, "unknown job"},
		{"already running", policy.Start{Job: "a", Placement: cluster.Placement{{Node: 1}}}, "is Running, not Pending"},
		{"bad node", policy.Start{Job: "b", Placement: cluster.Placement{{Node: 9}}}, "node 9"},
		{"above max", policy.Start{Job: "b", Placement: cluster.Placement{{Node: 1}, {Node: 1}}}, "above max"},
		{"negative grace", policy.Preempt{Job: "a", Grace: -1}, "not a finite number >= 0"},
		{"infinite grace", policy.Preempt{Job: "a", Grace: math.Inf(1)}, "not a finite number >= 0"},
		{"unknown type", policy.ProvisionNode{InstanceType: "x", Count: 1}, "not in the catalogue"},
		{"busy node", policy.ReleaseNode{Node: "n0"}, "still runs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &script{}
			p.fn = func(s *cluster.Snapshot) []policy.Action {
				if s.Cycle == 1 {
					return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}, tc.action,
						policy.Start{Job: "b", Placement: cluster.Placement{{Node: 1}}}}
				}
				return nil
			}
			r := run(t, Config{}, nodes(2, 8), jobs, p)
			if len(r.Refusals) != 1 || !strings.Contains(r.Refusals[0].Reason, tc.want) {
				t.Fatalf("refusals %v, want one mentioning %q", r.Refusals, tc.want)
			}
			if r.Metrics()["completed"] != 2 {
				t.Fatal("a refused action disturbed the others")
			}
		})
	}
}

func TestUnschedulableAndStuckJobs(t *testing.T) {
	jobs := []*cluster.Job{gjob("big", 0, 100, 16), gjob("ok", 0, 100, 1)}
	r := run(t, Config{Tick: 60}, nodes(1, 8), jobs, fifo())
	big := r.Records[0]
	if !big.Rejected || !strings.Contains(big.Reason, "more gpu than any node has") {
		t.Fatalf("big job: rejected=%v reason=%q", big.Rejected, big.Reason)
	}
	// A policy that never starts anything must not hang the simulator.
	idle := &script{fn: func(*cluster.Snapshot) []policy.Action { return nil }}
	r = run(t, Config{Tick: 60}, nodes(1, 8), []*cluster.Job{gjob("a", 0, 10, 1)}, idle)
	if r.Metrics()["completed"] != 0 || !strings.Contains(r.Records[0].Reason, "did not finish") {
		t.Fatalf("idle policy: %+v", r.Records[0])
	}
}

// TestTaintedPoolScenario replays a trace with node selectors and
// tolerations on a cluster spec with a dedicated, tainted pool: jobs
// without the toleration never run there even while it is idle and they
// queue; the team's jobs run only there; a job selecting a pool that no
// node has is rejected on arrival, naming the rule.
func TestTaintedPoolScenario(t *testing.T) {
	ns, err := cluster.ParseSpec("2:gpu=8,cpu=48,mem_gib=384,label=pool=team-a,taint=dedicated=team-a:NoSchedule+2:gpu=8,cpu=48,mem_gib=384")
	if err != nil {
		t.Fatal(err)
	}
	trace := "id,submit_s,duration_s,gpu,replicas,node_selector,tolerations\n" +
		"shared-1,0,100,8,2,,\n" + // fills the shared nodes
		"shared-2,0,100,8,1,,\n" + // must wait for them, not use the idle pool
		"team-1,0,100,4,2,pool=team-a,dedicated=team-a:NoSchedule\n" +
		"lost,0,100,1,1,pool=team-b,\n"
	jobs, err := workload.ParseCSV(strings.NewReader(trace), "pool.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, spread := range []placement.Strategy{placement.Spread, placement.Pack, placement.FirstFit} {
		starts := map[string][]int{}
		r := run(t, Config{Tick: 10, Observe: func(_ float64, kind Observed, js *cluster.JobState, _ string) {
			if kind == ObsStart {
				starts[js.Job.ID] = js.Placement.Nodes()
			}
		}}, ns, jobs, baseline.NewFIFO(spread))
		if len(r.Refusals) > 0 {
			t.Fatalf("%v: refusals %v", spread, r.Refusals)
		}
		for _, id := range []string{"shared-1", "shared-2"} {
			for _, n := range starts[id] {
				if n < 2 {
					t.Errorf("%v: %s ran on the tainted pool (node %d)", spread, id, n)
				}
			}
		}
		if s := rec(r, "shared-2"); s.FirstStart < 100 {
			t.Errorf("%v: shared-2 started at %v, before the shared nodes were free", spread, s.FirstStart)
		}
		for _, n := range starts["team-1"] {
			if n >= 2 {
				t.Errorf("%v: team-1 ran off its pool (node %d)", spread, n)
			}
		}
		lost := r.Records[3]
		if lost.ID != "lost" || !lost.Rejected || !strings.Contains(lost.Reason, "2 node(s) didn't match Pod's node affinity/selector") ||
			!strings.Contains(lost.Reason, "2 node(s) had untolerated taint {dedicated: team-a}") {
			t.Errorf("%v: lost job: %+v", spread, lost)
		}
	}
}

func TestBadSetup(t *testing.T) {
	if _, err := New(Config{}, nil, []*cluster.Job{gjob("a", 0, 1, 1)}, fifo()); err == nil || !strings.Contains(err.Error(), "no nodes") {
		t.Errorf("empty cluster: %v", err)
	}
	dup := []*cluster.Job{gjob("a", 0, 1, 1), gjob("a", 1, 1, 1)}
	if _, err := New(Config{}, nodes(1, 8), dup, fifo()); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate ids: %v", err)
	}
	bad := gjob("b", 0, 1, 1)
	bad.Groups[0].Min = 3
	if _, err := New(Config{}, nodes(1, 8), []*cluster.Job{bad}, fifo()); err == nil || !strings.Contains(err.Error(), "job b: groups[worker].min_replicas") {
		t.Errorf("invalid job: %v", err)
	}
}

func TestProvisionAndRelease(t *testing.T) {
	cat := []cluster.InstanceType{{Name: "g8", Capacity: resource.New(8, 64, 8), PricePerHour: 7.2}}
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		switch {
		case s.Cycle == 1:
			return []policy.Action{policy.ProvisionNode{InstanceType: "g8", Count: 1}}
		case s.Pending.Head() != nil && len(s.Nodes) == 1 && s.Nodes[0].Ready:
			return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		case len(s.Running) == 0 && s.Pending.Len() == 0 && s.Nodes[0].Ready:
			return []policy.Action{policy.ReleaseNode{Node: s.Nodes[0].Name}}
		}
		return nil
	}
	r := run(t, Config{Tick: 60, LaunchDelay: 300, Catalog: cat}, nil, []*cluster.Job{gjob("a", 0, 3600, 8)}, p)
	if got := r.Records[0]; got.FirstStart != 300 || got.Finish != 3900 {
		t.Fatalf("start %v finish %v, want 300 and 3900", got.FirstStart, got.Finish)
	}
	// Node alive from 0 (requested) to 3900 (released at the tick that saw
	// the cluster empty): 3900 s at 7.2/h.
	if c := r.Stats.Cost; math.Abs(c-7.2*3900/3600) > 1e-9 {
		t.Errorf("cost %v", c)
	}
}

func TestPlaceholdersYieldToJobs(t *testing.T) {
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		if s.Cycle == 1 {
			// Placeholders fill the node, then a real job takes it.
			return []policy.Action{policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "ph", Demand: resource.New(1, 1, 4), Count: 2}}},
				policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		}
		if s.Cycle == 2 && s.Nodes[0].Placeholder != (resource.Vector{}) {
			t.Errorf("placeholders still on the node after eviction: %v", s.Nodes[0].Placeholder)
		}
		if s.Pending.Head() != nil {
			return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		}
		return nil
	}
	r := run(t, Config{Tick: 60}, nodes(1, 8), []*cluster.Job{gjob("a", 60, 100, 8)}, p)
	if len(r.Refusals) > 0 || r.Records[0].FirstStart != 60 {
		t.Fatalf("job did not take placeholder capacity: %v %+v", r.Refusals, r.Records[0])
	}
}

// TestDeterministicAndInvariants runs a random mixed workload twice with
// invariant checks on and requires byte-identical per-job results.
func TestDeterministicAndInvariants(t *testing.T) {
	gen := func() []*cluster.Job {
		return workload.Mixed(7, workload.MixedOptions{Jobs: 120, Load: 1.5, ClusterGPUs: 32, TEShare: 0.3, CoresPerGPU: 1, MemGiBPerGPU: 4})
	}
	out := func(p policy.Policy) []byte {
		r := run(t, Config{Tick: 60, Seed: 3}, nodes(4, 8), gen(), p)
		if len(r.Refusals) > 0 {
			t.Fatalf("%s: refusals %v", p.Name(), r.Refusals)
		}
		var b bytes.Buffer
		json.NewEncoder(&b).Encode(r.Records)
		json.NewEncoder(&b).Encode(r.Metrics())
		return b.Bytes()
	}
	for _, e := range baseline.Entries() {
		mk := func() policy.Policy { p, _ := e.New(policy.Params{}); return p }
		a, b := out(mk()), out(mk())
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs with the same seed differ", e.Name)
		}
	}
}

// TestGraceSurvivesSpeedChange: a job preempted with a grace period is
// suspended when the grace ends even if its speed changed meanwhile (a
// co-located job finished and contention eased).
func TestGraceSurvivesSpeedChange(t *testing.T) {
	mk := func(id string, work float64) *cluster.Job {
		j := gjob(id, 0, work, 0)
		j.Groups[0].Demand = resource.New(1, 1, 0)
		j.Groups[0].Usage = resource.New(8, 1, 0)
		j.GracePeriod = 100
		return j
	}
	done := false
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		var out []policy.Action
		for js := range s.Pending.All() {
			if js.Job.ID == "long" && !done {
				out = append(out, policy.Start{Job: js.Job.ID, Placement: cluster.Placement{{Node: 0}}})
			} else if js.Job.ID == "short" {
				out = append(out, policy.Start{Job: js.Job.ID, Placement: cluster.Placement{{Node: 0}}})
			}
		}
		if s.Now == 10 && !done {
			done = true
			out = append(out, policy.Preempt{Job: "long", Grace: 100})
		}
		return out
	}
	// short (20 s of work at half speed) ends at 40; long is preempted at
	// 10, speeds up at 40, and must be suspended at 110.
	r := run(t, Config{Tick: 10, ProgressDuringGrace: true}, nodes(1, 0), []*cluster.Job{mk("long", 1000), mk("short", 20)}, p)
	long := rec(r, "long")
	if long.Phase != cluster.Pending || long.Preemptions != 1 {
		t.Fatalf("long job: phase %s preemptions %d, want suspended once", long.Phase, long.Preemptions)
	}
	// Work done: 10..40 at 0.5 (15 s) + 0..10 at 0.5 (5 s) + 40..110 at 1 (70 s).
	if got := long.WorkLeft; math.Abs(got-910) > 1e-9 {
		t.Errorf("work left %v, want 910", got)
	}
}

// TestNoProgressDuringGrace: by default a preempted job holds its
// resources through the grace but makes no progress, and so cannot finish
// within it.
func TestNoProgressDuringGrace(t *testing.T) {
	a := gjob("a", 0, 120, 8)
	p := &script{}
	p.fn = func(s *cluster.Snapshot) []policy.Action {
		if h := s.Pending.Head(); h != nil && s.Now < 100 {
			return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		}
		if s.Now == 100 && len(s.Running) == 1 {
			return []policy.Action{policy.Preempt{Job: "a", Grace: 60}}
		}
		if s.Now == 130 {
			if n := s.Nodes[0]; n.Releasing != n.Allocated || n.Allocated.IsZero() {
				t.Errorf("during grace: allocated %v releasing %v", n.Allocated, n.Releasing)
			}
		}
		if h := s.Pending.Head(); h != nil && s.Now >= 200 {
			return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}}}
		}
		return nil
	}
	r := run(t, Config{Tick: 10}, nodes(1, 8), []*cluster.Job{a}, p)
	// 100 s of work before the preemption, none in 100..160, 20 s after the
	// restart at 200.
	if got := r.Records[0]; got.Finish != 220 || got.Preemptions != 1 {
		t.Fatalf("finish %v preemptions %d, want 220 and 1", got.Finish, got.Preemptions)
	}
}

// plain is a policy that is not time-driven.
type plain struct {
	fn func(s *cluster.Snapshot) []policy.Action
}

func (p *plain) Name() string                                 { return "plain" }
func (p *plain) Schedule(s *cluster.Snapshot) []policy.Action { return p.fn(s) }

// A job that can never start must not keep a sampling run alive forever.
func TestSamplingEndsWithStuckJob(t *testing.T) {
	for _, tick := range []float64{60, 0} {
		j := gjob("big", 0, 100, 8)
		j.Groups[0].Replicas, j.Groups[0].Min, j.Groups[0].Max = 2, 2, 2
		ok := gjob("ok", 10, 100, 1)
		ok.Eval = cluster.ExpCurve{Start: 2, Floor: 1, Rate: 3}
		s, err := New(Config{Tick: tick, SampleEvery: 60, Check: true}, nodes(1, 8), []*cluster.Job{j, ok}, fifo())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := s.Run(ctx)
		cancel()
		if err != nil {
			t.Fatalf("tick=%v: run did not end: %v", tick, err)
		}
		if got := rec(r, "big"); got.Phase != cluster.Pending {
			t.Errorf("tick=%v: stuck job is %s", tick, got.Phase)
		}
	}
}

// Samples are taken on the grid while a job runs, also after a gap.
func TestSamplesWhileRunning(t *testing.T) {
	a := gjob("a", 0, 100, 1)
	a.Eval = cluster.ExpCurve{Start: 2, Floor: 1, Rate: 3}
	b := gjob("b", 1000, 100, 1)
	b.Eval = a.Eval
	r := run(t, Config{SampleEvery: 30}, nodes(1, 8), []*cluster.Job{a, b}, fifo())
	var ta, tb []float64
	for _, e := range rec(r, "a").Evals {
		ta = append(ta, e.T)
	}
	for _, e := range rec(r, "b").Evals {
		tb = append(tb, e.T)
	}
	if !slices.Equal(ta, []float64{30, 60, 90}) || !slices.Equal(tb, []float64{1020, 1050, 1080}) {
		t.Fatalf("sample times a=%v b=%v", ta, tb)
	}
}

// A job spanning two contended nodes runs at the slowest node's factor.
func TestContentionSlowestNode(t *testing.T) {
	hog := func(id string, n int) *cluster.Job {
		j := gjob(id, 0, 100, 0)
		j.Groups[0].Demand = resource.New(1, 1, 0)
		j.Groups[0].Usage = resource.New(8, 1, 0)
		j.Groups[0].Replicas, j.Groups[0].Min, j.Groups[0].Max = n, n, n
		return j
	}
	p := &plain{fn: func(s *cluster.Snapshot) []policy.Action {
		if s.Pending.Len() == 0 {
			return nil
		}
		return []policy.Action{
			policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}}},
			policy.Start{Job: "b", Placement: cluster.Placement{{Node: 1}}},
			policy.Start{Job: "w", Placement: cluster.Placement{{Node: 0}, {Node: 1}}},
		}
	}}
	r := run(t, Config{}, nodes(2, 0), []*cluster.Job{hog("a", 1), hog("b", 1), hog("w", 2)}, p)
	// Every node carries 16 cores of usage on 8: each job runs at 0.5.
	for _, rc := range r.Records {
		if rc.Finish != 200 {
			t.Errorf("%s finished at %v, want 200", rc.ID, rc.Finish)
		}
	}
}

func TestCostFromFirstSubmit(t *testing.T) {
	r := run(t, Config{}, nodes(1, 8), []*cluster.Job{gjob("a", 3600, 3600, 1)}, fifo())
	if c := r.Metrics()["cost"]; math.Abs(c-3.6) > 1e-9 {
		t.Errorf("cost %v, want 3.6: one node-hour from the first submission", c)
	}
}

func TestMigrateKeepsCountsResizeKeepsMin(t *testing.T) {
	mk := func() *cluster.Job {
		j := gjob("a", 0, 100, 1)
		j.Groups[0].Replicas, j.Groups[0].Min, j.Groups[0].Max = 2, 2, 4
		return j
	}
	for _, tc := range []struct {
		name   string
		action policy.Action
		want   string
	}{
		{"migrate changes counts", policy.Migrate{Job: "a", Placement: cluster.Placement{{Node: 1}, {Node: 1}, {Node: 1}}}, "use Resize"},
		{"resize below min", policy.Resize{Job: "a", Placement: cluster.Placement{{Node: 0}}}, "below min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &plain{fn: func(s *cluster.Snapshot) []policy.Action {
				if s.Pending.Len() > 0 {
					return []policy.Action{policy.Start{Job: "a", Placement: cluster.Placement{{Node: 0}, {Node: 0}}}, tc.action}
				}
				return nil
			}}
			r := run(t, Config{}, nodes(2, 8), []*cluster.Job{mk()}, p)
			if len(r.Refusals) != 1 || !strings.Contains(r.Refusals[0].Reason, tc.want) {
				t.Fatalf("refusals %v, want %q", r.Refusals, tc.want)
			}
		})
	}
}

// With no tick, a policy that starts one job per cycle starts all that fit
// at the same instant.
func TestEventDrivenCyclesRepeatWhileChanging(t *testing.T) {
	p := &plain{fn: func(s *cluster.Snapshot) []policy.Action {
		if h := s.Pending.Head(); h != nil {
			return []policy.Action{policy.Start{Job: h.Job.ID, Placement: cluster.Placement{{Node: 0}}}}
		}
		return nil
	}}
	var jobs []*cluster.Job
	for i := 0; i < 5; i++ {
		jobs = append(jobs, gjob(string(rune('a'+i)), 0, 1000, 1))
	}
	r := run(t, Config{}, nodes(1, 8), jobs, p)
	for _, rc := range r.Records {
		if rc.FirstStart != 0 {
			t.Errorf("%s started at %v, want 0", rc.ID, rc.FirstStart)
		}
	}
}

func TestRefusalReasonDeterministic(t *testing.T) {
	reasons := map[string]bool{}
	for i := 0; i < 20; i++ {
		p := &plain{fn: func(s *cluster.Snapshot) []policy.Action {
			if s.Pending.Head() == nil {
				return nil
			}
			var pl cluster.Placement
			for n := 0; n < 4; n++ {
				pl = append(pl, cluster.Assignment{Node: n}, cluster.Assignment{Node: n})
			}
			return []policy.Action{policy.Start{Job: "a", Placement: pl}, policy.Reject{Job: "a"}}
		}}
		j := gjob("a", 0, 10, 8)
		j.Groups[0].Replicas, j.Groups[0].Min, j.Groups[0].Max = 8, 8, 8
		r := run(t, Config{}, nodes(4, 8), []*cluster.Job{j}, p)
		reasons[r.Refusals[0].Reason] = true
	}
	if len(reasons) != 1 {
		t.Fatalf("%d different reasons for the same refusal: %v", len(reasons), reasons)
	}
}

func TestUnschedulableByShapeAndRole(t *testing.T) {
	ns := []cluster.Node{
		{Name: "gpu", Capacity: resource.New(8, 64, 8)},
		{Name: "cpu", Capacity: resource.New(64, 64, 0)},
		{Name: "ps", Role: "ps", Capacity: resource.New(128, 512, 0)},
	}
	wide := gjob("wide", 0, 10, 8)
	wide.Groups[0].Demand = resource.New(64, 1, 8) // no node has both
	big := gjob("big", 0, 10, 0)
	big.Groups[0].Demand = resource.New(100, 1, 0) // only the ps node is that big
	small := gjob("small", 0, 10, 1)
	r := run(t, Config{}, ns, []*cluster.Job{wide, big, small}, fifo())
	for _, id := range []string{"wide", "big"} {
		if got := r.Records[slices.IndexFunc(r.Records, func(x metrics.JobRecord) bool { return x.ID == id })]; !got.Rejected || !strings.Contains(got.Reason, "unschedulable") {
			t.Errorf("%s: rejected=%v reason=%q", id, got.Rejected, got.Reason)
		}
	}
	if r.Metrics()["completed"] != 1 {
		t.Error("the schedulable job did not finish (blocked behind an impossible one?)")
	}
}

func TestConfigAndNodeValidation(t *testing.T) {
	jobs := []*cluster.Job{gjob("a", 0, 1, 1)}
	for _, cfg := range []Config{{Tick: -1}, {Tick: math.NaN()}, {SampleEvery: -5}, {LaunchDelay: math.Inf(1)}, {Horizon: -1}} {
		if _, err := New(cfg, nodes(1, 8), jobs, fifo()); err == nil || !strings.Contains(err.Error(), "config:") {
			t.Errorf("config %+v: error %v", cfg, err)
		}
	}
	dup := append(nodes(1, 8), nodes(1, 8)...)
	if _, err := New(Config{}, dup, jobs, fifo()); err == nil || !strings.Contains(err.Error(), "duplicate name") {
		t.Errorf("duplicate node names: %v", err)
	}
}

type badSpeed struct{}

func (badSpeed) Speed(*cluster.Job, []int, int) float64 { return math.NaN() }

func TestBadSpeedModelMakesNoProgress(t *testing.T) {
	a := gjob("a", 0, 10, 1)
	a.Speed = badSpeed{}
	r := run(t, Config{}, nodes(1, 8), []*cluster.Job{a}, fifo())
	if st := rec(r, "a"); st.Phase != cluster.Running || st.WorkLeft != 10 {
		t.Fatalf("job with NaN speed: phase %s work left %v", st.Phase, st.WorkLeft)
	}
}

// TestSnapshotGen: two snapshots of one run with the same Gen show the
// same cluster (Snapshot.Gen's promise, on which the Runtime skips
// comparing it): a time-driven policy that starts what fits, waits, and
// labels a job now and then sees, at every repeated Gen, the nodes,
// running jobs and queue it saw before; and the Gen moves on after a
// cycle that labelled a job (a change a snapshot shows) or an event.
func TestSnapshotGen(t *testing.T) {
	type seen struct {
		gen     uint64
		state   string
		labeled bool
	}
	var cycles []seen
	fp := func(s *cluster.Snapshot) string {
		out := fmt.Sprint(s.Pending.Len())
		for _, n := range s.Nodes {
			out += fmt.Sprint(n.Allocated, n.Releasing, n.Ready, len(n.Jobs))
		}
		for _, js := range s.Running {
			out += fmt.Sprint(js.Job.ID, js.Phase, len(js.Placement), len(js.Labels))
		}
		return out
	}
	p := &script{fn: func(s *cluster.Snapshot) []policy.Action {
		var acts []policy.Action
		labeled := false
		if len(s.Running) > 0 && s.Cycle%7 == 0 {
			acts = append(acts, policy.SetLabel{Job: s.Running[0].Job.ID, Key: "drover.dev/t", Value: fmt.Sprint(s.Cycle)})
			labeled = true
		}
		free := s.Nodes[0].Capacity.Sub(s.Nodes[0].Allocated)
		for js := range s.Pending.All() {
			if d := js.Job.RequestedDemand(); d.Fits(free) {
				free = free.Sub(d)
				acts = append(acts, policy.Start{Job: js.Job.ID, Placement: cluster.Placement{{Node: 0}}})
			} else {
				acts = append(acts, policy.Wait{Job: js.Job.ID, Reason: "no room"})
			}
		}
		cycles = append(cycles, seen{gen: s.Gen, state: fp(s), labeled: labeled})
		return acts
	}}
	var jobs []*cluster.Job
	for i := range 12 {
		jobs = append(jobs, gjob(fmt.Sprintf("j%d", i), float64(i*40), 500, 4))
	}
	run(t, Config{Tick: 10}, nodes(1, 8), jobs, p)
	repeats := 0
	for i := 1; i < len(cycles); i++ {
		prev, cur := cycles[i-1], cycles[i]
		if cur.gen == 0 {
			t.Fatalf("cycle %d: Gen 0 from the simulator", i)
		}
		if prev.labeled && cur.gen == prev.gen {
			t.Errorf("cycle %d: Gen %d kept after a cycle that labelled a job", i, cur.gen)
		}
		if cur.gen == prev.gen {
			repeats++
			if cur.state != prev.state {
				t.Errorf("cycle %d: Gen %d again, but the cluster changed:\n%s\n%s", i, cur.gen, prev.state, cur.state)
			}
		}
	}
	if repeats == 0 {
		t.Error("no two cycles in a row had one Gen: the test checks nothing")
	}
}
