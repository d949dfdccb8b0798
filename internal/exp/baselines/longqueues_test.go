package baselines

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/workload"
)

// longQueue is one queue of BenchmarkLongQueues.
type longQueue struct {
	name  string
	nodes []cluster.Node
	jobs  []*cluster.Job
}

// Sizes of the synthetic long queues: each makes thousands wait at once
// (TestLongQueuesWait) while one fifo replay stays well under a second.
const (
	heavyTailJobs   = 4000
	gangJobs        = 3000
	constrainedJobs = 5000
	longQueueSeed   = 1
)

// longQueues returns the four queues of BenchmarkLongQueues: the first
// 5,000 Philly jobs on 8 nodes (BenchmarkLongQueue's), and the synthetic
// heavy-tail, gang and constrained queues of longqueues.go at seed 1.
func longQueues(tb testing.TB) []longQueue {
	tb.Helper()
	po := workload.DefaultPhillyOptions()
	po.Limit = 5000
	philly, err := workload.LoadPhilly("", po)
	if err != nil {
		tb.Fatal(err)
	}
	qs := []longQueue{{name: "philly", nodes: Nodes("node", 8, workload.PhillyNode(po), 24.48), jobs: philly}}
	for _, g := range []struct {
		name string
		gen  func(uint64, int) ([]cluster.Node, []*cluster.Job)
		n    int
	}{
		{"heavytail", HeavyTailQueue, heavyTailJobs},
		{"gangs", GangQueue, gangJobs},
		{"constrained", ConstrainedQueue, constrainedJobs},
	} {
		nodes, jobs := g.gen(longQueueSeed, g.n)
		qs = append(qs, longQueue{name: g.name, nodes: nodes, jobs: jobs})
	}
	return qs
}

// longPolicy makes p's policy for one replay, failing tb on an error.
func longPolicy(tb testing.TB, p LongProfile) policy.Policy {
	tb.Helper()
	pol, err := p.New()
	if err != nil {
		tb.Fatal(err)
	}
	return pol
}

// BenchmarkLongQueues replays four long queues, where thousands of jobs
// wait at once, under every preset of BenchmarkLongQueue and the custom
// profiles with a hint-less Score plugin (newcomerSpecs): the first 5,000
// Philly jobs on 8 nodes ("philly"), days-long heavy-tailed BE jobs on 8
// nodes ("heavytail"), multi-node gangs on 16 nodes ("gangs"), and TE and
// BE jobs with node selectors, preferred affinity and a tainted TE pool on
// 8 nodes ("constrained"); longqueues.go states their distributions.
// Sub-benchmarks are QUEUE/PROFILE. It reports cpu-ns/op (the CPU time of
// one replay, garbage collection included; see cpuTime), jobs/s, and the
// tries of the last replay (framework.Runtime's counters).
// hack/longqueues.sh runs it and prints each profile's ratio to fifo on the
// same queue (issue 23, item 5).
func BenchmarkLongQueues(b *testing.B) {
	qs := longQueues(b)
	profiles, err := LongProfiles()
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range qs {
		for _, p := range profiles {
			b.Run(q.name+"/"+p.Name, func(b *testing.B) {
				var last policy.Policy
				cpu0 := cpuTime()
				for b.Loop() {
					last = longPolicy(b, p)
					runT(b, last, q.nodes, q.jobs)
				}
				b.ReportMetric(float64(len(q.jobs)*b.N)/b.Elapsed().Seconds(), "jobs/s")
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				if rt, ok := last.(*framework.Runtime); ok {
					b.ReportMetric(float64(rt.Tries()), "tries/op")
				}
			})
		}
	}
}

// runT replays jobs on nodes under p as run does (60 s tick), for tests
// and benchmarks.
func runT(tb testing.TB, p policy.Policy, nodes []cluster.Node, jobs []*cluster.Job) *sim.Result {
	tb.Helper()
	s, err := sim.New(sim.Config{Tick: 60}, nodes, jobs, p)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// maxWaiting is the largest number of jobs that had arrived and not yet
// started at any one time.
func maxWaiting(recs []metrics.JobRecord) int {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, r := range recs {
		evs = append(evs, ev{r.Submit, 1})
		if r.FirstStart >= 0 {
			evs = append(evs, ev{r.FirstStart, -1})
		}
	}
	// Starts before arrivals at equal times: a job started on arrival
	// never waited.
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t || evs[i].t == evs[j].t && evs[i].d < evs[j].d })
	n, peak := 0, 0
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// TestLongQueuesWait checks what BenchmarkLongQueues relies on: under fifo
// every job of every queue completes and at least 1,000 wait at once; the
// synthetic queues are valid, of the stated sizes and the same for the
// same seed; the custom profiles build and complete the constrained queue.
func TestLongQueuesWait(t *testing.T) {
	if testing.Short() {
		t.Skip("replays four long queues")
	}
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range longQueues(t) {
		t.Run(q.name, func(t *testing.T) {
			for _, j := range q.jobs {
				if err := j.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			fifo, err := reg.New("fifo")
			if err != nil {
				t.Fatal(err)
			}
			res := runT(t, fifo, q.nodes, q.jobs)
			if got := res.Metrics()["completed"]; got != float64(len(q.jobs)) {
				t.Errorf("fifo completed %v of %d jobs", got, len(q.jobs))
			}
			w := maxWaiting(res.Records)
			if w < 1000 {
				t.Errorf("at most %d jobs waited at once under fifo, want >= 1000", w)
			}
			t.Logf("%d jobs, %d nodes: at most %d waiting at once under fifo, makespan %.1f days",
				len(q.jobs), len(q.nodes), w, res.Metrics()["makespan_s"]/86400)
		})
	}
	sig := func(jobs []*cluster.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, fmt.Sprintf("%s %v %v %v %v", j.ID, j.Submit, j.Work, j.Class, j.RequestedDemand()))
		}
		return out
	}
	for _, g := range []struct {
		name string
		gen  func(uint64, int) ([]cluster.Node, []*cluster.Job)
	}{{"heavytail", HeavyTailQueue}, {"gangs", GangQueue}, {"constrained", ConstrainedQueue}} {
		_, a := g.gen(7, 200)
		_, b := g.gen(7, 200)
		_, c := g.gen(8, 200)
		if len(a) != 200 {
			t.Errorf("%s: %d jobs, want 200", g.name, len(a))
		}
		if diff := cmp.Diff(sig(a), sig(b)); diff != "" {
			t.Errorf("%s: seed 7 twice differs (-first +second):\n%s", g.name, diff)
		}
		if cmp.Equal(sig(a), sig(c)) {
			t.Errorf("%s: seeds 7 and 8 gave the same jobs", g.name)
		}
	}
	nodes, jobs := ConstrainedQueue(longQueueSeed, 500)
	profiles, err := LongProfiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range profiles[len(LongPresets):] {
		res := runT(t, longPolicy(t, p), nodes, jobs)
		if got := res.Metrics()["completed"]; got != float64(len(jobs)) {
			t.Errorf("%s completed %v of %d constrained jobs", p.Name, got, len(jobs))
		}
	}
}
