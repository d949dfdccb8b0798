// Package fitgpp implements FitGpp (Fitting Grace Period Preemption, the
// paper in shared/papers/002) and the two preemptive baselines it is
// compared with, LRTP and RAND.
//
// All three are built on FIFO. Every cycle they first serve the pending
// trial-and-error (TE) jobs in queue order, which are never preempted and
// may preempt best-effort (BE) jobs; then they start BE jobs in strict
// queue order with head-of-line blocking, exactly like baseline.FIFO. A
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
//     prediction), until the TE job fits.
//   - rand: random running BE jobs until the TE job fits.
//
// Preemptions in flight are accounted for: the free resources a cycle
// plans with are the node's free resources plus NodeState.Releasing (what
// jobs in their grace period will free). A TE job that fits once those
// come back waits for them instead of preempting more, and the part of its
// placement that is already free is held back from BE jobs, so that a BE
// job does not take the room a victim was preempted for.
//
// Jobs whose class is unknown are rejected with a reason naming the job:
// a policy cannot return an error, and silently treating them as BE (or
// TE) would give them the wrong protection. Experiments validate their
// workloads with ValidateJobs first, so a bad workload is an error there.
package fitgpp

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Defaults of the fitgpp parameters. The paper's values were lost in the
// text copy; lambda = 1 weighs a job's normalised grace period as much as
// its normalised size, and P = 1 is the setting of the paper's main
// experiment (Table 1: "each BE job is not preempted more than once").
const (
	DefaultLambda = 1.0
	DefaultP      = 1
)

// Unlimited is the P value that never caps preemptions (the paper's
// "P infinite", Table 4). It is written p=inf in a policy spec.
const Unlimited = math.MaxInt

// Victims chooses the BE jobs to preempt for one TE job.
type Victims int

// Victim rules.
const (
	FitGpp Victims = iota
	LRTP
	Rand
)

// Policy is FitGpp, LRTP or RAND on top of FIFO.
type Policy struct {
	Rule Victims
	// Lambda weighs the grace period against the size (fitgpp only).
	Lambda float64
	// P caps how many times a job may be preempted (fitgpp only); Unlimited
	// for no cap.
	P int
	// Placement is how jobs are placed (default pack, as baseline FIFO).
	Placement placement.Options
	// NoPreempt serves TE jobs first but never preempts: the ablation that
	// separates what TE-first ordering gains from what preemption gains
	// (fitgpp:preempt=false).
	NoPreempt bool
}

var _ policy.Policy = (*Policy)(nil)

// New returns a policy with the given rule, validating lambda and P.
func New(rule Victims, lambda float64, p int) (*Policy, error) {
	if math.IsNaN(lambda) || math.IsInf(lambda, 0) || lambda < 0 {
		return nil, fmt.Errorf("parameter lambda=%v: must be a finite number >= 0", lambda)
	}
	if p < 1 {
		return nil, fmt.Errorf("parameter p=%d: must be at least 1 (or inf)", p)
	}
	return &Policy{Rule: rule, Lambda: lambda, P: p, Placement: placement.Options{Strategy: placement.Pack}}, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string {
	switch p.Rule {
	case LRTP:
		return "lrtp"
	case Rand:
		return "rand"
	}
	return "fitgpp"
}

// Schedule implements policy.Policy.
func (p *Policy) Schedule(s *cluster.Snapshot) []policy.Action {
	if s.Pending.Len() == 0 {
		return nil
	}
	now := placement.NewLedger(s, true)
	// soon also counts what jobs in their grace period will release.
	soon := placement.NewLedger(s, true)
	for i, n := range s.Nodes {
		if n.Ready && !n.Gone && !n.Releasing.IsZero() {
			soon.Give(i, n.Releasing)
		}
	}
	var out []policy.Action
	var rng *rand.Rand
	var running []*cluster.JobState // BE jobs still Running, sorted by ID; built lazily
	chosen := map[*cluster.JobState]bool{}
	for js := range s.Pending.All() {
		if js.Job.Class == cluster.ClassUnknown {
			out = append(out, policy.Reject{Job: js.Job.ID, Reason: fmt.Sprintf("%s: job %s has no class (want TE or BE)", p.Name(), js.Job.ID)})
			continue
		}
		if js.Job.Class != cluster.ClassTE {
			continue
		}
		counts := js.Job.RequestedCounts()
		if pl, err := placement.Place(now, js.Job, counts, p.Placement); err == nil {
			out = append(out, policy.Start{Job: js.Job.ID, Placement: pl})
			soon.TakePlacement(js.Job, pl)
			continue
		}
		if pl, err := placement.Place(soon, js.Job, counts, p.Placement); err == nil {
			reserve(now, js.Job, pl)
			out = append(out, policy.Wait{Job: js.Job.ID, Reason: "waiting for preempted jobs' grace periods"})
			continue
		}
		if p.NoPreempt {
			out = append(out, policy.Wait{Job: js.Job.ID, Reason: p.Name() + ": no room and preemption is off"})
			continue
		}
		if running == nil {
			running = runningBE(s)
			rng = rand.New(rand.NewPCG(s.Seed, s.Cycle))
		}
		victims, pl := p.choose(s, soon, js, running, chosen, rng)
		if victims == nil {
			out = append(out, policy.Wait{Job: js.Job.ID, Reason: p.Name() + ": no set of running BE jobs makes room"})
			continue
		}
		instant := true
		for _, v := range victims {
			chosen[v] = true
			out = append(out, policy.Preempt{Job: v.Job.ID, Grace: v.Job.GracePeriod, By: js.Job.ID,
				Reason: p.Name() + " victim for TE job " + js.Job.ID})
			if v.Job.GracePeriod > 0 {
				instant = false
			}
		}
		if instant {
			// Victims without a grace period are suspended at once, so
			// the TE job can start in the same cycle.
			now.Fork()
			for _, v := range victims {
				now.GiveJob(v)
			}
			if now.TakePlacement(js.Job, pl) {
				now.Commit()
				out = append(out, policy.Start{Job: js.Job.ID, Placement: pl})
				continue
			}
			now.Revert()
		}
		reserve(now, js.Job, pl)
		out = append(out, policy.Wait{Job: js.Job.ID, Reason: fmt.Sprintf("preempted %d BE jobs; waiting for their grace periods", len(victims))})
	}
	// BE jobs: strict FIFO with head-of-line blocking.
	for js := range s.Pending.All() {
		if js.Job.Class != cluster.ClassBE {
			continue
		}
		pl, err := placement.Place(now, js.Job, js.Job.RequestedCounts(), p.Placement)
		if err != nil {
			out = append(out, policy.Wait{Job: js.Job.ID, Reason: "head of BE queue: " + err.Error()})
			break
		}
		out = append(out, policy.Start{Job: js.Job.ID, Placement: pl})
	}
	return out
}

// reserve holds back, in the ledger of what is free now, the part of a
// TE job's planned placement that is already free, so that BE jobs started
// later in the cycle do not take it.
func reserve(now *placement.Ledger, j *cluster.Job, pl cluster.Placement) {
	for n, d := range pl.DemandOn(j) {
		now.Take(n, d.Min(now.Free(n)))
	}
}

// runningBE lists the BE jobs in phase Running (not already in their grace
// period), sorted by ID so that choices do not depend on the order of
// Snapshot.Running.
func runningBE(s *cluster.Snapshot) []*cluster.JobState {
	out := []*cluster.JobState{}
	for _, js := range s.Running {
		if js.Job.Class == cluster.ClassBE && js.Phase == cluster.Running {
			out = append(out, js)
		}
	}
	slices.SortFunc(out, func(a, b *cluster.JobState) int { return cmp.Compare(a.Job.ID, b.Job.ID) })
	return out
}

// choose picks victims for TE job te on the ledger soon (free plus
// releasing). On success it commits the victims' resources and the TE job's
// placement to soon and returns both; on failure soon is unchanged and the
// victims are nil.
func (p *Policy) choose(s *cluster.Snapshot, soon *placement.Ledger, te *cluster.JobState,
	running []*cluster.JobState, chosen map[*cluster.JobState]bool, rng *rand.Rand) ([]*cluster.JobState, cluster.Placement) {
	avail := make([]*cluster.JobState, 0, len(running))
	for _, js := range running {
		if !chosen[js] {
			avail = append(avail, js)
		}
	}
	counts := te.Job.RequestedCounts()
	soon.Fork()
	var victims []*cluster.JobState
	for len(avail) > 0 {
		var v int
		switch p.Rule {
		case FitGpp:
			v = p.bestFit(s, soon, te.Job, counts, running, avail)
			if v < 0 {
				v = randomBelowP(avail, p.P, rng)
			}
		case LRTP:
			v = longestRemaining(avail, s.Now)
		default:
			v = rng.IntN(len(avail))
		}
		if v < 0 {
			break
		}
		victim := avail[v]
		avail = slices.Delete(avail, v, v+1)
		victims = append(victims, victim)
		soon.GiveJob(victim)
		if pl, err := placement.Place(soon, te.Job, counts, p.Placement); err == nil {
			soon.Commit()
			return victims, pl
		}
	}
	soon.Revert()
	return nil, nil
}

// bestFit returns the index in avail of the fitgpp victim (Eq. 4) or -1
// when no job satisfies the fit rule below the cap. Scores are normalised
// over all running BE jobs (R in Eq. 3), including ones already chosen as
// victims in this cycle, so that a job's score does not depend on the
// order TE jobs are served in.
func (p *Policy) bestFit(s *cluster.Snapshot, soon *placement.Ledger, te *cluster.Job, counts []int,
	running, avail []*cluster.JobState) int {
	maxSize, maxGP := 0.0, 0.0
	for _, js := range running {
		maxSize = math.Max(maxSize, Size(js, s))
		maxGP = math.Max(maxGP, js.Job.GracePeriod)
	}
	type cand struct {
		i     int
		score float64
	}
	cands := make([]cand, 0, len(avail))
	for i, js := range avail {
		if js.Preemptions >= p.P {
			continue
		}
		sc := 0.0
		if maxSize > 0 {
			sc = Size(js, s) / maxSize
		}
		if maxGP > 0 {
			sc += p.Lambda * js.Job.GracePeriod / maxGP
		}
		cands = append(cands, cand{i, sc})
	}
	// Lowest score first; ties go to the earlier ID (avail is sorted by ID).
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.score, b.score) })
	for _, c := range cands {
		if fits(soon, te, counts, avail[c.i], p.Placement) {
			return c.i
		}
	}
	return -1
}

// fits is the fit rule (Eq. 2) as a ledger what-if: with victim's
// resources given back, can the TE job be placed?
func fits(l *placement.Ledger, te *cluster.Job, counts []int, victim *cluster.JobState, o placement.Options) bool {
	l.Fork()
	defer l.Revert()
	l.GiveJob(victim)
	_, err := placement.Place(l, te, counts, o)
	return err == nil
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

// longestRemaining returns the index of the job with the most work left.
func longestRemaining(avail []*cluster.JobState, now float64) int {
	best := 0
	for i, js := range avail {
		if js.Remaining(now) > avail[best].Remaining(now) {
			best = i
		}
	}
	return best
}

// randomBelowP returns a random index among jobs preempted fewer than p
// times, or -1.
func randomBelowP(avail []*cluster.JobState, p int, rng *rand.Rand) int {
	var ok []int
	for i, js := range avail {
		if js.Preemptions < p {
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

// Entries returns the registry entries of fitgpp, lrtp and rand.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "fitgpp", Description: fmt.Sprintf("FitGpp: FIFO where TE jobs preempt the BE job with the lowest size + lambda x grace-period score that makes room; lambda>=0 (default %g), p>=1 or inf: max preemptions per job (default %d); preempt=false serves TE jobs first without preempting (ablation)", DefaultLambda, DefaultP),
			New: func(pr policy.Params) (policy.Policy, error) {
				if err := pr.Check("fitgpp", "lambda", "p", "preempt"); err != nil {
					return nil, err
				}
				preempt := true
				if v, ok := pr["preempt"]; ok {
					b, err := strconv.ParseBool(v)
					if err != nil {
						return nil, fmt.Errorf("parameter preempt=%q: not true or false", v)
					}
					preempt = b
				}
				lambda, err := pr.Float("lambda", DefaultLambda)
				if err != nil {
					return nil, err
				}
				pc, err := parseP(pr)
				if err != nil {
					return nil, err
				}
				pol, err := New(FitGpp, lambda, pc)
				if err != nil {
					return nil, err
				}
				pol.NoPreempt = !preempt
				return pol, nil
			}},
		{Name: "lrtp", Description: "FIFO where TE jobs preempt the BE jobs with the longest remaining time until they fit (Big-C's rule, exact remaining times)",
			New: func(pr policy.Params) (policy.Policy, error) {
				if err := pr.Check("lrtp"); err != nil {
					return nil, err
				}
				return New(LRTP, 0, Unlimited)
			}},
		{Name: "rand", Description: "FIFO where TE jobs preempt random running BE jobs until they fit",
			New: func(pr policy.Params) (policy.Policy, error) {
				if err := pr.Check("rand"); err != nil {
					return nil, err
				}
				return New(Rand, 0, Unlimited)
			}},
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
	if n < 1 {
		return 0, fmt.Errorf("parameter p=%d: must be at least 1 (or inf)", n)
	}
	return n, nil
}
