package fitgpp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	"github.com/drover-sched/drover/pkg/scheduler/queue"
	"github.com/drover-sched/drover/pkg/sim"
)

// node capacity in the tests: 32 cores, 256 GiB, 8 GPUs (the paper's).
var capacity = resource.New(32, 256, 8)

// rj describes a job already running (or suspending) in a test snapshot.
type rj struct {
	id          string
	class       cluster.Class
	node        int
	gpus        int64
	grace       float64
	preemptions int
	remaining   float64
	suspending  bool
}

func job(id string, class cluster.Class, gpus int64, grace float64) *cluster.Job {
	return &cluster.Job{ID: id, Class: class, Work: 3600, GracePeriod: grace,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Replicas: 1, Min: 1, Max: 1,
			Demand: resource.New(4*float64(gpus), 32*float64(gpus), gpus)}}}
}

// snapshot builds a cluster of n nodes with the running jobs and the
// pending jobs (queue order).
func snapshot(n int, running []rj, pending ...*cluster.Job) *cluster.Snapshot {
	s := &cluster.Snapshot{Now: 1000, Cycle: 7, Seed: 3, Pending: cluster.NewQueue()}
	for i := 0; i < n; i++ {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: cluster.Node{Name: "n" + string(rune('0'+i)), Capacity: capacity}, Index: i, Ready: true})
	}
	for _, r := range running {
		j := job(r.id, r.class, r.gpus, r.grace)
		st := cluster.NewJobState(j)
		st.Phase = cluster.Running
		st.Placement = cluster.Placement{{Group: 0, Node: r.node}}
		st.Preemptions = r.preemptions
		st.WorkLeft, st.Updated, st.Rate = r.remaining, s.Now, 1
		nd := s.Nodes[r.node]
		d := j.RequestedDemand()
		nd.Allocated = nd.Allocated.Add(d)
		if r.suspending {
			// As the simulator's default: held, not progressing.
			st.Phase = cluster.Suspending
			st.Rate = 0
			nd.Releasing = nd.Releasing.Add(d)
		}
		nd.Jobs = append(nd.Jobs, st)
		s.Running = append(s.Running, st)
	}
	for _, j := range pending {
		s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
	}
	return s
}

func mustNew(t *testing.T, rule Victims, lambda float64, p int) *framework.Runtime {
	t.Helper()
	pol, err := New(rule, lambda, p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func mustRuntime(t *testing.T, pre *Preemptor) *framework.Runtime {
	t.Helper()
	r, err := scheduler.New(Profile(pre))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func preempted(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		if p, ok := a.(policy.Preempt); ok {
			out = append(out, p.Job)
		}
	}
	return out
}

func started(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		if p, ok := a.(policy.Start); ok {
			out = append(out, p.Job)
		}
	}
	return out
}

func TestVictimChoice(t *testing.T) {
	be, te := cluster.ClassBE, cluster.ClassTE
	tests := []struct {
		name    string
		pol     *framework.Runtime
		nodes   int
		running []rj
		pending []*cluster.Job
		want    []string // preempted, in order
		start   []string // started this cycle
	}{
		{
			name: "lowest score among fitting jobs: small demand wins at lambda 0",
			pol:  mustNew(t, FitGpp, 0, 1), nodes: 2,
			running: []rj{{id: "big", class: be, node: 0, gpus: 6, grace: 10}, {id: "b2", class: be, node: 0, gpus: 2, grace: 600},
				{id: "mid", class: be, node: 1, gpus: 4, grace: 600}, {id: "m2", class: be, node: 1, gpus: 4, grace: 10}},
			pending: []*cluster.Job{job("te", te, 2, 0)},
			want:    []string{"b2"},
		},
		{
			name: "lambda weighs grace periods: short grace wins at lambda 4",
			pol:  mustNew(t, FitGpp, 4, 1), nodes: 2,
			running: []rj{{id: "big", class: be, node: 0, gpus: 6, grace: 10}, {id: "b2", class: be, node: 0, gpus: 2, grace: 600},
				{id: "mid", class: be, node: 1, gpus: 4, grace: 600}, {id: "m2", class: be, node: 1, gpus: 4, grace: 10}},
			pending: []*cluster.Job{job("te", te, 2, 0)},
			want:    []string{"m2"},
		},
		{
			name: "fit rule: a smaller job that does not make room alone is passed over",
			pol:  mustNew(t, FitGpp, 0, 1), nodes: 2,
			// TE needs 4 GPUs. small (2) sits on a full node next to 6;
			// mid (4) frees enough on its own.
			running: []rj{{id: "a-small", class: be, node: 0, gpus: 2}, {id: "a-six", class: be, node: 0, gpus: 6},
				{id: "b-mid", class: be, node: 1, gpus: 4}, {id: "b-mid2", class: be, node: 1, gpus: 4}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    []string{"b-mid"},
			start:   []string{"te"}, // grace 0: suspended at once, TE starts
		},
		{
			name: "P cap: a job preempted P times is not a candidate",
			pol:  mustNew(t, FitGpp, 0, 1), nodes: 1,
			running: []rj{{id: "a", class: be, node: 0, gpus: 2, preemptions: 1, grace: 5}, {id: "b", class: be, node: 0, gpus: 6, grace: 5}},
			pending: []*cluster.Job{job("te", te, 2, 0)},
			want:    []string{"b"},
		},
		{
			name: "P cap reached by every job: nothing is preempted",
			pol:  mustNew(t, FitGpp, 0, 1), nodes: 1,
			running: []rj{{id: "a", class: be, node: 0, gpus: 4, preemptions: 1}, {id: "b", class: be, node: 0, gpus: 4, preemptions: 2}},
			pending: []*cluster.Job{job("te", te, 2, 0)},
			want:    nil,
		},
		{
			name: "TE jobs are never victims",
			pol:  mustNew(t, FitGpp, 0, Unlimited), nodes: 1,
			running: []rj{{id: "t", class: te, node: 0, gpus: 2}, {id: "b", class: be, node: 0, gpus: 6}},
			pending: []*cluster.Job{job("te", te, 2, 0)},
			want:    []string{"b"}, start: []string{"te"},
		},
		{
			name: "no preemption when the TE job fits",
			pol:  mustNew(t, FitGpp, 1, 1), nodes: 1,
			running: []rj{{id: "b", class: be, node: 0, gpus: 4}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    nil, start: []string{"te"},
		},
		{
			name: "a suspending victim's resources count as coming: no second preemption",
			pol:  mustNew(t, FitGpp, 1, 1), nodes: 1,
			running: []rj{{id: "v", class: be, node: 0, gpus: 4, suspending: true, grace: 300}, {id: "b", class: be, node: 0, gpus: 4, grace: 1}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    nil,
		},
		{
			name: "the room a TE job waits for is held back from BE jobs",
			pol:  mustNew(t, FitGpp, 1, 1), nodes: 1,
			// 2 GPUs free + 4 releasing: the TE job (6) waits; the BE job
			// (2) behind it must not take the 2 free GPUs.
			running: []rj{{id: "v", class: be, node: 0, gpus: 4, suspending: true, grace: 300}, {id: "b", class: be, node: 0, gpus: 2}},
			pending: []*cluster.Job{job("te", te, 6, 0), job("be", be, 2, 0)},
			want:    nil,
		},
		{
			name: "preempt=false: TE first, but no victim",
			pol:  mustRuntime(t, &Preemptor{Rule: FitGpp, Lambda: 1, P: 1, NoPreempt: true}), nodes: 1,
			running: []rj{{id: "b", class: be, node: 0, gpus: 8}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    nil,
		},
		{
			name: "LRTP preempts the longest remaining job first, until the TE job fits",
			pol:  mustNew(t, LRTP, 0, Unlimited), nodes: 2,
			running: []rj{{id: "long", class: be, node: 0, gpus: 4, remaining: 9000}, {id: "a", class: be, node: 0, gpus: 4, remaining: 100},
				{id: "longer", class: be, node: 1, gpus: 4, remaining: 9999}, {id: "b", class: be, node: 1, gpus: 4, remaining: 5000}},
			pending: []*cluster.Job{job("te", te, 8, 0)},
			// longer (node 1) then long (node 0) free 4+4 on different
			// nodes; then b completes node 1.
			want:  []string{"longer", "long", "b"},
			start: []string{"te"},
		},
		{
			name: "LRTP with p=inf ignores earlier preemptions; TE jobs are never victims",
			pol:  mustNew(t, LRTP, 0, Unlimited), nodes: 1,
			running: []rj{{id: "t", class: te, node: 0, gpus: 4, remaining: 99999}, {id: "b", class: be, node: 0, gpus: 4, remaining: 10, preemptions: 5}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    []string{"b"}, start: []string{"te"},
		},
		{
			name: "LRTP P cap: the longest job, preempted P times, is passed over",
			pol:  mustNew(t, LRTP, 0, 1), nodes: 1,
			running: []rj{{id: "long", class: be, node: 0, gpus: 4, remaining: 99999, preemptions: 1},
				{id: "short", class: be, node: 0, gpus: 4, remaining: 10}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    []string{"short"}, start: []string{"te"},
		},
		{
			name: "LRTP P cap reached by every job that could make room: nothing is preempted",
			pol:  mustNew(t, LRTP, 0, 2), nodes: 1,
			running: []rj{{id: "a", class: be, node: 0, gpus: 4, remaining: 500, preemptions: 2},
				{id: "b", class: be, node: 0, gpus: 4, remaining: 99999, preemptions: 3}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    nil,
		},
		{
			name: "RAND P cap: only the job below the cap can be drawn",
			pol:  mustNew(t, Rand, 0, 1), nodes: 1,
			running: []rj{{id: "a", class: be, node: 0, gpus: 2, preemptions: 1}, {id: "b", class: be, node: 0, gpus: 2, preemptions: 1},
				{id: "c", class: be, node: 0, gpus: 2, preemptions: 1}, {id: "d", class: be, node: 0, gpus: 2}},
			pending: []*cluster.Job{job("te", te, 2, 0)},
			want:    []string{"d"}, start: []string{"te"},
		},
		{
			name: "RAND P cap reached by every job: nothing is preempted",
			pol:  mustNew(t, Rand, 0, 1), nodes: 1,
			running: []rj{{id: "a", class: be, node: 0, gpus: 4, preemptions: 1}, {id: "b", class: be, node: 0, gpus: 4, preemptions: 1}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    nil,
		},
		{
			name: "nothing can make room: no preemption",
			pol:  mustNew(t, LRTP, 0, Unlimited), nodes: 1,
			running: []rj{{id: "t", class: te, node: 0, gpus: 6}, {id: "b", class: be, node: 0, gpus: 2}},
			pending: []*cluster.Job{job("te", te, 4, 0)},
			want:    nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(tc.nodes, tc.running, tc.pending...)
			acts := tc.pol.Schedule(s)
			if d := cmp.Diff(tc.want, preempted(acts)); d != "" {
				t.Errorf("preempted (-want +got):\n%s\nactions %v", d, acts)
			}
			if d := cmp.Diff(tc.start, started(acts)); d != "" {
				t.Errorf("started (-want +got):\n%s", d)
			}
			for _, a := range acts {
				if p, ok := a.(policy.Preempt); ok {
					if js := s.Job(p.Job); p.Grace != js.Job.GracePeriod || p.By != "te" {
						t.Errorf("preempt %s: grace %v by %q, want grace %v by te", p.Job, p.Grace, p.By, js.Job.GracePeriod)
					}
				}
			}
		})
	}
}

// TestRandomFallback: no single BE job makes room for an 8-GPU TE job, so
// FitGpp takes a random one and then the one that completes its node; RAND
// preempts random jobs until the TE job fits. Both depend on the snapshot's
// seed only.
func TestRandomFallback(t *testing.T) {
	be, te := cluster.ClassBE, cluster.ClassTE
	running := []rj{{id: "a", class: be, node: 0, gpus: 4}, {id: "b", class: be, node: 0, gpus: 4},
		{id: "c", class: be, node: 1, gpus: 6}, {id: "d", class: be, node: 1, gpus: 2}}
	nodeOf := map[string]int{"a": 0, "b": 0, "c": 1, "d": 1}
	for _, rule := range []Victims{FitGpp, Rand} {
		seen := map[string]bool{}
		for seed := uint64(0); seed < 20; seed++ {
			s := snapshot(2, running, job("te", te, 8, 0))
			s.Seed = seed
			pol := mustNew(t, rule, 1, 1)
			got := preempted(pol.Schedule(s))
			if len(got) < 2 {
				t.Fatalf("%s seed %d: preempted %v, want at least 2", pol.Name(), seed, got)
			}
			seen[got[0]] = true
			if rule == FitGpp {
				// After the random first victim, the fit rule picks its
				// node's partner, so both are on one node.
				if len(got) != 2 || nodeOf[got[0]] != nodeOf[got[1]] {
					t.Errorf("fitgpp seed %d: victims %v, want the two jobs of one node", seed, got)
				}
			}
			again := preempted(mustNew(t, rule, 1, 1).Schedule(snapshot(2, running, job("te", te, 8, 0))))
			if s.Seed == 3 && !slices.Equal(again, got) {
				t.Errorf("%s: same snapshot, different victims %v vs %v", pol.Name(), again, got)
			}
		}
		if len(seen) < 2 {
			t.Errorf("rule %d: first victims over 20 seeds %v: not random", rule, seen)
		}
	}
}

func TestUnknownClassRejected(t *testing.T) {
	j := job("x", cluster.ClassUnknown, 1, 0)
	acts := mustNew(t, FitGpp, 1, 1).Schedule(snapshot(1, nil, j))
	if len(acts) != 1 {
		t.Fatalf("actions %v, want one reject", acts)
	}
	r, ok := acts[0].(policy.Reject)
	if !ok || r.Job != "x" || !strings.Contains(r.Reason, "no class") {
		t.Errorf("got %v, want a reject of x naming the missing class", acts[0])
	}
	if err := ValidateJobs([]*cluster.Job{job("ok", cluster.ClassBE, 1, 0), j}); err == nil || !strings.Contains(err.Error(), "job x: class") {
		t.Errorf("ValidateJobs: %v, want an error naming job x's class", err)
	}
	if err := ValidateJobs([]*cluster.Job{job("ok", cluster.ClassTE, 1, 0)}); err != nil {
		t.Errorf("ValidateJobs of a valid job: %v", err)
	}
}

func TestParams(t *testing.T) {
	reg := policy.NewRegistry()
	if err := reg.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec    string
		lambda  float64
		p       int
		strict  bool // the profile has StrictTE
		wantErr string
	}{
		{spec: "fitgpp", lambda: DefaultLambda, p: DefaultP},
		{spec: "fitgpp:lambda=2.5;p=3", lambda: 2.5, p: 3},
		{spec: "fitgpp:p=inf", lambda: DefaultLambda, p: Unlimited},
		{spec: "fitgpp:lambda=0", lambda: 0, p: DefaultP},
		{spec: "fitgpp:lambda=-0.1", wantErr: "lambda"},
		{spec: "fitgpp:lambda=NaN", wantErr: "lambda"},
		{spec: "fitgpp:lambda=x", wantErr: "lambda"},
		{spec: "fitgpp:p=0", wantErr: "p=0"},
		{spec: "fitgpp:p=-2", wantErr: "p=-2"},
		{spec: "fitgpp:p=1.5", wantErr: "p="},
		{spec: "fitgpp:q=1", wantErr: "unknown parameter"},
		{spec: "fitgpp:preempt=maybe", wantErr: "preempt"},
		{spec: "fitgpp:preempt=false;p=2", lambda: DefaultLambda, p: 2},
		{spec: "fitgpp:preempt=false;strict=true", lambda: DefaultLambda, p: DefaultP, strict: true},
		{spec: "fitgpp:strict=false", lambda: DefaultLambda, p: DefaultP},
		{spec: "fitgpp:strict=maybe", wantErr: "strict"},
		{spec: "lrtp:strict=true", wantErr: "unknown parameter"},
		{spec: "lrtp:lambda=1", wantErr: "unknown parameter"},
		{spec: "lrtp", p: DefaultP},
		{spec: "rand", p: DefaultP},
		{spec: "lrtp:p=inf", p: Unlimited},
		{spec: "rand:p=3", p: 3},
		{spec: "lrtp:p=0", wantErr: "p=0"},
		{spec: "rand:p=x", wantErr: "p="},
		{spec: "rand:preempt=false", wantErr: "unknown parameter"},
	}
	for _, tc := range tests {
		pol, err := reg.New(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one mentioning %q", tc.spec, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		prof := pol.(*framework.Runtime).Profile()
		fp := prof.Preempt[0].(*Preemptor)
		if fp.Lambda != tc.lambda || fp.P != tc.p {
			t.Errorf("%s: lambda %v p %v, want %v %v", tc.spec, fp.Lambda, fp.P, tc.lambda, tc.p)
		}
		strict := slices.ContainsFunc(prof.Admit, func(a framework.Admit) bool { return a.Name() == StrictTEName })
		if strict != tc.strict {
			t.Errorf("%s: StrictTE in the profile %v, want %v", tc.spec, strict, tc.strict)
		}
	}
}

func TestSizeIsScaleFree(t *testing.T) {
	// Eq. 1: the same shares give the same size whatever the units.
	a := SizeOf(resource.New(8, 64, 2), resource.New(32, 256, 8))
	b := SizeOf(resource.New(16, 128, 4), resource.New(64, 512, 16))
	if a != b || a != 0.75 {
		t.Errorf("sizes %v and %v, want 0.75 both", a, b)
	}
}

// TestScenario runs FitGpp in the simulator with invariant checks, under
// both grace-period models: two nodes full of BE jobs, a TE job arrives;
// FitGpp preempts the small job with the short grace period, the TE job
// starts when the grace ends, and the victim restarts at the head of the
// queue, before a BE job that arrived earlier than it was suspended. The
// policy's choices and timings do not depend on whether the victim trains
// through its grace period; only the victim's finish time does.
func TestScenario(t *testing.T) {
	for _, tc := range []struct {
		name     string
		progress bool
		// smallDone is the victim's work done when it is suspended: 600 s
		// before the preemption, plus the 120 s grace period only if it
		// progresses then.
		smallDone float64
	}{
		{"no progress during grace (default)", false, 600},
		{"progress during grace", true, 720},
	} {
		t.Run(tc.name, func(t *testing.T) { scenario(t, tc.progress, tc.smallDone) })
	}
}

func scenario(t *testing.T, progress bool, smallDone float64) {
	be, te := cluster.ClassBE, cluster.ClassTE
	mk := func(id string, class cluster.Class, submit, work float64, gpus int64, grace float64) *cluster.Job {
		j := job(id, class, gpus, grace)
		j.Submit, j.Work = submit, work
		return j
	}
	jobs := []*cluster.Job{
		mk("big", be, 0, 20000, 6, 60),     // node 0
		mk("small", be, 0, 20000, 2, 120),  // node 0
		mk("other", be, 0, 3000, 4, 600),   // node 1
		mk("other2", be, 0, 20000, 4, 600), // node 1
		mk("waiting", be, 100, 1000, 8, 0), // blocks the BE queue
		mk("te", te, 600, 1200, 2, 0),
	}
	nodes := []cluster.Node{{Name: "n0", Capacity: capacity}, {Name: "n1", Capacity: capacity}}
	s, err := sim.New(sim.Config{Tick: 60, Check: true, ProgressDuringGrace: progress}, nodes, jobs, mustNew(t, FitGpp, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]int{}
	for i, r := range res.Records {
		recs[r.ID] = i
	}
	get := func(id string) metrics.JobRecord { return res.Records[recs[id]] }
	// small: size 2/8*3 = 0.75 of big's 2.25 -> 0.33 + grace 120/600 =
	// 0.53; big: 1 + 0.1 = 1.1; others 0.67 + 1 = 1.67. small wins, and
	// its node then has 2 free GPUs for the TE job.
	if g := get("small"); g.Preemptions != 1 || len(g.RescheduleDelays) != 1 {
		t.Fatalf("small: %d preemptions, delays %v; want 1 and 1", g.Preemptions, g.RescheduleDelays)
	}
	for _, id := range []string{"big", "other", "other2"} {
		if g := get(id); g.Preemptions != 0 {
			t.Errorf("%s preempted %d times, want 0", id, g.Preemptions)
		}
	}
	// TE arrives at 600, preempts at 600, grace ends at 720: starts then.
	if g := get("te"); g.FirstStart != 720 || g.Finish != 1920 {
		t.Errorf("te: start %v finish %v, want 720 and 1920", g.FirstStart, g.Finish)
	}
	// The TE job's end at 1920 gives its 2 GPUs back: small, back at the
	// head of the queue, restarts then, ahead of "waiting" (queued since
	// 100), which starts only when a whole node is free.
	if g := get("small"); g.RescheduleDelays[0] != 1920-720 {
		t.Errorf("small restarted %v s after suspension, want %v", g.RescheduleDelays[0], 1920-720)
	}
	// It then needs the rest of its work: what it did during the grace
	// period counts only if it progressed then.
	if g, want := get("small"), 1920+20000-smallDone; g.Finish != want {
		t.Errorf("small finished at %v, want %v", g.Finish, want)
	}
	if g := get("waiting"); g.FirstStart <= 1920 {
		t.Errorf("waiting started at %v, before small's restart at 1920", g.FirstStart)
	}
	if res.Metrics()["completed"] != float64(len(jobs)) {
		t.Errorf("completed %v of %d", res.Metrics()["completed"], len(jobs))
	}
	if len(res.Refusals) != 0 {
		t.Errorf("refusals: %v", res.Refusals)
	}
}

// TestCapScenario runs LRTP and RAND in the simulator with invariant
// checks: one node, two BE jobs of 4 GPUs (long and short, no grace
// period), and two TE jobs of 4 GPUs, at 600 s and 1800 s. The first TE job
// preempts one BE job, which restarts when the TE job ends. The second
// finds the node full again: uncapped LRTP preempts the long job a second
// time; with P = 1 LRTP and RAND must take the job not yet preempted.
func TestCapScenario(t *testing.T) {
	be, te := cluster.ClassBE, cluster.ClassTE
	for _, tc := range []struct {
		name string
		rule Victims
		p    int
		// want: preemptions per job.
		want map[string]int
	}{
		{"lrtp p=inf", LRTP, Unlimited, map[string]int{"long": 2, "short": 0, "te1": 0, "te2": 0}},
		{"lrtp p=1", LRTP, 1, map[string]int{"long": 1, "short": 1, "te1": 0, "te2": 0}},
		{"rand p=1", Rand, 1, map[string]int{"long": 1, "short": 1, "te1": 0, "te2": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(id string, class cluster.Class, submit, work float64) *cluster.Job {
				j := job(id, class, 4, 0)
				j.Submit, j.Work = submit, work
				return j
			}
			jobs := []*cluster.Job{mk("long", be, 0, 20000), mk("short", be, 0, 8000), mk("te1", te, 600, 600), mk("te2", te, 1800, 600)}
			s, err := sim.New(sim.Config{Tick: 60, Check: true, Seed: 5}, []cluster.Node{{Name: "n0", Capacity: capacity}}, jobs, mustNew(t, tc.rule, 0, tc.p))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Refusals) != 0 {
				t.Errorf("refusals: %v", res.Refusals)
			}
			got := map[string]int{}
			for _, r := range res.Records {
				got[r.ID] = r.Preemptions
				if !r.Finished() {
					t.Errorf("%s did not finish: %s", r.ID, r.Reason)
				}
				// Neither TE job waits: grace 0 frees the room at once.
				if r.Class == te && r.FirstStart != r.Submit {
					t.Errorf("%s: submitted %v, started %v", r.ID, r.Submit, r.FirstStart)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("preemptions per job (-want +got):\n%s", d)
			}
		})
	}
}

// shortcutWorld is a long random queue of BE and TE jobs of 1 to 8 GPUs
// (TE jobs of up to two replicas) with grace periods of 0 to 300 s on
// three nodes: TE jobs often find no set of victims (every BE job
// preempted P times, or too few), so the victim search fails cycle after
// cycle.
func shortcutWorld(seed uint64) ([]cluster.Node, []*cluster.Job) {
	r := rand.New(rand.NewPCG(seed, 17))
	gpus := []int64{1, 2, 4, 8}
	graces := []float64{0, 0, 60, 300}
	var jobs []*cluster.Job
	for i := range 160 {
		class := cluster.ClassBE
		if r.IntN(3) == 0 {
			class = cluster.ClassTE
		}
		j := job(fmt.Sprintf("j%03d", i), class, gpus[r.IntN(len(gpus))], graces[r.IntN(len(graces))])
		if class == cluster.ClassTE && r.IntN(3) == 0 {
			j.Groups[0].Replicas, j.Groups[0].Max = 2, 2
		}
		j.Submit, j.Work = float64(i*40), 600+float64(r.IntN(6000))
		jobs = append(jobs, j)
	}
	var nodes []cluster.Node
	for i := range 3 {
		nodes = append(nodes, cluster.Node{Name: fmt.Sprintf("n%d", i), Capacity: capacity})
	}
	return nodes, jobs
}

// replayLog replays jobs on nodes under rt and returns every action
// applied, in order, with its time and detail, and the metrics and
// records.
func replayLog(t *testing.T, rt *framework.Runtime, nodes []cluster.Node, jobs []*cluster.Job, seed uint64) ([]string, string) {
	t.Helper()
	var log []string
	cfg := sim.Config{Seed: seed, Tick: 30, SampleEvery: 30, Check: true,
		Observe: func(now float64, kind sim.Observed, js *cluster.JobState, detail string) {
			log = append(log, fmt.Sprintf("%g %s %s %s", now, kind, js.Job.ID, detail))
		}}
	s, err := sim.New(cfg, nodes, jobs, rt)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return log, fmt.Sprint(res.Metrics(), res.Records)
}

// TestShortcutChangesNoDecision: skipping a victim search known to fail
// (Preemptor.hopeless) must change how much is placed, never what is
// decided, random draws included. Each rule, capped and not, replays
// random long queues with and without the shortcut, and the shortcut
// must have fired (a comparison in which it never skips a search compares
// a run with itself).
func TestShortcutChangesNoDecision(t *testing.T) {
	for _, rule := range []Victims{FitGpp, LRTP, Rand} {
		for _, p := range []int{1, Unlimited} {
			skips := 0
			for seed := uint64(1); seed <= 3; seed++ {
				nodes, jobs := shortcutWorld(seed)
				var logs [2][]string
				var ms [2]string
				for k, exhaustive := range []bool{true, false} {
					pre, err := NewPreemptor(rule, 1, p)
					if err != nil {
						t.Fatal(err)
					}
					pre.Exhaustive = exhaustive
					pre.skips = &skips
					logs[k], ms[k] = replayLog(t, mustRuntime(t, pre), nodes, jobs, seed)
				}
				if d := cmp.Diff(logs[0], logs[1]); d != "" {
					t.Errorf("%v p=%d seed %d: actions differ with the shortcut (-without +with):\n%s", rule, p, seed, d)
				}
				if ms[0] != ms[1] {
					t.Errorf("%v p=%d seed %d: metrics or records differ with the shortcut", rule, p, seed)
				}
			}
			if skips == 0 {
				t.Errorf("%v p=%d: the shortcut never skipped a search: the worlds do not exercise it", rule, p)
			}
		}
	}
}

// TestDrawsPerJob is the randomness contract: a TE job's random victim
// depends on the seed, the cycle and the job, not on which jobs were
// tried before it. A TE job that fails ahead of it (it needs 16 GPUs in
// one replica, which no node holds) draws nothing from the later job's
// stream: over many seeds the later job picks the victim it picks alone,
// and some seeds pick different victims (the test can tell draws apart).
func TestDrawsPerJob(t *testing.T) {
	be, te := cluster.ClassBE, cluster.ClassTE
	running := []rj{{id: "a", class: be, node: 0, gpus: 4}, {id: "b", class: be, node: 0, gpus: 4},
		{id: "c", class: be, node: 1, gpus: 6}, {id: "d", class: be, node: 1, gpus: 2},
		{id: "e", class: be, node: 2, gpus: 4}, {id: "f", class: be, node: 2, gpus: 4}}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 40; seed++ {
		var got [2][]string
		for k, ahead := range []bool{false, true} {
			pending := []*cluster.Job{job("t", te, 8, 0)}
			if ahead {
				pending = append([]*cluster.Job{job("h1", te, 16, 0), job("h2", te, 16, 0)}, pending...)
			}
			for _, rule := range []Victims{FitGpp, Rand} {
				s := snapshot(3, running, pending...)
				s.Seed = seed
				v := preempted(mustNew(t, rule, 1, 1).Schedule(s))
				got[k] = append(got[k], strings.Join(v, ","))
			}
		}
		if d := cmp.Diff(got[0], got[1]); d != "" {
			t.Errorf("seed %d: victims differ with failing TE jobs ahead (-alone +behind):\n%s", seed, d)
		}
		seen[strings.Join(got[0], ";")] = true
	}
	if len(seen) < 2 {
		t.Errorf("every seed picked the same victims %v: the test cannot tell draws apart", seen)
	}
}

// TestParkedTEClassWakes: TE jobs of one shape whose searches failed for
// want of victims are set aside together. When victims appear in the
// room of jobs that could not be victims (the room on the nodes is as it
// was), the class is woken: its first member preempts, then the next
// while they get room, until one fails; the members after it keep their
// own Wait reason. Every cycle's actions are those of the Runtime without
// the queue, Waits included.
func TestParkedTEClassWakes(t *testing.T) {
	be, te := cluster.ClassBE, cluster.ClassTE
	cycles := func(rt *framework.Runtime) [][]string {
		// Cycle 1: the node is full of BE jobs preempted once already
		// (P = 1): no victim for the four TE jobs.
		s := snapshot(1, []rj{{id: "a", class: be, node: 0, gpus: 2, preemptions: 1, grace: 60},
			{id: "b", class: be, node: 0, gpus: 2, preemptions: 1, grace: 60},
			{id: "c", class: be, node: 0, gpus: 2, preemptions: 1, grace: 60},
			{id: "d", class: be, node: 0, gpus: 2, preemptions: 1, grace: 60}},
			job("x1", te, 2, 0), job("x2", te, 2, 0), job("x3", te, 2, 0), job("x4", te, 2, 0))
		var out [][]string
		apply := func(acts []policy.Action) {
			var line []string
			for _, a := range acts {
				line = append(line, fmt.Sprintf("%T %v", a, a))
				if w, ok := a.(policy.Wait); ok {
					for js := range s.Pending.All() {
						if js.Job.ID == w.Job {
							js.Reason = w.Reason // as the executor does
						}
					}
				}
			}
			out = append(out, line)
		}
		s.Cycle = 1
		apply(rt.Schedule(s))
		s.Cycle = 2
		apply(rt.Schedule(s)) // nothing changed
		// Cycle 3: a and b finished and two jobs never preempted took
		// their room: two victims, for x1 and x2.
		s2 := snapshot(1, []rj{{id: "c", class: be, node: 0, gpus: 2, preemptions: 1, grace: 60},
			{id: "d", class: be, node: 0, gpus: 2, preemptions: 1, grace: 60},
			{id: "v1", class: be, node: 0, gpus: 2, grace: 60}, {id: "v2", class: be, node: 0, gpus: 2, grace: 60}})
		s.Nodes, s.Running, s.Cycle = s2.Nodes, s2.Running, 3
		apply(rt.Schedule(s))
		return out
	}
	want := cycles(mustNew(t, FitGpp, 1, 1).WithoutQueue())
	if d := cmp.Diff(want, cycles(scheduler.WithQueue(mustNew(t, FitGpp, 1, 1), queue.Options{}))); d != "" {
		t.Errorf("actions per cycle differ with the queue (-without +with):\n%s", d)
	}
	if got := strings.Count(strings.Join(want[2], "\n"), "policy.Preempt"); got != 2 {
		t.Fatalf("without the queue cycle 3 preempted %d jobs, want 2 (for x1 and x2):\n%s", got, strings.Join(want[2], "\n"))
	}
}
