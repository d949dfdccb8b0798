// Package tiresias is Tiresias' discretized two-dimensional least-attained-
// service scheduler (2D-LAS; Gu et al., "Tiresias: A GPU Cluster Manager for
// Distributed Deep Learning", NSDI 2019) as a drover preset, a research peer
// for the drover profile to beat.
//
// The reading follows the authors' simulator, SymbioticLab/Tiresias,
// simulator/run_sim.py, function dlas_sim_jobs, with the defaults of
// simulator/jobs.py (_TFJobs.__init__) and run_sim.py's main (the
// "dlas-gpu" schedule):
//
//   - Attained service is executed time times the job's GPUs ("dlas-gpu":
//     j_gt = executed_time * num_gpu; "dlas": executed_time alone,
//     service=time here). A job is in queue k when its service has passed
//     k of the thresholds: jobs.py sets num_queue = 3 and queue_limit =
//     [3250, 7200, 18000], of which a 3-queue run reads the first two
//     (a job in the last queue is never demoted), so the default is
//     thresholds=3250/7200 GPU-seconds. New jobs enter queue 0.
//   - Each event, dlas_sim_jobs walks the queues in order and, in each, its
//     jobs in list order, running jobs first ("sort based on the job start
//     time": pending jobs are moved behind the running ones after every
//     event); a job runs when the free GPUs hold it, otherwise it is
//     skipped (no head-of-line blocking) and, if it was running, preempted.
//     So a pending job displaces running jobs of later (lower-priority)
//     queues only, never of its own queue.
//   - Starvation (solve_starvation, 0 for "dlas-gpu", N for "dlas-gpu-N"):
//     a pending job in a queue below the first that has run since its last
//     promotion is promoted back to queue 0, its executed_time reset to 0,
//     once last_pending_time >= executed_time * solve_starvation, where
//     last_pending_time sums the time it waited since it first ran after
//     its last promotion. starve= is that knob, default 0 (off) as in
//     "dlas-gpu".
//
// In drover's terms:
//
//   - Order (QueueSort "tiresias-order"): queue index, then (in queue 0)
//     jobs promoted from starvation behind the others, by promotion time
//     (the reference appends them to queue 0), ties in the executor's
//     queue order: arrival order with a preempted job at the head, which
//     is the reference's list order to a first approximation (its running-
//     first partition puts the job that stopped running last ahead of
//     those that waited).
//   - Preemption (Preempt "tiresias"): a pending job that does not fit
//     waits for room being freed by jobs in their grace period if that is
//     enough; otherwise it preempts running jobs of strictly later queues,
//     the lowest priority first (last queue, then most recently started),
//     until it fits, and then keeps running every victim it can spare,
//     highest priority first (the reference's greedy walk keeps a
//     higher-priority job whenever it still fits). Victims get their own
//     grace period. A job no set of such victims makes room for is skipped.
//   - Attained service comes from the snapshot: executed seconds are the
//     work done (Job.Work minus Remaining), which equals the reference's
//     executed time for a job at speed 1 (the reference has no speed
//     model; its duration is the executed time), times the requested GPUs.
//     On Kubernetes, work done is the trainer's reported progress: a job
//     that reports none attains nothing and stays in queue 0.
//   - Starvation state (the work done at the last promotion and the
//     pending time since) is kept in two labels written when a job
//     starts, so the controller can restart; the promotion itself is a
//     function of the clock.
//   - The reference computes the next demotion or promotion time and
//     schedules an event for it; here the plugin is TimeDriven and the
//     executor's tick (60 s in the experiments) finds it.
//
// Not done: the Gittins-index variant ("dlas-gpu-gittins"), which ranks
// jobs within a queue by a Gittins index computed from a GPU-time
// distribution read from a file (yarn-gput*.csv, get_gittins_index); no
// drover workload states its duration distribution to the scheduler.
package tiresias

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// Plugin and preset names.
const (
	OrderName   = "tiresias-order"
	PreemptName = "tiresias"
)

// Labels the starvation rule keeps with a job (written only when starve>0).
const (
	// LabelBase is the work done (seconds at speed 1) when the job was
	// last promoted to queue 0: its executed time counts from there.
	LabelBase = "drover.dev/tiresias-base"
	// LabelWait is the time the job waited since it first ran after its
	// last promotion, up to its last start (last_pending_time).
	LabelWait = "drover.dev/tiresias-wait"
)

// DefaultThresholds are the queue limits of the reference's default
// "dlas-gpu" run in GPU-seconds (simulator/jobs.py: num_queue = 3,
// queue_limit = [3250, 7200, 18000]; three queues read the first two).
var DefaultThresholds = []float64{3250, 7200}

// Bounds of the parameters.
const (
	MaxQueues    = 64
	MaxThreshold = 1e12
	MaxStarve    = 1e6
)

// Config is the 2D-LAS configuration shared by the preset's plugins.
type Config struct {
	// Thresholds are the attained-service limits of queues 0..K-2,
	// strictly increasing; K = len+1 queues.
	Thresholds []float64
	// Starve is solve_starvation: a pending job is promoted to queue 0
	// once it waited Starve times its executed time; 0 turns it off.
	Starve float64
	// TimeOnly counts executed seconds, not GPU-seconds ("dlas").
	TimeOnly bool
}

// Queues is the number of queues.
func (cf *Config) Queues() int { return len(cf.Thresholds) + 1 }

// labelFloat reads a non-negative finite label, 0 when absent or bad (a
// label may have been written by anyone who can write the status).
func labelFloat(js *cluster.JobState, key string, max float64) float64 {
	s, ok := js.Labels[key]
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || v > max {
		return 0
	}
	return v
}

// gpus is the job's requested GPU count (the reference's num_gpu).
func gpus(js *cluster.JobState) float64 {
	return float64(js.Job.RequestedDemand()[resource.GPU])
}

// done is the work done at now, seconds at speed 1.
func done(js *cluster.JobState, now float64) float64 {
	return js.Attained(now)
}

// State is a job's position in the 2D-LAS queues at a time.
type State struct {
	// Executed is the executed time since the last promotion (seconds at
	// speed 1), Service the attained service the queue is chosen by.
	Executed, Service float64
	// Queue is the job's queue, 0 the highest priority.
	Queue int
	// Promoted is set when the starvation rule put a pending job back in
	// queue 0, at PromotedAt; Wait is its last_pending_time now.
	Promoted   bool
	PromotedAt float64
	Wait       float64
}

// StateOf returns js's queue state at now. Only a pending job can be
// promoted.
func (cf *Config) StateOf(js *cluster.JobState, now float64) State {
	var s State
	s.Executed = math.Max(0, done(js, now)-labelFloat(js, LabelBase, js.Job.Work))
	s.Service = s.Executed
	if !cf.TimeOnly {
		s.Service *= gpus(js)
	}
	for s.Queue < len(cf.Thresholds) && s.Service >= cf.Thresholds[s.Queue] {
		s.Queue++
	}
	if cf.Starve > 0 && js.Phase == cluster.Pending && s.Executed > 0 {
		s.Wait = labelFloat(js, LabelWait, MaxThreshold) + math.Max(0, now-js.Enqueued)
		if limit := s.Executed * cf.Starve; s.Queue > 0 && s.Wait >= limit {
			s.Promoted, s.PromotedAt, s.Queue = true, now-(s.Wait-limit), 0
		}
	}
	return s
}

// Order is the QueueSort of the preset: queue, then starvation-promoted
// jobs behind the others of queue 0 by promotion time, ties in queue
// order. As a Reserve plugin it keeps the starvation labels (Starve > 0).
type Order struct{ Cf *Config }

var (
	_ framework.KeyedSort         = Order{}
	_ framework.Reserve           = Order{}
	_ framework.EnqueueExtensions = Order{}
)

// Name implements framework.Plugin.
func (Order) Name() string { return OrderName }

// Key implements framework.KeyedSort.
func (o Order) Key(c *framework.Cycle, js *cluster.JobState) framework.SortKey {
	s := o.Cf.StateOf(js, c.Snap.Now)
	var k framework.SortKey
	k[0] = float64(s.Queue)
	if s.Promoted {
		k[1], k[2] = 1, s.PromotedAt
	}
	return k
}

// Compare implements framework.QueueSort.
func (o Order) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	return framework.CompareKeys(o.Key(c, a), o.Key(c, b))
}

// Events implements framework.EnqueueExtensions for a QueueSort: a
// pending job's attained service does not grow, so its queue changes only
// by the starvation rule, on the clock (EventAlways when it is on).
func (o Order) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	if o.Cf.Starve > 0 {
		return framework.EventAlways
	}
	return 0
}

// Requeue implements framework.EnqueueExtensions.
func (Order) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Reserve implements framework.Reserve: with the starvation rule on, a
// job that starts promoted restarts its executed time and wait
// (LabelBase, LabelWait = 0: the reference's reset of executed_time and
// last_pending_time); one that waited after running adds that wait to
// LabelWait.
func (o Order) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	if o.Cf.Starve <= 0 {
		return
	}
	now := c.Snap.Now
	s := o.Cf.StateOf(js, now)
	id := js.Job.ID
	switch {
	case s.Promoted:
		c.St.Record(js, policy.SetLabel{Job: id, Key: LabelBase, Value: strconv.FormatFloat(done(js, now), 'g', -1, 64)})
		c.St.Record(js, policy.SetLabel{Job: id, Key: LabelWait, Value: "0"})
	case s.Executed > 0 && now > js.Enqueued:
		c.St.Record(js, policy.SetLabel{Job: id, Key: LabelWait, Value: strconv.FormatFloat(s.Wait, 'g', -1, 64)})
	}
}

// Preemptor is the preset's Preempt plugin: a pending job that does not
// fit takes the room of running jobs in strictly later queues (see the
// package doc). It acts on a clock (running jobs are demoted while they
// run), so it is TimeDriven, and declares through EnqueueExtensions when
// the clock can change its answer.
type Preemptor struct{ Cf *Config }

var (
	_ framework.Preempt           = Preemptor{}
	_ framework.EnqueueExtensions = Preemptor{}
	_ framework.TimeDriven        = Preemptor{}
)

// Name implements framework.Plugin.
func (Preemptor) Name() string { return PreemptName }

// TimeDriven implements framework.TimeDriven: demotions and promotions
// happen on the clock, with no event.
func (Preemptor) TimeDriven() bool { return true }

// UsesSoon says the plugin plans on the Soon ledger.
func (Preemptor) UsesSoon() bool { return true }

// minRunningQueue is the lowest queue of a job in phase Running, or the
// number of queues when none runs.
func (p Preemptor) minRunningQueue(c *framework.Cycle) int {
	m := p.Cf.Queues()
	for _, js := range c.Snap.Running {
		if js.Phase == cluster.Running {
			m = min(m, p.Cf.StateOf(js, c.Snap.Now).Queue)
		}
	}
	return m
}

// clocked reports whether the clock alone can change the answer for a
// pending job in state s: it may be promoted, or a running job at or
// above its queue may be demoted below it.
func (p Preemptor) clocked(c *framework.Cycle, s State, minRun int) bool {
	if p.Cf.Starve > 0 && s.Queue > 0 && s.Executed > 0 {
		return true
	}
	return s.Queue < p.Cf.Queues()-1 && minRun <= s.Queue
}

// Events implements framework.EnqueueExtensions. For a job that failed:
// EventAlways while the clock can give it a victim (see clocked), else
// room, the running jobs or the nodes. With no job (the idle-cycle
// declaration of a TimeDriven plugin): EventAlways when the clock can
// change the answer for some pending job.
func (p Preemptor) Events(c *framework.Cycle, js *cluster.JobState) framework.Events {
	minRun := p.minRunningQueue(c)
	if js != nil {
		if p.clocked(c, p.Cf.StateOf(js, c.Snap.Now), minRun) {
			return framework.EventAlways
		}
		return framework.EventRoom | framework.EventRunning | framework.EventNodes
	}
	for pj := range c.Snap.Pending.All() {
		if p.clocked(c, p.Cf.StateOf(pj, c.Snap.Now), minRun) {
			return framework.EventAlways
		}
	}
	return 0
}

// Requeue implements framework.EnqueueExtensions.
func (Preemptor) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

type victim struct {
	js    *cluster.JobState
	queue int
}

// victims lists the running jobs of queues after q that this cycle has
// not touched, lowest priority first: last queue first, then the most
// recently started, then the larger ID.
func (p Preemptor) victims(c *framework.Cycle, q int) []victim {
	var out []victim
	for _, js := range c.Snap.Running {
		if js.Phase != cluster.Running || c.St.Busy(js) || c.St.Op(js) != framework.OpNone {
			continue
		}
		if vq := p.Cf.StateOf(js, c.Snap.Now).Queue; vq > q {
			out = append(out, victim{js, vq})
		}
	}
	slices.SortFunc(out, func(a, b victim) int {
		if d := cmp.Compare(b.queue, a.queue); d != 0 {
			return d
		}
		if d := cmp.Compare(b.js.LastStart, a.js.LastStart); d != 0 {
			return d
		}
		return cmp.Compare(b.js.Job.ID, a.js.Job.ID)
	})
	return out
}

// Preempt implements framework.Preempt.
func (p Preemptor) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	soon := c.St.Soon()
	if soon == nil {
		return framework.NewStatus(framework.Error, "needs the Soon ledger (profile Future)")
	}
	counts := js.Job.RequestedCounts()
	if pl, st := c.Place(soon, js, counts); st.IsSuccess() {
		c.St.Nominate(js, pl)
		return framework.NewStatus(framework.Wait, "waiting for preempted jobs' grace periods")
	}
	q := p.Cf.StateOf(js, c.Snap.Now).Queue
	cands := p.victims(c, q)
	chosen, pl := choose(c, soon, js, counts, cands)
	if chosen == nil {
		return framework.Statusf(framework.Unschedulable, "queue %d: no running jobs of later queues make room", q)
	}
	instant := true
	for _, v := range chosen {
		if v.js.Job.GracePeriod > 0 {
			instant = false
		}
	}
	evict := func(now bool) {
		for _, v := range chosen {
			c.St.Evict(v.js, v.js.Job.GracePeriod, js.Job.ID,
				fmt.Sprintf("tiresias: queue %d job %s displaces queue %d", q, js.Job.ID, v.queue), now)
		}
	}
	if instant {
		c.St.Fork()
		evict(true)
		if c.St.Start(js, pl) {
			c.St.Commit()
			return nil
		}
		c.St.Discard()
	}
	evict(false)
	soon.TakePlacement(js.Job, pl)
	c.St.Nominate(js, pl)
	return framework.Statusf(framework.Wait, "preempted %d jobs of later queues; waiting for their grace periods", len(chosen))
}

// choose gives candidates back on soon, lowest priority first, until js
// fits; then keeps running every chosen victim js can do without,
// highest priority first. It returns the victims and js's placement with
// them gone, or nil when even all candidates do not make room; soon is
// unchanged.
func choose(c *framework.Cycle, soon *placement.Ledger, js *cluster.JobState, counts []int, cands []victim) ([]victim, cluster.Placement) {
	if len(cands) == 0 {
		return nil, nil
	}
	n := 0
	soon.Fork()
	for n < len(cands) {
		soon.GiveJob(cands[n].js)
		n++
		if _, st := c.Place(soon, js, counts); st.IsSuccess() {
			break
		}
		if n == len(cands) {
			soon.Revert()
			return nil, nil
		}
	}
	soon.Revert()
	keep := make([]bool, n)
	fitsWithout := func() (cluster.Placement, bool) {
		soon.Fork()
		defer soon.Revert()
		for i := range n {
			if !keep[i] {
				soon.GiveJob(cands[i].js)
			}
		}
		pl, st := c.Place(soon, js, counts)
		return pl, st.IsSuccess()
	}
	for i := n - 1; i >= 0; i-- {
		keep[i] = true
		if _, ok := fitsWithout(); !ok {
			keep[i] = false
		}
	}
	pl, ok := fitsWithout()
	if !ok {
		return nil, nil // cannot happen: the set without trimming fits
	}
	var out []victim
	for i := range n {
		if !keep[i] {
			out = append(out, cands[i])
		}
	}
	return out, pl
}

// Profile is the preset: 2D-LAS order and preemption, any job that fits
// starts (no head-of-line blocking), most-allocated placement with gangs
// on one node first (the reference's default "yarn" placement takes GPUs
// from one node where it can), the Soon ledger kept.
func Profile(cf *Config) framework.Profile {
	o := Order{Cf: cf}
	return framework.Profile{
		Name:      PreemptName,
		QueueSort: o,
		Filter:    []framework.Filter{framework.NodeRole{}},
		Score:     []framework.WeightedScore{{Score: framework.Strategy{S: placement.Pack}, Weight: 1}},
		Gang:      placement.OneNodeFirst,
		Preempt:   []framework.Preempt{Preemptor{Cf: cf}},
		Reserve:   []framework.Reserve{o},
		Future:    true,
	}
}

// ParseConfig reads thresholds (GPU-seconds, or seconds with
// service=time, separated by '/' or ','), starve and service.
func ParseConfig(name string, pr policy.Params) (*Config, error) {
	if err := pr.Check(name, "thresholds", "starve", "service"); err != nil {
		return nil, err
	}
	cf := &Config{Thresholds: slices.Clone(DefaultThresholds)}
	if v, ok := pr["thresholds"]; ok {
		th, err := parseThresholds(v)
		if err != nil {
			return nil, err
		}
		cf.Thresholds = th
	}
	var err error
	if cf.Starve, err = pr.FloatIn("starve", 0, 0, MaxStarve); err != nil {
		return nil, err
	}
	svc, err := pr.Enum("service", "gpu", "gpu", "time")
	if err != nil {
		return nil, err
	}
	cf.TimeOnly = svc == "time"
	return cf, nil
}

func parseThresholds(v string) ([]float64, error) {
	f := strings.FieldsFunc(v, func(r rune) bool { return r == '/' || r == ',' })
	if len(f) == 0 || len(f) >= MaxQueues {
		return nil, fmt.Errorf("parameter thresholds=%q: want 1 to %d limits separated by '/'", v, MaxQueues-1)
	}
	out := make([]float64, len(f))
	for i, s := range f {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(x > 0) || x > MaxThreshold {
			return nil, fmt.Errorf("parameter thresholds=%q: %q is not a number in (0, %g]", v, s, MaxThreshold)
		}
		if i > 0 && x <= out[i-1] {
			return nil, fmt.Errorf("parameter thresholds=%q: limits must increase", v)
		}
		out[i] = x
	}
	return out, nil
}

// New returns the preset's runtime for cf.
func New(cf *Config) (*framework.Runtime, error) { return scheduler.New(Profile(cf)) }

const paramsDoc = "thresholds=3250/7200 GPU-seconds (Tiresias simulator/jobs.py queue_limit, 3 queues), starve=0 (solve_starvation; dlas-gpu-N uses N), service=gpu|time (dlas-gpu or dlas)"

// Plugins returns the registry entries of the plugins. Each takes the
// preset's parameters; give both the same.
func Plugins() []profile.PluginEntry {
	return []profile.PluginEntry{
		{Name: OrderName, Description: "queueSort, reserve: Tiresias 2D-LAS queue by attained GPU-service, starvation-promoted jobs behind the rest of queue 0, then queue order; " + paramsDoc,
			New: func(a policy.Params) (framework.Plugin, error) {
				cf, err := ParseConfig(OrderName, a)
				if err != nil {
					return nil, err
				}
				return Order{Cf: cf}, nil
			}},
		{Name: PreemptName, Description: "preempt: Tiresias 2D-LAS, a job preempts running jobs of later queues, lowest priority first, keeping those it can spare; time-driven; " + paramsDoc,
			New: func(a policy.Params) (framework.Plugin, error) {
				cf, err := ParseConfig(PreemptName, a)
				if err != nil {
					return nil, err
				}
				return Preemptor{Cf: cf}, nil
			}},
	}
}

// Entries returns the registry entry of the tiresias preset.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: PreemptName, Description: "Tiresias discretized 2D-LAS (Gu et al., NSDI 2019; the authors' dlas-gpu): queues by attained GPU-service, a job preempts running jobs of later queues, no head-of-line blocking; " + paramsDoc,
			New: func(pr policy.Params) (policy.Policy, error) {
				cf, err := ParseConfig(PreemptName, pr)
				if err != nil {
					return nil, err
				}
				return New(cf)
			}},
	}
}
