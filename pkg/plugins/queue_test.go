package plugins_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	schedqueue "github.com/drover-sched/drover/pkg/scheduler/queue"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// longQueueWorld is randomWorld's jobs, three times as many, on two or
// three nodes: a queue that stays long, so that jobs are set aside, woken
// by room in classes, and merged back after preemptions.
func longQueueWorld(seed uint64) ([]cluster.Node, []*cluster.Job) {
	nodes, jobs := randomWorld(seed)
	r := rand.New(rand.NewPCG(seed, 0xbeef))
	nodes = nodes[:2+r.IntN(2)]
	var more []*cluster.Job
	for k := range 3 {
		_, js := randomWorld(seed*7 + uint64(k))
		for _, j := range js {
			c := *j
			c.ID = fmt.Sprintf("%s-%d", j.ID, k)
			c.Submit = j.Submit / 3
			more = append(more, &c)
		}
	}
	return nodes, append(jobs, more...)
}

// run replays jobs on nodes under preset name, with or without the
// Runtime's scheduling queue, and returns everything observable: each
// action applied, in order, with its time and detail, and the metrics and
// per-job records.
func runQueued(t *testing.T, name string, queue bool, nodes []cluster.Node, jobs []*cluster.Job, seed uint64) (string, []string) {
	t.Helper()
	m, log, _ := runQueuedTries(t, name, queue, nodes, jobs, seed, 30)
	return m, log
}

// runQueuedTries is runQueued that also returns how many jobs the
// Runtime tried (Runtime.Tries): the work the queue exists to save.
func runQueuedTries(t *testing.T, name string, queue bool, nodes []cluster.Node, jobs []*cluster.Job, seed uint64, tick float64) (string, []string, int) {
	t.Helper()
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	p, err := reg.New(name)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := p.(*framework.Runtime)
	switch {
	case rt != nil && !queue:
		rt.WithoutQueue()
	case rt != nil:
		// No backoff and no flush: they change when a job is tried by
		// design; the events and hints must change nothing.
		scheduler.WithQueue(rt, schedqueue.Options{})
	}
	m, log := observeTick(t, p, nodes, jobs, seed, tick, nil)
	if rt == nil {
		t.Fatalf("preset %s is not a *framework.Runtime: the queue comparison would compare a run with itself", name)
	}
	return m, log, rt.Tries()
}

// observe replays jobs on nodes under pol and returns everything
// observable: the metrics and per-job records, and each action applied,
// in order, with its time and detail; log, when not nil, is where the
// actions are appended (a policy wrapper may log into it too).
func observe(t *testing.T, pol policy.Policy, nodes []cluster.Node, jobs []*cluster.Job, seed uint64, log *[]string) (string, []string) {
	t.Helper()
	return observeTick(t, pol, nodes, jobs, seed, 30, log)
}

// observeTick is observe with the simulator's cycle period tick (the
// OASiS family plans per slot, so its worlds run with one cycle per slot).
func observeTick(t *testing.T, pol policy.Policy, nodes []cluster.Node, jobs []*cluster.Job, seed uint64, tick float64, log *[]string) (string, []string) {
	t.Helper()
	if log == nil {
		log = new([]string)
	}
	cfg := sim.Config{Seed: seed, Tick: tick, SampleEvery: tick, Check: true, Horizon: 200000,
		Observe: func(now float64, kind sim.Observed, js *cluster.JobState, detail string) {
			*log = append(*log, fmt.Sprintf("%g %s %s %s", now, kind, js.Job.ID, detail))
		}}
	s, err := sim.New(cfg, nodes, jobs, pol)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A job that never started reports the reason of its last attempt;
	// the queue tries a parked job later or not again, so the message may
	// name another replica or resource. That it waits, and why it was
	// rejected, are decisions and stay compared.
	for i := range res.Records {
		if rc := &res.Records[i]; !rc.Rejected && rc.Reason != "" {
			rc.Reason = "(the reason of its last attempt)"
		}
	}
	return fmt.Sprint(res.Metrics(), res.Records), *log
}

// everyCycle names the presets that retry their waiting jobs every cycle
// by design, so that the queue saves them no attempt and their queue
// comparison shows only that the queue does not get in their way:
//   - fifo and ps-fifo are strict head of line: the plugin that blocks
//     the queue behind its head asks for every event; dragon blocks behind
//     its head too, and the queue saves it an attempt in a few worlds
//     only (2 of 54,372 over the full run's worlds);
//   - the OASiS family (oasis, rrh, dorm, ps-drf) plans per slot, one
//     cycle per slot: every cycle is a new slot whose plan may start any
//     admitted job, so each admission plugin asks for every event.
var everyCycle = map[string]bool{"fifo": true, "ps-fifo": true, "dragon": true,
	"oasis": true, "rrh": true, "dorm": true, "ps-drf": true}

// TestQueueChangesNoDecision is the scheduling queue's contract: a job set
// aside until an event could make it fit, an awake class tried by its
// first member, an unchanged idle cycle answered at once, change how often
// the Runtime asks, never who starts when. Every preset replays long
// random queues and a slice of the Philly trace with and without the
// queue, and every action, metric and record must be the same.
func TestQueueChangesNoDecision(t *testing.T) {
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	seeds := 4
	if testing.Short() {
		seeds = 1
	}
	po := workload.DefaultPhillyOptions()
	po.Limit = 400
	if testing.Short() {
		po.Limit = 150
	}
	philly, err := workload.LoadPhilly("", po)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range reg.Entries() {
		t.Run(e.Name, func(t *testing.T) {
			type world struct {
				name  string
				nodes []cluster.Node
				jobs  []*cluster.Job
				tick  float64
			}
			var worlds []world
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				n, j := randomWorld(seed)
				worlds = append(worlds, world{fmt.Sprintf("random seed %d", seed), n, j, 30})
				n, j = longQueueWorld(seed)
				worlds = append(worlds, world{fmt.Sprintf("long queue seed %d", seed), n, j, 30})
				// The OASiS experiments' own scenario: worker/PS jobs with
				// utilities, one cycle per one-hour slot, on a cluster
				// too small for them all, so that the OASiS family's
				// admission and per-slot plans are exercised (random
				// worlds give it almost nothing to decide).
				st := oasis.DefaultSetting(60, 6, 3, 30)
				worlds = append(worlds, world{fmt.Sprintf("oasis seed %d", seed), st.Nodes(seed), st.Generate(seed), st.Slot})
			}
			var pn []cluster.Node
			for i := range 4 {
				pn = append(pn, cluster.Node{Name: fmt.Sprintf("p%d", i), Capacity: workload.PhillyNode(po)})
			}
			worlds = append(worlds, world{"philly", pn, philly, 30})
			var tries0, tries1 int
			for i, w := range worlds {
				seed := uint64(i + 1)
				m0, log0, n0 := runQueuedTries(t, e.Name, false, w.nodes, w.jobs, seed, w.tick)
				m1, log1, n1 := runQueuedTries(t, e.Name, true, w.nodes, w.jobs, seed, w.tick)
				tries0 += n0
				tries1 += n1
				if d := cmp.Diff(log0, log1); d != "" {
					t.Errorf("%s: actions differ with the queue (-without +with):\n%s", w.name, d)
				}
				if m0 != m1 {
					t.Errorf("%s: metrics or records differ with the queue", w.name)
				}
			}
			t.Logf("jobs tried: exhaustive %d, queued %d", tries0, tries1)
			// A comparison in which the queue saved no attempt compares a
			// run with itself: it proves nothing about the queue. The
			// presets that retry (nearly) every job every cycle by design
			// are named.
			if tries1 >= tries0 && !everyCycle[e.Name] {
				t.Errorf("the queue saved no attempt (%d tried with it, %d without): the worlds do not exercise %s's queue", tries1, tries0, e.Name)
			}
		})
	}
}

// constrainedClassWorld has two jobs alike in demand, group name and
// counts but not in node constraints: a, which only the team's node takes,
// and b, which any node takes. The team's node is busy when both arrive,
// so a cannot start and b can, on the other node. A scheduling queue that
// took a's failure for b's (jobs of one class fail together) would make b
// wait until the team's job ends.
func constrainedClassWorld(t *testing.T) ([]cluster.Node, []*cluster.Job) {
	t.Helper()
	team, err := constraint.New(constraint.Spec{NodeSelector: map[string]string{"pool": "team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	gpu8 := func(id string, submit, work float64, c cluster.NodeConstraint) *cluster.Job {
		return &cluster.Job{ID: id, Submit: submit, Work: work, Class: cluster.ClassBE, Seed: 1,
			Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(8, 64, 8), Replicas: 1, Min: 1, Max: 1, Constraint: c}}}
	}
	nodes := []cluster.Node{
		{Name: "team", Capacity: resource.New(32, 256, 8), Labels: map[string]string{"pool": "team-a"}},
		{Name: "other", Capacity: resource.New(32, 256, 8)},
	}
	return nodes, []*cluster.Job{
		gpu8("busy", 0, 5000, team),
		gpu8("a", 60, 600, team),
		gpu8("b", 60, 600, nil),
	}
}

// TestQueueClassesKeepConstraintsApart: two jobs of one demand but
// different node constraints are not one class for the scheduling queue.
// Every preset that skips jobs that do not fit starts b beside the busy
// team node at once, with and without the queue.
func TestQueueClassesKeepConstraintsApart(t *testing.T) {
	nodes, jobs := constrainedClassWorld(t)
	for _, name := range []string{"k8s-default", "binpack", "drf", "default", "specon", "tf-operator"} {
		t.Run(name, func(t *testing.T) {
			m0, log0 := runQueued(t, name, false, nodes, jobs, 1)
			m1, log1 := runQueued(t, name, true, nodes, jobs, 1)
			if d := cmp.Diff(log0, log1); d != "" {
				t.Errorf("actions differ with the queue (-without +with):\n%s", d)
			}
			if m0 != m1 {
				t.Errorf("metrics or records differ with the queue")
			}
		})
	}
}

// observeQueue is observe of the Runtime rt with the scheduling queue
// (no backoff, no flush: they change when a job is tried by design) or
// without it (the exhaustive walk), for the queue's comparisons.
func observeQueue(t *testing.T, rt *framework.Runtime, queue bool, nodes []cluster.Node, jobs []*cluster.Job, seed uint64) (string, []string) {
	t.Helper()
	if queue {
		scheduler.WithQueue(rt, schedqueue.Options{})
	} else {
		rt.WithoutQueue()
	}
	return observe(t, rt, nodes, jobs, seed, nil)
}

// refuseTenant is a Filter as a user may write one: it reads the job's
// tenant (no node takes tenant's jobs; with half, only the nodes whose
// name ends in an odd byte do) and declares no events, so it gets the
// queue's safe default.
type refuseTenant struct {
	tenant string
	half   bool
}

func (refuseTenant) Name() string { return "refuse-tenant" }

func (f refuseTenant) Filter(c *framework.Cycle, js *cluster.JobState, g int, n *cluster.NodeState) *framework.Status {
	if js.Job.Tenant == f.tenant && (!f.half || n.Name[len(n.Name)-1]%2 == 0) {
		return framework.Statusf(framework.Unschedulable, "node %s takes no jobs of tenant %s", n.Name, f.tenant)
	}
	return nil
}

// TestQueueShapeMemoKeepsTenantsApart: jobs of one placement shape but
// different tenants are not alike to a Filter that reads the tenant, so
// the wake pass must not answer one tenant's bucket with another's fit.
// b (tenant b, refused everywhere) and a (tenant a) wait behind a busy
// node; when it frees, a starts at once, with and without the queue.
func TestQueueShapeMemoKeepsTenantsApart(t *testing.T) {
	gpu8 := func(id, tenant string, submit, work float64) *cluster.Job {
		return &cluster.Job{ID: id, Tenant: tenant, Submit: submit, Work: work, Class: cluster.ClassBE, Seed: 1,
			Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(8, 64, 8), Replicas: 1, Min: 1, Max: 1}}}
	}
	nodes := []cluster.Node{{Name: "n", Capacity: resource.New(32, 256, 8)}}
	jobs := []*cluster.Job{gpu8("busy", "a", 0, 1000), gpu8("b", "b", 60, 600), gpu8("a", "a", 70, 600)}
	run := func(queue bool) (string, []string) {
		rt, err := scheduler.New(framework.Profile{Name: "tenant-filter", Filter: []framework.Filter{refuseTenant{tenant: "b"}}})
		if err != nil {
			t.Fatal(err)
		}
		return observeQueue(t, rt, queue, nodes, jobs, 1)
	}
	m0, log0 := run(false)
	m1, log1 := run(true)
	if d := cmp.Diff(log0, log1); d != "" {
		t.Errorf("actions differ with the queue (-without +with):\n%s", d)
	}
	if m0 != m1 {
		t.Errorf("metrics or records differ with the queue")
	}
}

// TestWokenJobsThatNoLongerFitAreNotTried: a release of room wakes every
// bucket whose head fits in it, but the first job the walk starts may
// take the room. The walk asks again, when it reaches each of the others,
// whether it fits now (the placement's answer, the only hint that woke
// it), and parks it again untried when it does not. Four 8-GPU jobs of
// four tenants (four buckets) wait behind a busy 8-GPU node: each is tried
// when it arrives (4 tries), then once per release of the node, which
// starts it (4 more); trying every woken job would take 4+3+2+1 at the
// releases. The actions are the exhaustive walk's.
func TestWokenJobsThatNoLongerFitAreNotTried(t *testing.T) {
	gpu8 := func(id, tenant string, submit float64) *cluster.Job {
		return &cluster.Job{ID: id, Tenant: tenant, Submit: submit, Work: 600, Class: cluster.ClassBE, Seed: 1,
			Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(8, 64, 8), Replicas: 1, Min: 1, Max: 1}}}
	}
	nodes := []cluster.Node{{Name: "n", Capacity: resource.New(32, 256, 8)}}
	jobs := []*cluster.Job{gpu8("busy", "a", 0), gpu8("w", "w", 60), gpu8("x", "x", 70), gpu8("y", "y", 80), gpu8("z", "z", 90)}
	run := func(queue bool) (string, []string, int) {
		rt, err := scheduler.New(framework.Profile{Name: "spread", Filter: []framework.Filter{framework.NodeRole{}},
			Score: []framework.WeightedScore{{Score: framework.Strategy{S: placement.Spread}, Weight: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		m, log := observeQueue(t, rt, queue, nodes, jobs, 1)
		return m, log, rt.Tries()
	}
	m0, log0, _ := run(false)
	m1, log1, tries := run(true)
	if d := cmp.Diff(log0, log1); d != "" {
		t.Errorf("actions differ with the queue (-without +with):\n%s", d)
	}
	if m0 != m1 {
		t.Errorf("metrics or records differ with the queue")
	}
	if want := 1 + 4 + 4; tries != want {
		t.Errorf("jobs tried = %d, want %d (busy, each waiting job once on arrival and once when it starts)", tries, want)
	}
}
