package framework_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// echoRecorder is a Preempt plugin that records, per job, the Echo it
// was given (as a number: equal Echoes get equal numbers), and commits
// (nominates nothing and returns Wait) for the job named commit. It asks
// for every job every cycle, as a plugin that draws random numbers does.
type echoRecorder struct {
	commit string
	seen   map[framework.Echo]int
	got    map[string]int // 0: no Echo
	// outside: Echo was reported outside Preempt (Rebalance).
	outside bool
}

func (*echoRecorder) Name() string { return "echo-recorder" }
func (*echoRecorder) Requeue(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.RequeueAlways
}

func (r *echoRecorder) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	if e, ok := c.Echo(); ok {
		if _, ok := r.seen[e]; !ok {
			r.seen[e] = len(r.seen) + 1
		}
		r.got[js.Job.ID] = r.seen[e]
	} else {
		r.got[js.Job.ID] = 0
	}
	if js.Job.ID == r.commit {
		return framework.NewStatus(framework.Wait, "committed")
	}
	return framework.NewStatus(framework.Unschedulable, "")
}

func (r *echoRecorder) Rebalance(c *framework.Cycle) *framework.Status {
	if _, ok := c.Echo(); ok {
		r.outside = true
	}
	return nil
}

// TestEcho: jobs alike tried one after another in a cycle share an Echo;
// a job of another shape, a commit between, a new cycle or a Runtime
// without its scheduling queue each break it; and it is not reported
// outside Preempt.
func TestEcho(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noQueue bool
		// want is, per job, the number of its Echo (0: none).
		want map[string]int
	}{
		// a1, a2 and a3 are alike; b has another demand; x commits.
		{name: "with the queue", want: map[string]int{"a1": 1, "a2": 1, "b": 2, "x": 3, "a3": 4}},
		{name: "without it", noQueue: true, want: map[string]int{"a1": 0, "a2": 0, "b": 0, "x": 0, "a3": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &echoRecorder{commit: "x", seen: map[framework.Echo]int{}, got: map[string]int{}}
			rt, err := framework.New(framework.Profile{Name: "t", Preempt: []framework.Preempt{rec}, Rebalance: []framework.Rebalance{rec}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.noQueue {
				rt.WithoutQueue()
			}
			w := newWorld().node("n0", 8).pending(job("a1", 16, 1), job("a2", 16, 1), job("b", 12, 1), job("x", 10, 1), job("a3", 16, 1))
			w.s.Cycle = 1
			rt.Schedule(w.s)
			if d := cmp.Diff(tc.want, rec.got); d != "" {
				t.Errorf("Echo numbers per job (-want +got):\n%s", d)
			}
			// The next cycle starts a new epoch: a1 gets a new Echo.
			first := rec.got["a1"]
			w.s.Cycle = 2
			rt.Schedule(w.s)
			if first != 0 && rec.got["a1"] == first {
				t.Errorf("a1 kept its Echo %d in the next cycle", first)
			}
			if rec.outside {
				t.Error("Echo reported outside Preempt")
			}
		})
	}
}

// drawer draws through Cycle.DrawLater or at once, then n numbers it
// returns, as a Rebalance plugin.
type drawer struct {
	later bool
	ns    []int
	got   []int
}

func (*drawer) Name() string { return "drawer" }
func (d *drawer) Rebalance(c *framework.Cycle) *framework.Status {
	for _, n := range d.ns {
		if d.later {
			c.DrawLater(n)
			continue
		}
		for k := n; k > 0; k-- {
			c.Rand().IntN(k)
		}
	}
	d.got = d.got[:0]
	for range 4 {
		d.got = append(d.got, c.Rand().IntN(1000))
	}
	return nil
}

// TestDrawLater: draws put off with Cycle.DrawLater are made before Rand
// next hands out the source, so whoever draws next gets what it would
// have got had they been made at once.
func TestDrawLater(t *testing.T) {
	for _, ns := range [][]int{nil, {1}, {5}, {5, 5, 3}, {7, 0, 2, 2, 2}} {
		var got [2][]int
		for k, later := range []bool{false, true} {
			d := &drawer{later: later, ns: ns}
			rt, err := framework.New(framework.Profile{Name: "t", Rebalance: []framework.Rebalance{d}})
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld().node("n0", 8)
			w.s.Cycle = 3
			rt.Schedule(w.s)
			got[k] = d.got
		}
		if d := cmp.Diff(got[0], got[1]); d != "" {
			t.Errorf("draws %v: numbers after them differ (-at once +later):\n%s", ns, d)
		}
	}
}

// flipSort orders jobs by a key the test sets per job ID; its stamp says
// when the keys changed.
type flipSort struct {
	key   map[string]float64
	stamp int
}

func (*flipSort) Name() string                                                 { return "flip-sort" }
func (*flipSort) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }
func (f *flipSort) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	return framework.CompareKeys(f.Key(c, a), f.Key(c, b))
}
func (f *flipSort) Key(_ *framework.Cycle, js *cluster.JobState) framework.SortKey {
	return framework.SortKey{f.key[js.Job.ID]}
}
func (f *flipSort) KeyStamp(*framework.Cycle) any { return f.stamp }

// skipRecorder is a Preempt plugin and Skipper: every job but probe is
// set aside with RequeueSkip; it logs its Preempt calls and Skips.
type skipRecorder struct{ log []string }

func (*skipRecorder) Name() string { return "skip-recorder" }
func (*skipRecorder) Requeue(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js.Job.ID == "probe" {
		return framework.RequeueAlways
	}
	return framework.RequeueSkip
}
func (r *skipRecorder) Preempt(_ *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	r.log = append(r.log, "preempt "+js.Job.ID)
	return framework.NewStatus(framework.Unschedulable, "")
}
func (r *skipRecorder) Skip(_ *framework.Cycle, js *cluster.JobState) {
	r.log = append(r.log, "skip "+js.Job.ID)
}

// TestSkipTurns: a job set aside for a Skipper is skipped at its turn in
// the walk's order: before the Preempt plugins of a later job, after
// those of an earlier one, and at the end of the walk for the rest. The
// order is the sort's in each cycle, also after its keys change (a
// StableKeys stamp), when the jobs set aside must be put in order again.
func TestSkipTurns(t *testing.T) {
	sortBy := &flipSort{key: map[string]float64{"a": 1, "probe": 2, "b": 3}}
	rec := &skipRecorder{}
	rt, err := framework.New(framework.Profile{Name: "t", QueueSort: sortBy, Preempt: []framework.Preempt{rec}})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld().node("n0", 8).pending(job("b", 16, 1), job("probe", 16, 1), job("a", 16, 1))
	cycle := func(n uint64) []string {
		rec.log = nil
		w.s.Cycle = n
		rt.Schedule(w.s)
		return rec.log
	}
	steps := []struct {
		name string
		flip bool
		want []string
	}{
		{"every job tried", false, []string{"preempt a", "preempt probe", "preempt b"}},
		{"a and b set aside: a before probe, b at the end", false, []string{"skip a", "preempt probe", "skip b"}},
		{"keys flipped: b before probe, a at the end", true, []string{"skip b", "preempt probe", "skip a"}},
	}
	for i, st := range steps {
		if st.flip {
			sortBy.key["a"], sortBy.key["b"] = 3, 1
			sortBy.stamp++
		}
		if d := cmp.Diff(st.want, cycle(uint64(i+1))); d != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, d)
		}
	}
}
