package oasis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
)

// psWorld is a fluent snapshot builder for parameter-server jobs: worker
// servers of a few GPUs and PS servers, running jobs at given placements
// (their demand counted on the nodes), pending jobs in queue order.
type psWorld struct{ s *cluster.Snapshot }

func newPSWorld(now float64) *psWorld {
	return &psWorld{s: &cluster.Snapshot{Now: now, Pending: cluster.NewQueue()}}
}

func (w *psWorld) node(name, role string, gpus int64) *psWorld {
	i := len(w.s.Nodes)
	w.s.Nodes = append(w.s.Nodes, &cluster.NodeState{Index: i, Ready: true,
		Node: cluster.Node{Name: name, Role: role, Capacity: vec(32, 64, gpus, 1000, 10000)}})
	return w
}

// worker and ps add a worker server with gpus GPUs and a PS server.
func (w *psWorld) worker(name string, gpus int64) *psWorld { return w.node(name, RoleWorker, gpus) }
func (w *psWorld) ps(name string) *psWorld                 { return w.node(name, RolePS, 0) }

func (w *psWorld) running(j *cluster.Job, p ...cluster.Assignment) *psWorld {
	js := cluster.NewJobState(j)
	js.Phase = cluster.Running
	js.Placement = p
	js.Rate = 1
	w.s.Running = append(w.s.Running, js)
	for _, a := range p {
		n := w.s.Nodes[a.Node]
		n.Allocated = n.Allocated.Add(j.Groups[a.Group].Demand)
		if !slices.Contains(n.Jobs, js) {
			n.Jobs = append(n.Jobs, js)
		}
	}
	return w
}

func (w *psWorld) pending(js ...*cluster.Job) *psWorld {
	for _, j := range js {
		w.s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
	}
	return w
}

// wk and pk are a worker and a PS replica on node n.
func wk(n int) cluster.Assignment { return cluster.Assignment{Group: GWorker, Node: n} }
func pk(n int) cluster.Assignment { return cluster.Assignment{Group: GPS, Node: n} }

// sized returns a one-hour-per-worker-slot PS job (psJob) with the given
// requested worker and PS counts.
func sized(id string, submit float64, workers, pss int, u cluster.Utility) *cluster.Job {
	j := psJob(id, submit, 4, 8, 100, 400, u)
	j.Groups[GWorker].Replicas, j.Groups[GPS].Replicas = workers, pss
	return j
}

// summary renders actions as short strings for cmp.Diff; Waits are left
// out unless waits is set.
func summary(acts []policy.Action, waits bool) []string {
	place := func(p cluster.Placement) string {
		var b strings.Builder
		for i, a := range p {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%c%d", "WP"[a.Group], a.Node)
		}
		return b.String()
	}
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case policy.Start:
			out = append(out, fmt.Sprintf("start %s [%s]", a.Job, place(a.Placement)))
		case policy.Preempt:
			out = append(out, fmt.Sprintf("preempt %s: %s", a.Job, a.Reason))
		case policy.Resize:
			out = append(out, fmt.Sprintf("resize %s [%s]: %s", a.Job, place(a.Placement), a.Reason))
		case policy.Reject:
			out = append(out, fmt.Sprintf("reject %s: %s", a.Job, a.Reason))
		case policy.SetLabel:
			out = append(out, fmt.Sprintf("label %s %s", a.Job, a.Key))
		case policy.Wait:
			if waits {
				out = append(out, fmt.Sprintf("wait %s: %s", a.Job, a.Reason))
			}
		default:
			out = append(out, policy.Kind(a)+" "+a.Target())
		}
	}
	return out
}

// transitionTo is a test plugin: it holds every pending job and moves the
// jobs to fixed targets with Transition, noting the GPUs left free.
type transitionTo struct {
	targets map[string]cluster.Placement
	keep    bool
	freeGPU []int64
}

func (*transitionTo) Name() string { return "transition-to" }
func (*transitionTo) Admit(*framework.Cycle, *cluster.JobState) *framework.Status {
	return framework.NewStatus(framework.Wait, "held")
}
func (p *transitionTo) Rebalance(c *framework.Cycle) *framework.Status {
	jobs := activeJobs(c.Snap)
	targets := make([]cluster.Placement, len(jobs))
	for i, js := range jobs {
		targets[i] = p.targets[js.Job.ID]
	}
	Transition(c.St, jobs, targets, func(*cluster.JobState) bool { return p.keep })
	for i := range c.Snap.Nodes {
		p.freeGPU = append(p.freeGPU, c.St.Now().Free(i)[resource.GPU])
	}
	return nil
}

func TestTransition(t *testing.T) {
	u := cluster.Sigmoid{G1: 1}
	a, b := sized("a", 0, 1, 1, u), sized("b", 0, 1, 1, u)
	// wa and wb hold two workers each; pa holds every PS.
	base := func() *psWorld { return newPSWorld(0).worker("wa", 2).worker("wb", 2).ps("pa") }
	tests := []struct {
		name    string
		world   *psWorld
		targets map[string]cluster.Placement
		keep    bool
		want    []string
		freeGPU []int64
	}{
		{"a pending job with a target starts", base().pending(b),
			map[string]cluster.Placement{"b": {wk(0), pk(2)}}, false,
			[]string{"start b [W0 P2]"}, []int64{1, 2, 0}},
		{"a running job without a target stops", base().running(a, wk(0), wk(0), pk(2)),
			nil, false,
			[]string{"preempt a: schedule: no replicas this slot"}, []int64{2, 2, 0}},
		{"a kept job without a target stays", base().running(a, wk(0), wk(0), pk(2)),
			nil, true,
			nil, []int64{0, 2, 0}},
		{"a job at its target is left alone", base().running(a, wk(0), pk(2)),
			map[string]cluster.Placement{"a": {wk(0), pk(2)}}, false,
			nil, []int64{1, 2, 0}},
		{"grows in place", base().running(a, wk(0), pk(2)),
			map[string]cluster.Placement{"a": {wk(0), wk(1), pk(2)}}, false,
			[]string{"resize a [W0 W1 P2]: schedule: grow"}, []int64{1, 1, 0}},
		{"shrinks", base().running(a, wk(0), wk(0), pk(2)),
			map[string]cluster.Placement{"a": {wk(0), pk(2)}}, false,
			[]string{"resize a [W0 P2]: schedule: shrink"}, []int64{1, 2, 0}},
		{"shrinks to what it keeps, then grows", base().running(a, wk(0), wk(0), pk(2)),
			map[string]cluster.Placement{"a": {wk(0), wk(1), pk(2)}}, false,
			[]string{"resize a [W0 P2]: schedule: shrink", "resize a [W0 W1 P2]: schedule: grow"}, []int64{1, 1, 0}},
		{"moves to other servers by stopping and starting", base().running(a, wk(0), wk(0), pk(2)),
			map[string]cluster.Placement{"a": {wk(1), wk(1), pk(2)}}, false,
			[]string{"preempt a: schedule: moves to other servers", "start a [W1 W1 P2]"}, []int64{2, 0, 0}},
		{"every shrink comes before any start", base().running(b, wk(0), wk(0), pk(2)).pending(a),
			map[string]cluster.Placement{"a": {wk(0), pk(2)}, "b": {wk(0), pk(2)}}, false,
			[]string{"resize b [W0 P2]: schedule: shrink", "start a [W0 P2]"}, []int64{0, 2, 0}},
		{"a target that does not fit is left out", base().running(a, wk(0), wk(0), pk(2)).pending(b),
			map[string]cluster.Placement{"a": {wk(0), wk(0), pk(2)}, "b": {wk(0), pk(2)}}, false,
			nil, []int64{0, 2, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := &transitionTo{targets: tc.targets, keep: tc.keep}
			rt := NewPolicy(framework.Profile{Name: "t", Admit: []framework.Admit{pl}, Rebalance: []framework.Rebalance{pl}})
			got := summary(rt.Schedule(tc.world.s), false)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			// the PS server has no GPUs: its free GPUs stay 0
			if d := cmp.Diff(tc.freeGPU, pl.freeGPU); d != "" {
				t.Errorf("free GPUs after (-want +got):\n%s", d)
			}
		})
	}
}

func TestArrivalOrder(t *testing.T) {
	mk := func(id string, submit float64) *cluster.JobState {
		return cluster.NewJobState(sized(id, submit, 1, 1, nil))
	}
	jobs := []*cluster.JobState{mk("late", 20), mk("early", 10), mk("early-too", 10), mk("first", 0)}
	slices.SortStableFunc(jobs, func(a, b *cluster.JobState) int { return ArrivalOrder{}.Compare(nil, a, b) })
	var got []string
	for _, js := range jobs {
		got = append(got, js.Job.ID)
	}
	if d := cmp.Diff([]string{"first", "early", "early-too", "late"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

// TestRoundRobin places jobs with the ps-round-robin Score plugin: each
// replica goes to the first eligible server with room after the node the
// group's last replica took, across jobs and cycles.
func TestRoundRobin(t *testing.T) {
	u := cluster.Sigmoid{G1: 1}
	bigPS := sized("big-ps", 0, 2, 1, u)
	bigPS.Groups[GPS].Demand = vec(64, 4, 0, 5, 100) // more CPUs than pa has
	tests := []struct {
		name   string
		cycles [][]*cluster.Job // pending jobs per cycle
		want   [][]string
	}{
		{"continues where the last replica went",
			[][]*cluster.Job{{sized("x", 0, 2, 1, u), sized("y", 0, 2, 1, u)}},
			[][]string{{"start x [W0 W1 P3]", "start y [W2 W0 P3]"}}},
		{"the cursor is kept across cycles",
			[][]*cluster.Job{{sized("x", 0, 1, 1, u)}, {sized("y", 0, 1, 1, u)}},
			[][]string{{"start x [W0 P3]"}, {"start y [W1 P3]"}}},
		{"a job that does not fit still moves the cursor",
			[][]*cluster.Job{{bigPS, sized("small", 0, 1, 1, u)}},
			[][]string{{"start small [W2 P3]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := NewPolicy(framework.Profile{Name: "rr", Filter: []framework.Filter{framework.NodeRole{}},
				Score: []framework.WeightedScore{{Score: &RoundRobin{}, Weight: 1}}})
			for k, jobs := range tc.cycles {
				w := newPSWorld(0).worker("wa", 4).worker("wb", 4).worker("wc", 4).ps("pa").pending(jobs...)
				got := summary(rt.Schedule(w.s), false)
				if d := cmp.Diff(tc.want[k], got); d != "" {
					t.Errorf("cycle %d (-want +got):\n%s", k, d)
				}
			}
		})
	}
}

// TestFIFO covers the ps-fifo preset's plugins: head-of-line blocking
// and the rejection of a job that would never fit.
func TestFIFO(t *testing.T) {
	u := cluster.Sigmoid{G1: 1}
	tests := []struct {
		name    string
		pending []*cluster.Job
		want    []string
	}{
		{"starts in queue order while they fit", []*cluster.Job{sized("a", 0, 2, 1, u), sized("b", 0, 1, 1, u)},
			[]string{"start a [W0 W0 P1]", "start b [W0 P1]"}},
		{"the head blocks the queue", []*cluster.Job{sized("a", 0, 2, 1, u), sized("wide", 0, 3, 1, u), sized("b", 0, 1, 1, u)},
			[]string{"start a [W0 W0 P1]", "wait wide"}},
		{"a job larger than the empty cluster is rejected, not waited for", []*cluster.Job{sized("huge", 0, 5, 1, u), sized("b", 0, 1, 1, u)},
			[]string{"reject huge: ps-fifo: fixed size exceeds the empty cluster", "start b [W0 P1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newPSWorld(0).worker("wa", 4).ps("pa").pending(tc.pending...)
			got := summary(NewPolicy(FIFOProfile()).Schedule(w.s), true)
			for i, g := range got { // wait reasons are the placement's
				if strings.HasPrefix(g, "wait ") {
					got[i], _, _ = strings.Cut(g, ":")
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}

// TestRRH covers the rrh preset: admission, pausing, order and resuming,
// in both start orders.
func TestRRH(t *testing.T) {
	keen := cluster.Sigmoid{G1: 10}                                 // no decay: always worth 5
	modest := cluster.Sigmoid{G1: 1}                                // always worth 0.5
	stale := cluster.Sigmoid{G1: 10, G2: 1.0 / 60, G3: 60}          // worth nothing an hour in
	urgent := cluster.Sigmoid{G1: 10, G2: 1.0 / 3600, G3: 5 * 3600} // worth 7.3 if started now
	later := cluster.Sigmoid{G1: 10, G2: 1.0 / 3600, G3: 7 * 3600}  // worth 2.7 done at 8 h, 0.07 at 12 h
	both := []RRHOrder{RRHArrival, RRHValue}
	// busy: both GPUs of wa taken by a job with 4 h left, an admitted job
	// needing both waiting ahead (4 h of work), and a new arrival.
	busy := func() *psWorld {
		return newPSWorld(0).worker("wa", 2).ps("pa").running(sized("run", 0, 2, 1, keen), wk(0), wk(0), pk(1)).
			pending(sized("ahead", 0, 2, 1, keen), sized("new", 0, 1, 1, later))
	}
	tests := []struct {
		name    string
		orders  []RRHOrder
		world   func() *psWorld
		decided []string // admitted before this cycle
		paused  []string
		want    []string
	}{
		{"rejects an arrival that gains too little", both,
			func() *psWorld {
				return newPSWorld(7200).worker("wa", 4).ps("pa").pending(sized("late", 0, 1, 1, stale))
			},
			nil, nil,
			[]string{"reject late: rrh: gain 1.56e-155 - delay cost 0 below threshold"}},
		{"rejects an arrival whose fixed size never fits", both,
			func() *psWorld {
				return newPSWorld(0).worker("wa", 2).ps("pa").pending(sized("huge", 0, 3, 1, keen))
			},
			nil, nil,
			[]string{"reject huge: rrh: fixed size exceeds the empty cluster"}},
		{"pauses a job without future gain while an admitted job waits, and starts that job in its room", both,
			func() *psWorld {
				return newPSWorld(7200).worker("wa", 2).ps("pa").
					running(sized("old", 0, 2, 1, stale), wk(0), wk(0), pk(1)).pending(sized("new", 7200, 2, 1, keen))
			},
			nil, nil,
			[]string{"preempt old: rrh: no future gain", "start new [W0 W0 P1]"}},
		{"arrival order: an arrival's completion is projected behind the admitted jobs ahead (done at 12 h: rejected)", []RRHOrder{RRHArrival},
			busy, []string{"ahead"}, nil,
			[]string{"reject new: rrh: gain 0.0677 - delay cost 0 below threshold"}},
		{"value order: an arrival may start when the running jobs free room (done at 8 h: admitted)", []RRHOrder{RRHValue},
			busy, []string{"ahead"}, nil,
			nil},
		{"arrival order: starts as they came, a job that does not fit holding those behind it", []RRHOrder{RRHArrival},
			func() *psWorld {
				return newPSWorld(0).worker("wa", 3).ps("pa").running(sized("run", 0, 2, 1, keen), wk(0), wk(0), pk(1)).
					pending(sized("wide", 0, 2, 1, keen), sized("calm", 0, 1, 1, keen))
			},
			nil, nil,
			nil},
		{"value order: a job that fits starts past one that does not", []RRHOrder{RRHValue},
			func() *psWorld {
				return newPSWorld(0).worker("wa", 3).ps("pa").running(sized("run", 0, 2, 1, keen), wk(0), wk(0), pk(1)).
					pending(sized("wide", 0, 2, 1, keen), sized("calm", 0, 1, 1, keen))
			},
			nil, nil,
			[]string{"start calm [W0 P1]"}},
		{"arrival order: starts in arrival order while they fit", []RRHOrder{RRHArrival},
			func() *psWorld {
				return newPSWorld(0).worker("wa", 3).ps("pa").pending(sized("wide", 0, 3, 1, keen),
					sized("calm", 1, 1, 1, keen), sized("tiny", 2, 1, 1, modest), sized("rush", 3, 1, 1, urgent))
			},
			nil, nil,
			// rush, projected behind wide, calm and tiny, ends too late
			[]string{"start wide [W0 W0 W0 P1]", "reject rush: rrh: gain 0.478 - delay cost 0 below threshold"}},
		{"value order: starts by utility per resource-second, skipping what does not fit", []RRHOrder{RRHValue},
			func() *psWorld {
				return newPSWorld(0).worker("wa", 3).ps("pa").pending(sized("wide", 0, 3, 1, keen),
					sized("calm", 0, 1, 1, keen), sized("tiny", 0, 1, 1, modest), sized("rush", 0, 1, 1, urgent))
			},
			nil, nil,
			[]string{"start rush [W0 P1]", "start calm [W0 P1]", "start tiny [W0 P1]"}},
		{"a paused job waits while an admitted job waits", both,
			func() *psWorld {
				return newPSWorld(0).worker("wa", 2).ps("pa").pending(sized("p", 0, 1, 1, keen), sized("q", 0, 1, 1, keen))
			},
			nil, []string{"p"},
			[]string{"start q [W0 P1]"}},
		{"a paused job resumes when no admitted job waits", both,
			func() *psWorld { return newPSWorld(0).worker("wa", 2).ps("pa").pending(sized("p", 0, 1, 1, keen)) },
			nil, []string{"p"},
			[]string{"start p [W0 P1]"}},
	}
	for _, tc := range tests {
		for _, order := range tc.orders {
			t.Run(order.String()+"/"+tc.name, func(t *testing.T) {
				r := NewRRH(0.1, order)
				w := tc.world()
				for _, id := range tc.decided {
					r.decided[id] = true
				}
				for _, id := range tc.paused {
					r.decided[id], r.paused[id] = true, true
				}
				got := summary(NewPolicy(RRHProfile(r)).Schedule(w.s), false)
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("actions (-want +got):\n%s", d)
				}
				for _, id := range tc.paused {
					if started := slices.Contains(got, "start "+id+" [W0 P1]"); started == r.paused[id] {
						t.Errorf("%s: started %v, still paused %v", id, started, r.paused[id])
					}
				}
			})
		}
	}
}

// TestRRHWaitReasons: under arrival order a job behind one that does not
// fit is told why it waits.
func TestRRHWaitReasons(t *testing.T) {
	keen := cluster.Sigmoid{G1: 10}
	w := newPSWorld(0).worker("wa", 3).ps("pa").running(sized("run", 0, 2, 1, keen), wk(0), wk(0), pk(1)).
		pending(sized("wide", 0, 2, 1, keen), sized("calm", 0, 1, 1, keen))
	var got []string
	for _, a := range NewPolicy(RRHProfile(NewRRH(0.1, RRHArrival))).Schedule(w.s) {
		if wt, ok := a.(policy.Wait); ok && wt.Job == "calm" {
			got = append(got, wt.Reason)
		}
	}
	if d := cmp.Diff([]string{"rrh: behind an admitted job that does not fit (arrival order)"}, got); d != "" {
		t.Errorf("calm's wait reason (-want +got):\n%s", d)
	}
}

// TestFIFOStarts: the projection of start times behind the queue on
// aggregate capacity.
func TestFIFOStarts(t *testing.T) {
	keen := cluster.Sigmoid{G1: 10}
	gpus := func(n int64) resource.Vector { return resource.New(0, 0, n) }
	job := func(id string, workers int) *cluster.JobState {
		j := sized(id, 0, workers, 1, keen)
		for g := range j.Groups {
			j.Groups[g].Demand = resource.Vector{}
		}
		j.Groups[GWorker].Demand = gpus(1)
		j.Work = 100
		return cluster.NewJobState(j)
	}
	inf := math.Inf(1)
	tests := []struct {
		name  string
		free  resource.Vector
		rel   []release
		queue []*cluster.JobState
		want  []float64
	}{
		{"fits now", gpus(2), nil, []*cluster.JobState{job("a", 2)}, []float64{0}},
		{"waits for the first release that makes room", gpus(1), []release{{50, gpus(1)}, {20, gpus(0)}},
			[]*cluster.JobState{job("a", 2)}, []float64{50}},
		{"no overtaking: the second waits for the first even if it fits now", gpus(1), []release{{50, gpus(3)}},
			[]*cluster.JobState{job("a", 3), job("b", 1)}, []float64{50, 50}},
		{"a job's own release frees room for the ones behind", gpus(2), nil,
			[]*cluster.JobState{job("a", 2), job("b", 2)}, []float64{0, 100}},
		{"a job that never fits holds every job behind it", gpus(2), nil,
			[]*cluster.JobState{job("a", 3), job("b", 1)}, []float64{inf, inf}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, fifoStarts(0, tc.free, tc.rel, tc.queue)); d != "" {
				t.Errorf("starts (-want +got):\n%s", d)
			}
		})
	}
}

// TestReallocators: ps-drf and dorm start pending jobs only through their
// reallocation, which runs again only when the set of jobs changes.
func TestReallocators(t *testing.T) {
	u := cluster.Sigmoid{G1: 1}
	for _, tc := range []struct {
		name    string
		profile framework.Profile
	}{
		{"ps-drf", DRFProfile(&DRF{})},
		{"dorm", DormProfile(&Dorm{Fair: 0.5, Adjust: 4})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := NewPolicy(tc.profile)
			w := newPSWorld(0).worker("wa", 2).ps("pa").pending(sized("a", 0, 1, 1, u))
			acts := rt.Schedule(w.s)
			if d := cmp.Diff([]string{"wait a", "start"}, kinds(acts)); d != "" {
				t.Errorf("first cycle (-want +got):\n%s", d)
			}
			// same job set: nothing to reallocate, the job is only held
			if d := cmp.Diff([]string{"wait a"}, kinds(rt.Schedule(w.s))); d != "" {
				t.Errorf("second cycle (-want +got):\n%s", d)
			}
		})
	}
}

// kinds lists the actions as "wait JOB" or their kind.
func kinds(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		if w, ok := a.(policy.Wait); ok {
			out = append(out, "wait "+w.Job)
			continue
		}
		out = append(out, policy.Kind(a))
	}
	return out
}

// TestOASiSPlugin: the Admit decisions (a reject with the payoff, an
// admission recorded as a label and a Wait) and the Rebalance start on
// the plan, in one cycle; a decided job is not decided again.
func TestOASiSPlugin(t *testing.T) {
	nodes := smallCluster(1, 1, 4)
	valuable := psJob("valuable", 0, 4, 4, 100, 400, cluster.Sigmoid{G1: 10})
	broken := psJob("broken", 0, 4, 4, 100, 400, cluster.Sigmoid{G1: 10})
	broken.PS = nil
	b := ComputeBounds([]*cluster.Job{valuable}, nodes, 3600, 6)
	o, err := New(Config{Slot: 3600, Slots: 6, Eta: 1, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewPolicy(OASiSProfile(o))
	s := snapshotOf(nodes, 0, broken, valuable)
	got := summary(rt.Schedule(s), true)
	p := o.Plan("valuable")
	if p == nil {
		t.Fatal("valuable not admitted")
	}
	want := []string{
		"reject broken: oasis: job broken: ps: missing parameter-server parameters",
		"label valuable " + LabelSchedule,
		"wait valuable: oasis: starts on its plan this slot",
		"start valuable [" + strings.TrimSpace(strings.Repeat("W0 ", len(p.placement(0))-countPS(p, 0))+strings.Repeat("P1 ", countPS(p, 0))) + "]",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if o.Admitted != 1 || o.Rejected != 1 {
		t.Errorf("admitted %d rejected %d, want 1 and 1", o.Admitted, o.Rejected)
	}
	// The next cycle sees the same pending job (say the start was
	// refused): it is not decided again.
	if got := summary(rt.Schedule(s), true); len(got) == 0 || strings.HasPrefix(got[0], "label") || o.Admitted != 1 {
		t.Errorf("second cycle %v, admitted %d: the job was decided again", got, o.Admitted)
	}
}

func countPS(p *Plan, t int) int {
	_, ps := p.Counts(t)
	return ps
}

// TestNodeListGrows: node indices are stable and new nodes are appended;
// OASiS's per-node state grows with the list, so a node that joins is
// planned on from the next cycle, and a node that leaves is not.
func TestNodeListGrows(t *testing.T) {
	long := func(id string, submit float64) *cluster.Job {
		return psJob(id, submit, 8, 4, 100, 400, cluster.Sigmoid{G1: 10, G2: 1.0 / 3600, G3: submit + 4*3600})
	}
	first := newPSWorld(0).worker("wa", 2).ps("pa").pending(long("a", 0))
	b := ComputeBounds([]*cluster.Job{long("a", 0)}, smallCluster(1, 1, 8), 3600, 10)
	o, err := New(Config{Slot: 3600, Slots: 10, Eta: 1, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewPolicy(OASiSProfile(o))
	acts := rt.Schedule(first.s)
	pa := o.Plan("a")
	if pa == nil {
		t.Fatalf("a not admitted: %v", summary(acts, true))
	}
	var aStart cluster.Placement
	for _, act := range acts {
		if st, ok := act.(policy.Start); ok && st.Job == "a" {
			aStart = st.Placement
		}
	}
	if len(aStart) == 0 {
		t.Fatalf("a not started in slot 0: %v", summary(acts, true))
	}

	// Slot 1: a node joins (index 2, after the PS server) and b arrives;
	// a holds wa's GPUs, so b's plan can only use the new server.
	second := newPSWorld(3600).worker("wa", 2).ps("pa").worker("wb", 8).running(long("a", 0), aStart...).pending(long("b", 3600))
	acts = rt.Schedule(second.s)
	pb := o.Plan("b")
	if pb == nil {
		t.Fatalf("b not admitted: %v", summary(acts, true))
	}
	if pb.Start > pa.End {
		t.Fatalf("b planned for slots %d-%d, only after a's plan (%d-%d): the new node was not used", pb.Start, pb.End, pa.Start, pa.End)
	}
	for i, sp := range pb.Slots {
		for _, c := range sp.W {
			if t0 := pb.Start + i; t0 <= pa.End && c.Node != 2 {
				t.Errorf("slot %d: b's workers on node %d, which a fills; want the new node 2", t0, c.Node)
			}
		}
	}
	if !slices.ContainsFunc(summary(acts, false), func(a string) bool { return strings.HasPrefix(a, "start b [W2") }) {
		t.Errorf("b not started on the new node: %v", summary(acts, false))
	}
	if got := o.alloc[pb.Start][2]; got.IsZero() {
		t.Error("the new node's allocation was not recorded")
	}
	if idle := Price(0, 8, o.bounds.UW[resource.GPU], o.bounds.LW, 1); !(o.UnitPrice(pb.Start, 2, resource.GPU, false) > idle) {
		t.Error("the new node's GPU price did not rise after b's admission")
	}
	var label string
	for _, act := range acts {
		if sl, ok := act.(policy.SetLabel); ok && sl.Job == "b" {
			label = sl.Value
		}
	}
	if !strings.Contains(label, "wb*") {
		t.Errorf("b's schedule label %q does not name the new node", label)
	}
	// The label decodes against a rebuilt node index (a restart).
	if _, err := DecodeSchedule(label, o.nodeIdx); err != nil {
		t.Error(err)
	}

	// Slot 2: the new node is gone; c arrives and is not planned on it.
	third := newPSWorld(7200).worker("wa", 2).ps("pa").worker("wb", 8).running(long("a", 0), aStart...).pending(long("c", 7200))
	third.s.Nodes[2].Gone, third.s.Nodes[2].Ready = true, false
	rt.Schedule(third.s)
	if pc := o.Plan("c"); pc != nil {
		for _, sp := range pc.Slots {
			for _, c := range sp.W {
				if c.Node == 2 {
					t.Errorf("c planned on the departed node: %+v", pc.Slots)
				}
			}
		}
	}
}

// TestRestoreLegacyLabel: a job labelled by an older scheduler under the
// key "oasis.schedule" keeps its plan across an upgrade.
func TestRestoreLegacyLabel(t *testing.T) {
	nodes := smallCluster(2, 1, 8)
	j := psJob("j", 0, 9, 4, 100, 250, cluster.Sigmoid{G1: 10, G2: 1.0 / 3600, G3: 3 * 3600})
	o, s := newTestPolicy(t, nodes, 8, j)
	enc := o.EncodeSchedule(o.BestSchedule(j, 0), s)
	for _, key := range []string{LabelSchedule, legacyLabelSchedule} {
		fresh, s := newTestPolicy(t, nodes, 8, j)
		js := cluster.NewJobState(j)
		js.Labels = map[string]string{key: enc}
		s.Pending.(*cluster.Queue).PushBack(js)
		fresh.restore(s)
		if fresh.Plan("j") == nil {
			t.Errorf("%s: plan not restored", key)
		}
	}
}

// TestPluginEntries: every plugin entry builds with no arguments, its
// description starts with the extension points it implements, and it
// refuses unknown arguments.
func TestPluginEntries(t *testing.T) {
	for _, e := range Plugins() {
		p, err := e.New(policy.Params{})
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if p.Name() != e.Name {
			t.Errorf("entry %s builds plugin %s", e.Name, p.Name())
		}
		points, _, _ := strings.Cut(e.Description, ":")
		if want := strings.Join(profile.Points(p), ", "); points != want {
			t.Errorf("%s: description names %q, plugin implements %q", e.Name, points, want)
		}
		if _, err := e.New(policy.Params{"bogus": "1"}); err == nil {
			t.Errorf("%s: unknown argument accepted", e.Name)
		}
	}
	for _, bad := range []policy.Params{{"threshold": "-1"}, {"threshold": "x"}, {"threshold": "1.5"}, {"order": "density"}} {
		if _, err := newRRH(RRHName, bad); err == nil {
			t.Errorf("rrh %v: want an error", bad)
		}
	}
	for _, tc := range []struct {
		params policy.Params
		want   RRHOrder
	}{{policy.Params{}, RRHArrival}, {policy.Params{"order": "arrival"}, RRHArrival}, {policy.Params{"order": "value", "threshold": "0.3"}, RRHValue}} {
		r, err := newRRH(RRHName, tc.params)
		if err != nil {
			t.Errorf("rrh %v: %v", tc.params, err)
			continue
		}
		if r.Order != tc.want {
			t.Errorf("rrh %v: order %v, want %v", tc.params, r.Order, tc.want)
		}
	}
	for _, bad := range []policy.Params{{"fair": "2"}, {"adjust": "-1"}} {
		if _, err := newDorm(DormName, bad); err == nil {
			t.Errorf("dorm %v: want an error", bad)
		}
	}
}

// TestProfilesFromSpecs: each preset written as a profile spec over the
// registered plugins runs the same as the preset.
func TestProfilesFromSpecs(t *testing.T) {
	reg := profile.NewRegistry()
	if err := reg.Add(append(baseline.Plugins(), Plugins()...)...); err != nil {
		t.Fatal(err)
	}
	st := DefaultSetting(40, 4, 2, 30)
	b := ComputeBounds(st.Generate(5), st.Nodes(5), st.Slot, st.Slots)
	oasisArgs := map[string]any{"slot": st.Slot, "slots": float64(st.Slots)}
	for _, k := range []string{"uw", "up", "lw", "lp"} {
		oasisArgs[k] = paramOf(b.String(), k)
	}
	ref := func(names ...string) []profile.PluginRef {
		var out []profile.PluginRef
		for _, n := range names {
			out = append(out, profile.PluginRef{Name: n})
		}
		return out
	}
	tests := []struct {
		preset string
		spec   profile.Spec
	}{
		{"oasis:slot=3600;slots=30;" + b.String(), profile.Spec{Name: "oasis", Plugins: profile.PluginsSpec{
			QueueSort: &profile.PluginRef{Name: ArrivalOrderName}, Admit: ref(OASiSName), Rebalance: ref(OASiSName)},
			PluginConfig: []profile.PluginConfig{{Name: OASiSName, Args: oasisArgs}}}},
		{"ps-fifo", profile.Spec{Name: "ps-fifo", Plugins: profile.PluginsSpec{
			Admit: ref(baseline.HeadOfLineName, FitsEmptyName), Filter: ref("node-role"), Score: ref(RoundRobinName)}}},
		{"ps-drf", profile.Spec{Name: "ps-drf", Plugins: profile.PluginsSpec{Admit: ref(DRFName), Rebalance: ref(DRFName)}}},
		{"rrh", profile.Spec{Name: "rrh", Plugins: profile.PluginsSpec{QueueSort: &profile.PluginRef{Name: RRHName},
			Admit: ref(RRHName), Filter: ref("node-role"), Score: ref(RoundRobinName), Reserve: ref(RRHName)}}},
		{"dorm", profile.Spec{Name: "dorm", Plugins: profile.PluginsSpec{Admit: ref(DormName), Rebalance: ref(DormName)}}},
	}
	presets := policy.NewRegistry()
	if err := presets.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.spec.Name, func(t *testing.T) {
			pre, err := presets.New(tc.preset)
			if err != nil {
				t.Fatal(err)
			}
			fromSpec, err := reg.Build(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := runPolicy(t, pre, st, 5)
			got, _ := runPolicy(t, fromSpec, st, 5)
			if d := cmp.Diff(want.Metrics(), got.Metrics()); d != "" {
				t.Errorf("metrics (-preset +spec):\n%s", d)
			}
		})
	}
}

// paramOf returns the value of key in a "k=v;k=v" parameter string.
func paramOf(params, key string) string {
	for _, kv := range strings.Split(params, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
