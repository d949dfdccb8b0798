// Package fitgpp implements FitGpp (Fitting Grace Period Preemption, the
// paper in shared/papers/002) and the two preemptive baselines it is
// compared with, LRTP and RAND, as framework presets made of plugins.
//
// All three are built on FIFO. Every cycle they first serve the pending
// trial-and-error (TE) jobs in queue order, which are never preempted and
// may preempt best-effort (BE) jobs; then they start BE jobs in strict
// queue order with head-of-line blocking, exactly like baseline's fifo. A
// preempted BE job holds its resources for its grace period (Preempt.Grace
// is the job's GracePeriod), is then suspended and goes back to the head
// of the queue (the executor does that), so it is the first BE job to
// restart. Whether it trains during the grace period is the executor's
// model (in the simulator it does not by default: the paper's grace period
// is suspension processing; sim.Config.ProgressDuringGrace lets it). The
// policies assume neither: they only count a victim's resources as coming
// back (NodeState.Releasing) and never re-pick it while it is Suspending.
//
// The policies differ only in how they choose victims for a TE job that
// does not fit:
//
//   - fitgpp: one victim j among the running BE jobs R, the one with the
//     lowest score(j) = size(d_j)/max_{k in R} size(d_k) + lambda *
//     GP_j/max_{k in R} GP_k (Eq. 3), where size(d) = sum over CPU, memory
//     and GPU of d_r / C_r for the capacity C of j's node (Eq. 1), among
//     the jobs that satisfy the fit rule (the TE job fits in d_j plus the
//     free resources of j's node, Eq. 2) and were preempted fewer than P
//     times (Eq. 4). When no job qualifies, a random running BE job
//     preempted fewer than P times is taken and the choice repeats with
//     what it frees, so more victims are preempted only if one is not
//     enough. The paper does not say what happens when every BE job has
//     reached P; this implementation then preempts nothing and the TE job
//     waits, which keeps the paper's guarantee that no BE job is
//     preempted more than P times.
//   - lrtp: the running BE job with the longest remaining time first (the
//     simulator's exact Remaining, as the paper assumes perfect
//     prediction) among those preempted fewer than P times, until the TE
//     job fits.
//   - rand: random running BE jobs preempted fewer than P times, until the
//     TE job fits.
//
// Renewed protection (Preemptor.Renew, renew_h=): the paper's cap makes a
// job preempted P times immune for the rest of its life, so once every
// running BE job has reached P a TE job waits for one to finish, days on
// a trace of long jobs. With a renewal window H, a job preempted P times
// or more is protected only until it has run H seconds without
// interruption since it last (re)started; then it may be preempted once
// more. The harm to a BE job stays bounded (P preemptions, then at most
// one per H of uninterrupted run), and no TE job waits longer than H
// behind a running BE job. The fitgpp, lrtp and rand presets keep the
// paper's lifetime cap (renew_h=inf, the default); the drover profile
// renews.
//
// The cap P applies to all three: the paper sets P = 1 for its main
// experiment ("each BE job is not preempted more than once"), not for
// FitGpp alone, and Table 4 (jobs preempted 2 and 3 times under LRTP and
// RAND) is the uncapped run (p=inf). When no BE job below the cap makes
// room, nothing is preempted and the TE job waits.
//
// Preemptions in flight are accounted for: the profiles keep the
// Statement's Soon ledger (free plus NodeState.Releasing, what jobs in
// their grace period will free). A TE job that fits once those come back
// waits for them instead of preempting more, and the part of its placement
// that is already free is nominated (held back on the Now ledger), so that
// a BE job does not take the room a victim was preempted for.
//
// Jobs whose class is unknown are rejected with a reason naming the job:
// a policy cannot return an error, and silently treating them as BE (or
// TE) would give them the wrong protection. Experiments validate their
// workloads with ValidateJobs first, so a bad workload is an error there.
//
// The presets fitgpp, lrtp and rand are one profile each:
//
//	queueSort  fitgpp-te-first
//	admit      fitgpp-class, fitgpp-be-head-of-line
//	filter     node-role
//	score      most-allocated (pack)
//	preempt    fitgpp | lrtp | rand  (a Preemptor; keeps the Soon ledger)
package fitgpp

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// Defaults of the parameters. The paper's lambda was lost in the text
// copy; lambda = 1 (fitgpp only) weighs a job's normalised grace period as
// much as its normalised size. P = 1 (fitgpp, lrtp and rand) is the
// setting of the paper's main experiment (Sec. 4.2: "each BE job is not
// preempted more than once").
const (
	DefaultLambda = 1.0
	DefaultP      = 1
)

// Unlimited is the P value that never caps preemptions (the paper's
// "P infinite", Table 4). It is written p=inf in a policy spec.
const Unlimited = math.MaxInt

// Plugin names.
const (
	TEFirstName      = "fitgpp-te-first"
	ClassName        = "fitgpp-class"
	BEHeadOfLineName = "fitgpp-be-head-of-line"
	StrictTEName     = "fitgpp-strict-te"
)

// TEFirst orders the pending jobs TE before BE, keeping queue order within
// each class. Jobs without a class rank with the TE jobs, so that
// fitgpp-class rejects them where the queue had them.
type TEFirst struct{}

var _ framework.QueueSort = TEFirst{}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// order is the class, ties in queue order: it never changes while the
// jobs wait.
func (TEFirst) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (TEFirst) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (TEFirst) Name() string { return TEFirstName }

// Compare implements framework.QueueSort.
func (TEFirst) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	rank := func(js *cluster.JobState) int {
		if js.Job.Class == cluster.ClassBE {
			return 1
		}
		return 0
	}
	return cmp.Compare(rank(a), rank(b))
}

// Class rejects, for good, a job that is neither TE nor BE, with a reason
// naming the job: the FitGpp policies need the class to tell the jobs they
// protect from the ones they may preempt. Every other job is admitted.
type Class struct{}

var _ framework.Admit = Class{}

// Name implements framework.Plugin.
func (Class) Name() string { return ClassName }

// Admit implements framework.Admit.
func (Class) Admit(_ *framework.Cycle, js *cluster.JobState) *framework.Status {
	if c := js.Job.Class; c == cluster.ClassTE || c == cluster.ClassBE {
		return nil
	}
	return framework.Statusf(framework.Unresolvable, "job %s has no class (want TE or BE)", js.Job.ID)
}

// BEHeadOfLine is strict FIFO among BE jobs: once a BE job could not be
// started in this cycle, it and every job behind it wait (Blocked). TE
// jobs that could not start block nothing; with fitgpp-te-first they are
// all tried before the first BE job.
type BEHeadOfLine struct{}

var (
	_ framework.Admit             = BEHeadOfLine{}
	_ framework.EnqueueExtensions = BEHeadOfLine{}
)

// Name implements framework.Plugin.
func (BEHeadOfLine) Name() string { return BEHeadOfLineName }

// Events implements framework.EnqueueExtensions: a BE job that fails
// must be seen (Cycle.Failed) to block the BE jobs behind it, so BE jobs
// are never parked; TE jobs it ignores.
func (BEHeadOfLine) Events(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js.Job.Class == cluster.ClassBE {
		return framework.EventAlways
	}
	return 0
}

// Requeue implements framework.EnqueueExtensions.
func (BEHeadOfLine) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Admit implements framework.Admit.
func (BEHeadOfLine) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	if js.Job.Class != cluster.ClassBE {
		return nil
	}
	for _, f := range c.Failed() {
		if f.Job.Class == cluster.ClassBE {
			return framework.NewStatus(framework.Blocked, "behind the head of the BE queue")
		}
	}
	return nil
}

// StrictTE is strict TE priority: no BE job starts in a cycle that leaves
// a TE job waiting. BEHeadOfLine lets BE jobs start behind a TE job that
// does not fit (the TE job blocks nothing), so a profile without
// preemption still gives BE jobs room a TE job could have had; with
// StrictTE that room stays free until every pending TE job has started.
// It is the ablation of docs/fitgpp.md that charges BE jobs the full cost
// of serving TE jobs first (fitgpp:preempt=false;strict=true). It relies
// on TEFirst, which tries every TE job before the first BE job.
type StrictTE struct{}

var (
	_ framework.Admit             = StrictTE{}
	_ framework.EnqueueExtensions = StrictTE{}
)

// pendingTE holds the cycle's pending TE jobs, found once per cycle.
var pendingTE = framework.NewKey[[]*cluster.JobState]("fitgpp-pending-te")

// Name implements framework.Plugin.
func (StrictTE) Name() string { return StrictTEName }

// Events implements framework.EnqueueExtensions: BE jobs are never parked
// (whether one may start depends on the TE jobs, not on itself).
func (StrictTE) Events(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js.Job.Class == cluster.ClassBE {
		return framework.EventAlways
	}
	return 0
}

// Requeue implements framework.EnqueueExtensions.
func (StrictTE) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Admit implements framework.Admit: a BE job is Blocked while a pending
// TE job has not been started in this cycle.
func (StrictTE) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	if js.Job.Class != cluster.ClassBE {
		return nil
	}
	tes := framework.GetOrInit(c, pendingTE, func() []*cluster.JobState {
		var out []*cluster.JobState
		for p := range c.Snap.Pending.All() {
			if p.Job.Class == cluster.ClassTE {
				out = append(out, p)
			}
		}
		return out
	})
	for _, te := range tes {
		if c.St.Op(te) != framework.OpStart {
			return framework.Statusf(framework.Blocked, "strict TE priority: TE job %s waits", te.Job.ID)
		}
	}
	return nil
}

// Victims is the rule a Preemptor chooses BE victims by.
type Victims int

// Victim rules.
const (
	FitGpp Victims = iota
	LRTP
	Rand
)

// String is the rule's plugin and preset name.
func (v Victims) String() string {
	switch v {
	case LRTP:
		return "lrtp"
	case Rand:
		return "rand"
	}
	return "fitgpp"
}

// Preemptor is the Preempt plugin of the three presets (named fitgpp, lrtp
// or rand after its Rule). It acts for TE jobs only; for any other job it
// returns Unschedulable with no reason, keeping the placement's. For a TE
// job that did not fit now:
//
//   - if it fits on the Soon ledger (room that jobs in their grace period
//     are freeing), it nominates that placement and returns Wait;
//   - else, unless NoPreempt, it chooses running BE victims by Rule on a
//     what-if of Soon (never a job this cycle already touched) until the
//     TE job fits there, and evicts them with their own grace periods.
//     When every victim's grace period is 0 and the placement then fits
//     now, it starts the TE job itself and returns Success; otherwise it
//     nominates the placement and returns Wait;
//   - else it returns Unschedulable.
//
// Random choices come from Cycle.Rand, the TE job's own source. It needs the Soon ledger
// (UsesSoon); without it, it returns Error.
type Preemptor struct {
	Rule Victims
	// Lambda weighs the grace period against the size (fitgpp only).
	Lambda float64
	// P caps how many times a job may be preempted (every rule); Unlimited
	// for no cap.
	P int
	// Renew, when positive, is the renewal window in seconds: a job
	// preempted P times or more may be preempted again once it has run
	// Renew seconds since it last (re)started. 0: the paper's lifetime cap.
	Renew float64
	// NoPreempt serves TE jobs first but never preempts: the ablation that
	// separates what TE-first ordering gains from what preemption gains
	// (fitgpp:preempt=false).
	NoPreempt bool
	// Exhaustive turns off the shortcut that skips a victim search known
	// to fail (see hopeless): the decisions are the same either way
	// (tests compare the two); only the work differs.
	Exhaustive bool

	// skips, when a test sets it, counts the searches hopeless skipped, so
	// that a comparison with the shortcut off can tell that it fired.
	skips *int
}

var (
	_ framework.Preempt           = (*Preemptor)(nil)
	_ framework.EnqueueExtensions = (*Preemptor)(nil)
	_ framework.TimeDriven        = (*Preemptor)(nil)
)

// TimeDriven implements framework.TimeDriven: with a renewal window a
// capped victim becomes preemptable as time passes, with no event, so the
// profile must run on its clock.
func (p *Preemptor) TimeDriven() bool { return p.Renew > 0 }

// Capped reports whether js may not be preempted at time now: it was
// preempted P times or more and, with a renewal window, has run less than
// Renew seconds since it last (re)started.
func (p *Preemptor) Capped(js *cluster.JobState, now float64) bool {
	if js.Preemptions < p.P {
		return false
	}
	return p.Renew <= 0 || now-js.LastStart < p.Renew
}

// NewPreemptor returns a Preemptor with the given rule, validating lambda
// and P.
func NewPreemptor(rule Victims, lambda float64, p int) (*Preemptor, error) {
	if math.IsNaN(lambda) || math.IsInf(lambda, 0) || lambda < 0 {
		return nil, fmt.Errorf("parameter lambda=%v: must be a finite number >= 0", lambda)
	}
	if p < 1 {
		return nil, fmt.Errorf("parameter p=%d: must be at least 1 (or inf)", p)
	}
	return &Preemptor{Rule: rule, Lambda: lambda, P: p}, nil
}

// Name implements framework.Plugin.
func (p *Preemptor) Name() string { return p.Rule.String() }

// Events implements framework.EnqueueExtensions. Only TE jobs preempt.
// A TE job's search can succeed once it fits on the Soon ledger with
// every victim it could pick given back: when that room grows (a job
// ends or enters its grace period: EventRoom), a BE job starts or is
// preempted (EventRunning), or the nodes change.
//
// A TE job of several groups is never parked: its search's random draws
// (its own) decide whether it finds victims, so jobs alike may differ.
//
// With a renewal window a TE job is never parked either: a capped victim
// becomes open as it runs, which no event announces (and TimeDriven keeps
// the clock going). Asked about no job (the idle check of a TimeDriven
// plugin), it needs no clock: a TE job that waits is active.
func (p *Preemptor) Events(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js == nil || js.Job.Class != cluster.ClassTE {
		return 0
	}
	if !oneGroup(js.Job.RequestedCounts()) || (p.Renew > 0 && !p.NoPreempt) {
		return framework.EventAlways
	}
	return framework.EventRoom | framework.EventRunning | framework.EventNodes
}

// Requeue implements framework.EnqueueExtensions: whether a TE job of
// js's shape fits on the cycle's Soon ledger with every running BE job
// the search could pick given back. A search fails exactly when it does
// not, for a job of one group (see hopeless); for several groups the
// answer is yes, since another order of victims may fit.
func (p *Preemptor) Requeue(c *framework.Cycle, js *cluster.JobState, _ framework.Events) bool {
	soon := c.St.Soon()
	counts := js.Job.RequestedCounts()
	if soon == nil || p.Exhaustive || !oneGroup(counts) {
		return true
	}
	if _, ok := p.hopeless(c, runningBE(c), soon, js, counts); ok && !p.NoPreempt {
		return false
	}
	if p.NoPreempt {
		soon.Fork()
		defer soon.Revert()
		_, st := c.Place(soon, js, counts)
		return st.IsSuccess()
	}
	return true
}

// UsesSoon says the plugin plans on the Soon ledger (a profile built
// from a spec then keeps it).
func (p *Preemptor) UsesSoon() bool { return true }

// Preempt implements framework.Preempt.
func (p *Preemptor) Preempt(c *framework.Cycle, js *cluster.JobState, _ *framework.Status) *framework.Status {
	if js.Job.Class != cluster.ClassTE {
		// Only TE jobs preempt; keep the placement's reason.
		return p.notTE()
	}
	soon := c.St.Soon()
	if soon == nil {
		return framework.NewStatus(framework.Error, "needs the Soon ledger (profile Future)")
	}
	counts := js.Job.RequestedCounts()
	if pl, st := c.Place(soon, js, counts); st.IsSuccess() {
		c.St.Nominate(js, pl)
		return framework.NewStatus(framework.Wait, "waiting for preempted jobs' grace periods")
	}
	if p.NoPreempt {
		return framework.NewStatus(framework.Unschedulable, "no room and preemption is off")
	}
	victims, pl := p.choose(c, soon, js, counts)
	if victims == nil {
		return framework.NewStatus(framework.Unschedulable, noVictims)
	}
	instant := true
	for _, v := range victims {
		if v.Job.GracePeriod > 0 {
			instant = false
		}
	}
	if instant {
		// Victims without a grace period are suspended at once, so the
		// TE job can start in the same cycle if the room is free now.
		c.St.Fork()
		p.evict(c, js, victims, true)
		if c.St.Start(js, pl) {
			c.St.Commit()
			return nil
		}
		c.St.Discard()
	}
	p.evict(c, js, victims, false)
	soon.TakePlacement(js.Job, pl)
	c.St.Nominate(js, pl)
	return framework.Statusf(framework.Wait, "preempted %d BE jobs; waiting for their grace periods", len(victims))
}

const noVictims = "no set of running BE jobs makes room"

// declined holds, per rule, the status a Preemptor answers a job that is
// not TE with: the empty reason keeps the placement's. One status serves
// every such job: its plugin is set here, so that the Runtime's
// WithPlugin reads it and never writes.
var declined = [...]*framework.Status{
	FitGpp: framework.NewStatus(framework.Unschedulable, "").WithPlugin(FitGpp.String()),
	LRTP:   framework.NewStatus(framework.Unschedulable, "").WithPlugin(LRTP.String()),
	Rand:   framework.NewStatus(framework.Unschedulable, "").WithPlugin(Rand.String()),
}

// notTE is Preempt's answer for a job that is not TE.
func (p *Preemptor) notTE() *framework.Status {
	if int(p.Rule) >= 0 && int(p.Rule) < len(declined) && p.Rule.String() == declined[p.Rule].Plugin() {
		return declined[p.Rule]
	}
	return framework.NewStatus(framework.Unschedulable, "")
}

func (p *Preemptor) evict(c *framework.Cycle, te *cluster.JobState, victims []*cluster.JobState, now bool) {
	for _, v := range victims {
		c.St.Evict(v, v.Job.GracePeriod, te.Job.ID, p.Name()+" victim for TE job "+te.Job.ID, now)
	}
}

// beState is the per-cycle view of the preemptible jobs.
type beState struct {
	// running lists the BE jobs in phase Running (not already in their
	// grace period), sorted by ID so that choices do not depend on the
	// order of Snapshot.Running.
	running []*cluster.JobState
	// size is Size of each job of running, and maxSize and maxGP are the
	// maxima of Eq. 3 over running: computed by order, the first time it
	// is needed in the cycle (a search known to fail needs none).
	size           []float64
	maxSize, maxGP float64
	// byScore is fitgpp's victim order for one (lambda, p): the jobs of
	// running preempted fewer than p times, lowest score (Eq. 4) first,
	// then by ID. The scores do not change within a cycle, so it is
	// sorted once per cycle rather than once per victim.
	byScore []*cluster.JobState
	scored  bool
	lambda  float64
	p       int
	renew   float64
}

var beKey = framework.NewKey[*beState]("fitgpp.running-be")

// runningAsBE reports whether js is one of beState.running: a BE job in
// phase Running.
func runningAsBE(js *cluster.JobState) bool {
	return js.Job.Class == cluster.ClassBE && js.Phase == cluster.Running
}

// open reports whether js is a victim a search could pick now: a running
// BE job preempted fewer than P times that this cycle has not acted on
// (the victims hopeless gives back).
func (p *Preemptor) open(c *framework.Cycle, js *cluster.JobState) bool {
	return runningAsBE(js) && !p.Capped(js, c.Snap.Now) && c.St.Op(js) == framework.OpNone
}

func runningBE(c *framework.Cycle) *beState {
	return framework.GetOrInit(c, beKey, func() *beState {
		s := c.Snap
		st := &beState{running: []*cluster.JobState{}}
		for _, js := range s.Running {
			if runningAsBE(js) {
				st.running = append(st.running, js)
			}
		}
		slices.SortFunc(st.running, func(a, b *cluster.JobState) int { return cmp.Compare(a.Job.ID, b.Job.ID) })
		return st
	})
}

// order returns fitgpp's victim order (beState.byScore) for p's lambda and
// cap. Scores are normalised over all running BE jobs (R in Eq. 3),
// including ones already chosen as victims in this cycle, so that a job's
// score does not depend on the order TE jobs are served in.
func (p *Preemptor) order(c *framework.Cycle, be *beState) []*cluster.JobState {
	if be.scored && be.lambda == p.Lambda && be.p == p.P && be.renew == p.Renew {
		return be.byScore
	}
	if be.size == nil {
		be.size = make([]float64, len(be.running))
		for i, js := range be.running {
			be.size[i] = Size(js, c.Snap)
			be.maxSize = math.Max(be.maxSize, be.size[i])
			be.maxGP = math.Max(be.maxGP, js.Job.GracePeriod)
		}
	}
	type cand struct {
		js    *cluster.JobState
		score float64
	}
	cands := make([]cand, 0, len(be.running))
	for i, js := range be.running {
		if p.Capped(js, c.Snap.Now) {
			continue
		}
		sc := 0.0
		if be.maxSize > 0 {
			sc = be.size[i] / be.maxSize
		}
		if be.maxGP > 0 {
			sc += p.Lambda * js.Job.GracePeriod / be.maxGP
		}
		cands = append(cands, cand{js, sc})
	}
	// Lowest score first; ties go to the earlier ID (running is sorted by ID).
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.score, b.score) })
	be.byScore = be.byScore[:0]
	for _, k := range cands {
		be.byScore = append(be.byScore, k.js)
	}
	be.scored, be.lambda, be.p, be.renew = true, p.Lambda, p.P, p.Renew
	return be.byScore
}

// untouched lists, in ID order, the running BE jobs this cycle has not
// acted on, except the ones in chosen.
func untouched(c *framework.Cycle, be *beState, chosen []*cluster.JobState) []*cluster.JobState {
	avail := make([]*cluster.JobState, 0, len(be.running))
	for _, js := range be.running {
		if c.St.Op(js) == framework.OpNone && !slices.Contains(chosen, js) {
			avail = append(avail, js)
		}
	}
	return avail
}

// choose picks victims for TE job te on the ledger soon (free plus
// releasing) among the running BE jobs this cycle has not touched, until
// te fits. It returns the victims and te's placement on soon with them
// gone, or nil; soon is unchanged either way. Random picks draw from
// te's own source (Cycle.Rand), so no other job's search changes them.
func (p *Preemptor) choose(c *framework.Cycle, soon *placement.Ledger, te *cluster.JobState, counts []int) (victims []*cluster.JobState, pl cluster.Placement) {
	be := runningBE(c)
	if _, ok := p.hopeless(c, be, soon, te, counts); ok {
		return nil, nil
	}
	rng := c.Rand(p.Name(), te)
	var avail []*cluster.JobState
	if p.Rule != FitGpp {
		avail = untouched(c, be, nil)
	}
	soon.Fork()
	defer soon.Revert()
	for {
		var victim *cluster.JobState
		switch p.Rule {
		case FitGpp:
			if victim = p.bestFit(c, be, soon, te, counts, victims); victim == nil {
				// No job satisfies the fit rule: a random one below the
				// cap, among the untouched ones in ID order.
				avail := untouched(c, be, victims)
				if v := p.randomOpen(avail, c.Snap.Now, rng); v >= 0 {
					victim = avail[v]
				}
			}
		case LRTP:
			if v := p.longestRemainingOpen(avail, c.Snap.Now); v >= 0 {
				victim = avail[v]
				avail = slices.Delete(avail, v, v+1)
			}
		default:
			if v := p.randomOpen(avail, c.Snap.Now, rng); v >= 0 {
				victim = avail[v]
				avail = slices.Delete(avail, v, v+1)
			}
		}
		if victim == nil {
			return nil, nil
		}
		victims = append(victims, victim)
		soon.GiveJob(victim)
		if pl, st := c.Place(soon, te, counts); st.IsSuccess() {
			return victims, pl
		}
	}
}

// hopeless reports, when it can tell cheaply, that choose would find no
// victims: te does not fit on soon even with every job choose could pick
// (untouched this cycle, preempted fewer than P times) given back; n is
// how many such jobs there are. The search is then skipped: its draws
// come from te's own source, so skipping them changes nothing else.
//
// Why this is choose's answer. choose gives its victims back one by one
// and returns nil only once none is left to pick, after placing te on
// every subset it built, the last being all of them. Placement of a job
// whose replicas are all of one group is monotone in the room (a node
// takes a fixed number of identical replicas, whatever the order; a gang
// on one node needs one node with room for all): when te does not fit
// with all of them gone, it fits with no subset, so fitgpp's fit rule
// never finds a victim. The what-ifs skipped leave no trace (a reverted
// fork of a ledger restores its sampling cursor too).
func (p *Preemptor) hopeless(c *framework.Cycle, be *beState, soon *placement.Ledger, te *cluster.JobState, counts []int) (int, bool) {
	if p.Exhaustive || !oneGroup(counts) {
		return 0, false
	}
	soon.Fork()
	defer soon.Revert()
	n := 0
	for _, js := range be.running {
		if p.open(c, js) {
			soon.GiveJob(js)
			n++
		}
	}
	if _, st := c.Place(soon, te, counts); st.IsSuccess() {
		return 0, false
	}
	if p.skips != nil {
		*p.skips++
	}
	return n, true
}

// oneGroup reports whether counts asks for replicas of one group only.
func oneGroup(counts []int) bool {
	groups := 0
	for _, n := range counts {
		if n > 0 {
			groups++
		}
	}
	return groups == 1
}

// bestFit returns the fitgpp victim (Eq. 4): the first job in victim
// order, untouched this cycle and not in chosen, whose resources make te
// fit (the fit rule), or nil.
func (p *Preemptor) bestFit(c *framework.Cycle, be *beState, soon *placement.Ledger, te *cluster.JobState, counts []int,
	chosen []*cluster.JobState) *cluster.JobState {
	for _, js := range p.order(c, be) {
		if c.St.Op(js) != framework.OpNone || slices.Contains(chosen, js) {
			continue
		}
		if fits(c, soon, te, counts, js) {
			return js
		}
	}
	return nil
}

// fits is the fit rule (Eq. 2) as a ledger what-if: with victim's
// resources given back, can the TE job be placed?
func fits(c *framework.Cycle, l *placement.Ledger, te *cluster.JobState, counts []int, victim *cluster.JobState) bool {
	l.Fork()
	defer l.Revert()
	l.GiveJob(victim)
	_, st := c.Place(l, te, counts)
	return st.IsSuccess()
}

// Size is the scale-free size of a running job's demand (Eq. 1): the sum
// over CPU, memory and GPU of its demand over the capacity of the node it
// runs on (its first node, for a job spread over several).
func Size(js *cluster.JobState, s *cluster.Snapshot) float64 {
	var c resource.Vector
	if len(js.Placement) > 0 {
		c = s.Nodes[js.Placement[0].Node].Capacity
	}
	return SizeOf(js.Job.Demand(js.Counts()), c)
}

// SizeOf is Eq. 1 for a demand d on a node of capacity c. Kinds the node
// does not have are skipped.
func SizeOf(d, c resource.Vector) float64 {
	sum := 0.0
	for _, k := range []resource.Kind{resource.CPU, resource.Memory, resource.GPU} {
		if c[k] > 0 {
			sum += float64(d[k]) / float64(c[k])
		}
	}
	return sum
}

// longestRemainingOpen returns the index of the job with the most work
// left among those not Capped (the first on ties), or -1. The work left is
// the estimate (JobState.EstimatedRemaining: the stated run time times the
// fraction not yet done), which is what production has; LRTP's paper
// assumes it known.
func (p *Preemptor) longestRemainingOpen(avail []*cluster.JobState, now float64) int {
	best := -1
	for i, js := range avail {
		if p.Capped(js, now) {
			continue
		}
		if best < 0 || js.EstimatedRemaining(now) > avail[best].EstimatedRemaining(now) {
			best = i
		}
	}
	return best
}

// randomOpen returns a random index among jobs not Capped, or -1. With
// every job open it draws exactly as rng.IntN(len(avail)) would.
func (p *Preemptor) randomOpen(avail []*cluster.JobState, now float64, rng *rand.Rand) int {
	var ok []int
	for i, js := range avail {
		if !p.Capped(js, now) {
			ok = append(ok, i)
		}
	}
	if len(ok) == 0 {
		return -1
	}
	return ok[rng.IntN(len(ok))]
}

// ValidateJobs checks that every job has a class, which these policies
// need to tell the jobs they protect from the ones they may preempt. The
// error names every offending job.
func ValidateJobs(jobs []*cluster.Job) error {
	var errs []error
	for _, j := range jobs {
		if j.Class != cluster.ClassTE && j.Class != cluster.ClassBE {
			errs = append(errs, fmt.Errorf("job %s: class: missing (want TE or BE)", j.ID))
		}
		if len(errs) == 10 {
			errs = append(errs, errors.New("... (further jobs not listed)"))
			break
		}
	}
	return errors.Join(errs...)
}

// Profile is the preset profile around a Preemptor: TE jobs first, unknown
// classes rejected, BE jobs in strict FIFO, pack placement, the Soon
// ledger kept. Its name is the Preemptor's.
func Profile(pre *Preemptor) framework.Profile {
	return framework.Profile{
		Name:      pre.Name(),
		QueueSort: TEFirst{},
		Admit:     []framework.Admit{Class{}, BEHeadOfLine{}},
		Filter:    []framework.Filter{framework.NodeRole{}},
		Score:     []framework.WeightedScore{{Score: framework.Strategy{S: placement.Pack}, Weight: 1}},
		Preempt:   []framework.Preempt{pre},
		Future:    true,
	}
}

// StrictProfile is Profile with StrictTE after BEHeadOfLine: no BE job
// starts while a TE job waits.
func StrictProfile(pre *Preemptor) framework.Profile {
	p := Profile(pre)
	p.Admit = append(p.Admit, StrictTE{})
	return p
}

// New returns the runtime of the preset for a rule, validating lambda
// (which only fitgpp uses) and P.
func New(rule Victims, lambda float64, p int) (*framework.Runtime, error) {
	pre, err := NewPreemptor(rule, lambda, p)
	if err != nil {
		return nil, err
	}
	return scheduler.New(Profile(pre))
}

// parseFitGpp reads fitgpp's parameters (the preset's and the plugin's):
// lambda, p and preempt.
func parseFitGpp(pr policy.Params) (*Preemptor, error) {
	if err := pr.Check("fitgpp", "lambda", "p", "renew_h", "preempt"); err != nil {
		return nil, err
	}
	preempt, err := pr.Bool("preempt", true)
	if err != nil {
		return nil, err
	}
	lambda, err := pr.FloatIn("lambda", DefaultLambda, 0, MaxLambda)
	if err != nil {
		return nil, err
	}
	pc, err := parseP(pr)
	if err != nil {
		return nil, err
	}
	pre, err := NewPreemptor(FitGpp, lambda, pc)
	if err != nil {
		return nil, err
	}
	if pre.Renew, err = ParseRenew(pr); err != nil {
		return nil, err
	}
	pre.NoPreempt = !preempt
	return pre, nil
}

// parseRule reads the parameters of lrtp or rand: p.
func parseRule(rule Victims) func(policy.Params) (*Preemptor, error) {
	return func(pr policy.Params) (*Preemptor, error) {
		if err := pr.Check(rule.String(), "p", "renew_h"); err != nil {
			return nil, err
		}
		pc, err := parseP(pr)
		if err != nil {
			return nil, err
		}
		pre, err := NewPreemptor(rule, 0, pc)
		if err != nil {
			return nil, err
		}
		if pre.Renew, err = ParseRenew(pr); err != nil {
			return nil, err
		}
		return pre, nil
	}
}

// Plugins returns the registry entries of the FitGpp plugins.
func Plugins() []profile.PluginEntry {
	none := func(name string, p framework.Plugin) func(policy.Params) (framework.Plugin, error) {
		return func(a policy.Params) (framework.Plugin, error) { return p, a.Check(name) }
	}
	pre := func(parse func(policy.Params) (*Preemptor, error)) func(policy.Params) (framework.Plugin, error) {
		return func(a policy.Params) (framework.Plugin, error) {
			p, err := parse(a)
			if err != nil {
				return nil, err
			}
			return p, nil
		}
	}
	return []profile.PluginEntry{
		{Name: TEFirstName, Description: "queueSort: TE jobs (and jobs without a class) before BE jobs, queue order within each",
			New: none(TEFirstName, TEFirst{})},
		{Name: ClassName, Description: "admit: rejects a job that is neither TE nor BE, naming it",
			New: none(ClassName, Class{})},
		{Name: BEHeadOfLineName, Description: "admit: strict FIFO among BE jobs, a BE job that could not start blocks every job behind it",
			New: none(BEHeadOfLineName, BEHeadOfLine{})},
		{Name: StrictTEName, Description: "admit: strict TE priority, no BE job starts in a cycle that leaves a TE job waiting (needs fitgpp-te-first)",
			New: none(StrictTEName, StrictTE{})},
		{Name: "fitgpp", Description: fmt.Sprintf("preempt: a TE job waits for room being freed, else preempts the running BE job with the lowest size + lambda x grace-period score that makes room (FitGpp Eq. 3/4), random below the cap otherwise; lambda>=0 (default %g), p>=1 or inf (default %d), renew_h>0 or inf (default inf: a job preempted p times is never preempted again; h: once more after each h hours of uninterrupted run), preempt=false: never preempt", DefaultLambda, DefaultP),
			New: pre(parseFitGpp)},
		{Name: "lrtp", Description: fmt.Sprintf("preempt: a TE job waits for room being freed, else preempts the running BE jobs with the longest remaining time, below the cap, until it fits; p>=1 or inf: max preemptions per job (default %d)", DefaultP),
			New: pre(parseRule(LRTP))},
		{Name: "rand", Description: fmt.Sprintf("preempt: a TE job waits for room being freed, else preempts random running BE jobs below the cap until it fits; p>=1 or inf: max preemptions per job (default %d)", DefaultP),
			New: pre(parseRule(Rand))},
	}
}

// Entries returns the registry entries of the fitgpp, lrtp and rand
// presets.
func Entries() []policy.Entry {
	preset := func(parse func(policy.Params) (*Preemptor, error)) policy.Factory {
		return func(pr policy.Params) (policy.Policy, error) {
			pre, err := parse(pr)
			if err != nil {
				return nil, err
			}
			return scheduler.New(Profile(pre))
		}
	}
	fitgppPreset := func(pr policy.Params) (policy.Policy, error) {
		strict, err := pr.Bool("strict", false)
		if err != nil {
			return nil, err
		}
		rest := maps.Clone(pr)
		delete(rest, "strict")
		pre, err := parseFitGpp(rest)
		if err != nil {
			return nil, err
		}
		if strict {
			return scheduler.New(StrictProfile(pre))
		}
		return scheduler.New(Profile(pre))
	}
	return []policy.Entry{
		{Name: "fitgpp", Description: fmt.Sprintf("FitGpp: FIFO where TE jobs preempt the BE job with the lowest size + lambda x grace-period score that makes room; lambda>=0 (default %g), p>=1 or inf: max preemptions per job (default %d); renew_h (default inf): a capped job may be preempted again after running renew_h hours uninterrupted; preempt=false serves TE jobs first without preempting, strict=true starts no BE job while a TE job waits (ablations)", DefaultLambda, DefaultP),
			New: fitgppPreset},
		{Name: "lrtp", Description: fmt.Sprintf("FIFO where TE jobs preempt the BE jobs with the longest remaining time until they fit (Big-C's rule, exact remaining times); p>=1 or inf: max preemptions per job (default %d, the paper's main experiment)", DefaultP),
			New: preset(parseRule(LRTP))},
		{Name: "rand", Description: fmt.Sprintf("FIFO where TE jobs preempt random running BE jobs until they fit; p>=1 or inf: max preemptions per job (default %d, the paper's main experiment)", DefaultP),
			New: preset(parseRule(Rand))},
	}
}

func parseP(pr policy.Params) (int, error) {
	v, ok := pr["p"]
	if !ok {
		return DefaultP, nil
	}
	if v == "inf" {
		return Unlimited, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("parameter p=%q: not an integer or inf", v)
	}
	if n < 1 || n > MaxP {
		return 0, fmt.Errorf("parameter p=%d: want an integer in [1, %d] or inf", n, MaxP)
	}
	return n, nil
}

// ParseRenew reads renew_h, the renewal window in hours (see
// Preemptor.Renew), and returns it in seconds: absent or "inf" is 0, the
// paper's lifetime cap; else a number in (0, MaxRenewH].
func ParseRenew(pr policy.Params) (float64, error) {
	v, ok := pr["renew_h"]
	if !ok || v == "inf" {
		return 0, nil
	}
	h, err := strconv.ParseFloat(v, 64)
	if err != nil || !(h > 0 && h <= MaxRenewH) {
		return 0, fmt.Errorf("parameter renew_h=%q: want hours in (0, %g] or inf", v, float64(MaxRenewH))
	}
	return h * 3600, nil
}

// MaxRenewH bounds renew_h: a year.
const MaxRenewH = 24 * 365

// Bounds of the parameters: lambda weighs grace-period seconds against
// sizes, and p counts preemptions of one job; larger values are
// indistinguishable from these (p=inf is Unlimited).
const (
	MaxLambda = 1e6
	MaxP      = 1_000_000
)
