// Package sim is drover's deterministic discrete-event simulator: the
// in-memory executor that runs a policy over a workload and measures it.
//
// The event loop keeps a heap of timed events (completion, grace-period
// expiry, end of a checkpoint/restore pause, node ready, evaluation
// samples); arrivals come from the sorted job list rather than the heap.
// Scheduling cycles run on a fixed tick (Config.Tick) or, with a zero tick,
// after each batch of simultaneous events. A tick on which nothing changed
// is skipped unless the policy is time-driven, so long idle stretches of a
// trace cost nothing. Every structure a cycle needs (free resources, the
// running set, the queue) is kept up to date incrementally, so a cycle does
// not rescan every job.
//
// Models (documented in docs/ARCHITECTURE.md):
//   - speed: a job's rate is Job.SpeedAt(counts, nodes spanned) times the
//     lowest contention factor among its nodes (Node.Contention: capacity
//     over summed usage, when usage exceeds capacity);
//   - progress: work left falls at the rate; a job finishes when it reaches
//     zero; suspension and migration keep progress;
//   - grace period: a preempted job keeps running and holding resources
//     for the grace, then is suspended to the head of the queue;
//   - checkpoint/restore: a migrated job pauses for CheckpointCost +
//     RestoreCost on its new placement; a resize pauses for RescaleCost;
//   - nodes provisioned from the catalogue are ready after LaunchDelay and
//     cost their hourly price from the request until released.
package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Config sets up a run.
type Config struct {
	// Seed is handed to the policy through the snapshot.
	Seed uint64
	// Tick is the scheduling interval in seconds; 0 schedules after every
	// batch of simultaneous events.
	Tick float64
	// SampleEvery is the interval of evaluation-function samples; 0 for
	// none.
	SampleEvery float64
	// LaunchDelay is how long a provisioned node takes to become ready.
	LaunchDelay float64
	// Catalog lists the instance types ProvisionNode may ask for.
	Catalog []cluster.InstanceType
	// Horizon stops the run at this time when positive; jobs not finished
	// by then are reported unfinished.
	Horizon float64
	// Check verifies the invariants after every event (tests turn it on).
	Check bool
	// ProgressDuringGrace lets a preempted job keep training through its
	// grace period. By default it does not: the grace period is the time
	// the job spends on "suspension processing (e.g., writing data back to
	// persistent storage)" (FitGpp, Sec. 2), which is also what a
	// Kubernetes trainer does between SIGTERM and the end of its
	// terminationGracePeriodSeconds. Its resources stay held either way.
	ProgressDuringGrace bool
	// Interference is co-location overhead beyond fair sharing: on a node
	// whose summed usage exceeds its capacity, each of its k jobs is
	// slowed further by 1 / (1 + Interference·(k-1)), as thread
	// oversubscription and cache or memory-bandwidth contention do. 0,
	// the default, is pure fair sharing (Node.Contention alone).
	Interference float64
	// SeriesEvery is the spacing of utilisation samples (default 3600 s).
	SeriesEvery float64
	// OnProgress, when set, is told the number of jobs that have ended
	// (finished or rejected) out of the total, every few thousand events.
	OnProgress func(ended, total int)
	// Observe, when set, is told about every applied action and job
	// completion, for timelines and logs.
	Observe func(t float64, kind Observed, js *cluster.JobState, detail string)
	// IdleCycles is how many cycles in a row may change nothing, with no
	// event left, before the run stops (default 1, or 1000 for a
	// time-driven policy on a tick).
	IdleCycles int
	// Autoscaler, when set, turns on the cluster-autoscaler model (see
	// Autoscaler): nodes are added from Catalog for pods that cannot fit
	// and empty nodes are released. Nil keeps the cluster as the policy
	// leaves it.
	Autoscaler *Autoscaler
	// ElasticMetrics adds node-hours, over-provisioned node-hours and
	// pending-time metrics to the run's extra metrics (always on with an
	// Autoscaler), so a fixed cluster can be compared with elastic ones.
	ElasticMetrics bool
}

// maxCyclesPerInstant bounds event-driven cycles at one simulated instant:
// cycles repeat while they change something (a policy may start one job
// per cycle), but two decisions that undo each other must not loop forever.
const maxCyclesPerInstant = 1000

// jobRT is the simulator's private bookkeeping for one job.
type jobRT struct {
	st *cluster.JobState
	// ver versions completion events (a speed change reschedules the
	// completion); pver versions grace-end and pause-end events, which
	// only leaving the nodes (suspension, completion, a move) supersedes.
	ver, pver uint32
	arrived   bool
	runIdx    int
	rec       metrics.JobRecord
	suspended float64 // time of the last suspension, -1 if none pending
	lastLeft  float64 // for the no-work-created invariant
}

// current reports whether event e still applies to the job.
func (rt *jobRT) current(e *event) bool {
	if e.kind == evComplete {
		return rt.ver == e.ver
	}
	return rt.pver == e.ver
}

// Sim is one simulation run. Use New, then Run once.
type Sim struct {
	cfg   Config
	pol   policy.Policy
	timed bool

	now      float64
	nodes    []*cluster.NodeState
	nodeBorn []float64
	nodeGone []float64
	jobs     []*jobRT // sorted by submit
	byID     map[string]*jobRT
	next     int // next arrival
	queue    *cluster.Queue
	pending  cluster.PendingQueue // queue.ReadOnly(), for snapshots
	running  []*cluster.JobState
	runRT    []*jobRT

	events eventHeap
	seq    uint64
	dirty  bool
	cycle  uint64
	ended  int
	// gen numbers the states of the cluster a snapshot shows: it moves on
	// with every event and every cycle that applied more than Waits or
	// may have moved placeholders or nodes (Snapshot.Gen).
	gen uint64
	// snap is the snapshot handed to the policy, refilled every cycle.
	snap cluster.Snapshot

	maxNode      resource.Vector // component-wise largest node or catalogue type
	placeholders []cluster.Placeholder
	phUnits      []phUnit
	names        map[string]bool // node names in use
	elig         *cluster.Eligibility
	sampleArmed  bool   // an evSample event is pending
	contended    []bool // per node: some job on it was slowed by contention

	refusals []policy.Refusal
	// integrals for utilisation
	lastT                   float64
	alloc, capReady         resource.Vector
	allocInt, capInt        [resource.NumKinds]float64
	series                  []metrics.Point
	lastSeries              float64
	nodeSeq                 map[string]int
	firstSubmit, lastFinish float64
	extra                   map[string]float64
	ca                      caState
}

// Result is what a run produced.
type Result struct {
	Policy   string
	Records  []metrics.JobRecord
	Stats    metrics.RunStats
	Refusals []policy.Refusal
	// Final is the state of every job at the end, in submit order.
	Final []*cluster.JobState
	// Elastic is the hourly node time and cost with Config.ElasticMetrics
	// or an Autoscaler (nil otherwise).
	Elastic []ElasticHour
}

// Metrics returns the standard summary of the result.
func (r *Result) Metrics() map[string]float64 { return metrics.Summary(r.Records, r.Stats) }

// New prepares a run of policy p over the given nodes and jobs. Jobs are
// validated here; an invalid job is an error naming it and its field.
func New(cfg Config, nodes []cluster.Node, jobs []*cluster.Job, p policy.Policy) (*Sim, error) {
	if len(nodes) == 0 && len(cfg.Catalog) == 0 {
		return nil, errors.New("cluster has no nodes and no instance catalogue to provision from")
	}
	if cfg.SeriesEvery <= 0 {
		cfg.SeriesEvery = 3600
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"tick", cfg.Tick}, {"sample_every", cfg.SampleEvery}, {"launch_delay", cfg.LaunchDelay}, {"horizon", cfg.Horizon}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return nil, fmt.Errorf("config: %s %v is not a finite number >= 0", f.name, f.v)
		}
	}
	if !(cfg.Interference >= 0) || math.IsInf(cfg.Interference, 0) {
		return nil, fmt.Errorf("config: interference %v is not a finite number >= 0", cfg.Interference)
	}
	s := &Sim{cfg: cfg, pol: p, queue: cluster.NewQueue(), byID: make(map[string]*jobRT, len(jobs)),
		nodeSeq: map[string]int{}, extra: map[string]float64{}, names: map[string]bool{}, ca: caState{next: math.Inf(1)},
		elig: cluster.NewEligibility()}
	s.pending = s.queue.ReadOnly()
	if td, ok := p.(policy.TimeDriven); ok && td.TimeDriven() {
		s.timed = true
	}
	if s.cfg.IdleCycles <= 0 {
		s.cfg.IdleCycles = 1
		if s.timed && cfg.Tick > 0 {
			s.cfg.IdleCycles = 1000
		}
	}
	for i := range nodes {
		if nodes[i].Capacity.AnyNegative() {
			return nil, fmt.Errorf("node %s: negative capacity %v", nodes[i].Name, nodes[i].Capacity)
		}
		if s.names[nodes[i].Name] && nodes[i].Name != "" {
			return nil, fmt.Errorf("node %s: duplicate name", nodes[i].Name)
		}
		s.addNode(nodes[i], true)
	}
	for _, t := range cfg.Catalog {
		s.maxNode = s.maxNode.Max(t.Capacity)
	}
	var errs []error
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.byID[j.ID]; dup {
			errs = append(errs, fmt.Errorf("job %s: id: duplicate", j.ID))
			continue
		}
		rt := &jobRT{st: cluster.NewJobState(j), runIdx: -1, suspended: -1, lastLeft: j.Work}
		rt.rec = metrics.JobRecord{ID: j.ID, Class: j.Class, Tenant: j.Tenant, Model: j.Model,
			GPUs: j.RequestedDemand()[resource.GPU], Submit: j.Submit, FirstStart: -1, Finish: -1, Work: j.Work}
		s.byID[j.ID] = rt
		s.jobs = append(s.jobs, rt)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.SliceStable(s.jobs, func(a, b int) bool { return s.jobs[a].st.Job.Submit < s.jobs[b].st.Job.Submit })
	if len(s.jobs) > 0 {
		s.now = s.jobs[0].st.Job.Submit
		s.firstSubmit = s.now
		for i := range s.nodeBorn {
			s.nodeBorn[i] = s.now // the initial cluster costs from the first submission
		}
		s.lastT = s.now
		s.lastSeries = s.now - s.cfg.SeriesEvery
	}
	return s, nil
}

// fitsSomeNode reports whether one replica of group g fits, alone, on some
// node or catalogue type that its role allows: the per-kind maximum is not
// enough (a node with the most GPUs may not be the one with the most CPU).
func (s *Sim) fitsSomeNode(j *cluster.Job, g int) bool {
	d := j.Groups[g].Demand
	for _, n := range s.nodes {
		if !n.Gone && d.Fits(n.Capacity) && placement.Eligible(n, j, g) {
			return true
		}
	}
	for _, t := range s.cfg.Catalog {
		if d.Fits(t.Capacity) && cluster.Admits(catalogNode(&t), j.Groups[g].Constraint) {
			return true
		}
	}
	return false
}

// catalogNode is a node of instance type t as the simulator provisions it:
// no labels, no taints.
func catalogNode(t *cluster.InstanceType) *cluster.Node {
	return &cluster.Node{Name: t.Name, InstanceType: t.Name, Capacity: t.Capacity}
}

// constraintRefusals explains why no node admits group g of j although some are
// large enough and of its role: "3 node(s) had untolerated taint {k: v},
// 5 node(s) didn't match Pod's node affinity/selector", kube-scheduler's
// wording, reasons sorted.
func (s *Sim) constraintRefusals(j *cluster.Job, g int) string {
	var order []string
	count := map[string]int{}
	for _, n := range s.nodes {
		if n.Gone || n.Role != "" && n.Role != j.Groups[g].Name {
			continue
		}
		why := cluster.WhyNot(&n.Node, j.Groups[g].Constraint)
		if why == "" {
			continue
		}
		if count[why] == 0 {
			order = append(order, why)
		}
		count[why]++
	}
	slices.Sort(order) // by reason, as kube-scheduler lists them
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = fmt.Sprintf("%d %s", count[w], w)
	}
	return strings.Join(parts, ", ")
}

func (s *Sim) addNode(n cluster.Node, ready bool) *cluster.NodeState {
	for n.Name == "" || s.names[n.Name] {
		s.nodeSeq[n.InstanceType]++
		n.Name = fmt.Sprintf("%s-p%d", n.InstanceType, s.nodeSeq[n.InstanceType])
	}
	s.names[n.Name] = true
	s.contended = append(s.contended, false)
	ns := &cluster.NodeState{Node: n, Index: len(s.nodes), Ready: ready}
	s.nodes = append(s.nodes, ns)
	s.nodeBorn = append(s.nodeBorn, s.now)
	s.nodeGone = append(s.nodeGone, -1)
	s.nodeAdded(ns.Index)
	s.maxNode = s.maxNode.Max(n.Capacity)
	if ready {
		s.capReady = s.capReady.Add(n.Capacity)
	}
	return ns
}

// Run executes the simulation to the end and returns its result.
func (s *Sim) Run(ctx context.Context) (*Result, error) {

	nextTick := math.Inf(1)
	if s.cfg.Tick > 0 {
		nextTick = math.Ceil(s.now/s.cfg.Tick) * s.cfg.Tick
	}
	idle := 0
	steps := 0
	sameInstant, lastCycleAt := 0, math.Inf(-1)
	for {
		steps++
		if steps&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if s.cfg.OnProgress != nil {
				s.cfg.OnProgress(s.ended, len(s.jobs))
			}
		}
		te := s.nextEventTime()
		if s.cfg.Horizon > 0 && math.Min(te, nextTick) > s.cfg.Horizon {
			s.advance(s.cfg.Horizon)
			break
		}
		if s.ended == len(s.jobs) && (s.cfg.Autoscaler == nil || !s.dirty && math.IsInf(s.ca.next, 1)) {
			break // (with the autoscaler model, empty nodes are released first)
		}
		runCycle := false
		if s.cfg.Tick > 0 {
			if !s.dirty && !s.timed {
				if math.IsInf(te, 1) {
					break
				}
				if t := math.Ceil(te/s.cfg.Tick) * s.cfg.Tick; t > nextTick {
					nextTick = t
				}
			}
			runCycle = nextTick < te
			if runCycle {
				s.advance(nextTick)
				nextTick += s.cfg.Tick
			}
		} else {
			// Actions that change what a policy would see (a suspension
			// with no grace, a rejection) mark the state dirty again; a
			// bounded number of cycles at one instant lets the policy act
			// on them without letting two decisions undo each other forever.
			if s.now != lastCycleAt {
				sameInstant = 0
			}
			runCycle = s.dirty && te > s.now && sameInstant < maxCyclesPerInstant
			if !runCycle && s.dirty && te > s.now {
				s.dirty = false
			}
			if runCycle {
				sameInstant++
				lastCycleAt = s.now
			}
		}
		if runCycle {
			if s.cycleOnce() {
				idle = 0
			} else if math.IsInf(s.nextEventTime(), 1) { // (the cycle may have scheduled a scale-down)
				idle++
				if idle >= s.cfg.IdleCycles || s.ended == len(s.jobs) {
					break
				}
			}
			if err := s.check(); err != nil {
				return nil, err
			}
			continue
		}
		if math.IsInf(te, 1) {
			break
		}
		s.step(te)
		if err := s.check(); err != nil {
			return nil, err
		}
	}
	if s.cfg.OnProgress != nil {
		s.cfg.OnProgress(s.ended, len(s.jobs))
	}
	return s.result(), nil
}

func (s *Sim) nextEventTime() float64 {
	t := math.Inf(1)
	// Drop superseded job events (a completion rescheduled by a rate
	// change, a grace end of a job that finished first) so that they
	// neither keep the run alive nor cost a tick.
	for len(s.events) > 0 {
		e := &s.events[0]
		if e.job == nil || e.job.current(e) {
			break
		}
		heap.Pop(&s.events)
	}
	if len(s.events) > 0 {
		t = s.events[0].t
	}
	if s.next < len(s.jobs) {
		t = math.Min(t, s.jobs[s.next].st.Job.Submit)
	}
	return t
}

// advance moves the clock, integrating utilisation on the way.
func (s *Sim) advance(t float64) {
	if t < s.now {
		return
	}
	dt := t - s.lastT
	s.integrateElastic(dt)
	for k := range s.alloc {
		s.allocInt[k] += float64(s.alloc[k]) * dt
		s.capInt[k] += float64(s.capReady[k]) * dt
	}
	s.lastT = t
	s.now = t
	if t-s.lastSeries >= s.cfg.SeriesEvery && s.capReady[resource.GPU] > 0 {
		s.series = append(s.series, metrics.Point{T: t, Value: float64(s.alloc[resource.GPU]) / float64(s.capReady[resource.GPU])})
		s.lastSeries = t
	}
}

// step handles the earliest event (an arrival or a heap event) at time t.
func (s *Sim) step(t float64) {
	s.gen++
	s.advance(t)
	if len(s.events) > 0 && s.events[0].t == t {
		e := heap.Pop(&s.events).(event)
		s.handle(&e)
		return
	}
	rt := s.jobs[s.next]
	s.next++
	s.arrive(rt)
}

func (s *Sim) arrive(rt *jobRT) {
	rt.arrived = true
	s.dirty = true
	j := rt.st.Job
	for g := range j.Groups {
		d := j.Groups[g].Demand
		if !d.Fits(s.maxNode) {
			s.reject(rt, fmt.Sprintf("unschedulable: a %s replica needs %v, more %s than any node has (largest %v)",
				j.Groups[g].Name, d, d.Short(s.maxNode), s.maxNode))
			return
		}
		if !s.fitsSomeNode(j, g) {
			why := ""
			if r := s.constraintRefusals(j, g); r != "" {
				why = " (node constraints: " + r + ")"
			}
			s.reject(rt, fmt.Sprintf("unschedulable: no single node or instance type that may run %s replicas has %v%s",
				j.Groups[g].Name, d, why))
			return
		}
	}
	rt.st.Enqueued = s.now
	s.queue.PushBack(rt.st)
}

func (s *Sim) handle(e *event) {
	switch e.kind {
	case evComplete:
		if e.job.current(e) {
			s.complete(e.job)
		}
	case evGraceEnd:
		if e.job.current(e) && e.job.st.Phase == cluster.Suspending {
			s.suspend(e.job)
		}
	case evPauseEnd:
		if e.job.current(e) && e.job.st.Phase == cluster.Migrating {
			e.job.st.Phase = cluster.Running
			s.setRate(e.job)
			s.dirty = true
		}
	case evNodeReady:
		n := s.nodes[e.node]
		if !n.Gone && !n.Ready {
			n.Ready = true
			s.capReady = s.capReady.Add(n.Capacity)
			s.dirty = true
		}
	case evScaleDown:
		s.scaleDown()
	case evSample:
		s.sampleArmed = false
		s.sample()
		// Keep sampling only while something runs: with nothing running a
		// pending sample would keep the run alive forever (a job that can
		// never start, a time-driven policy). allocate re-arms it.
		if len(s.running) > 0 {
			s.armSample()
		}
	}
}

func (s *Sim) sample() {
	for _, js := range s.running {
		if js.Job.Eval == nil {
			continue
		}
		v := js.Job.Eval.Sample(js.Progress(s.now), js.Job.Seed, len(js.Evals))
		js.Evals = append(js.Evals, cluster.EvalSample{T: s.now, Value: v})
		s.dirty = true
	}
}

// armSample schedules the next evaluation sample on the grid
// firstSubmit + k*SampleEvery, strictly after now.
func (s *Sim) armSample() {
	if s.cfg.SampleEvery <= 0 || s.sampleArmed {
		return
	}
	k := math.Floor((s.now-s.firstSubmit)/s.cfg.SampleEvery) + 1
	t := s.firstSubmit + k*s.cfg.SampleEvery
	for t <= s.now { // rounding can land the grid point on now
		k++
		t = s.firstSubmit + k*s.cfg.SampleEvery
	}
	s.push(event{t: t, kind: evSample})
	s.sampleArmed = true
}

// cycleOnce runs the policy and applies its actions; it reports whether
// any action changed the cluster.
func (s *Sim) cycleOnce() bool {
	s.dirty = false
	s.cycle++
	// One Snapshot value for the run, refilled each cycle: a policy keeps
	// nothing of it past Schedule (policy.Policy), and a long replay runs
	// a cycle per tick (207,000 on the long Philly slice under drover).
	s.snap = cluster.Snapshot{Now: s.now, Cycle: s.cycle, Seed: s.cfg.Seed, Nodes: s.nodes,
		Running: s.running, Pending: s.pending, Catalog: s.cfg.Catalog, Placeholders: s.placeholders, Eligibility: s.elig,
		Gen: s.gen}
	snap := &s.snap
	actions := s.pol.Schedule(snap)
	changed := false
	defer func() {
		// A cycle that changed the cluster may have enabled more (a
		// policy that scales one step per cycle, or acts on a suspension):
		// run the next tick even if no event arrives before it.
		s.dirty = s.dirty || changed
	}()
	for _, a := range actions {
		if ph, ok := a.(policy.SetPlaceholders); ok && slices.Equal(ph.Placeholders, s.placeholders) {
			continue // the same set again changes nothing
		}
		if _, ok := a.(policy.Wait); !ok {
			s.gen++ // (a refused action changes nothing either: counted anyway)
		}
		if err := s.apply(a); err != nil {
			s.refusals = append(s.refusals, policy.Refusal{Time: s.now, Action: a, Reason: err.Error()})
			continue
		}
		switch a.(type) {
		case policy.Wait, policy.SetLabel:
		default:
			changed = true
		}
	}
	if s.cfg.Autoscaler != nil || len(s.phUnits) > 0 {
		s.gen++ // afterCycle may add or release nodes, or bind placeholders
	}
	if s.afterCycle() {
		changed = true
	}
	return changed
}

func (s *Sim) observe(kind Observed, js *cluster.JobState, detail string) {
	if s.cfg.Observe != nil {
		s.cfg.Observe(s.now, kind, js, detail)
	}
}

// update brings a job's work left up to now.
func (s *Sim) update(rt *jobRT) {
	st := rt.st
	st.WorkLeft = st.Remaining(s.now)
	st.Updated = s.now
}

// setRate recomputes a running job's speed and its completion event.
func (s *Sim) setRate(rt *jobRT) {
	s.update(rt)
	st := rt.st
	rt.ver++
	if st.Phase == cluster.Migrating || st.Phase == cluster.Suspending && !s.cfg.ProgressDuringGrace {
		st.Rate = 0
		return
	}
	counts := st.Counts()
	nodes := st.Placement.Nodes()
	rate := st.Job.SpeedAt(counts, len(nodes))
	if !(rate >= 0) || math.IsInf(rate, 0) {
		// A speed model that returns NaN, Inf or a negative speed would
		// create or poison work; treat it as no progress.
		rate = 0
	}
	slowest := 1.0
	for _, n := range nodes {
		ns := s.nodes[n]
		c := ns.Contention()
		if c < 1 && s.cfg.Interference > 0 && len(ns.Jobs) > 1 {
			c /= 1 + s.cfg.Interference*float64(len(ns.Jobs)-1)
		}
		slowest = math.Min(slowest, c)
	}
	rate *= slowest
	st.Rate = rate
	if rate > 0 {
		s.push(event{t: s.now + st.WorkLeft/rate, kind: evComplete, job: rt, ver: rt.ver})
	}
}

func (s *Sim) complete(rt *jobRT) {
	st := rt.st
	s.update(rt)
	st.WorkLeft = 0
	s.release(rt)
	st.Phase = cluster.Done
	rt.rec.Finish = s.now
	if st.Job.Utility != nil {
		rt.rec.Utility = st.Job.Utility.Value(s.now - st.Job.Submit)
	}
	s.lastFinish = math.Max(s.lastFinish, s.now)
	s.ended++
	s.dirty = true
	s.observe(ObsComplete, st, "")
}

func (s *Sim) suspend(rt *jobRT) {
	st := rt.st
	s.release(rt)
	st.Phase = cluster.Pending
	st.Preemptions++
	rt.rec.Preemptions++
	rt.suspended = s.now
	st.Enqueued = s.now
	s.queue.PushFront(st)
	s.dirty = true
	s.observe(ObsSuspend, st, "")
}

func (s *Sim) reject(rt *jobRT, reason string) {
	rt.st.Phase = cluster.Rejected
	rt.rec.Rejected = true
	rt.rec.Reason = reason
	s.ended++
	s.dirty = true
	s.observe(ObsReject, rt.st, reason)
}

// allocate puts a job's placement on its nodes and marks it running.
func (s *Sim) allocate(rt *jobRT, p cluster.Placement) {
	st := rt.st
	st.Placement = p
	s.evictPlaceholders(p, st.Job)
	for _, a := range p {
		n := s.nodes[a.Node]
		g := &st.Job.Groups[a.Group]
		n.Allocated = n.Allocated.Add(g.Demand)
		n.Usage = n.Usage.Add(g.EffectiveUsage())
		s.alloc = s.alloc.Add(g.Demand)
	}
	for _, ni := range p.Nodes() {
		n := s.nodes[ni]
		n.Jobs = append(n.Jobs, st)
	}
	if rt.runIdx < 0 {
		rt.runIdx = len(s.running)
		s.running = append(s.running, st)
		s.runRT = append(s.runRT, rt)
		s.armSample()
	}
	s.touch(p.Nodes(), rt)
}

// release takes a job off its nodes and out of the running set.
func (s *Sim) release(rt *jobRT) {
	st := rt.st
	s.update(rt)
	rt.ver++
	rt.pver++
	old := st.Placement
	for _, a := range old {
		n := s.nodes[a.Node]
		g := &st.Job.Groups[a.Group]
		n.Allocated = n.Allocated.Sub(g.Demand)
		n.Usage = n.Usage.Sub(g.EffectiveUsage())
		if st.Phase == cluster.Suspending {
			n.Releasing = n.Releasing.Sub(g.Demand)
		}
		s.alloc = s.alloc.Sub(g.Demand)
	}
	nodes := old.Nodes()
	for _, ni := range nodes {
		n := s.nodes[ni]
		for i, o := range n.Jobs {
			if o == st {
				n.Jobs = append(n.Jobs[:i], n.Jobs[i+1:]...)
				break
			}
		}
	}
	st.Placement = nil
	st.Rate = 0
	if i := rt.runIdx; i >= 0 {
		last := len(s.running) - 1
		s.running[i], s.runRT[i] = s.running[last], s.runRT[last]
		s.runRT[i].runIdx = i
		s.running, s.runRT = s.running[:last], s.runRT[:last]
		rt.runIdx = -1
	}
	s.touch(nodes, nil)
}

// touch recomputes the speed of jobs on nodes whose contention may have
// changed, and of the job that moved.
func (s *Sim) touch(nodes []int, moved *jobRT) {
	if moved != nil && moved.runIdx >= 0 {
		s.setRate(moved)
	}
	for _, ni := range nodes {
		n := s.nodes[ni]
		c := n.Contention() < 1
		if !c && !s.contended[ni] {
			continue
		}
		s.contended[ni] = c
		for _, o := range n.Jobs {
			if ort := s.byID[o.Job.ID]; ort != moved && o.Phase != cluster.Migrating {
				s.setRate(ort)
			}
		}
	}
}

func (s *Sim) result() *Result {
	recs := make([]metrics.JobRecord, len(s.jobs))
	final := make([]*cluster.JobState, len(s.jobs))
	for i, rt := range s.jobs {
		recs[i] = rt.rec
		final[i] = rt.st
		if !rt.rec.Finished() && !rt.rec.Rejected && rt.rec.Reason == "" {
			recs[i].Reason = rt.st.Reason
			if recs[i].Reason == "" {
				recs[i].Reason = "did not finish (phase " + rt.st.Phase.String() + ")"
			}
		}
	}
	end := math.Max(s.lastFinish, s.now)
	cost := 0.0
	for i, n := range s.nodes {
		stop := s.nodeGone[i]
		if stop < 0 {
			stop = end
		}
		cost += n.PricePerHour * (stop - s.nodeBorn[i]) / 3600
	}
	s.elasticMetrics(end)
	st := metrics.RunStats{Makespan: s.lastFinish - s.firstSubmit, Cost: cost, Refused: len(s.refusals),
		GPUUtilSeries: s.series, ExtraMetrics: s.extra}
	if s.lastFinish == 0 {
		st.Makespan = 0
	}
	if s.capInt[resource.CPU] > 0 {
		st.CPUUtil = s.allocInt[resource.CPU] / s.capInt[resource.CPU]
	}
	if s.capInt[resource.GPU] > 0 {
		st.GPUUtil = s.allocInt[resource.GPU] / s.capInt[resource.GPU]
	}
	return &Result{Policy: s.pol.Name(), Records: recs, Stats: st, Refusals: s.refusals, Final: final, Elastic: s.elasticSeries()}
}

// SetExtra records an executor-specific metric (used by extensions such as
// the autoscaler model).
func (s *Sim) SetExtra(key string, v float64) { s.extra[key] = v }
