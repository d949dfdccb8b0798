package plugins_test

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// noisyReserve, on each start, gives the job at the queue's tail a wait
// reason of its own and labels the one before it: a parked job's reason
// and labels change by another job's actions. With every > 1 it does so
// only in one cycle of every.
type noisyReserve struct{ every uint64 }

func (noisyReserve) Name() string { return "noisy-reserve" }
func (n noisyReserve) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	if n.every > 1 && c.Snap.Cycle%n.every != 1 {
		return
	}
	var last, prev *cluster.JobState
	for j := range c.Snap.Pending.All() {
		prev, last = last, j
	}
	if last != nil && last != js && c.St.Op(last) == framework.OpNone {
		c.St.Record(last, policy.Wait{Job: last.Job.ID, Reason: "behind " + js.Job.ID})
	}
	if prev != nil && prev != js && c.St.Op(prev) == framework.OpNone {
		c.St.Record(prev, policy.SetLabel{Job: prev.Job.ID, Key: "after", Value: js.Job.ID})
	}
}
func (noisyReserve) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// evictor preempts the first running job every fifth cycle: the job goes
// back to the queue's head (a push, and sometimes a renumbering of the
// queue's Order).
type evictor struct{}

func (evictor) Name() string { return "evictor" }
func (evictor) Rebalance(c *framework.Cycle) *framework.Status {
	if c.Snap.Cycle%5 != 0 || len(c.Snap.Running) == 0 {
		return nil
	}
	v := c.Snap.Running[0]
	if v.Phase == cluster.Running && c.St.Op(v) == framework.OpNone {
		c.St.Evict(v, 0, "", "test", true)
	}
	return nil
}
func (evictor) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// evictLower makes room for a pending job of priority above 0 by evicting
// running jobs of lower priority at once, lowest priority first (ties by
// ID), until the job fits at its requested counts; all or nothing. The
// room the evicted jobs leave beyond the job's need comes back within
// the cycle: the walk merges back the parked jobs it has not passed.
// Whether it can succeed depends on the running jobs (EventRunning) and
// the room (EventRoom: less to evict); it declines jobs of priority 0,
// with no reason of its own.
type evictLower struct{}

func (evictLower) Name() string { return "evict-lower" }
func (evictLower) Requeue(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js.Job.Priority > 0 {
		return framework.EventRunning | framework.EventRoom
	}
	return 0
}
func (evictLower) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	if js.Job.Priority == 0 {
		return framework.NewStatus(framework.Unschedulable, "")
	}
	var vs []*cluster.JobState
	for _, r := range c.Snap.Running {
		if r.Phase == cluster.Running && !c.St.Busy(r) && r.Job.Priority < js.Job.Priority {
			vs = append(vs, r)
		}
	}
	slices.SortFunc(vs, func(a, b *cluster.JobState) int {
		return cmp.Or(cmp.Compare(a.Job.Priority, b.Job.Priority), strings.Compare(a.Job.ID, b.Job.ID))
	})
	counts := js.Job.RequestedCounts()
	for _, v := range vs {
		c.St.Evict(v, 0, js.Job.ID, "evict-lower", true)
		l := c.St.Now()
		l.Fork()
		_, st := c.Place(l, js, counts)
		l.Revert()
		if st.IsSuccess() {
			return framework.NewStatus(framework.Success, "")
		}
	}
	return framework.NewStatus(framework.Unschedulable, "no lower-priority job to evict")
}

// TestQueueIndexNoDecision checks the scheduling queue's index (a sorted
// profile's cycle visits the queued jobs that are not parked, the awake
// classes' members and the jobs whose reason may have changed, not the
// whole queue, following the simulator queue's log) on profiles that
// stress what the index must follow: other jobs' waits and labels
// recorded by a Reserve plugin, preempted jobs pushed back at the queue's
// head, and a window that the queue's length crosses both ways, under a
// priority order and DRF's (grouped keys, re-sorted after each start). With the
// index, also with a Preempt plugin that gives room back within a cycle
// (the parked jobs the walk skipped and has not passed are merged back:
// with the index they are listed only then, or at the first start when a
// Reserve plugin may re-sort), every action, Waits and labels included, must be the one the
// queue records when it walks the whole queue (the queue's log hidden),
// and the decisions those of the Runtime without the queue.
func TestQueueIndexNoDecision(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noisy  bool
		evict  bool
		drf    bool
		window int
		// preempt: evictLower is the profile's Preempt plugin.
		preempt bool
		// walkOnly: compare the index with the full walk only. With
		// DRF's Resort and a Preempt plugin, the full walk's merge
		// already differs from the Runtime without the queue (a gap
		// of the merge, not of the index; no preset has both); the
		// index must still do exactly what the full walk does.
		walkOnly bool
	}{
		{name: "plain"},
		{name: "noisy", noisy: true},
		{name: "evict", evict: true},
		{name: "window", window: 25},
		{name: "all", noisy: true, evict: true, window: 40},
		{name: "drf", drf: true},
		{name: "drf-all", drf: true, noisy: true, evict: true, window: 40},
		{name: "preempt", preempt: true},
		{name: "preempt-all", preempt: true, noisy: true, evict: true, window: 40},
		{name: "preempt-drf", preempt: true, drf: true, walkOnly: true},
		{name: "preempt-drf-all", preempt: true, drf: true, noisy: true, evict: true, window: 40, walkOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := func() framework.Profile {
				p := framework.Profile{Name: "index", QueueSort: baseline.Priority{},
					Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{baseline.Strategy(placement.Spread)},
					Window: tc.window}
				if tc.drf {
					p.QueueSort = baseline.DRF{}
					p.Reserve = []framework.Reserve{baseline.DRF{}}
				}
				if tc.noisy {
					p.Reserve = append(p.Reserve, noisyReserve{})
				}
				if tc.evict {
					p.Rebalance = []framework.Rebalance{evictor{}}
				}
				if tc.preempt {
					p.Preempt = []framework.Preempt{evictLower{}}
				}
				return p
			}
			for seed := uint64(1); seed <= 3; seed++ {
				nodes, jobs := longQueueWorld(seed)
				m0, log0 := runProfile(t, profile(), noQueue, nodes, jobs, seed)
				m1, log1 := runProfile(t, profile(), walkAll, nodes, jobs, seed)
				m2, log2 := runProfile(t, profile(), withIndex, nodes, jobs, seed)
				if d := gocmp.Diff(log1, log2); d != "" {
					t.Fatalf("seed %d: actions differ with the index (-without +with):\n%s", seed, d)
				}
				if tc.walkOnly {
					if m1 != m2 {
						t.Fatalf("seed %d: results differ:\n%s\n%s", seed, m1, m2)
					}
					continue
				}
				if d := gocmp.Diff(decisions(log0), decisions(log2)); d != "" {
					t.Fatalf("seed %d: decisions differ with the queue (-without +with):\n%s", seed, d)
				}
				if m0 != m2 || m1 != m2 {
					t.Fatalf("seed %d: results differ:\n%s\n%s\n%s", seed, m0, m1, m2)
				}
			}
		})
	}
}

type queueMode int

const (
	noQueue   queueMode = iota // Runtime.WithoutQueue
	walkAll                    // the queue, on a queue that hides its log
	withIndex                  // the queue with its index
)

// decisions drops the Waits and labels from a log.
func decisions(log []string) []string {
	var out []string
	for _, l := range log {
		if !strings.Contains(l, " wait ") && !strings.Contains(l, " label ") {
			out = append(out, l)
		}
	}
	return out
}

// runProfile is runQueued for a profile built here; the log also holds
// every Wait and SetLabel, so that a reason recorded or not is seen.
func runProfile(t *testing.T, p framework.Profile, mode queueMode, nodes []cluster.Node, jobs []*cluster.Job, seed uint64) (string, []string) {
	t.Helper()
	return runProfileLog(t, p, mode, nodes, jobs, seed, false)
}

// runProfileLog is runProfile; with inOrder, each cycle's Waits and labels
// are logged in the order they were recorded (the executor applies them in
// that order).
func runProfileLog(t *testing.T, p framework.Profile, mode queueMode, nodes []cluster.Node, jobs []*cluster.Job, seed uint64, inOrder bool) (string, []string) {
	t.Helper()
	rt, err := framework.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if !rt.Queueing() {
		t.Fatal("the profile has no scheduling queue")
	}
	if mode == noQueue {
		rt.WithoutQueue()
	}
	var log []string
	pol := waitLogger{rt, &log, mode == walkAll, inOrder}
	return observe(t, pol, nodes, jobs, seed, &log)
}

// waitLogger logs the policy's Wait and SetLabel actions, which the
// simulator's observer does not show.
type waitLogger struct {
	*framework.Runtime
	log     *[]string
	hide    bool
	inOrder bool // log in the order recorded, not by job
}

// hiddenLog is the simulator's queue without its log (cluster.QueueLog):
// the same value every cycle, as the queue is the same object.
type hiddenLog struct{ cluster.PendingQueue }

func (w waitLogger) Schedule(s *cluster.Snapshot) []policy.Action {
	if w.hide {
		q := s.Pending
		s.Pending = hiddenLog{q}
		defer func() { s.Pending = q }()
	}
	acts := w.Runtime.Schedule(s)
	// By job, each job's in order: the Runtime records the waits of the
	// awake classes' members class by class, in no set order of the
	// classes (the order of one cycle's waits for different jobs tells
	// nothing: each sets its own job's reason).
	type line struct{ job, s string }
	var lines []line
	for _, a := range acts {
		switch a := a.(type) {
		case policy.Wait:
			lines = append(lines, line{a.Job, fmt.Sprintf("%g wait %s %s", s.Now, a.Job, a.Reason)})
		case policy.SetLabel:
			lines = append(lines, line{a.Job, fmt.Sprintf("%g label %s %s=%s", s.Now, a.Job, a.Key, a.Value)})
		}
	}
	if !w.inOrder {
		slices.SortStableFunc(lines, func(a, b line) int { return strings.Compare(a.job, b.job) })
	}
	for _, l := range lines {
		*w.log = append(*w.log, l.s)
	}
	return acts
}

// TestQueueIndexLazyNoDecision checks the index on the lazy walk (no
// QueueSort, or FCFS while the queue is in its order; no Preempt plugin):
// a cycle visits the active jobs, the awake classes' members, the
// rechecked jobs and the jobs a Wait is recorded for ahead of the walk, in
// queue order, and stops where an Admit plugin blocks. The profiles
// stress what it must follow: an Admit plugin that blocks after two starts
// and makes some jobs wait, a Reserve plugin that records Waits for a job
// ahead of the walk (the queue's tail) and labels another, one that
// records a Wait without its job, a time-driven Rebalance plugin that
// labels every running job every cycle (SpeCon's round) and now and then
// a queued job, preempted jobs pushed back at the queue's head, and a
// window the queue's length crosses both ways. With the index, every
// action, Waits and labels included and in the order recorded, must be
// the one the queue records when it walks the whole queue (its log
// hidden), and the decisions those of the Runtime without the queue.
func TestQueueIndexLazyNoDecision(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		gate, noisy, blind, label, evict bool
		echo                             bool
		sparse                           uint64 // noisy in one cycle of sparse
		fcfs                             bool
		window                           int
	}{
		{name: "plain"},
		{name: "gate", gate: true},
		{name: "noisy", noisy: true},
		{name: "gate-noisy", gate: true, noisy: true},
		{name: "gate-sparse", gate: true, noisy: true, sparse: 3},
		{name: "echo", echo: true},
		{name: "gate-echo", gate: true, echo: true},
		{name: "blind", gate: true, blind: true},
		{name: "label", label: true, gate: true},
		{name: "evict", evict: true, gate: true},
		{name: "window", window: 25, gate: true},
		{name: "all", gate: true, noisy: true, blind: true, label: true, evict: true, window: 40},
		// FCFS, lazy while the queue is in Enqueued order and sorted
		// (with the index) after a preempted job went back to its head.
		{name: "fcfs", fcfs: true, noisy: true, label: true, evict: true},
		{name: "fcfs-gate", fcfs: true, gate: true, noisy: true, label: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile := func() framework.Profile {
				p := framework.Profile{Name: "lazy-index",
					Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{baseline.Strategy(placement.Spread)},
					Window: tc.window}
				if tc.fcfs {
					p.QueueSort = elastic.FCFS{}
				}
				if tc.gate {
					p.Admit = []framework.Admit{gateAdmit{}}
				}
				if tc.noisy {
					p.Reserve = append(p.Reserve, noisyReserve{every: tc.sparse})
				}
				if tc.blind {
					p.Reserve = append(p.Reserve, blindReserve{})
				}
				if tc.echo {
					p.Reserve = append(p.Reserve, echoReserve{})
				}
				if tc.label {
					p.Rebalance = append(p.Rebalance, roundLabeler{})
				}
				if tc.evict {
					p.Rebalance = append(p.Rebalance, evictor{})
				}
				return p
			}
			for seed := uint64(1); seed <= 3; seed++ {
				nodes, jobs := longQueueWorld(seed)
				// The sorted path (fcfs out of order) records the waits
				// of awake classes' members class by class in no set order.
				inOrder := !tc.fcfs
				m0, log0 := runProfileLog(t, profile(), noQueue, nodes, jobs, seed, inOrder)
				m1, log1 := runProfileLog(t, profile(), walkAll, nodes, jobs, seed, inOrder)
				m2, log2 := runProfileLog(t, profile(), withIndex, nodes, jobs, seed, inOrder)
				if d := gocmp.Diff(log1, log2); d != "" {
					t.Fatalf("seed %d: actions differ with the index (-without +with):\n%s", seed, d)
				}
				if d := gocmp.Diff(decisions(log0), decisions(log2)); d != "" {
					t.Fatalf("seed %d: decisions differ with the queue (-without +with):\n%s", seed, d)
				}
				if m0 != m2 || m1 != m2 {
					t.Fatalf("seed %d: results differ:\n%s\n%s\n%s", seed, m0, m1, m2)
				}
			}
		})
	}
}

// gateAdmit blocks every job after two starts in a cycle, and makes a job
// wait on even cycles when its ID's hash says so (it is then not parked).
type gateAdmit struct{}

func (gateAdmit) Name() string { return "gate" }
func (gateAdmit) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	if len(c.Started()) >= 2 {
		return framework.NewStatus(framework.Blocked, "two a cycle")
	}
	h := fnv.New32a()
	h.Write([]byte(js.Job.ID))
	if c.Snap.Cycle%2 == 0 && h.Sum32()%5 == 0 {
		return framework.NewStatus(framework.Wait, "gate says wait")
	}
	return nil
}
func (gateAdmit) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// blindReserve, on a start in every third cycle, records a Wait for the
// queue's tail without naming its state (the index cannot tell whose
// reason changed).
type blindReserve struct{}

func (blindReserve) Name() string { return "blind-reserve" }
func (blindReserve) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	if c.Snap.Cycle%3 != 0 {
		return
	}
	var last *cluster.JobState
	for j := range c.Snap.Pending.All() {
		last = j
	}
	if last != nil && last != js && c.St.Op(last) == framework.OpNone {
		c.St.Record(nil, policy.Wait{Job: last.Job.ID, Reason: "blind " + js.Job.ID})
	}
}
func (blindReserve) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// echoReserve, on each start, records for the job in the middle of the
// queue a Wait with the reason it has: nothing changes for the executor,
// but the walk, when it meets that job later in the cycle and it is
// parked, records its reason again (the full walk's skip does).
type echoReserve struct{}

func (echoReserve) Name() string { return "echo-reserve" }
func (echoReserve) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	k := 0
	for j := range c.Snap.Pending.All() {
		if k++; k == (c.Snap.Pending.Len()+1)/2 {
			if j != js && c.St.Op(j) == framework.OpNone && j.Reason != "" {
				c.St.Record(j, policy.Wait{Job: j.Job.ID, Reason: j.Reason})
			}
			return
		}
	}
}
func (echoReserve) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// roundLabeler is time-driven: every cycle it writes the round (every
// second cycle a new one) on every running job, as SpeCon does, and every
// fourth cycle labels the queue's third job.
type roundLabeler struct{}

func (roundLabeler) Name() string     { return "round-labeler" }
func (roundLabeler) TimeDriven() bool { return true }
func (roundLabeler) Rebalance(c *framework.Cycle) *framework.Status {
	round := strconv.FormatUint(c.Snap.Cycle/2, 10)
	for _, js := range c.Snap.Running {
		if js.Labels["round"] != round && c.St.Op(js) == framework.OpNone {
			c.St.Record(js, policy.SetLabel{Job: js.Job.ID, Key: "round", Value: round})
		}
	}
	if c.Snap.Cycle%4 == 0 {
		n := 0
		for js := range c.Snap.Pending.All() {
			if n++; n == 3 {
				if c.St.Op(js) == framework.OpNone {
					c.St.Record(js, policy.SetLabel{Job: js.Job.ID, Key: "seen", Value: round})
				}
				break
			}
		}
	}
	return nil
}
func (roundLabeler) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }
