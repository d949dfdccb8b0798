package drover

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	schedqueue "github.com/drover-sched/drover/pkg/scheduler/queue"
	"github.com/drover-sched/drover/pkg/sim"
)

// TestPayoff: a job whose utility has decayed to nothing by its earliest
// completion fails the test on a busy cluster; by default it waits (and
// is tested again), with reject=true it is rejected for good. Its tenant
// is priced from two jobs (minjobs=2), its own and ok's.
func TestPayoff(t *testing.T) {
	tests := []struct {
		name string
		args policy.Params
		want []string
	}{
		{"defer by default", policy.Params{"minjobs": "2"}, []string{"start ok x2", "wait late"}},
		{"reject=true", policy.Params{"minjobs": "2", "reject": "true"}, []string{"start ok x2", "reject late"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			late := be("late", 2, 2, 2)
			// Worth ~10 at its work, ~0 at its earliest completion (8600 s).
			late.j.Utility = cluster.Sigmoid{G1: 10, G2: 0.01, G3: 4000}
			ok := be("ok", 2, 2, 2).prio(1) // tried, and seen, first
			ok.j.Utility = cluster.Sigmoid{G1: 10, G2: 0, G3: 0}
			w := newWorld(1).run(be("busy", 6, 6, 6), 0, 6, cluster.Running, nil).pend(ok, late)
			w.s.Now = 5000
			got := summary(testRuntime(t, func(o *Options) { o.ScaleUp, o.Payoff, o.PayoffArgs = false, true, tc.args }).Schedule(w.s))
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPayoffDeferredRunsOnIdleCluster: a deferred job is never lost. A
// worthless job (utility 0 always) fails the test while anything runs
// and passes once nothing running holds what it needs.
func TestPayoffDeferredRunsOnIdleCluster(t *testing.T) {
	nodes := []cluster.Node{{Name: "n0", Capacity: resource.New(64, 512, 8)}}
	var jobs []*cluster.Job
	for i := range 4 {
		j := be(fmt.Sprintf("v%d", i), 4, 4, 4).j
		j.Utility, j.Submit = constUtility(10), float64(i)
		jobs = append(jobs, j)
	}
	zero := be("zero", 4, 4, 4).j
	zero.Utility, zero.Submit = constUtility(0), 5
	jobs = append(jobs, zero)
	o := DefaultOptions()
	o.Provision, o.Payoff = false, true
	p, err := Profile(o)
	if err != nil {
		t.Fatal(err)
	}
	res := simulate(t, p, sim.Config{Tick: 10}, nodes, jobs)
	last := 0.0
	for _, rec := range res.Records {
		if rec.ID != "zero" {
			last = math.Max(last, rec.Finish)
		}
	}
	for _, rec := range res.Records {
		if rec.ID != "zero" {
			continue
		}
		if rec.Rejected || !rec.Finished() {
			t.Fatalf("zero: rejected %v, finish %g (%s); want it to run", rec.Rejected, rec.Finish, rec.Reason)
		}
		if rec.FirstStart < last {
			t.Errorf("zero started at %g, before the valued jobs ended at %g: the payoff test did not defer it", rec.FirstStart, last)
		}
	}
}

// TestPayoffBounds: a tenant's U and L are robust to one job.
func TestPayoffBounds(t *testing.T) {
	type sample struct {
		at, u float64
	}
	rep := func(n int, at, u float64) []sample {
		var out []sample
		for range n {
			out = append(out, sample{at, u})
		}
		return out
	}
	day := 86400.0
	tests := []struct {
		name    string
		samples []sample
		wantU   float64
		wantOK  bool
	}{
		{"one job is not priced", rep(1, 0, 1e6), 0, false},
		{"two jobs are not priced", rep(2, 0, 1), 0, false},
		{"three alike set U", rep(3, 0, 2), 2, true},
		{"an outlier among three is clipped at 4x the median", append(rep(3, 0, 1), sample{0, 1e6}), 4, true},
		{"an outlier among ten is below the 0.9 quantile", append(rep(10, 0, 1), sample{0, 1e6}), 1, true},
		{"old samples decay: the recent ones set U", append(rep(5, 0, 1), rep(3, 10*day, 2)...), 2, true},
		{"a lone recent job after old ones is not priced", append(rep(5, 0, 1), sample{10 * day, 1e6}), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPayoff()
			p.seen, p.decided, p.tenants = map[string]bool{}, map[string]bool{}, map[string]*tenantBounds{}
			for i, s := range tc.samples {
				p.observe(&cluster.Job{ID: fmt.Sprint(i), Tenant: "t", Utility: constUtility(s.u), Work: 1}, s.at, 1)
			}
			// Another tenant's outlier changes nothing.
			p.observe(&cluster.Job{ID: "other", Tenant: "o", Utility: constUtility(1e9), Work: 1}, 0, 1e-6)
			u, l, ok := p.Bounds("t")
			if ok != tc.wantOK || math.Abs(u-tc.wantU) > 1e-9*tc.wantU {
				t.Errorf("U = %g, priced %v; want %g, %v", u, ok, tc.wantU, tc.wantOK)
			}
			if ok && !(l >= p.LFloor*u && l <= u) {
				t.Errorf("L = %g outside [LFloor·U, U] = [%g, %g]", l, p.LFloor*u, u)
			}
		})
	}
}

// TestPayoffPoisoning replays issue 24's report: one tenant's job with
// 1m of CPU, a 1 s duration and an ordinary utility (the largest utility
// per share-second by a factor of millions), then another tenant's 20
// identical ordinary jobs. Before, every one of the 20 was rejected; now
// all 20 complete, in either mode, and the other tenant's records are the
// same as without the outlier. The outlier in the same tenant (last case)
// is clipped at 4x the tenant's median and rejects none either.
func TestPayoffPoisoning(t *testing.T) {
	nodes := []cluster.Node{{Name: "n0", Capacity: resource.New(16, 64, 4)}}
	workload := func(outlierTenant string) []*cluster.Job {
		var jobs []*cluster.Job
		if outlierTenant != "" {
			jobs = append(jobs, &cluster.Job{ID: "outlier", Tenant: outlierTenant, Class: cluster.ClassBE, Work: 1,
				Utility: cluster.Sigmoid{G1: 100, G2: 1e-4, G3: 36000},
				Groups:  []cluster.ReplicaGroup{{Name: "worker", Demand: resource.Vector{resource.CPU: 1}, Replicas: 1, Min: 1, Max: 1}}})
		}
		for i := range 20 {
			jobs = append(jobs, &cluster.Job{ID: fmt.Sprintf("b%02d", i), Tenant: "b", Class: cluster.ClassBE, Work: 600, Submit: 10 + 200*float64(i),
				Utility: cluster.Sigmoid{G1: 100, G2: 1e-4, G3: 36000},
				Groups:  []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(4, 16, 1), Replicas: 1, Min: 1, Max: 1}}})
		}
		return jobs
	}
	type rec struct{ Start, Finish float64 }
	run := func(t *testing.T, args policy.Params, outlierTenant string) (map[string]rec, int) {
		t.Helper()
		o := DefaultOptions()
		o.Provision, o.Payoff, o.PayoffArgs = false, true, args
		p, err := Profile(o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := scheduler.New(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New(sim.Config{Tick: 10, Check: true}, nodes, workload(outlierTenant), r)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, done := map[string]rec{}, 0
		for _, rc := range res.Records {
			if rc.ID == "outlier" {
				continue
			}
			if rc.Rejected {
				t.Errorf("%s rejected: %s", rc.ID, rc.Reason)
			}
			if rc.Finished() {
				done++
			}
			got[rc.ID] = rec{rc.FirstStart, rc.Finish}
		}
		return got, done
	}
	// 1m of CPU is 1 in resource.Vector's unit.
	if resource.New(0.001, 0, 0)[resource.CPU] != 1 {
		t.Fatalf("resource unit changed: 1m CPU = %d", resource.New(0.001, 0, 0)[resource.CPU])
	}
	for _, mode := range []policy.Params{{}, {"reject": "true"}} {
		base, _ := run(t, mode, "")
		for _, outlier := range []string{"a", "b"} {
			t.Run(fmt.Sprintf("reject=%s/outlier in tenant %s", mode.String("reject", "false"), outlier), func(t *testing.T) {
				got, done := run(t, mode, outlier)
				if done != 20 {
					t.Errorf("%d of 20 of tenant b's jobs completed; want 20", done)
				}
				if outlier != "b" {
					if diff := gocmp.Diff(base, got); diff != "" {
						t.Errorf("tenant a's outlier changed tenant b's jobs (-without +with):\n%s", diff)
					}
				}
			})
		}
	}
}

// TestPayoffHintsChangeNoDecision: the payoff plugin's hints are exact.
// On a loaded two-node cluster where jobs of three tenants with decaying
// utilities are deferred, the drover profile makes the same decisions at
// the same times with the scheduling queue (no backoff, no flush) as with
// the exhaustive walk that asks every pending job every cycle.
func TestPayoffHintsChangeNoDecision(t *testing.T) {
	nodes := []cluster.Node{{Name: "n0", Capacity: resource.New(64, 512, 8)}, {Name: "n1", Capacity: resource.New(64, 512, 8)}}
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			var deferred [2]int
			var logs [2][]string
			for i, queue := range []bool{false, true} {
				r := rand.New(rand.NewPCG(seed, 24))
				var jobs []*cluster.Job
				at := 0.0
				for k := range 120 {
					at += r.ExpFloat64() * 120
					work := 60 + r.Float64()*3600
					j := &cluster.Job{ID: fmt.Sprintf("j%03d", k), Tenant: fmt.Sprintf("t%d", r.IntN(3)), Class: cluster.ClassBE, Submit: at, Work: work,
						Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(4, 16, 1+int64(r.IntN(4))), Replicas: 1, Min: 1, Max: 1}}}
					if r.IntN(4) > 0 {
						j.Utility = cluster.Sigmoid{G1: 1 + r.Float64()*99, G2: 1e-3 * r.Float64(), G3: work * (1 + 3*r.Float64())}
					}
					jobs = append(jobs, j)
				}
				o := DefaultOptions()
				o.Provision, o.Payoff = false, true
				p, err := Profile(o)
				if err != nil {
					t.Fatal(err)
				}
				pay := p.Admit[0].(*Payoff)
				rt, err := scheduler.New(p)
				if err != nil {
					t.Fatal(err)
				}
				if queue {
					scheduler.WithQueue(rt, schedqueue.Options{})
				} else {
					rt.WithoutQueue()
				}
				cfg := sim.Config{Seed: seed, Tick: 30, Check: true, Observe: func(now float64, kind sim.Observed, js *cluster.JobState, detail string) {
					logs[i] = append(logs[i], fmt.Sprintf("%g %s %s %s", now, kind, js.Job.ID, detail))
				}}
				s, err := sim.New(cfg, nodes, jobs, rt)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, rc := range res.Records {
					if rc.Rejected || !rc.Finished() {
						t.Errorf("queue=%v: %s rejected %v, finished %v (%s)", queue, rc.ID, rc.Rejected, rc.Finished(), rc.Reason)
					}
				}
				deferred[i] = pay.Deferred()
			}
			if deferred[0] == 0 {
				t.Fatalf("no job was deferred: the case does not exercise the hints")
			}
			if diff := gocmp.Diff(logs[0], logs[1]); diff != "" {
				t.Errorf("actions differ with the queue (-without +with):\n%s", diff)
			}
			t.Logf("%d jobs deferred at least once (exhaustive walk), %d (queue)", deferred[0], deferred[1])
		})
	}
}
