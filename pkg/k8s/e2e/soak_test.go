package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// apiCounter counts the requests a client makes, by verb and resource
// (subresource included, e.g. "PUT trainingjobs/status"), and the
// responses with status 409 Conflict. It wraps the scheduler's transport,
// so it sees every request the scheduler sends, whatever code sends it.
type apiCounter struct {
	mu        sync.Mutex
	counts    map[string]int
	conflicts int
	// details counts the TrainingJob status writes by what they wrote
	// (statusWrite).
	details map[string]int
}

func newAPICounter() *apiCounter {
	return &apiCounter{counts: map[string]int{}, details: map[string]int{}}
}

// statusWrite describes a TrainingJob status write from its body: the
// phase it writes, and whether it sets a queue position or a reason.
func statusWrite(r *http.Request) string {
	if r.GetBody == nil {
		return "?"
	}
	body, err := r.GetBody()
	if err != nil {
		return "?"
	}
	defer body.Close()
	var tj v1alpha1.TrainingJob
	if err := json.NewDecoder(body).Decode(&tj); err != nil {
		return "?"
	}
	s := "phase=" + string(tj.Status.Phase)
	if tj.Status.QueuePosition != nil {
		s += " queuePosition"
	}
	if tj.Status.Reason != "" && !tj.Status.Phase.Terminal() {
		s += " reason"
	}
	return s
}

func (c *apiCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		key := r.Method + " " + resourceOf(r.URL.Path)
		if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true" {
			key = "WATCH " + resourceOf(r.URL.Path)
		}
		detail := ""
		if r.Method == http.MethodPut && strings.HasSuffix(key, "trainingjobs/status") {
			detail = key + " " + statusWrite(r)
		}
		c.mu.Lock()
		c.counts[key]++
		if detail != "" {
			c.details[detail]++
		}
		if err == nil && resp.StatusCode == http.StatusConflict {
			c.conflicts++
		}
		c.mu.Unlock()
		return resp, err
	})
}

// resourceOf turns a request path into its resource, with the subresource:
// /api/v1/namespaces/ns/pods/p/binding is "pods/binding",
// /apis/drover.dev/v1alpha1/namespaces/ns/trainingjobs/j/status is
// "trainingjobs/status", /api/v1/nodes is "nodes".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "?"
	case 1, 2:
		return parts[0]
	}
	return parts[0] + "/" + parts[2]
}

// snapshot returns a copy of the counts (with the details) and the
// conflicts.
func (c *apiCounter) snapshot() (map[string]int, map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts), maps.Clone(c.details), c.conflicts
}

// writes sums the write requests (POST, PUT, PATCH, DELETE) to the given
// resources; none means every resource.
func writes(counts map[string]int, resources ...string) int {
	n := 0
	for k, v := range counts {
		verb, res, _ := strings.Cut(k, " ")
		if verb == "GET" || verb == "WATCH" {
			continue
		}
		if len(resources) == 0 || slices.Contains(resources, res) {
			n += v
		}
	}
	return n
}

// soakConfig is the soak's size: DROVER_SOAK_JOBS single-replica
// TrainingJobs on DROVER_SOAK_NODES stand-in nodes. The defaults are the
// small version `make test` runs; `make soak` runs 2,000 on 50.
type soakConfig struct {
	jobs, nodes int
	profile     string
}

func soakSize(t *testing.T) soakConfig {
	sc := soakConfig{jobs: 200, nodes: 10, profile: os.Getenv("DROVER_SOAK_PROFILE")}
	for _, v := range []struct {
		env string
		to  *int
	}{{"DROVER_SOAK_JOBS", &sc.jobs}, {"DROVER_SOAK_NODES", &sc.nodes}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 || n > 100000 {
				t.Fatalf("%s=%q: want an integer in [1, 100000]", v.env, s)
			}
			*v.to = n
		}
	}
	return sc
}

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSoak runs many short single-replica TrainingJobs through the whole
// scheduler (manager, informers, executor) and the stand-in kubelet and
// trainers (time scale 40, as issue 17's reviewer ran them), on the real
// API server, with the default 1 s period, and checks what load they put
// on the API server and on the scheduler rather than how fast:
//
//   - writes per started job: every request the scheduler sends goes
//     through a counting transport; writes to TrainingJobs, pods and
//     Bindings, divided by the jobs started, must be at most 3 (status
//     write, pod create, Binding; the other writes are batched into these
//     or dropped). Events are counted and reported apart.
//   - finished jobs cost nothing per cycle: once every job finished, a
//     cycle reads no TrainingJob and no pod of them from the cache.
//
// It reports cycle times (median, p90, max), conflicts, the idle cycle
// with every job finished, and the scheduler process's heap per finished
// job (the live heap after a GC, once all finished, minus before the jobs
// were created). The default size (200 jobs on 10 nodes) is part of `make
// test`; `make soak` runs 2,000 jobs on 50 nodes (DROVER_SOAK_JOBS,
// DROVER_SOAK_NODES). DROVER_SOAK_PROFILE=file writes a CPU profile of the
// run, DROVER_SOAK_HEAP=file a heap profile at the end.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: not with -short")
	}
	sc := soakSize(t)
	tc := newCluster(t, sc.nodes, "16", "4", standin.Config{Tick: time.Second, TimeScale: 40})
	counter := newAPICounter()
	rc := rest.CopyConfig(restCfg)
	rc.WrapTransport = counter.wrap
	tc.rest = rc
	// The default period (1 s), not the e2e tests' 100 ms.
	tc.tune = func(c *k8s.Config) {
		c.Period.Duration = time.Second
		c.ProgressPeriod.Duration = 10 * time.Second
	}
	var mu sync.Mutex
	var cycles []*k8s.CycleResult
	tc.onCycle = func(r *k8s.CycleResult) {
		mu.Lock()
		cycles = append(cycles, r)
		mu.Unlock()
	}
	tc.startScheduler("fifo", nil)
	ctx := context.Background()
	// Wait for the scheduler's informers and first cycle, so the heap
	// figure below holds only what the jobs add.
	tc.eventually("a first cycle", time.Minute, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(cycles) > 0, "no cycle yet"
	})
	heap0 := heapAfterGC()
	if sc.profile != "" {
		f, err := os.Create(sc.profile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	// 120 s of training at time scale 40: 3 s of wall time per job; one
	// GPU each, so 4 jobs per node run at once and the rest queue.
	if err := parallel(sc.jobs, func(i int) error {
		j := tc.job(fmt.Sprintf("s%05d", i), v1alpha1.ClassBE, 120, group{name: "worker", replicas: 1, cpu: "1", gpu: "1"})
		return cl.Create(ctx, j)
	}); err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	mu.Lock()
	firstBusy := len(cycles)
	mu.Unlock()
	timeout := time.Duration(sc.jobs)*200*time.Millisecond + 2*time.Minute
	started := 0 // attempts: each is a start
	// flushes bounds the writes of a running job's reported state:
	// one per ProgressPeriod it ran.
	flushes := 0
	tc.eventually("every job Succeeded", timeout, func() (bool, string) {
		var l v1alpha1.TrainingJobList
		if err := cl.List(ctx, &l, client.InNamespace(tc.ns)); err != nil {
			return false, err.Error()
		}
		done := 0
		started, flushes = 0, 0
		for _, j := range l.Items {
			started += int(j.Status.Attempt)
			if s, c := j.Status.StartTime, j.Status.CompletionTime; s != nil && c != nil {
				flushes += int(c.Sub(s.Time) / tc.cfg.ProgressPeriod.Duration)
			}
			if j.Status.Phase == v1alpha1.PhaseSucceeded {
				done++
			} else if j.Status.Phase.Terminal() {
				t.Fatalf("job %s ended %s: %s", j.Name, j.Status.Phase, j.Status.Reason)
			}
		}
		return done == sc.jobs, fmt.Sprintf("%d of %d Succeeded", done, sc.jobs)
	})
	elapsed := time.Since(start)
	if sc.profile != "" {
		pprof.StopCPUProfile()
	}
	counts, details, conflicts := counter.snapshot()
	// Idle: every job finished. Let the cache catch up with the last
	// writes, then look at a few cycles.
	mu.Lock()
	busy := slices.Clone(cycles[firstBusy:])
	mark := len(cycles)
	mu.Unlock()
	tc.eventually("5 idle cycles", time.Minute, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(cycles) >= mark+8, fmt.Sprintf("%d cycles", len(cycles)-mark)
	})
	mu.Lock()
	idle := slices.Clone(cycles[mark+3:])
	mu.Unlock()
	// The stand-in kubelet runs in this process and lists every pod each
	// tick (finished ones included): stopped, so that the heap below is
	// the scheduler's (and the test's), not a list it holds mid-tick.
	tc.stopKubelet()
	heap1 := heapAfterGC()
	if f := os.Getenv("DROVER_SOAK_HEAP"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(out); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}

	objWrites := writes(counts, "trainingjobs", "trainingjobs/status", "pods", "pods/binding")
	perJob := float64(objWrites) / float64(max(started, 1))
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	for k := range details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		n, ok := counts[k]
		if !ok {
			n = details[k]
			k = "  " + k
		}
		fmt.Fprintf(&b, "  %-60s %6d (%.2f per job)\n", k, n, float64(n)/float64(sc.jobs))
	}
	durs := func(rs []*k8s.CycleResult) []time.Duration {
		out := make([]time.Duration, len(rs))
		for i, r := range rs {
			out[i] = r.Duration
		}
		slices.Sort(out)
		return out
	}
	q := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(100 * time.Microsecond)
	}
	bd, id := durs(busy), durs(idle)
	heapPer := (int64(heap1) - int64(heap0)) / int64(sc.jobs)
	t.Logf("soak: %d single-replica jobs on %d nodes (time scale 40, period %v): created in %v, all Succeeded after %v (%.1f jobs/s); load %s",
		sc.jobs, sc.nodes, tc.cfg.Period.Duration, created.Round(time.Millisecond), elapsed.Round(time.Millisecond), float64(sc.jobs)/elapsed.Seconds(), loadavg())
	t.Logf("soak: scheduler requests:\n%s", b.String())
	t.Logf("soak: %d jobs started; %d writes to TrainingJobs, pods and Bindings = %.2f per started job; %d event writes; %d conflicts",
		started, objWrites, perJob, writes(counts, "events"), conflicts)
	t.Logf("soak: %d busy cycles: median %v, p90 %v, p99 %v, max %v; over the period: %d",
		len(bd), q(bd, 0.5), q(bd, 0.9), q(bd, 0.99), q(bd, 1), countOver(bd, tc.cfg.Period.Duration))
	// Where the busy cycles' time went, summed over them, and the
	// slowest cycle's split.
	var sum k8s.CycleStages
	var slowest *k8s.CycleResult
	for _, r := range busy {
		sum.Commit += r.Stages.Commit
		sum.Read += r.Stages.Read
		sum.Reconcile += r.Stages.Reconcile
		sum.Decide += r.Stages.Decide
		sum.Apply += r.Stages.Apply
		sum.After += r.Stages.After
		if slowest == nil || r.Duration > slowest.Duration {
			slowest = r
		}
	}
	stages := func(st k8s.CycleStages) string {
		r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		return fmt.Sprintf("commit %v, read %v, reconcile %v, decide %v, apply %v, after %v",
			r(st.Commit), r(st.Read), r(st.Reconcile), r(st.Decide), r(st.Apply), r(st.After))
	}
	t.Logf("soak: busy cycles' stages, summed: %s", stages(sum))
	if slowest != nil {
		t.Logf("soak: slowest cycle (%v, %d actions): %s", slowest.Duration.Round(time.Millisecond), len(slowest.Actions), stages(slowest.Stages))
	}
	if len(idle) > 0 {
		last := idle[len(idle)-1]
		t.Logf("soak: idle cycles with %d finished jobs: median %v, max %v; a cycle read %d TrainingJobs and %d pods",
			sc.jobs, q(id, 0.5), q(id, 1), last.Jobs, last.Pods)
	}
	t.Logf("soak: live heap %d KB before the jobs, %d KB after they all finished: %d bytes per finished job",
		heap0/1024, heap1/1024, heapPer)

	if started != sc.jobs {
		t.Errorf("%d starts for %d jobs, want one each", started, sc.jobs)
	}
	// What each job costs: the writes that start it, and one that records
	// its end. Writes that keep waiting jobs informed (queue positions,
	// wait reasons: phase Pending) are bounded by time and by how often
	// the head of the queue changes, not per job; they are reported apart.
	// A running job's reported state (progress, Running) is written at
	// most once per ProgressPeriod it runs: bounded by time, apart too.
	ended, waiting, running := 0, 0, 0
	for k, n := range details {
		switch {
		case strings.Contains(k, "phase=Succeeded"):
			ended += n
		case strings.Contains(k, "phase=Pending"):
			waiting += n
		case strings.Contains(k, "phase=Running"):
			running += n
		}
	}
	perStart := float64(objWrites-ended-waiting-running) / float64(max(started, 1))
	t.Logf("soak: per started job %.2f writes to start it, %.2f to record its end; per job %.2f for waiting jobs (queue positions, reasons), %.2f while running (at most %.2f: one per %v run)",
		perStart, float64(ended)/float64(sc.jobs), float64(waiting)/float64(sc.jobs), float64(running)/float64(sc.jobs),
		float64(flushes)/float64(sc.jobs), tc.cfg.ProgressPeriod.Duration)
	if perStart > 3 {
		t.Errorf("%.2f writes to TrainingJobs, pods and Bindings per started job (the end, waiting and running jobs' writes left out), want at most 3 (status, pod, Binding)", perStart)
	}
	if running > flushes {
		t.Errorf("%d status writes of running jobs, want at most one per %v a job ran (%d)", running, tc.cfg.ProgressPeriod.Duration, flushes)
	}
	if ended != sc.jobs {
		t.Errorf("%d status writes recorded a job's end, want one per job (%d)", ended, sc.jobs)
	}
	// The API server is shared with other tests: the live pods they left
	// in other namespaces (another scheduler's, gangs still waiting) take
	// room, so the scheduler reads them; none of the soak's may be read.
	var all corev1.PodList
	if err := cl.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	foreign := 0
	for _, p := range all.Items {
		if p.Namespace != tc.ns && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			foreign++
		}
	}
	for _, r := range idle {
		if r.Jobs != 0 || r.Pods > foreign {
			t.Errorf("an idle cycle with every job finished read %d TrainingJobs and %d pods, want none but the %d live pods of other tests: finished jobs must cost nothing per cycle", r.Jobs, r.Pods, foreign)
			break
		}
	}
}

func countOver(d []time.Duration, limit time.Duration) int {
	n := 0
	for _, x := range d {
		if x > limit {
			n++
		}
	}
	return n
}
