// Package drover is the `drover` preset: all five papers in one profile,
// and the plugins that make them work together.
//
// The profile, extension point by extension point:
//
//   - queueSort `drover-order`: TE jobs first (FitGpp), then priority,
//     then BE jobs by least remaining GPU-service first (SRSF, the Tiresias
//     paper's shortest-remaining-service-first: the estimated remaining
//     work, JobState.EstimatedRemaining, times GPUs; a job without an
//     estimate, Job.NoEstimate, keeps its attained service, so it is never
//     starved behind jobs with one), TE jobs by least attained
//     GPU-service, then utility, then queue order. The estimate is
//     estimatedDurationSeconds times the fraction not yet done on
//     Kubernetes; SRSF became the default on the run-time estimate boards
//     (`scoreboard-estimates`: estimates off by a factor of 1.65 or 2.7
//     for two jobs in three; docs/combined.md, "SRSF with estimates").
//     order=las: least attained GPU-service for BE jobs too (Tiresias'
//     2D-LAS without its discretisation, the default before).
//     order=weight: the elastic article's weight, priority, utility,
//     demand share, heaviest first, as before issue 24. A job without a
//     class is ordered and protected as a BE job (FitGpp rejects it; a
//     production default should not).
//   - admit `payoff` (off by default, payoff=true): OASiS's payoff test for
//     a job that carries a utility (its utility at the earliest completion
//     minus its resource-time at OASiS's exponential prices, Eq. 22, with
//     bounds learned per tenant, clipped and decaying); jobs without one
//     pass. A job that fails is deferred and tested again as load changes
//     (payoffreject=true: rejected for good, as in the paper). See
//     payoff.go.
//   - size: none by default (size=requested): a job starts at its requested
//     counts, and scale-up grows it later (on the scoreboard's elastic
//     regimes starting smaller ran more jobs at once, each slower, and
//     raised BE mean JCT by a fifth); size=elastic is elastic.Workers
//     (the largest worker count >= the minimum whose gang fits one node,
//     then the requested count down to the minimum).
//   - filter `node-role`; score `most-allocated` (place=pack, the default;
//     place=spread: least-allocated, as before issue 24) with gang
//     one-node-first: all replicas on one node when one holds them, else
//     over the fewest, fullest nodes.
//   - preempt, in order: `drover-shrink` (for a TE job, or a job that
//     outranks the victim: shrink lighter running elastic jobs towards
//     their minimum; cheap, no checkpoint), optionally `converged-victim` (a
//     TE job preempts a BE job that SpeCon marked converged, CC, before any
//     other; off by default), then whole-job preemption with the victim's
//     grace period: LRTP's victims (longest estimated remaining work
//     first: JobState.EstimatedRemaining, from estimatedDurationSeconds
//     and progress reports on Kubernetes; victim=fitgpp:
//     FitGpp's size and grace score), cap P with the
//     cap renewed (renew_h, default 1): a job preempted P times may be
//     preempted again once it has run renew_h hours uninterrupted, so no
//     trial waits for good behind jobs that were all preempted once.
//   - reserve and rebalance `specon`: SpeCon's PC/WC/CC categories, the
//     one-time migration of converged jobs and its rebalancing;
//     rebalance `drover-scale-up` first: running elastic jobs grow into
//     idle capacity, but never in a cycle where a TE job is left waiting.
//   - provision `predictive`: placeholders from the demand forecast when the
//     cluster has an instance catalogue (a no-op on a fixed cluster).
//
// Interactions, each with a scenario test (drover_test.go):
//   - a job in its grace period or migrating (or already acted on this
//     cycle) is never preempted, shrunk, scaled or migrated: every plugin
//     checks Statement.Busy;
//   - a scale-up never takes capacity a pending TE job could use this
//     cycle: it is skipped while any TE job is pending and unstarted, and
//     the room held for a TE job waiting on grace periods is nominated
//     (taken from Now) before Rebalance runs;
//   - a shrink is a Resize, not a Preempt, so it never counts towards
//     FitGpp's cap P (JobState.Preemptions counts preemptions only);
//   - a converged BE job (SpeCon's CC) could be the cheapest victim:
//     converged training gains little from more time. `converged-victim`
//     picks it first when switched on (ccvictim=true); combined-ablation
//     measured it doubling preemptions with no gain in TE slowdown or BE
//     JCT, so it is off by default.
package drover

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/autoscale"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/elastic"
	"github.com/drover-sched/drover/pkg/fitgpp"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
	"github.com/drover-sched/drover/pkg/specon"
)

// Plugin names.
const (
	OrderName     = "drover-order"
	PayoffName    = "payoff"
	ShrinkName    = "drover-shrink"
	ConvergedName = "converged-victim"
	ScaleUpName   = "drover-scale-up"
)

func isTE(js *cluster.JobState) bool { return js.Job.Class == cluster.ClassTE }

// weights caches the elastic weights of one cycle.
type weights struct {
	capacity resource.Vector
	w        map[*cluster.Job]elastic.Weight
}

var weightKey = framework.NewKey[*weights]("drover.weights")

func cycleWeights(c *framework.Cycle) *weights {
	return framework.GetOrInit(c, weightKey, func() *weights {
		return &weights{capacity: c.Snap.ReadyCapacity(), w: map[*cluster.Job]elastic.Weight{}}
	})
}

func weightOf(c *framework.Cycle, js *cluster.JobState) elastic.Weight { return weightOfJob(c, js.Job) }

func weightOfJob(c *framework.Cycle, j *cluster.Job) elastic.Weight {
	ws := cycleWeights(c)
	w, ok := ws.w[j]
	if !ok {
		w = elastic.WeightOf(j, ws.capacity)
		ws.w[j] = w
	}
	return w
}

// Order is the drover queue: TE jobs first; then priority, highest first;
// then least attained GPU-service first (Attained; with SRSF, the drover
// preset's default, BE jobs by least RemainingService); then utility,
// highest first; ties keep queue
// order (arrival, and a preempted job's return to
// the head). With Weight, the order before issue 24: TE first, then the
// elastic article's weight (priority, utility, demand share), heaviest
// first.
type Order struct {
	Weight bool
	// SRSF orders BE jobs by the least remaining GPU-service first
	// (RemainingService) instead of the least attained: the shortest-
	// remaining-service-first baseline of the Tiresias paper, which needs
	// run-time estimates (JobState.EstimatedRemaining: the stated run time
	// times the fraction not yet done, as LRTP's victims read it); a job
	// without one (Job.NoEstimate) is keyed by its attained service, so it
	// is never starved behind jobs with estimates. TE jobs keep the
	// least-attained key. The drover preset's default (order=srsf; order=las
	// turns it off): docs/combined.md, "SRSF with estimates", judges it on
	// boards where policies see estimates (scoreboard-estimates).
	SRSF bool
}

// RemainingService is a job's remaining GPU-service at time now as a
// policy can know it: its estimated remaining work (JobState.
// EstimatedRemaining: the run-time estimate times the fraction not yet
// done, seconds at its requested size) times its requested GPUs (at least
// one). A job nobody stated a run time for (Job.NoEstimate) has its
// attained service instead (Attained: it is ordered as least attained
// service orders it, so it is never starved behind jobs with estimates).
func RemainingService(js *cluster.JobState, now float64) float64 {
	if js.Job.NoEstimate {
		return Attained(js, now)
	}
	return js.EstimatedRemaining(now) * float64(max(js.Job.RequestedDemand()[resource.GPU], 1))
}

// Attained is a job's attained GPU-service at time now: the work done so
// far (seconds at its requested size) times its requested GPUs (at least
// one). It does not change while the job waits.
func Attained(js *cluster.JobState, now float64) float64 {
	return js.Attained(now) * float64(max(js.Job.RequestedDemand()[resource.GPU], 1))
}

var _ framework.KeyedSort = Order{}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// class and the weight are functions of the job's spec and the cluster's
// ready capacity, which only a node change moves; a waiting job's
// attained service does not change.
func (Order) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventNodes
}

// Requeue implements framework.EnqueueExtensions.
func (Order) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (Order) Name() string { return OrderName }

// Compare implements framework.QueueSort.
func (o Order) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	if !o.Weight {
		return framework.CompareKeys(o.Key(c, a), o.Key(c, b))
	}
	if ta, tb := isTE(a), isTE(b); ta != tb {
		if ta {
			return -1
		}
		return 1
	}
	return weightOf(c, b).Compare(weightOf(c, a))
}

// Key implements framework.KeyedSort: 0 for a TE job, else 1; then
// -priority, attained service and utility (the key of rank, NaN flagged),
// or with Weight the elastic weight's key (heaviest first).
func (o Order) Key(c *framework.Cycle, js *cluster.JobState) framework.SortKey {
	te := 1.0
	if isTE(js) {
		te = 0
	}
	if !o.Weight {
		r := rank(js.Job).Key()
		x := Attained(js, c.Snap.Now)
		if o.SRSF && te == 1 {
			x = RemainingService(js, c.Snap.Now)
		}
		return framework.SortKey{te, r[0], x, r[1], r[2], 0}
	}
	w := weightOf(c, js).Key()
	return framework.SortKey{te, w[0], w[1], w[2], w[3], w[4]}
}

// minCounts is the smallest size elastic.Workers proposes (at least one
// worker).
func minCounts(j *cluster.Job) []int {
	counts := j.RequestedCounts()
	counts[0] = max(j.Groups[0].Min, 1)
	return counts
}

// Shrink makes room for a pending job by shrinking running elastic jobs
// towards their minimum: for a TE job any running BE job may shrink, for
// another job only jobs its elastic weight outranks. Lighter jobs shrink
// first, each losing its most recently added workers (parameter servers
// stay), until the job fits at its minimum size; all or nothing (the
// Runtime discards the fork on failure). A shrink is a Resize: it costs
// no checkpoint and does not count as a preemption.
//
// With Requested the job is made room for at its requested counts (the
// profile then starts jobs at those, size=requested), else at its minimum.
type Shrink struct {
	Requested bool
}

var (
	_ framework.Preempt           = Shrink{}
	_ framework.EnqueueExtensions = Shrink{}
)

// Name implements framework.Plugin.
func (Shrink) Name() string { return ShrinkName }

// Events implements framework.EnqueueExtensions: a shrink may succeed
// once the running jobs change, the capacity does (the weights), or more
// room is free (less to shrink).
func (Shrink) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventRunning | framework.EventNodes | framework.EventRoom
}

// Requeue implements framework.EnqueueExtensions. For a job that is not
// TE and outranks no running BE job, whatever its phase or size, a shrink
// has nothing to take from, whatever the room; for a TE job while no BE
// job runs above its minimum (none to shrink, busy or not), likewise:
// with no candidate Preempt declines at once.
func (Shrink) Requeue(c *framework.Cycle, js *cluster.JobState, _ framework.Events) bool {
	if isTE(js) {
		return len(shrinkables(c).jobs) > 0
	}
	return outranksAny(c, js.Job)
}

// rank is the part of a job's elastic weight that Outranks reads
// (priority and utility; the demand share needs the capacity).
func rank(j *cluster.Job) elastic.Weight {
	w := elastic.Weight{Priority: j.Priority}
	if j.Utility != nil {
		w.Utility = j.Utility.Value(j.EstimatedWork())
	}
	return w
}

// outranksAny reports whether j outranks a running BE job, in any phase
// and at any size: one of a lower priority, or of the lowest priority and
// a lower utility (neither NaN).
func outranksAny(c *framework.Cycle, j *cluster.Job) bool {
	sh := shrinkables(c)
	jr := rank(j)
	return sh.running && (jr.Priority > sh.low.Priority || jr.Priority == sh.low.Priority && jr.Utility > sh.low.Utility)
}

// past reports, for a list of weights sorted lightest first, whether no
// weight from w on is outranked by jw: w has a higher priority, or jw's
// and a utility (not NaN) at least jw's (Outranks: a strictly higher
// priority, or the same and a strictly higher utility; cmp.Compare puts
// NaN utilities first).
func past(w, jw elastic.Weight) bool {
	return w.Priority > jw.Priority || w.Priority == jw.Priority && !math.IsNaN(w.Utility) && !(w.Utility < jw.Utility)
}

// shrinkable is the per-cycle list of the running jobs a shrink may take
// workers from, whoever asks: BE (non-TE) jobs in phase Running above
// their minimum workers, lightest first (weight, then ID: a total order,
// so every subset of it is in the order Shrink sorts its candidates in),
// with their weights. Phases, counts and weights do not change within a
// cycle; whether a job is busy does, and is asked at each use.
type shrinkable struct {
	jobs []*cluster.JobState
	w    []elastic.Weight
	// low is the lowest rank (see rank) among every running BE job,
	// whatever its phase and size: the least priority and, among the jobs
	// of that priority, the least utility that is not NaN (+Inf if none);
	// running says there is one.
	low     elastic.Weight
	running bool
}

var shrinkKey = framework.NewKey[*shrinkable]("drover.shrinkable")

func shrinkables(c *framework.Cycle) *shrinkable {
	return framework.GetOrInit(c, shrinkKey, func() *shrinkable {
		type cand struct {
			js *cluster.JobState
			w  elastic.Weight
		}
		// Each job's weight is needed once per cycle here: computed, not
		// memoized in the cycle's map (an insertion costs more).
		capacity := cycleWeights(c).capacity
		sh := &shrinkable{}
		var cs []cand
		for _, r := range c.Snap.Running {
			if isTE(r) {
				continue
			}
			w := rank(r.Job)
			if u := w.Utility; !sh.running || w.Priority < sh.low.Priority {
				sh.low, sh.running = elastic.Weight{Priority: w.Priority, Utility: math.Inf(1)}, true
				if !math.IsNaN(u) {
					sh.low.Utility = u
				}
			} else if w.Priority == sh.low.Priority && u < sh.low.Utility {
				sh.low.Utility = u
			}
			if r.Phase == cluster.Running && r.Placement.Count(0) > max(r.Job.Groups[0].Min, 1) {
				cs = append(cs, cand{r, elastic.WeightOf(r.Job, capacity)})
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(a.w.Compare(b.w), cmp.Compare(a.js.Job.ID, b.js.Job.ID)) })
		sh.jobs, sh.w = make([]*cluster.JobState, len(cs)), make([]elastic.Weight, len(cs))
		for i, k := range cs {
			sh.jobs[i], sh.w[i] = k.js, k.w
		}
		return sh
	})
}

// shrinkDeclined is Shrink's answer when it finds no room: the empty
// reason keeps the placement's. One status serves every job: its plugin
// is set here, so that the Runtime's WithPlugin reads it and never writes.
var shrinkDeclined = framework.NewStatus(framework.Unschedulable, "").WithPlugin(ShrinkName)

// Preempt implements framework.Preempt.
func (sh Shrink) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	cands := shrinkCands(c, js)
	if len(cands) == 0 {
		return shrinkDeclined
	}
	need := minCounts(js.Job)
	if sh.Requested {
		need = js.Job.RequestedCounts()
	}
	fits := func() bool {
		l := c.St.Now()
		l.Fork()
		defer l.Revert()
		_, st := c.Place(l, js, need)
		return st.IsSuccess()
	}
	l := c.St.Now()
	for _, r := range cands {
		// Give workers back one at a time on a fork, testing after each;
		// then record the shrink as one Resize, which leaves the ledger
		// as the gives did.
		p := slices.Clone(r.Placement)
		ok := false
		l.Fork()
		for p.Counts(len(r.Job.Groups))[0] > max(r.Job.Groups[0].Min, 1) {
			i := lastWorker(p)
			l.Give(p[i].Node, r.Job.Groups[0].Demand)
			p = slices.Delete(p, i, i+1)
			if ok = fits(); ok {
				break
			}
		}
		l.Revert()
		if !c.St.Resize(r, p, "drover: shrunk towards its minimum for "+js.Job.ID) {
			return framework.NewStatus(framework.Error, "a shrink did not fit the job's own nodes")
		}
		if ok {
			return nil
		}
	}
	return shrinkDeclined
}

// shrinkCands returns the running jobs a shrink for js may take workers
// from, lightest first (weight, then ID): BE jobs in phase Running, not
// busy, above their minimum workers, and, unless js is a TE job, whose
// weight js outranks.
func shrinkCands(c *framework.Cycle, js *cluster.JobState) []*cluster.JobState {
	sh := shrinkables(c)
	te := isTE(js)
	var jw elastic.Weight
	if !te && len(sh.jobs) > 0 {
		jw = weightOf(c, js)
	}
	var cands []*cluster.JobState
	for i, r := range sh.jobs {
		if !te && !jw.Outranks(sh.w[i]) {
			// The list is lightest first (see past).
			if past(sh.w[i], jw) {
				break
			}
			continue
		}
		if c.St.Busy(r) {
			continue
		}
		cands = append(cands, r)
	}
	return cands
}

// lastWorker is the index of the most recently added worker replica.
func lastWorker(p cluster.Placement) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].Group == 0 {
			return i
		}
	}
	return -1
}

// Converged lets a TE job preempt a BE job that SpeCon has categorised as
// converged (CC) before FitGpp's general victim choice: a converged job
// gains least from more training time. Among CC jobs preempted fewer than
// P times, the smallest (FitGpp's Eq. 1 size) whose resources make room is
// evicted with its grace period.
type Converged struct {
	P int
}

var (
	_ framework.Preempt           = (*Converged)(nil)
	_ framework.EnqueueExtensions = (*Converged)(nil)
)

// Name implements framework.Plugin.
func (*Converged) Name() string { return ConvergedName }

// Events implements framework.EnqueueExtensions: a TE job's victims are
// the converged jobs, which SpeCon's labels name at any cycle, so it is
// never parked; other jobs it declines.
func (*Converged) Events(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if isTE(js) {
		return framework.EventAlways
	}
	return 0
}

// Requeue implements framework.EnqueueExtensions.
func (*Converged) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// UsesSoon says the plugin plans on the Soon ledger (a profile built
// from a spec then keeps it).
func (*Converged) UsesSoon() bool { return true }

// Preempt implements framework.Preempt.
func (v *Converged) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	soon := c.St.Soon()
	if !isTE(js) || soon == nil {
		return framework.NewStatus(framework.Unschedulable, "")
	}
	var cands []*cluster.JobState
	for _, r := range c.Snap.Running {
		if r.Phase == cluster.Running && !c.St.Busy(r) && !isTE(r) && r.Preemptions < v.P &&
			r.Labels[specon.LabelCategory] == specon.CC.String() {
			cands = append(cands, r)
		}
	}
	slices.SortFunc(cands, func(a, b *cluster.JobState) int {
		return cmp.Or(cmp.Compare(fitgpp.Size(a, c.Snap), fitgpp.Size(b, c.Snap)), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	counts := minCounts(js.Job)
	for _, r := range cands {
		soon.Fork()
		soon.GiveJob(r)
		pl, st := c.Place(soon, js, counts)
		if !st.IsSuccess() {
			soon.Revert()
			continue
		}
		soon.Commit()
		grace := r.Job.GracePeriod
		if grace == 0 {
			c.St.Evict(r, 0, js.Job.ID, "converged-victim for TE job "+js.Job.ID, true)
			if c.St.Now().TakePlacement(js.Job, pl) {
				c.St.Record(js, policy.Start{Job: js.Job.ID, Placement: pl})
				return nil
			}
		} else {
			c.St.Evict(r, grace, js.Job.ID, "converged-victim for TE job "+js.Job.ID, false)
		}
		c.St.Nominate(js, pl)
		return framework.NewStatus(framework.Wait, "preempted converged job "+r.Job.ID+"; waiting for its grace period")
	}
	return framework.NewStatus(framework.Unschedulable, "")
}

// ScaleUp grows running elastic jobs towards their maximum workers into
// capacity left idle after every pending job was tried, heaviest first,
// on the job's own nodes first. It does nothing in a cycle that leaves a
// TE job pending (failed, or waiting for room), so a scale-up never takes
// capacity a TE job could use; and it never touches a busy job.
type ScaleUp struct{}

var _ framework.Rebalance = ScaleUp{}

// Name implements framework.Plugin.
func (ScaleUp) Name() string { return ScaleUpName }

// Rebalance implements framework.Rebalance.
func (ScaleUp) Rebalance(c *framework.Cycle) *framework.Status {
	s := c.Snap
	for js := range s.Pending.All() {
		if isTE(js) && c.St.Op(js) != framework.OpStart {
			return nil
		}
	}
	// The jobs that may grow, heaviest first (weight, then ID: a total
	// order). Filtering before sorting keeps their order; a resize makes
	// only the job resized busy, so none drops out during the loop.
	type grower struct {
		js   *cluster.JobState
		w    elastic.Weight
		want int
	}
	var growers []grower
	for _, q := range s.Running {
		if q.Phase != cluster.Running || c.St.Busy(q) || isTE(q) {
			continue
		}
		if want := q.Job.Groups[0].Max - q.Placement.Count(0); want > 0 {
			growers = append(growers, grower{q, elastic.WeightOf(q.Job, cycleWeights(c).capacity), want})
		}
	}
	slices.SortFunc(growers, func(a, b grower) int { return cmp.Or(b.w.Compare(a.w), cmp.Compare(a.js.Job.ID, b.js.Job.ID)) })
	l := c.St.Now()
	for _, gr := range growers {
		q, want := gr.js, gr.want
		own := q.Placement.Nodes()
		order := slices.Clone(own)
		for i := range s.Nodes {
			if !slices.Contains(own, i) {
				order = append(order, i)
			}
		}
		p, added := placement.Grow(l, q, 0, want, order)
		if added > 0 {
			c.St.Resize(q, p, fmt.Sprintf("drover: scale-up by %d into idle capacity", added))
		}
	}
	return nil
}

// Options switch the profile's parts on and off (all on by default); the
// combined-ablation experiment turns each off in turn.
type Options struct {
	Shrink, CCVictim, Preempt, ScaleUp, Speculate, Payoff, Provision bool
	Lambda                                                           float64
	P                                                                int
	// Renew is FitGpp's renewal window in seconds (fitgpp.Preemptor.Renew;
	// 0: the paper's lifetime cap).
	Renew float64
	// Place scores nodes: placement.Pack (most-allocated) or Spread.
	Place placement.Strategy
	// WeightOrder orders BE jobs by the elastic weight (Order.Weight).
	WeightOrder bool
	// SRSFOrder orders BE jobs by the least remaining GPU-service
	// (Order.SRSF; the default, order=srsf; order=las: least attained).
	SRSFOrder bool
	// Requested starts jobs at their requested counts (no Size plugin;
	// scale-up still grows them, shrinks still take them to their
	// minimum) instead of elastic.Workers' largest size that fits.
	Requested bool
	// Victims is the whole-job preemption rule (fitgpp.FitGpp or LRTP).
	Victims fitgpp.Victims
	// HOL blocks the BE jobs behind the first that cannot start
	// (fitgpp-be-head-of-line): no backfilling, so room stays free for
	// TE jobs at the cost of BE waiting.
	HOL bool
	// Reserve keeps room for one TE trial free of BE jobs on one node
	// while TE jobs arrive (te-reserve, reserve.go); ReserveWindow is its
	// window in seconds.
	Reserve                        bool
	ReserveWindow, ReserveQuantile float64
	// Predictive, SpeCon and PayoffArgs are the predictive, specon and
	// payoff plugins' arguments (empty: their defaults; payoff defers).
	Predictive, SpeCon, PayoffArgs policy.Params
}

// DefaultRenew is drover's renewal window for FitGpp's cap: one hour.
const DefaultRenew = 3600.0

// DefaultOptions has every part on except converged-victim (measured in
// combined-ablation: it doubles preemptions for no gain in TE slowdown or
// BE JCT; see docs/combined.md) and payoff admission (a rejection is for
// good; opt in with payoff=true), P 1 renewed after an hour of
// uninterrupted run, LRTP victims (the longest remaining work first),
// jobs started at their requested size, pack placement and the SRSF BE
// order (issue 24: chosen on the whole scoreboard, SRSF on the run-time
// estimate boards by the rule docs/scoreboard-plan.md stated before they
// ran; docs/combined.md has each choice's ablation row).
func DefaultOptions() Options {
	return Options{Shrink: true, CCVictim: false, Preempt: true, ScaleUp: true, Speculate: true, Payoff: false, Provision: true,
		Lambda: fitgpp.DefaultLambda, P: fitgpp.DefaultP, Renew: DefaultRenew, Place: placement.Pack,
		Requested: true, Victims: fitgpp.LRTP, ReserveWindow: DefaultReserveWindow, SRSFOrder: true}
}

// Profile builds the drover profile.
func Profile(o Options) (framework.Profile, error) {
	p := framework.Profile{Name: "drover", QueueSort: Order{Weight: o.WeightOrder, SRSF: o.SRSFOrder}, Size: elastic.Workers{},
		Filter: []framework.Filter{framework.NodeRole{}},
		Score:  []framework.WeightedScore{{Score: framework.Strategy{S: o.Place}, Weight: 1}},
		Gang:   placement.OneNodeFirst, Future: true}
	if o.Payoff {
		pay, err := parsePayoff(o.PayoffArgs)
		if err != nil {
			return p, err
		}
		p.Admit = append(p.Admit, pay)
	}
	if o.HOL {
		p.Admit = append(p.Admit, fitgpp.BEHeadOfLine{})
	}
	if o.Reserve {
		r, err := NewReserve(o.ReserveWindow)
		if err != nil {
			return p, err
		}
		r.Quantile = o.ReserveQuantile
		p.Admit = append(p.Admit, r)
	}
	if o.Requested {
		p.Size = nil
	}
	if o.Shrink {
		p.Preempt = append(p.Preempt, Shrink{Requested: o.Requested})
	}
	if o.CCVictim && o.Speculate {
		p.Preempt = append(p.Preempt, &Converged{P: o.P})
	}
	if o.Preempt {
		pre, err := fitgpp.NewPreemptor(o.Victims, o.Lambda, o.P)
		if err != nil {
			return p, err
		}
		pre.Renew = o.Renew
		p.Preempt = append(p.Preempt, pre)
	}
	if o.ScaleUp {
		p.Rebalance = append(p.Rebalance, ScaleUp{})
	}
	if o.Speculate {
		sp, err := newSpeculator(o.SpeCon)
		if err != nil {
			return p, err
		}
		p.Reserve = append(p.Reserve, sp)
		p.Rebalance = append(p.Rebalance, sp)
	}
	if o.Provision {
		pr, err := autoscale.NewPredictive(o.Predictive)
		if err != nil {
			return p, err
		}
		p.Provision = append(p.Provision, pr)
	}
	return p, nil
}

// newSpeculator builds the specon plugin from its arguments.
func newSpeculator(args policy.Params) (*specon.Speculator, error) {
	if args == nil {
		args = policy.Params{}
	}
	sp, err := specon.ParseParams(args)
	if err != nil {
		return nil, err
	}
	return specon.NewSpeculator(sp), nil
}

// speconKeys are the specon arguments the preset passes through.
var speconKeys = []string{"alpha", "interval", "scope", "rebalance", "candidates"}

var switches = []string{"shrink", "ccvictim", "preempt", "scaleup", "specon", "payoff", "provision", "reserve"}

// Entries returns the `drover` preset.
func Entries() []policy.Entry {
	return []policy.Entry{{Name: "drover",
		Description: "all five papers in one profile: TE first (least attained GPU-service), then BE jobs by least remaining GPU-service (SRSF on run-time estimates: estimatedDurationSeconds and progress on Kubernetes, attained service for a job without one; order=las: least attained GPU-service, the default before; order=weight: the elastic weight), elastic min..max sizing, one-node-first gangs packed (place=spread: least-allocated), shrink then FitGpp preemption with its cap renewed after renew_h hours of uninterrupted run (default 1; inf: the paper's lifetime cap; ccvictim=true: converged SpeCon jobs first), elastic scale-up, SpeCon migration, predictive placeholders, OASiS payoff admission when payoff=true (a job that fails is deferred; payoffreject=true: rejected for good, OASiS's reading); reserve=true: te-reserve keeps room for the largest TE job that arrived within reserve_h hours (default 6) free of BE jobs on one node; lambda, p, renew_h (FitGpp); shrink, preempt, scaleup, specon, provision = true|false switch parts (default on), ccvictim and payoff (default off); model, tick (predictive); alpha, interval, scope, rebalance, candidates (specon)",
		New: func(pr policy.Params) (policy.Policy, error) {
			known := append([]string{"lambda", "p", "renew_h", "reserve_h", "reserve_q", "place", "order", "size", "victim", "hol", "model", "tick", "payoffreject"}, switches...)
			if err := pr.Check("drover", append(known, speconKeys...)...); err != nil {
				return nil, err
			}
			o := DefaultOptions()
			var err error
			for _, sw := range []struct {
				k string
				v *bool
			}{{"shrink", &o.Shrink}, {"ccvictim", &o.CCVictim}, {"preempt", &o.Preempt}, {"scaleup", &o.ScaleUp},
				{"specon", &o.Speculate}, {"payoff", &o.Payoff}, {"provision", &o.Provision}, {"reserve", &o.Reserve}} {
				if *sw.v, err = pr.Bool(sw.k, *sw.v); err != nil {
					return nil, err
				}
			}
			if o.Lambda, err = pr.FloatIn("lambda", o.Lambda, 0, fitgpp.MaxLambda); err != nil {
				return nil, err
			}
			if o.ReserveWindow, err = pr.FloatIn("reserve_h", o.ReserveWindow/3600, 1.0/60, 24*365); err != nil {
				return nil, err
			}
			o.ReserveWindow *= 3600
			if o.ReserveQuantile, err = pr.FloatIn("reserve_q", 1, 0.01, 1); err != nil {
				return nil, err
			}
			if _, ok := pr["renew_h"]; ok {
				if o.Renew, err = fitgpp.ParseRenew(pr); err != nil {
					return nil, err
				}
			}
			place, err := pr.Enum("place", "pack", "pack", "spread")
			if err != nil {
				return nil, err
			}
			if place == "spread" {
				o.Place = placement.Spread
			}
			order, err := pr.Enum("order", "srsf", "las", "srsf", "weight")
			if err != nil {
				return nil, err
			}
			o.WeightOrder, o.SRSFOrder = order == "weight", order == "srsf"
			size, err := pr.Enum("size", "requested", "requested", "elastic")
			if err != nil {
				return nil, err
			}
			o.Requested = size == "requested"
			victim, err := pr.Enum("victim", "lrtp", "lrtp", "fitgpp")
			if err != nil {
				return nil, err
			}
			if victim == "fitgpp" {
				o.Victims = fitgpp.FitGpp
			}
			if o.HOL, err = pr.Bool("hol", o.HOL); err != nil {
				return nil, err
			}
			if v, ok := pr["p"]; ok {
				if v == "inf" {
					o.P = fitgpp.Unlimited
				} else if o.P, err = pr.IntIn("p", o.P, 1, fitgpp.MaxP); err != nil {
					return nil, err
				}
			}
			o.Predictive, o.SpeCon, o.PayoffArgs = policy.Params{}, policy.Params{}, policy.Params{}
			if v, ok := pr["payoffreject"]; ok {
				o.PayoffArgs["reject"] = v
			}
			for _, k := range []string{"model", "tick"} {
				if v, ok := pr[k]; ok {
					o.Predictive[k] = v
				}
			}
			for _, k := range speconKeys {
				if v, ok := pr[k]; ok {
					o.SpeCon[k] = v
				}
			}
			prof, err := Profile(o)
			if err != nil {
				return nil, err
			}
			return scheduler.New(prof)
		}}}
}

// Plugins returns the registry entries of the drover plugins.
func Plugins() []profile.PluginEntry {
	none := func(name string, p framework.Plugin) func(policy.Params) (framework.Plugin, error) {
		return func(a policy.Params) (framework.Plugin, error) { return p, a.Check(name) }
	}
	return []profile.PluginEntry{
		{Name: OrderName, Description: "queueSort: TE jobs first, then priority, least attained GPU-service, utility, then queue order; by=srsf (the drover preset's default, order=srsf): BE jobs by least estimated remaining GPU-service (attained for a job without an estimate); by=weight: the elastic article's weight after TE",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(OrderName, "by"); err != nil {
					return nil, err
				}
				by, err := a.Enum("by", "las", "las", "weight", "srsf")
				if err != nil {
					return nil, err
				}
				return Order{Weight: by == "weight", SRSF: by == "srsf"}, nil
			}},
		{Name: ShrinkName, Description: "preempt: shrink lighter running elastic jobs towards their minimum to make room (a Resize, not a preemption)", New: none(ShrinkName, Shrink{})},
		{Name: ScaleUpName, Description: "rebalance: grow running elastic jobs into idle capacity, never while a TE job waits", New: none(ScaleUpName, ScaleUp{})},
		{Name: ConvergedName, Description: "preempt: a TE job preempts a converged (SpeCon CC) BE job first; p (default 1)",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(ConvergedName, "p"); err != nil {
					return nil, err
				}
				p, err := a.IntIn("p", 1, 1, fitgpp.MaxP)
				if err != nil {
					return nil, err
				}
				return &Converged{P: p}, nil
			}},
		{Name: PayoffName, Description: payoffDescription, New: newPayoff},
		{Name: ReserveName, Description: "admit: keep room for the largest TE job that arrived within window_h hours (default 6) free of BE jobs on one node, so a trial starts at once",
			New: func(a policy.Params) (framework.Plugin, error) {
				if err := a.Check(ReserveName, "window_h"); err != nil {
					return nil, err
				}
				h, err := a.FloatIn("window_h", DefaultReserveWindow/3600, 1.0/60, 24*365)
				if err != nil {
					return nil, err
				}
				return NewReserve(h * 3600)
			}},
	}
}
