package tiresias_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	schedqueue "github.com/drover-sched/drover/pkg/scheduler/queue"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/tiresias"
)

// job is a one-replica job of g GPUs submitted at submit with work
// seconds of work and no grace period.
func job(id string, submit, work float64, g int64) *cluster.Job {
	return &cluster.Job{ID: id, Submit: submit, Work: work, Class: cluster.ClassBE, Seed: 1,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(1, 4, g), Replicas: 1, Min: 1, Max: 1}}}
}

func node(name string, g int64) cluster.Node {
	return cluster.Node{Name: name, Capacity: resource.New(64, 512, g)}
}

// event is one observed start or preemption.
type event struct {
	T    float64
	Kind sim.Observed
	Job  string
}

// run replays jobs under the tiresias preset with params, ticking every
// 10 s, and returns the starts and preemptions in order, and the whole
// result printed.
func run(t *testing.T, params policy.Params, nodes []cluster.Node, jobs []*cluster.Job, queue bool) ([]event, string) {
	t.Helper()
	var p *framework.Runtime
	pol, err := tiresias.Entries()[0].New(params)
	if err != nil {
		t.Fatal(err)
	}
	p = pol.(*framework.Runtime)
	if !queue {
		p.WithoutQueue()
	} else {
		scheduler.WithQueue(p, schedqueue.Options{})
	}
	var evs []event
	var log []string
	cfg := sim.Config{Seed: 1, Tick: 10, Check: true, Horizon: 1e6,
		Observe: func(now float64, kind sim.Observed, js *cluster.JobState, detail string) {
			log = append(log, fmt.Sprintf("%g %s %s %s", now, kind, js.Job.ID, detail))
			if kind == sim.ObsStart || kind == sim.ObsPreempt {
				evs = append(evs, event{now, kind, js.Job.ID})
			}
		}}
	s, err := sim.New(cfg, nodes, jobs, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return evs, fmt.Sprint(res.Metrics(), res.Records, log)
}

// TestScenarios states the paper's 2D-LAS behaviour on small clusters.
func TestScenarios(t *testing.T) {
	tests := []struct {
		name   string
		params policy.Params
		nodes  []cluster.Node
		jobs   []*cluster.Job
		want   []event
	}{{
		// 4 GPUs x 812.5 s = 3250 GPU-s: L is in queue 1 by t=1000,
		// so the newly arrived short job S (queue 0) preempts it.
		name:  "a long job demoted below a new short job is preempted",
		nodes: []cluster.Node{node("n", 4)},
		jobs:  []*cluster.Job{job("L", 0, 5000, 4), job("S", 1000, 300, 4)},
		want: []event{{0, sim.ObsStart, "L"}, {1000, sim.ObsPreempt, "L"}, {1000, sim.ObsStart, "S"},
			{1300, sim.ObsStart, "L"}},
	}, {
		// L ends at 700 s with 2800 GPU-s, still in queue 0 like S: S
		// waits for it.
		name:  "a job still in queue 0 is not preempted by a new one",
		nodes: []cluster.Node{node("n", 4)},
		jobs:  []*cluster.Job{job("L", 0, 700, 4), job("S", 500, 300, 4)},
		want:  []event{{0, sim.ObsStart, "L"}, {700, sim.ObsStart, "S"}},
	}, {
		// dlas-gpu counts GPU-seconds: on 1 GPU, L1 reaches 3250 GPU-s
		// at 3250 s, not 812.5 s.
		name:  "attained service is GPU-seconds: a 1-GPU job is demoted 4 times later",
		nodes: []cluster.Node{node("n", 1)},
		jobs:  []*cluster.Job{job("L1", 0, 5000, 1), job("S", 1000, 300, 1)},
		want:  []event{{0, sim.ObsStart, "L1"}, {3250, sim.ObsPreempt, "L1"}, {3250, sim.ObsStart, "S"}, {3550, sim.ObsStart, "L1"}},
	}, {
		name:   "service=time counts seconds (dlas): thresholds=900 demotes the 1-GPU job at 900 s",
		params: policy.Params{"service": "time", "thresholds": "900/7200"},
		nodes:  []cluster.Node{node("n", 1)},
		jobs:   []*cluster.Job{job("L1", 0, 5000, 1), job("S", 1000, 300, 1)},
		want:   []event{{0, sim.ObsStart, "L1"}, {1000, sim.ObsPreempt, "L1"}, {1000, sim.ObsStart, "S"}, {1300, sim.ObsStart, "L1"}},
	}, {
		name:   "jobs in one queue run in arrival order, the running one is not preempted",
		params: policy.Params{"thresholds": "1e9"},
		nodes:  []cluster.Node{node("n", 4)},
		jobs:   []*cluster.Job{job("A", 0, 1000, 4), job("B", 10, 500, 4), job("C", 20, 100, 4)},
		want:   []event{{0, sim.ObsStart, "A"}, {1000, sim.ObsStart, "B"}, {1500, sim.ObsStart, "C"}},
	}, {
		name:   "a job that does not fit does not block a smaller one behind it",
		params: policy.Params{"thresholds": "1e9"},
		nodes:  []cluster.Node{node("n", 8)},
		jobs:   []*cluster.Job{job("R", 0, 1000, 4), job("Big", 10, 100, 8), job("small", 20, 100, 4)},
		want:   []event{{0, sim.ObsStart, "R"}, {20, sim.ObsStart, "small"}, {1000, sim.ObsStart, "Big"}},
	}, {
		// Without the knob, L (queue 1 after 812.5 s) waits for S1 to end
		// at 2700 (S1, demoted to queue 1 at 1812.5 s, is not preempted by
		// a job of its own queue).
		name:  "no starvation knob: the preempted long job waits for the job of its queue",
		nodes: []cluster.Node{node("n", 4)},
		jobs:  []*cluster.Job{job("L", 0, 5000, 4), job("S1", 1000, 1700, 4)},
		want:  []event{{0, sim.ObsStart, "L"}, {1000, sim.ObsPreempt, "L"}, {1000, sim.ObsStart, "S1"}, {2700, sim.ObsStart, "L"}},
	}, {
		// starve=1: L ran 1000 s, so after 1000 s pending (t=2000) it is
		// back in queue 0 and preempts S1, in queue 1 since 1812.5 s.
		name:   "starvation promotion fires after starve x executed time",
		params: policy.Params{"starve": "1"},
		nodes:  []cluster.Node{node("n", 4)},
		jobs:   []*cluster.Job{job("L", 0, 5000, 4), job("S1", 1000, 1700, 4)},
		want: []event{{0, sim.ObsStart, "L"}, {1000, sim.ObsPreempt, "L"}, {1000, sim.ObsStart, "S1"},
			{2000, sim.ObsPreempt, "S1"}, {2000, sim.ObsStart, "L"}, {3000, sim.ObsPreempt, "L"}, {3000, sim.ObsStart, "S1"}, {3700, sim.ObsStart, "L"}},
	}, {
		// The reset: each promoted job's executed time restarts, so two
		// jobs that starve each other alternate every 1000 s (each ran
		// 1000 s since its promotion, waits 1000 s, is promoted and
		// preempts the other, demoted after 812.5 s) until S1 ends.
		name:   "starvation: executed time and wait restart at each promotion",
		params: policy.Params{"starve": "1"},
		nodes:  []cluster.Node{node("n", 4)},
		jobs:   []*cluster.Job{job("L", 0, 5000, 4), job("S1", 1000, 3000, 4)},
		want: []event{{0, sim.ObsStart, "L"}, {1000, sim.ObsPreempt, "L"}, {1000, sim.ObsStart, "S1"},
			{2000, sim.ObsPreempt, "S1"}, {2000, sim.ObsStart, "L"}, {3000, sim.ObsPreempt, "L"}, {3000, sim.ObsStart, "S1"},
			{4000, sim.ObsPreempt, "S1"}, {4000, sim.ObsStart, "L"}, {5000, sim.ObsPreempt, "L"}, {5000, sim.ObsStart, "S1"},
			{6000, sim.ObsStart, "L"}},
	}, {
		// At 800: Vb (4 GPUs, since 0) and Va (2, since 100) are in queue
		// 1 (thresholds=1000), Z (2, since 700) in queue 0. J needs 4.
		// Lowest priority first gives back Va then Vb; Va can be spared
		// (the reference's greedy walk keeps it: Z 2 + J 4 + Va 2 = 8).
		name:   "victims: the fewest lowest-priority jobs, higher ones kept when they fit",
		params: policy.Params{"thresholds": "1000/1e9"},
		nodes:  []cluster.Node{node("n", 8)},
		jobs:   []*cluster.Job{job("Vb", 0, 1e4, 4), job("Va", 100, 1e4, 2), job("Z", 700, 1e4, 2), job("J", 800, 100, 4)},
		want: []event{{0, sim.ObsStart, "Vb"}, {100, sim.ObsStart, "Va"}, {700, sim.ObsStart, "Z"},
			{800, sim.ObsPreempt, "Vb"}, {800, sim.ObsStart, "J"}, {900, sim.ObsStart, "Vb"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := run(t, tt.params, tt.nodes, tt.jobs, true)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("starts and preemptions (-want +got):\n%s", d)
			}
		})
	}
}

// randomJobs is a busy mixed workload on two 8-GPU nodes: short and long
// jobs of 1 to 8 GPUs, some with grace periods.
func randomJobs(seed uint64) ([]cluster.Node, []*cluster.Job) {
	r := rand.New(rand.NewPCG(seed, 7))
	var jobs []*cluster.Job
	t := 0.0
	for i := range 60 {
		t += r.ExpFloat64() * 200
		work := 60 + r.ExpFloat64()*1500
		if r.Float64() < 0.2 {
			work *= 10
		}
		j := job(fmt.Sprintf("j%02d", i), float64(int(t)), float64(int(work)), int64(1<<r.IntN(4)))
		j.GracePeriod = float64(r.IntN(3) * 30)
		jobs = append(jobs, j)
	}
	return []cluster.Node{node("a", 8), node("b", 8)}, jobs
}

// TestDeterministicAndQueueExact: the same inputs give the same bytes,
// and the scheduling queue (hints, parking, the idle-cycle answer)
// changes no decision against the exhaustive walk, with the starvation
// knob on and off (TestQueueChangesNoDecision in pkg/plugins covers the
// preset's defaults on its own worlds).
func TestDeterministicAndQueueExact(t *testing.T) {
	for _, params := range []policy.Params{{}, {"starve": "2"}, {"starve": "0.5", "service": "time", "thresholds": "600/3000/9000"}} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprint(params, seed), func(t *testing.T) {
				nodes, jobs := randomJobs(seed)
				ev, a := run(t, params, nodes, jobs, true)
				_, b := run(t, params, nodes, jobs, true)
				_, c := run(t, params, nodes, jobs, false)
				if a != b {
					t.Error("two runs differ")
				}
				if d := cmp.Diff(c, a); d != "" {
					t.Errorf("with the queue (-without +with):\n%s", d)
				}
				pre := 0
				for _, e := range ev {
					if e.Kind == sim.ObsPreempt {
						pre++
					}
				}
				if pre == 0 {
					t.Error("no preemption: the workload does not exercise 2D-LAS")
				}
			})
		}
	}
}

func TestParams(t *testing.T) {
	for _, bad := range []policy.Params{{"thresholds": "7200/3250"}, {"thresholds": "0"}, {"thresholds": "x"}, {"thresholds": ""},
		{"starve": "-1"}, {"service": "cpu"}, {"nope": "1"}} {
		if _, err := tiresias.ParseConfig("tiresias", bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	cf, err := tiresias.ParseConfig("tiresias", policy.Params{"thresholds": "100,200/300", "starve": "4", "service": "time"})
	if err != nil {
		t.Fatal(err)
	}
	want := &tiresias.Config{Thresholds: []float64{100, 200, 300}, Starve: 4, TimeOnly: true}
	if d := cmp.Diff(want, cf); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	def, err := tiresias.ParseConfig("tiresias", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&tiresias.Config{Thresholds: []float64{3250, 7200}}, def); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
}

// jobState builds a job state of g GPUs with work 10000 s, done s of
// it, in phase ph, enqueued at enq, with labels.
func jobState(g int64, done float64, ph cluster.Phase, enq float64, labels map[string]string) *cluster.JobState {
	js := cluster.NewJobState(job("x", 0, 10000, g))
	js.Phase, js.WorkLeft, js.Updated, js.Enqueued, js.Labels = ph, 10000-done, 0, enq, labels
	return js
}

// TestStateOf: the queue, executed time and promotion the plugins read,
// including labels a hostile status writer could set.
func TestStateOf(t *testing.T) {
	def := &tiresias.Config{Thresholds: []float64{3250, 7200}}
	starve := &tiresias.Config{Thresholds: []float64{3250, 7200}, Starve: 2}
	tests := []struct {
		name string
		cf   *tiresias.Config
		js   *cluster.JobState
		now  float64
		want tiresias.State
	}{
		{"4 GPUs x 1000 s is 4000 GPU-s: queue 1", def, jobState(4, 1000, cluster.Running, 0, nil), 5000,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 1}},
		{"the last threshold is reached: the last queue", def, jobState(8, 1000, cluster.Running, 0, nil), 5000,
			tiresias.State{Executed: 1000, Service: 8000, Queue: 2}},
		{"service=time: 1000 s is queue 0", &tiresias.Config{Thresholds: []float64{3250, 7200}, TimeOnly: true},
			jobState(4, 1000, cluster.Running, 0, nil), 5000, tiresias.State{Executed: 1000, Service: 1000}},
		{"executed time counts from the last promotion", def,
			jobState(4, 1000, cluster.Running, 0, map[string]string{tiresias.LabelBase: "900"}), 5000,
			tiresias.State{Executed: 100, Service: 400}},
		{"a negative base label is ignored", def,
			jobState(4, 1000, cluster.Running, 0, map[string]string{tiresias.LabelBase: "-5"}), 5000,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 1}},
		{"a base label beyond the work is ignored", def,
			jobState(4, 1000, cluster.Running, 0, map[string]string{tiresias.LabelBase: "1e300"}), 5000,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 1}},
		{"pending below 2 x executed: not promoted", starve, jobState(4, 1000, cluster.Pending, 4000, nil), 5999,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 1, Wait: 1999}},
		{"pending 2 x executed: promoted when the limit was reached", starve, jobState(4, 1000, cluster.Pending, 4000, nil), 6500,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 0, Promoted: true, PromotedAt: 6000, Wait: 2500}},
		{"earlier waits count (the wait label)", starve,
			jobState(4, 1000, cluster.Pending, 5000, map[string]string{tiresias.LabelWait: "1500"}), 5600,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 0, Promoted: true, PromotedAt: 5500, Wait: 2100}},
		{"a running job is never promoted", starve, jobState(4, 1000, cluster.Running, 0, nil), 1e6,
			tiresias.State{Executed: 1000, Service: 4000, Queue: 1}},
		{"a job that never ran does not starve", starve, jobState(4, 0, cluster.Pending, 0, nil), 1e6,
			tiresias.State{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, tt.cf.StateOf(tt.js, tt.now)); d != "" {
				t.Errorf("state (-want +got):\n%s", d)
			}
		})
	}
}
