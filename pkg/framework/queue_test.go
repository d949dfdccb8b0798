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
)

// Requeuing test plugins: a queue order by ID and a Size plugin that counts
// the attempts per job, both parking-safe; always asks for a job every
// cycle.
type idOrder struct{}

func (idOrder) Name() string { return "id-order" }
func (idOrder) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	return cmp.Compare(a.Job.ID, b.Job.ID)
}
func (idOrder) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

type countSizes struct{ n map[string]int }

func (countSizes) Name() string { return "count-sizes" }
func (k countSizes) Size(_ *framework.Cycle, js *cluster.JobState) [][]int {
	k.n[js.Job.ID]++
	return [][]int{js.Job.RequestedCounts()}
}
func (countSizes) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

type always struct{ id string }

func (always) Name() string                                                  { return "always" }
func (a always) Admit(*framework.Cycle, *cluster.JobState) *framework.Status { return nil }
func (a always) Requeue(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js.Job.ID == a.id {
		return framework.RequeueAlways
	}
	return 0
}

var (
	_ framework.Requeuer = idOrder{}
	_ framework.Requeuer = countSizes{}
	_ framework.Requeuer = always{}
)

// showWaits has the executor show each Wait of acts as its job's reason.
func showWaits(w *world, acts []policy.Action) {
	for js := range w.s.Pending.All() {
		for _, a := range acts {
			if wa, ok := a.(policy.Wait); ok && wa.Job == js.Job.ID {
				js.Reason = wa.Reason
			}
		}
	}
}

// step runs one cycle of rt on w as an executor would: the Waits shown,
// the starts applied; it returns the cycle's actions, summarised.
func step(rt *framework.Runtime, w *world, jobs map[string]*cluster.Job) []string {
	w.s.Cycle++
	raw := rt.Schedule(w.s)
	showWaits(w, raw)
	acts := summary(raw)
	apply(w, acts, jobs)
	return acts
}

// apply starts the jobs of a cycle's Start actions in the world (their
// GPUs allocated on the nodes), as an executor would.
func apply(w *world, acts []string, jobs map[string]*cluster.Job) {
	for _, a := range acts {
		var id string
		var n []int
		if _, err := fmtSscan(a, &id, &n); err != nil {
			continue
		}
		var js *cluster.JobState
		for p := range w.s.Pending.All() {
			if p.Job.ID == id {
				js = p
			}
		}
		w.s.Pending.(*cluster.Queue).Remove(js)
		for _, i := range n {
			d := jobs[id].Groups[0].Demand
			w.s.Nodes[i].Allocated = w.s.Nodes[i].Allocated.Add(d)
		}
	}
}

// TestQueueSetsAsideUntilRoom: jobs that did not fit are not tried again
// while no room is freed; a class of alike jobs costs one attempt; freed
// room wakes the class and its first job in queue order starts; a job a
// plugin wants every cycle is tried every cycle.
func TestQueueSetsAsideUntilRoom(t *testing.T) {
	sizes := countSizes{n: map[string]int{}}
	rt, err := framework.New(framework.Profile{Name: "q", QueueSort: idOrder{}, Size: sizes,
		Admit: []framework.Admit{always{id: "z"}}, Score: pack()})
	if err != nil {
		t.Fatal(err)
	}
	if !rt.Queueing() {
		t.Fatal("every plugin is a Requeuer, yet no queue")
	}
	jobs := map[string]*cluster.Job{}
	for _, id := range []string{"a", "b", "c", "d", "z"} {
		jobs[id] = job(id, 4, 1)
	}
	w := newWorld().node("n0", 2).node("n1", 2).pending(jobs["a"], jobs["b"], jobs["c"], jobs["d"], jobs["z"])
	cycle := func() []string {
		w.s.Cycle++
		out := summary(rt.Schedule(w.s))
		apply(w, out, jobs)
		return out
	}
	// Cycle 1: all fail; a's failure makes b, c, d (its class) fail
	// without an attempt; z is asked for every cycle.
	cycle()
	if d := gocmp.Diff(map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "z": 1}, sizes.n); d != "" {
		t.Errorf("cycle 1 sizes (-want +got):\n%s", d)
	}
	// Cycles 2, 3: nothing freed; only z is tried.
	cycle()
	cycle()
	if d := gocmp.Diff(map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "z": 3}, sizes.n); d != "" {
		t.Errorf("cycles 2-3 sizes (-want +got):\n%s", d)
	}
	// Room on n1 (8 GPUs): the class wakes; a and b (first by ID) start
	// there, c fails, and d, alike, is not tried (it gets the class's
	// reason).
	w.s.Nodes[1].Allocated = resource.Vector{}
	got := cycle()
	if d := gocmp.Diff([]string{"start a [1]", "start b [1]", "wait c", "wait z", "wait d"}, got); d != "" {
		t.Errorf("after room on n1 (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(map[string]int{"a": 2, "b": 2, "c": 2, "d": 1, "z": 4}, sizes.n); d != "" {
		t.Errorf("after room, sizes (-want +got):\n%s", d)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestQueueNeedsEveryPlugin: a profile with a plugin that is not a
// Requeuer tries every job every cycle.
func TestQueueNeedsEveryPlugin(t *testing.T) {
	rt, err := framework.New(framework.Profile{Name: "q", QueueSort: byID{}, Score: pack()})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Queueing() {
		t.Error("by-id-desc is not a Requeuer, yet the profile sets jobs aside")
	}
}

// fmtSscan parses "start ID [n ...]".
func fmtSscan(s string, id *string, nodes *[]int) (int, error) {
	var rest string
	k, err := fmt.Sscanf(s, "start %s %s", id, &rest)
	if err != nil {
		return k, err
	}
	i := strings.Index(s, "[")
	for _, f := range strings.Fields(strings.Trim(s[i:], "[]")) {
		var n int
		fmt.Sscan(f, &n)
		*nodes = append(*nodes, n)
	}
	return k, nil
}

// countFilter is a Filter that passes every node and counts the jobs it
// was asked about; uniform says whether it declares itself a
// UniformFilter (its answer does not depend on the job's identity).
type countFilter struct {
	n       map[string]int
	uniform bool
}

func (countFilter) Name() string { return "count-filter" }
func (f countFilter) Filter(_ *framework.Cycle, js *cluster.JobState, _ int, _ *cluster.NodeState) *framework.Status {
	f.n[js.Job.ID]++
	return nil
}
func (f countFilter) Uniform() bool                                              { return f.uniform }
func (countFilter) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

var _ framework.UniformFilter = countFilter{}

// TestQueueClassesOnGenericPath: on the generic placement path (a Filter
// of its own), jobs alike form a class, and the second of a class is not
// placed after the first failed, only when every Filter is uniform and a
// gang goes on one node only; otherwise every job is placed. The
// decisions are the same either way.
func TestQueueClassesOnGenericPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		uniform bool
		gang    placement.Gang
		// want: jobs whose placement the filter was asked about in the
		// first cycle (a, b, c alike and too big; d fits).
		want []string
	}{
		{"uniform, one node only", true, placement.OneNodeOnly, []string{"a", "d"}},
		{"not uniform", false, placement.OneNodeOnly, []string{"a", "b", "c", "d"}},
		{"uniform, per replica", true, placement.PerReplica, []string{"a", "b", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := countFilter{n: map[string]int{}, uniform: tc.uniform}
			rt, err := framework.New(framework.Profile{Name: "q", Filter: []framework.Filter{f}, Gang: tc.gang})
			if err != nil {
				t.Fatal(err)
			}
			jobs := map[string]*cluster.Job{"a": job("a", 4, 2), "b": job("b", 4, 2), "c": job("c", 4, 2), "d": job("d", 1, 1)}
			w := newWorld().node("n0", 3).node("n1", 3).pending(jobs["a"], jobs["b"], jobs["c"], jobs["d"])
			w.s.Cycle++
			got := summary(rt.Schedule(w.s))
			if d := gocmp.Diff([]string{"wait a", "wait b", "wait c", "start d [0]"}, got); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			var asked []string
			for _, id := range []string{"a", "b", "c", "d"} {
				if f.n[id] > 0 {
					asked = append(asked, id)
				}
			}
			if d := gocmp.Diff(tc.want, asked); d != "" {
				t.Errorf("jobs the filter was asked about (-want +got):\n%s", d)
			}
		})
	}
}

// TestWaitOnlyWhenReasonChanges: a job that cannot start gets a Wait the
// first time, and not again while the executor shows that reason (both
// executors take such a Wait as no change); a job whose shown reason is
// another gets one. Without the scheduling queue every job is tried every
// cycle, so the second cycle tries both again.
func TestWaitOnlyWhenReasonChanges(t *testing.T) {
	rt, err := framework.New(framework.Profile{Name: "q", Score: pack()})
	if err != nil {
		t.Fatal(err)
	}
	rt.WithoutQueue()
	w := newWorld().node("n0", 2).pending(job("a", 4, 1), job("b", 4, 1))
	w.s.Cycle++
	first := rt.Schedule(w.s)
	if d := gocmp.Diff([]string{"wait a", "wait b"}, summary(first)); d != "" {
		t.Fatalf("first cycle (-want +got):\n%s", d)
	}
	// The executor applies the Waits; then b's reason is changed behind
	// the scheduler's back.
	showWaits(w, first)
	for js := range w.s.Pending.All() {
		if js.Job.ID == "b" {
			js.Reason = "something else"
		}
	}
	w.s.Cycle++
	if d := gocmp.Diff([]string{"wait b"}, summary(rt.Schedule(w.s))); d != "" {
		t.Errorf("second cycle (-want +got):\n%s", d)
	}
}

// recallOne is an Admit plugin that admits every job and names the job
// *id as the one it treats apart in each cycle (nil: none).
type recallOne struct{ id *string }

func (recallOne) Name() string                                                { return "recall-one" }
func (recallOne) Admit(*framework.Cycle, *cluster.JobState) *framework.Status { return nil }
func (recallOne) Requeue(*framework.Cycle, *cluster.JobState) framework.Events {
	return 0
}
func (r recallOne) Recall(c *framework.Cycle) *cluster.JobState {
	for js := range c.Snap.Pending.All() {
		if js.Job.ID == *r.id {
			return js
		}
	}
	return nil
}

var _ framework.Recaller = recallOne{}

// TestQueueRecall: a parked job that a Recaller names is tried in that
// cycle (and parked again when it fails), the other parked jobs are not.
func TestQueueRecall(t *testing.T) {
	sizes := countSizes{n: map[string]int{}}
	id := ""
	rt, err := framework.New(framework.Profile{Name: "q", QueueSort: idOrder{}, Size: sizes,
		Admit: []framework.Admit{recallOne{id: &id}}, Score: pack()})
	if err != nil {
		t.Fatal(err)
	}
	// a and b are of different classes, so that each is placed.
	w := newWorld().node("n0", 2).pending(job("a", 4, 1), job("b", 3, 1))
	cycle := func() {
		w.s.Cycle++
		rt.Schedule(w.s)
	}
	cycle() // both fail and are parked
	cycle() // nothing is tried
	if d := gocmp.Diff(map[string]int{"a": 1, "b": 1}, sizes.n); d != "" {
		t.Errorf("cycles 1-2 sizes (-want +got):\n%s", d)
	}
	id = "b"
	cycle()
	cycle()
	id = ""
	cycle()
	if d := gocmp.Diff(map[string]int{"a": 1, "b": 3}, sizes.n); d != "" {
		t.Errorf("cycles 3-5, b recalled in 3 and 4 (-want +got):\n%s", d)
	}
}

// onePer is an Admit plugin that blocks every job once one started in the
// cycle, counting the jobs it was asked about; closer says whether it is
// a Closer.
type onePer struct {
	n      *int
	closer bool
}

func (onePer) Name() string { return "one-per" }
func (o onePer) Admit(c *framework.Cycle, _ *cluster.JobState) *framework.Status {
	*o.n++
	if len(c.Started()) > 0 {
		return framework.NewStatus(framework.Blocked, "one per cycle")
	}
	return nil
}
func (o onePer) Closed(c *framework.Cycle) bool                             { return o.closer && len(c.Started()) > 0 }
func (onePer) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

var _ framework.Closer = onePer{}

// TestQueueCloser: when the first Admit plugin is a Closer that is closed
// after a start, the walk ends there: the next job is not asked about,
// and the actions are those of the walk that asks it and is Blocked.
func TestQueueCloser(t *testing.T) {
	for _, tc := range []struct {
		name   string
		closer bool
		admits int
	}{
		{"closer", true, 1},
		{"not closed", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			rt, err := framework.New(framework.Profile{Name: "q", QueueSort: idOrder{},
				Admit: []framework.Admit{onePer{n: &n, closer: tc.closer}}, Score: pack()})
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld().node("n0", 8).pending(job("a", 1, 1), job("b", 1, 1), job("c", 1, 1))
			w.s.Cycle++
			if d := gocmp.Diff([]string{"start a [0]"}, summary(rt.Schedule(w.s))); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			if n != tc.admits {
				t.Errorf("Admit asked about %d jobs, want %d", n, tc.admits)
			}
		})
	}
}

// hintPreempt is a Preempt plugin that never makes room, counts the jobs
// offered to it, and asks, for every job, EventRunningHint with a hint
// that holds for job j when a running job named "for-"+j.ID moved.
type hintPreempt struct{ offered map[string]int }

func (hintPreempt) Name() string { return "hint-preempt" }
func (h hintPreempt) Preempt(_ *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	h.offered[js.Job.ID]++
	return framework.NewStatus(framework.Unschedulable, "")
}
func (hintPreempt) Requeue(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventRunningHint
}
func (hintPreempt) RunningHint(_ *framework.Cycle, j *cluster.Job, r *cluster.JobState) bool {
	return r.Job.ID == "for-"+j.ID
}

// plainHint asks EventRunningHint without being a RunningHinter: it
// counts as EventRunning.
type plainHint struct{}

func (plainHint) Name() string { return "plain-hint" }
func (plainHint) Preempt(*framework.Cycle, *cluster.JobState, *framework.Status) *framework.Status {
	return framework.NewStatus(framework.Unschedulable, "")
}
func (plainHint) Requeue(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventRunningHint
}

var _ framework.RunningHinter = hintPreempt{}

// TestRunningHint: a job set aside with EventRunningHint comes back when a
// running job its plugin's hint names starts or changes, not for other
// changes of the running jobs; a plugin that asks it without a hint gets
// EventRunning.
func TestRunningHint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool
		// want: the jobs offered to Preempt in each of cycles 2 to 5.
		want [][]string
	}{
		{"hinted", false, [][]string{{"a"}, nil, {"b"}, nil}},
		{"without a hint", true, [][]string{{"a", "b"}, nil, {"a", "b"}, {"a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hintPreempt{offered: map[string]int{}}
			p := framework.Profile{Name: "q", QueueSort: idOrder{}, Score: pack(), Preempt: []framework.Preempt{h}}
			if tc.plain {
				p.Preempt = append(p.Preempt, plainHint{})
			}
			rt, err := framework.New(p)
			if err != nil {
				t.Fatal(err)
			}
			if !rt.Queueing() {
				t.Fatal("the profile does not queue")
			}
			w := newWorld().node("n0", 0).node("n1", 0).pending(job("a", 4, 1), job("b", 4, 1))
			w.running(job("x", 8, 1), 0, 0).running(job("y", 8, 1), 1, 0)
			cycle := func() []string {
				clear(h.offered)
				w.s.Cycle++
				rt.Schedule(w.s)
				var got []string
				for _, id := range []string{"a", "b"} {
					if h.offered[id] > 0 {
						got = append(got, id)
					}
				}
				return got
			}
			if d := gocmp.Diff([]string{"a", "b"}, cycle()); d != "" {
				t.Fatalf("cycle 1 (-want +got):\n%s", d)
			}
			// Cycle 2: a job named for a starts (on no node: no room
			// changes); cycle 3: nothing moves; cycle 4: x changes phase
			// and a job named for b starts; cycle 5: y changes phase.
			var got [][]string
			w.s.Running = append(w.s.Running, &cluster.JobState{Job: job("for-a", 1, 1), Phase: cluster.Running})
			got = append(got, cycle())
			got = append(got, cycle())
			w.s.Running[0].Phase = cluster.Migrating
			w.s.Running = append(w.s.Running, &cluster.JobState{Job: job("for-b", 1, 1), Phase: cluster.Running})
			got = append(got, cycle())
			w.s.Running[1].Phase = cluster.Migrating
			got = append(got, cycle())
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("jobs offered to Preempt in cycles 2 to 5 (-want +got):\n%s", d)
			}
		})
	}
}

// countPlace is a Place plugin that places per replica with placement.Place
// (pack) and counts the jobs it was asked to place; class says whether it
// declares itself a ClassPlace.
type countPlace struct {
	n     map[string]int
	class bool
}

func (countPlace) Name() string { return "count-place" }
func (p countPlace) Place(_ *framework.Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *framework.Status) {
	p.n[js.Job.ID]++
	pl, err := placement.Place(l, js.Job, counts, placement.Options{Strategy: placement.Pack})
	if err != nil {
		return nil, framework.NewStatus(framework.Unschedulable, "no room")
	}
	return pl, nil
}
func (p countPlace) ClassPlace() bool                                           { return p.class }
func (countPlace) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

var _ framework.ClassPlace = countPlace{}

// TestQueueClassesWithClassPlace: with a Place plugin that is a
// ClassPlace, jobs alike form a class as on the fast path: after the
// first failed, the others are not placed; when room comes back the class
// is tried once (a dry run) and its members one at a time until one
// fails. Without the promise every parked job is placed again when room
// comes back. Either way the actions are those of the Runtime without its
// queue.
func TestQueueClassesWithClassPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		class bool
		// want: how many times each job was placed over the three cycles.
		want map[string]int
	}{
		// a: cycle 1, the dry run and its start in cycle 3; b fails in
		// cycle 3 and c, alike, is not placed again.
		{"class place", true, map[string]int{"a": 3, "b": 1, "d": 1}},
		{"not class place", false, map[string]int{"a": 2, "b": 2, "c": 2, "d": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(p countPlace, queue bool) [][]string {
				rt, err := framework.New(framework.Profile{Name: "q", Place: p})
				if err != nil {
					t.Fatal(err)
				}
				if !queue {
					rt.WithoutQueue()
				}
				jobs := map[string]*cluster.Job{"a": job("a", 4, 2), "b": job("b", 4, 2), "c": job("c", 4, 2), "d": job("d", 1, 1)}
				w := newWorld().node("n0", 3).node("n1", 3).pending(jobs["a"], jobs["b"], jobs["c"], jobs["d"])
				var out [][]string
				for k := range 3 {
					if k == 2 {
						w.s.Nodes[1].Allocated = resource.Vector{} // room on n1: 8 GPUs
					}
					out = append(out, step(rt, w, jobs))
				}
				return out
			}
			p := countPlace{n: map[string]int{}, class: tc.class}
			got := run(p, true)
			want := run(countPlace{n: map[string]int{}, class: tc.class}, false)
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("actions with the queue (-without +with):\n%s", d)
			}
			if len(got[2]) == 0 || got[2][0] != "start a [1 1]" {
				t.Errorf("cycle 3: %q, want a started first on the room freed", got[2])
			}
			if d := gocmp.Diff(tc.want, p.n); d != "" {
				t.Errorf("jobs placed (-want +got):\n%s", d)
			}
		})
	}
}

// evictFor is a Preempt plugin that, from cycle 2 on, makes room for job
// id by evicting running job victim at once; it declines every other job.
// It asks for id every cycle (its answer depends on the cycle).
type evictFor struct{ id, victim string }

func (evictFor) Name() string { return "evict-for" }
func (e evictFor) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	if js.Job.ID != e.id || c.Snap.Cycle < 2 {
		return framework.NewStatus(framework.Unschedulable, "")
	}
	for _, r := range c.Snap.Running {
		if r.Job.ID == e.victim {
			c.St.Evict(r, 0, js.Job.ID, "test", true)
			return nil
		}
	}
	return framework.NewStatus(framework.Unschedulable, "")
}
func (e evictFor) Requeue(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js.Job.ID == e.id {
		return framework.RequeueAlways
	}
	return 0
}

// TestQueueMergedMembersNotCandidatesTwice: in a cycle where a class is
// awake, a Preempt plugin gives room back, so the parked jobs not yet
// passed are merged back into the candidates (a2 and a3, members of the
// awake class of a1). When a1, the class's representative, then starts,
// the class's next member must not be made a candidate again: a2 and a3
// already are, and are no longer parked. The actions are those of the
// Runtime without its queue.
func TestQueueMergedMembersNotCandidatesTwice(t *testing.T) {
	run := func(queue bool) [][]string {
		rt, err := framework.New(framework.Profile{Name: "q", QueueSort: idOrder{}, Score: pack(),
			Preempt: []framework.Preempt{evictFor{id: "a0", victim: "r"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !queue {
			rt.WithoutQueue()
		}
		jobs := map[string]*cluster.Job{"a0": job("a0", 6, 1), "a1": job("a1", 4, 1), "a2": job("a2", 4, 1), "a3": job("a3", 4, 1)}
		w := newWorld().node("n0", 0).node("n1", 0).running(job("r", 8, 1), 0, 0).
			pending(jobs["a0"], jobs["a1"], jobs["a2"], jobs["a3"])
		var out [][]string
		for k := range 2 {
			if k == 1 {
				// Room on n1 for one of a1, a2, a3 (alike): their class
				// wakes; a0 needs more and evicts r from n0.
				w.s.Nodes[1].Allocated = resource.New(4, 4, 4)
			}
			out = append(out, step(rt, w, jobs))
		}
		return out
	}
	want := run(false)
	got := run(true)
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("actions with the queue (-without +with):\n%s", d)
	}
	if len(got) < 2 || !contains(got[1], "start a1 [1]") {
		t.Errorf("cycle 2: %q, want a1 started on n1", got)
	}
}
