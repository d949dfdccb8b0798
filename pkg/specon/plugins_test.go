package specon

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	"github.com/drover-sched/drover/pkg/sim"
)

// world builds a snapshot of the manager (node 0) and n workers.
type world struct{ s *cluster.Snapshot }

func newWorld(now float64, workers int) *world {
	s := &cluster.Snapshot{Now: now, Pending: cluster.NewQueue()}
	for i, n := range Cluster(workers) {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: n, Index: i, Ready: true})
	}
	return &world{s: s}
}

// down marks node i not ready.
func (w *world) down(i int) *world { w.s.Nodes[i].Ready = false; return w }

// role gives node i a role.
func (w *world) role(i int, r string) *world { w.s.Nodes[i].Role = r; return w }

// fill leaves cores free on node i.
func (w *world) fill(i int, cores float64) *world {
	n := w.s.Nodes[i]
	n.Allocated = n.Capacity.Sub(resource.New(cores, WorkerMemGiB, 0))
	return w
}

// run adds a running job on node i with labels and eval samples ending now
// (one every 30 s).
func (w *world) run(id string, i int, labels map[string]string, evals ...float64) *world {
	js := cluster.NewJobState(job(id))
	js.Phase = cluster.Running
	js.Placement = cluster.Placement{{Group: 0, Node: i}}
	js.Labels = labels
	for k, v := range evals {
		js.Evals = append(js.Evals, cluster.EvalSample{T: w.s.Now - float64(len(evals)-1-k)*30, Value: v})
	}
	n := w.s.Nodes[i]
	n.Jobs = append(n.Jobs, js)
	n.Allocated = n.Allocated.Add(js.Job.Groups[0].Demand)
	n.Usage = n.Usage.Add(js.Job.Groups[0].Usage)
	w.s.Running = append(w.s.Running, js)
	return w
}

// queue adds pending jobs.
func (w *world) queue(jobs ...*cluster.Job) *world {
	for _, j := range jobs {
		w.s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
	}
	return w
}

func job(id string) *cluster.Job {
	m, _ := ModelByName("vae")
	return NewJob(id, m, 0, 1)
}

// withGroup adds a replica group of the given replica count to j.
func withGroup(j *cluster.Job, name string, replicas int) *cluster.Job {
	g := j.Groups[0]
	g.Name, g.Replicas, g.Min = name, replicas, 0
	j.Groups = append(j.Groups, g)
	return j
}

// starts lists "job@node slot" for every Start and its rr-slot label.
func starts(as []policy.Action) []string {
	var out []string
	for _, a := range as {
		if st, ok := a.(policy.Start); ok {
			out = append(out, fmt.Sprintf("%s@%d slot %s", st.Job, st.Placement[0].Node, labelsOf(as, st.Job)[LabelSlot]))
		}
	}
	return out
}

func slot(v string) map[string]string { return map[string]string{LabelSlot: v} }

func TestRoundRobin(t *testing.T) {
	tests := []struct {
		name string
		w    *world
		want []string
	}{
		{"rotates over the workers, never the manager",
			newWorld(0, 3).queue(job("a"), job("b"), job("c"), job("d")),
			[]string{"a@1 slot 0", "b@2 slot 1", "c@3 slot 2", "d@1 slot 3"}},
		{"resumes after the highest slot among running jobs",
			newWorld(0, 3).run("r1", 1, slot("4")).run("r2", 2, slot("2")).queue(job("a"), job("b")),
			[]string{"a@3 slot 5", "b@1 slot 6"}},
		{"a full worker passes to the next that fits; the slot advances by one",
			newWorld(0, 3).fill(2, 0).queue(job("a"), job("b"), job("c")),
			[]string{"a@1 slot 0", "b@3 slot 1", "c@3 slot 2"}},
		{"the last worker full wraps around to the first",
			newWorld(0, 3).fill(3, 0).run("r", 1, slot("1")).queue(job("a")),
			[]string{"a@1 slot 2"}},
		{"a node that is not ready is not in W",
			newWorld(0, 3).down(2).queue(job("a"), job("b"), job("c")),
			[]string{"a@1 slot 0", "b@3 slot 1", "c@1 slot 2"}},
		{"a node eligible for only some groups is not in W, even one with no replicas",
			newWorld(0, 3).role(1, "worker").queue(withGroup(job("a"), "ps", 0), withGroup(job("b"), "ps", 0), job("c")),
			[]string{"a@2 slot 0", "b@3 slot 1", "c@3 slot 2"}},
		{"... nor when every worker of W is full",
			newWorld(0, 3).role(1, "worker").fill(2, 0).fill(3, 0).queue(withGroup(job("a"), "ps", 0)),
			nil},
		{"a job that fits nowhere waits and keeps its turn for the next",
			newWorld(0, 2).fill(1, 0.5).fill(2, 0.5).queue(job("a")),
			nil},
		{"no worker at all",
			newWorld(0, 2).down(1).down(2).queue(job("a")),
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := starts(NewDefault().Schedule(tc.w.s))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("starts (-want +got):\n%s", d)
			}
		})
	}
}

// TestRoundRobinScore: the score is minus the rotation distance from the
// slot in W; nodes outside W score below every worker.
func TestRoundRobinScore(t *testing.T) {
	s := newWorld(0, 4).down(2).run("r", 1, slot("3")).s // W = nodes 1, 3, 4; slot 4 -> position 1
	c := &framework.Cycle{Snap: s}
	js := cluster.NewJobState(job("a"))
	rr := &RoundRobin{}
	var got []float64
	for i := range s.Nodes {
		got = append(got, rr.Score(c, js, -1, i))
	}
	want := []float64{-3, -2, -3, 0, -1}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("scores of nodes 0-4 (-want +got):\n%s", d)
	}
	if st := rr.Filter(c, js, 0, s.Nodes[0]); st.Code() != framework.Unschedulable || !strings.Contains(st.Reason(), "manager") {
		t.Errorf("filter on the manager: %v", st)
	}
	if st := rr.Filter(c, js, 0, s.Nodes[1]); !st.IsSuccess() {
		t.Errorf("filter on a worker: %v", st)
	}
}

// TestSpeculator: the Speculator sees this cycle's starts (as PC) and
// leaves alone a job another plugin already decided for. It runs the
// per-worker reading of line 15 (WorkerReading), where a start on the
// converged job's worker is what lets it ask.
func TestSpeculator(t *testing.T) {
	falling := []float64{0.3, 0.295, 0.292} // growths 0.005 then 0.003: a CC job asks to move
	fast := []float64{0.9, 0.7, 0.5}
	tests := []struct {
		name   string
		w      *world
		before []framework.Rebalance // plugins that run before the Speculator
		want   []string
	}{
		{"one other active job on its worker: no move (Alg. 1 line 15)",
			newWorld(300, 3).run("conv", 1, cat("CC"), falling...).run("p0", 1, cat("PC"), fast...).run("p", 2, cat("PC"), fast...),
			nil, nil},
		// The start goes to worker-1 (slot 0): scores worker-1 = 1 + 2 + 2,
		// worker-2 = 2, worker-3 = 0.
		{"a job started this cycle is a second active job, and counts on its worker",
			newWorld(300, 3).run("conv", 1, cat("CC"), falling...).run("p0", 1, cat("PC"), fast...).run("p", 2, cat("PC"), fast...).queue(job("new")),
			nil, []string{"conv@3"}},
		{"a job another plugin evicted this cycle is not moved",
			newWorld(300, 3).run("conv", 1, cat("CC"), falling...).run("p0", 1, cat("PC"), fast...).run("p", 2, cat("PC"), fast...).queue(job("new")),
			[]framework.Rebalance{evict{"conv"}}, nil},
		{"Alg. 3 moves the job marked migrated most recently to an idle worker",
			newWorld(300, 2).
				run("a", 1, map[string]string{LabelCategory: "CC", LabelConvergedAt: "60", LabelMigrated: "true", LabelMarkedAt: "90"}, 0.1, 0.1, 0.1).
				run("b", 1, map[string]string{LabelCategory: "CC", LabelConvergedAt: "30", LabelMigrated: "true", LabelMarkedAt: "120"}, 0.1, 0.1, 0.1),
			nil, []string{"b@2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prof := Profile(WorkerReading)
			prof.Rebalance = append(tc.before, prof.Rebalance...)
			rt, err := scheduler.New(prof)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range actionsOf[policy.Migrate](rt.Schedule(tc.w.s)) {
				got = append(got, fmt.Sprintf("%s@%d", m.Job, m.Placement[0].Node))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("migrations (-want +got):\n%s", d)
			}
		})
	}
}

// evict is a test Rebalance plugin that preempts one running job.
type evict struct{ id string }

func (evict) Name() string { return "evict" }
func (e evict) Rebalance(c *framework.Cycle) *framework.Status {
	for _, js := range c.Snap.Running {
		if js.Job.ID == e.id {
			c.St.Evict(js, 0, "test", "test", true)
		}
	}
	return nil
}

// TestPlugins: every entry builds, names its extension points first in its
// description, and checks its arguments.
func TestPlugins(t *testing.T) {
	for _, e := range Plugins() {
		p, err := e.New(policy.Params{})
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if p.Name() != e.Name {
			t.Errorf("entry %s builds plugin %s", e.Name, p.Name())
		}
		if want := strings.Join(profile.Points(p), ", ") + ":"; !strings.HasPrefix(e.Description, want) {
			t.Errorf("%s: description %q does not start with %q", e.Name, e.Description, want)
		}
		if _, err := e.New(policy.Params{"colour": "red"}); err == nil || !strings.Contains(err.Error(), "colour") {
			t.Errorf("%s accepted an unknown argument: %v", e.Name, err)
		}
	}
	sp := Plugins()[1]
	if _, err := sp.New(policy.Params{"alpha": "2"}); err == nil || !strings.Contains(err.Error(), `alpha="2": want a number in [0, 1]`) {
		t.Errorf("specon plugin accepted alpha=2: %v", err)
	}
	p, err := sp.New(policy.Params{"interval": "20"})
	if err != nil || p.(*Speculator).P.Interval != 20 {
		t.Errorf("specon plugin interval=20: %v, %+v", err, p)
	}
}

// TestProfileFromSpec: the specon preset written as a profile spec with
// the plugin registry makes the same decisions as the preset.
func TestProfileFromSpec(t *testing.T) {
	reg := profile.NewRegistry()
	if err := reg.Add(Plugins()...); err != nil {
		t.Fatal(err)
	}
	spec, err := profile.Parse([]byte(`
name: specon
gang: one-node-only
plugins:
  filter: [{name: round-robin}]
  score: [{name: round-robin}]
  reserve: [{name: round-robin}, {name: specon}]
  rebalance: [{name: specon}]
pluginConfig:
  - name: specon
    args: {alpha: 0.01, interval: 30}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := reg.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !rt.TimeDriven() {
		t.Error("profile with the specon plugin is not time-driven")
	}
	if NewDefault().TimeDriven() {
		t.Error("default preset is time-driven")
	}
	run := func(p policy.Policy) *sim.Result {
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
	a, b := run(New(DefaultParams)), run(rt)
	if !reflect.DeepEqual(a.Records, b.Records) {
		t.Error("profile from spec and preset differ")
	}
}
