package framework_test

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// world is a fluent snapshot builder: nodes of 8 GPUs, jobs of whole GPUs.
type world struct{ s *cluster.Snapshot }

func newWorld() *world { return &world{s: &cluster.Snapshot{Pending: cluster.NewQueue(), Seed: 1}} }

func (w *world) node(name string, freeGPU int64) *world {
	i := len(w.s.Nodes)
	w.s.Nodes = append(w.s.Nodes, &cluster.NodeState{Node: cluster.Node{Name: name, Capacity: resource.New(8, 8, 8)},
		Index: i, Ready: true, Allocated: resource.New(float64(8-freeGPU), float64(8-freeGPU), 8-freeGPU)})
	return w
}

func (w *world) roleNode(name, role string) *world {
	w.node(name, 8)
	w.s.Nodes[len(w.s.Nodes)-1].Role = role
	return w
}

func job(id string, gpus int64, replicas int) *cluster.Job {
	return &cluster.Job{ID: id, Work: 100, Class: cluster.ClassBE,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(float64(gpus), float64(gpus), gpus), Replicas: replicas, Min: 1, Max: replicas}}}
}

func (w *world) pending(js ...*cluster.Job) *world {
	for _, j := range js {
		w.s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
	}
	return w
}

// running puts job j on node n (its GPUs already counted as allocated by
// node's free argument).
func (w *world) running(j *cluster.Job, n int, grace float64) *world {
	j.GracePeriod = grace
	js := cluster.NewJobState(j)
	js.Phase = cluster.Running
	for range j.Groups[0].Replicas {
		js.Placement = append(js.Placement, cluster.Assignment{Node: n})
	}
	w.s.Running = append(w.s.Running, js)
	w.s.Nodes[n].Jobs = append(w.s.Nodes[n].Jobs, js)
	return w
}

// summary renders actions as short strings for cmp.Diff.
func summary(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case policy.Start:
			out = append(out, fmt.Sprintf("start %s %v", a.Job, nodes(a.Placement)))
		case policy.Preempt:
			out = append(out, fmt.Sprintf("preempt %s grace=%g", a.Job, a.Grace))
		case policy.Resize:
			out = append(out, fmt.Sprintf("resize %s %v", a.Job, nodes(a.Placement)))
		case policy.Wait:
			out = append(out, "wait "+a.Job)
		case policy.Reject:
			out = append(out, "reject "+a.Job+": "+a.Reason)
		default:
			out = append(out, policy.Kind(a)+" "+a.Target())
		}
	}
	return out
}

func nodes(p cluster.Placement) []int {
	var out []int
	for _, a := range p {
		out = append(out, a.Node)
	}
	return out
}

// Test plugins.

type byID struct{}

func (byID) Name() string { return "by-id-desc" }
func (byID) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	return cmp.Compare(b.Job.ID, a.Job.ID)
}

type admitFunc struct {
	name string
	f    func(c *framework.Cycle, js *cluster.JobState) *framework.Status
}

func (a admitFunc) Name() string { return a.name }
func (a admitFunc) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	return a.f(c, js)
}

type halving struct{}

func (halving) Name() string { return "halving" }
func (halving) Size(_ *framework.Cycle, js *cluster.JobState) [][]int {
	var out [][]int
	for n := js.Job.Groups[0].Replicas; n >= js.Job.Groups[0].Min; n /= 2 {
		out = append(out, []int{n})
		if n == 1 {
			break
		}
	}
	return out
}

type notNode struct{ node string }

func (notNode) Name() string { return "not-node" }
func (f notNode) Filter(_ *framework.Cycle, _ *cluster.JobState, _ int, n *cluster.NodeState) *framework.Status {
	if n.Name == f.node {
		return framework.NewStatus(framework.Unschedulable, "excluded")
	}
	return nil
}

type lastNode struct{}

func (lastNode) Name() string { return "last-node" }
func (lastNode) Score(_ *framework.Cycle, _ *cluster.JobState, _ int, node int) float64 {
	return float64(node)
}

// evictAll preempts every running job with its grace period; it returns
// Success when every victim is gone at once (grace 0), else Wait.
type evictAll struct{ code framework.Code }

func (evictAll) Name() string { return "evict-all" }
func (e evictAll) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	if e.code == framework.Unschedulable {
		c.St.Evict(c.Snap.Running[0], 0, js.Job.ID, "tried", true)
		return framework.NewStatus(framework.Unschedulable, "gave up")
	}
	instant := true
	for _, v := range c.Snap.Running {
		c.St.Evict(v, v.Job.GracePeriod, js.Job.ID, "make room", v.Job.GracePeriod == 0)
		instant = instant && v.Job.GracePeriod == 0
	}
	if instant {
		return nil
	}
	return framework.NewStatus(framework.Wait, "victims in their grace period")
}

type counter struct{ reserved, rebalanced, provisioned *[]string }

func (counter) Name() string { return "counter" }
func (k counter) Reserve(_ *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	*k.reserved = append(*k.reserved, js.Job.ID)
}
func (k counter) Rebalance(c *framework.Cycle) *framework.Status {
	*k.rebalanced = append(*k.rebalanced, fmt.Sprint(len(c.Started())))
	return nil
}
func (k counter) Provision(c *framework.Cycle) *framework.Status {
	*k.provisioned = append(*k.provisioned, fmt.Sprint(len(c.Failed())))
	return nil
}

var (
	_ framework.QueueSort = byID{}
	_ framework.Admit     = admitFunc{}
	_ framework.Size      = halving{}
	_ framework.Filter    = notNode{}
	_ framework.Score     = lastNode{}
	_ framework.Preempt   = evictAll{}
	_ framework.Reserve   = counter{}
	_ framework.Rebalance = counter{}
	_ framework.Provision = counter{}
)

func pack() []framework.WeightedScore {
	return []framework.WeightedScore{{Score: framework.Strategy{S: placement.Pack}, Weight: 1}}
}

func TestRuntime(t *testing.T) {
	block := admitFunc{"block", func(c *framework.Cycle, _ *cluster.JobState) *framework.Status {
		if len(c.Failed()) > 0 {
			return framework.NewStatus(framework.Blocked, "blocked")
		}
		return nil
	}}
	rejectX := admitFunc{"reject-x", func(_ *framework.Cycle, js *cluster.JobState) *framework.Status {
		if strings.HasPrefix(js.Job.ID, "x") {
			return framework.NewStatus(framework.Unresolvable, "no x")
		}
		return nil
	}}
	tests := []struct {
		name    string
		world   *world
		profile framework.Profile
		want    []string
	}{
		{"queue order, pack, skip what does not fit",
			newWorld().node("a", 2).node("b", 4).pending(job("j1", 3, 1), job("j2", 8, 1), job("j3", 1, 1)),
			framework.Profile{Score: pack()},
			[]string{"start j1 [1]", "wait j2", "start j3 [1]"}},
		{"queue sort orders the walk",
			newWorld().node("a", 8).pending(job("j1", 1, 1), job("j2", 1, 1)),
			framework.Profile{QueueSort: byID{}, Score: pack()},
			[]string{"start j2 [0]", "start j1 [0]"}},
		{"blocked stops the walk after a failure",
			newWorld().node("a", 2).pending(job("j1", 4, 1), job("j2", 1, 1)),
			framework.Profile{Admit: []framework.Admit{block}, Score: pack()},
			[]string{"wait j1"}},
		{"unresolvable admission rejects",
			newWorld().node("a", 8).pending(job("x1", 1, 1), job("j2", 1, 1)),
			framework.Profile{Admit: []framework.Admit{rejectX}, Score: pack()},
			[]string{"reject x1: no x", "start j2 [0]"}},
		{"size tries smaller counts",
			newWorld().node("a", 3).pending(job("j1", 1, 8)),
			framework.Profile{Size: halving{}, Score: pack()},
			[]string{"start j1 [0 0]"}},
		{"filter excludes a node (generic path)",
			newWorld().node("a", 8).node("b", 8).pending(job("j1", 1, 1)),
			framework.Profile{Filter: []framework.Filter{notNode{"a"}}},
			[]string{"start j1 [1]"}},
		{"custom score picks the last node",
			newWorld().node("a", 8).node("b", 8).node("c", 8).pending(job("j1", 1, 2)),
			framework.Profile{Score: []framework.WeightedScore{{Score: lastNode{}, Weight: 1}}},
			[]string{"start j1 [2 2]"}},
		{"gang one node first keeps replicas together",
			newWorld().node("a", 2).node("b", 4).pending(job("j1", 1, 4)),
			framework.Profile{Score: []framework.WeightedScore{{Score: framework.Strategy{S: placement.Spread}, Weight: 1}}, Gang: placement.OneNodeFirst},
			[]string{"start j1 [1 1 1 1]"}},
		{"gang one node only fails rather than spread",
			newWorld().node("a", 2).node("b", 2).pending(job("j1", 1, 4)),
			framework.Profile{Score: pack(), Gang: placement.OneNodeOnly},
			[]string{"wait j1"}},
		{"role filter is always on",
			newWorld().roleNode("ps", "ps").node("w", 8).pending(job("j1", 1, 1)),
			framework.Profile{Score: []framework.WeightedScore{{Score: framework.Strategy{S: placement.FirstFit}, Weight: 1}}},
			[]string{"start j1 [1]"}},
		{"preempt with grace 0 frees room and the job starts",
			newWorld().node("a", 0).running(job("v", 8, 1), 0, 0).pending(job("te", 4, 1)),
			framework.Profile{Score: pack(), Preempt: []framework.Preempt{evictAll{}}},
			[]string{"preempt v grace=0", "start te [0]"}},
		{"preempt with grace waits",
			newWorld().node("a", 0).running(job("v", 8, 1), 0, 30).pending(job("te", 4, 1)),
			framework.Profile{Score: pack(), Preempt: []framework.Preempt{evictAll{}}, Future: true},
			[]string{"preempt v grace=30", "wait te"}},
		{"a failed preemption is discarded",
			newWorld().node("a", 0).running(job("v", 8, 1), 0, 0).pending(job("te", 4, 1)),
			framework.Profile{Score: pack(), Preempt: []framework.Preempt{evictAll{code: framework.Unschedulable}}},
			[]string{"wait te"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.profile.Name = "test"
			r, err := scheduler.New(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			got := summary(r.Schedule(tc.world.s))
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReserveRebalanceProvision(t *testing.T) {
	var res, reb, prov []string
	k := counter{&res, &reb, &prov}
	r, err := scheduler.New(framework.Profile{Name: "t", Score: pack(), Reserve: []framework.Reserve{k},
		Rebalance: []framework.Rebalance{k}, Provision: []framework.Provision{k}})
	if err != nil {
		t.Fatal(err)
	}
	r.Schedule(newWorld().node("a", 4).pending(job("j1", 2, 1), job("j2", 8, 1), job("j3", 2, 1)).s)
	got := []string{strings.Join(res, ","), strings.Join(reb, ","), strings.Join(prov, ",")}
	if diff := gocmp.Diff([]string{"j1,j3", "2", "1"}, got); diff != "" {
		t.Errorf("reserve, rebalance (started), provision (failed) (-want +got):\n%s", diff)
	}
	// Rebalance and Provision run even with an empty queue.
	reb, prov = nil, nil
	r.Schedule(newWorld().node("a", 4).s)
	if len(reb) != 1 || len(prov) != 1 {
		t.Errorf("empty queue: rebalance %v, provision %v; want one call each", reb, prov)
	}
}

func TestStatementForkDiscard(t *testing.T) {
	w := newWorld().node("a", 8).pending(job("j1", 4, 1), job("j2", 4, 1))
	// A Statement is reset by the Runtime each cycle; a Rebalance plugin
	// reaches it after the Admit plugin made both jobs wait.
	probe := rebalanceFunc(func(c *framework.Cycle) *framework.Status {
		j1 := c.Snap.Pending.Head()
		before := len(c.St.Actions())
		c.St.Fork()
		if !c.St.Start(j1, cluster.Placement{{Node: 0}}) {
			t.Fatal("start on a free node failed")
		}
		if got := c.St.Now().Free(0)[resource.GPU]; got != 4 {
			t.Errorf("free after start in fork = %d, want 4", got)
		}
		c.St.Discard()
		if got := c.St.Now().Free(0)[resource.GPU]; got != 8 {
			t.Errorf("free after discard = %d, want 8", got)
		}
		if c.St.Op(j1) != framework.OpNone || len(c.St.Actions()) != before {
			t.Errorf("discard kept op %v and %d actions, want %d", c.St.Op(j1), len(c.St.Actions()), before)
		}
		big := cluster.NewJobState(job("big", 16, 1))
		if c.St.Start(big, cluster.Placement{{Node: 0}}) {
			t.Error("start of a job larger than the node succeeded")
		}
		if got := c.St.Now().Free(0)[resource.GPU]; got != 8 {
			t.Errorf("a refused start changed the ledger: free %d", got)
		}
		return nil
	})
	r, err := scheduler.New(framework.Profile{Name: "t", Score: pack(), Admit: []framework.Admit{admitFunc{"none", func(*framework.Cycle, *cluster.JobState) *framework.Status {
		return framework.NewStatus(framework.Wait, "not now")
	}}}, Rebalance: []framework.Rebalance{probe}})
	if err != nil {
		t.Fatal(err)
	}
	r.Schedule(w.s)
}

type rebalanceFunc func(c *framework.Cycle) *framework.Status

func (rebalanceFunc) Name() string                                     { return "probe" }
func (f rebalanceFunc) Rebalance(c *framework.Cycle) *framework.Status { return f(c) }

// TimeDriven: the probe runs on every cycle (it declares no hints, so the
// Runtime never answers a cycle without it).
func (rebalanceFunc) TimeDriven() bool { return true }

func TestStatus(t *testing.T) {
	var nilStatus *framework.Status
	if !nilStatus.IsSuccess() || nilStatus.Code() != framework.Success || nilStatus.Reason() != "" {
		t.Error("nil status is not success")
	}
	s := framework.Statusf(framework.Unschedulable, "no %s", "room").WithPlugin("a").WithPlugin("b")
	if diff := gocmp.Diff("Unschedulable (a): no room", s.String()); diff != "" {
		t.Error(diff)
	}
}

func TestKeys(t *testing.T) {
	k := framework.NewKey[[]int]("ints")
	var got int
	r, _ := scheduler.New(framework.Profile{Name: "t", Rebalance: []framework.Rebalance{rebalanceFunc(func(c *framework.Cycle) *framework.Status {
		if _, ok := framework.Get(c, k); ok {
			t.Error("fresh cycle has data")
		}
		framework.Set(c, k, []int{1, 2})
		v := framework.GetOrInit(c, k, func() []int { return nil })
		got = len(v)
		return nil
	})}})
	// The Runtime reuses the data's map: every cycle starts without the
	// previous cycle's data.
	for range 3 {
		got = 0
		r.Schedule(newWorld().node("a", 8).s)
		if got != 2 {
			t.Errorf("GetOrInit returned %d values, want the 2 set", got)
		}
	}
}

// TestCycleRandIsSeeded: a source per seed, cycle, plugin and job, the
// same for the same four, another when any of them differs.
func TestCycleRandIsSeeded(t *testing.T) {
	a := &cluster.JobState{Job: &cluster.Job{ID: "a"}}
	b := &cluster.JobState{Job: &cluster.Job{ID: "b"}}
	draw := func(seed, cycle uint64, plugin string, js *cluster.JobState) uint64 {
		var v uint64
		r, _ := scheduler.New(framework.Profile{Name: "t", Rebalance: []framework.Rebalance{rebalanceFunc(func(c *framework.Cycle) *framework.Status {
			v = c.Rand(plugin, js).Uint64()
			return nil
		})}})
		w := newWorld().node("a", 8)
		w.s.Seed, w.s.Cycle = seed, cycle
		r.Schedule(w.s)
		return v
	}
	base := draw(7, 3, "p", a)
	if again := draw(7, 3, "p", a); again != base {
		t.Errorf("same seed, cycle, plugin and job drew %d and %d", base, again)
	}
	for name, v := range map[string]uint64{
		"seed": draw(8, 3, "p", a), "cycle": draw(7, 4, "p", a), "plugin": draw(7, 3, "q", a),
		"job": draw(7, 3, "p", b), "no job": draw(7, 3, "p", nil),
	} {
		if v == base {
			t.Errorf("another %s drew the same %d", name, v)
		}
	}
}

func TestNewRejectsBadProfiles(t *testing.T) {
	for _, p := range []framework.Profile{
		{},
		{Name: "t", Window: -1},
		{Name: "t", Score: []framework.WeightedScore{{Score: lastNode{}, Weight: 0}}},
	} {
		if _, err := scheduler.New(p); err == nil {
			t.Errorf("New(%+v) succeeded", p)
		}
	}
}

// stableByID orders jobs by ID, descending, with keys (the ID's digit,
// as the IDs here are j1..j9), counting the calls of Key; its stamp is *stamp.
type stableByID struct {
	calls *int
	stamp *int
}

func (stableByID) Name() string { return "stable-by-id" }
func (stableByID) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	return cmp.Compare(b.Job.ID, a.Job.ID)
}
func (s stableByID) Key(_ *framework.Cycle, js *cluster.JobState) framework.SortKey {
	*s.calls++
	return framework.SortKey{-float64(js.Job.ID[1])}
}
func (s stableByID) KeyStamp(*framework.Cycle) any { return *s.stamp }
