package drover

import (
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/oasis"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Payoff is OASiS's admission test (Alg. 1: admit when the best schedule's
// utility exceeds its priced cost) for jobs of any shape that carry a
// utility. A job's earliest completion is now plus its work at the
// requested size; its cost is its resource-time (demand as a share of the
// cluster, times its work) at the price of Eq. 22 for each kind given the
// cluster's current allocation, counted at the running jobs' minimum sizes
// (capacity an elastic job holds above its minimum is reclaimable by a
// shrink at no checkpoint, so it is not scarce). Jobs without a utility,
// or without a demand, pass.
//
// What a failed test does is the mode:
//
//   - Defer (the default, Reject false): the job waits (Unschedulable,
//     the payoff in the reason) and is tested again when the running jobs,
//     the room, the nodes or the queue change (EnqueueExtensions): prices
//     fall as load falls. A job that passed once is never tested again. A
//     job whose kinds nothing running holds passes whatever its payoff: an
//     idle cluster gains nothing by turning it away, so a deferred job is
//     never lost (a worthless one runs on leftover capacity).
//   - Reject (the paper's reading): the first failed test rejects the job
//     for good (Unresolvable); each job is decided once.
//
// The price bounds are learned per tenant (Job.Tenant) from that tenant's
// jobs only, so one tenant's jobs cannot change another's admission. Each
// job adds, on first sight, its utility per share-second at its work (a U
// sample) and at the horizon (an L sample); the newest MaxSamples are kept,
// each weighted 2^(-age/HalfLife) by its age relative to the tenant's
// newest sample. U is the weighted Quantile of the U samples, clipped at
// Clip times their weighted median; L is the weighted (1-Quantile) of the
// L samples, within [LFloor·U, U]. A tenant whose weights sum to less than
// MinJobs is not priced (its jobs pass): no bound is set by one job.
// Because the weights are relative to the newest sample, the bounds change
// only when a job of the tenant is first seen, never with the clock alone;
// the utility at the earliest completion only falls as time passes, so
// time alone never turns a deferral into an admission and the hints below
// are exact.
type Payoff struct {
	Eta, LFloor, Horizon float64
	// Reject makes a failed test terminal (OASiS's Alg. 1).
	Reject bool
	// Quantile, Clip, HalfLife (seconds), MinJobs and MaxSamples shape the
	// per-tenant bounds (see the type's comment).
	Quantile, Clip, HalfLife, MinJobs float64
	MaxSamples                        int

	tenants map[string]*tenantBounds
	// seen holds every job whose samples were taken; passed (true) or
	// rejected (false) jobs are not tested again.
	seen    map[string]bool
	decided map[string]bool
	// deferred holds every job deferred at least once.
	deferred map[string]bool
}

// Deferred is the number of jobs deferred at least once (for tests and
// reports; a deferred job is pending, never lost).
func (p *Payoff) Deferred() int { return len(p.deferred) }

// tenantBounds are one tenant's samples, oldest first.
type tenantBounds struct {
	t, u, l []float64
}

var (
	_ framework.Admit             = (*Payoff)(nil)
	_ framework.EnqueueExtensions = (*Payoff)(nil)
)

// NewPayoff returns the plugin with drover's defaults: defer, eta 1,
// lfloor 1e-4, a 7-day horizon, the 0.9 quantile clipped at 4 times the
// median, a 24 h half-life, priced from 3 jobs' weight, 64 samples kept.
func NewPayoff() *Payoff {
	return &Payoff{Eta: 1, LFloor: 1e-4, Horizon: 7 * 86400, Quantile: 0.9, Clip: 4, HalfLife: 86400, MinJobs: 3, MaxSamples: 64}
}

// Name implements framework.Plugin.
func (*Payoff) Name() string { return PayoffName }

// Events implements framework.EnqueueExtensions: a deferred job's test
// changes with the allocation (running jobs), the cluster's capacity (its
// share), and its tenant's bounds (a new job seen: the queue changed).
// Room is included because a release of capacity is also a running-job
// change the queue may see first. A rejected job is gone.
func (p *Payoff) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventRunning | framework.EventRoom | framework.EventNodes | framework.EventPending
}

// Requeue implements framework.EnqueueExtensions.
func (*Payoff) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// shareTime is the job's demand as a share of the cluster, summed over
// kinds, times its estimated run time (Job.EstimatedWork: what the
// scheduler is told, never the true run time).
func shareTime(j *cluster.Job, total resource.Vector) float64 {
	d := j.RequestedDemand()
	sh := 0.0
	for k := range d {
		if total[k] > 0 {
			sh += float64(d[k]) / float64(total[k])
		}
	}
	return sh * j.EstimatedWork()
}

// observe adds a job's samples to its tenant's, once per job.
func (p *Payoff) observe(j *cluster.Job, now, st float64) {
	if p.seen[j.ID] {
		return
	}
	p.seen[j.ID] = true
	tb := p.tenants[j.Tenant]
	if tb == nil {
		tb = &tenantBounds{}
		p.tenants[j.Tenant] = tb
	}
	tb.t = append(tb.t, now)
	tb.u = append(tb.u, j.Utility.Value(j.EstimatedWork())/st)
	tb.l = append(tb.l, j.Utility.Value(p.Horizon)/st)
	if n := len(tb.t) - p.MaxSamples; n > 0 {
		tb.t, tb.u, tb.l = slices.Delete(tb.t, 0, n), slices.Delete(tb.u, 0, n), slices.Delete(tb.l, 0, n)
	}
}

// weightedQuantile is the smallest value whose cumulative weight, values
// in increasing order, reaches q of the total; NaN values are skipped.
func weightedQuantile(v, w []float64, q float64) float64 {
	idx := make([]int, 0, len(v))
	total := 0.0
	for i := range v {
		if !math.IsNaN(v[i]) {
			idx = append(idx, i)
			total += w[i]
		}
	}
	if len(idx) == 0 {
		return math.NaN()
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if v[a] < v[b] {
			return -1
		}
		if v[a] > v[b] {
			return 1
		}
		return 0
	})
	acc := 0.0
	for _, i := range idx {
		acc += w[i]
		if acc >= q*total*(1-1e-12) {
			return v[i]
		}
	}
	return v[idx[len(idx)-1]]
}

// Bounds returns a tenant's U and L, and false while the tenant's weights
// sum to less than MinJobs (not priced).
func (p *Payoff) Bounds(tenant string) (u, l float64, ok bool) {
	tb := p.tenants[tenant]
	if tb == nil || len(tb.t) == 0 {
		return 0, 0, false
	}
	newest := tb.t[len(tb.t)-1]
	w := make([]float64, len(tb.t))
	sum := 0.0
	for i, t := range tb.t {
		w[i] = math.Exp2(-(newest - t) / p.HalfLife)
		sum += w[i]
	}
	if sum < p.MinJobs {
		return 0, 0, false
	}
	u = math.Min(weightedQuantile(tb.u, w, p.Quantile), p.Clip*weightedQuantile(tb.u, w, 0.5))
	if !(u > 0) {
		return 0, 0, false
	}
	l = weightedQuantile(tb.l, w, 1-p.Quantile)
	if math.IsNaN(l) || l < p.LFloor*u {
		l = p.LFloor * u
	}
	return u, math.Min(l, u), true
}

// Admit implements framework.Admit.
func (p *Payoff) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	j := js.Job
	if j.Utility == nil || p.decided[j.ID] {
		return nil
	}
	if p.seen == nil {
		p.seen, p.decided, p.deferred, p.tenants = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]*tenantBounds{}
	}
	s := c.Snap
	total := s.ReadyCapacity()
	st := shareTime(j, total)
	if !(st > 0) {
		return nil
	}
	p.observe(j, s.Now, st)
	pass := func() *framework.Status { p.decided[j.ID] = true; return nil }
	u, l, ok := p.Bounds(j.Tenant)
	if !ok {
		return pass()
	}
	best := j.Utility.Value(s.Now - j.Submit + j.EstimatedWork())
	var alloc resource.Vector
	for _, r := range s.Running {
		counts := r.Counts()
		for g := range counts {
			counts[g] = min(counts[g], max(r.Job.Groups[g].Min, 1))
		}
		alloc = alloc.Add(r.Job.Demand(counts))
	}
	d := j.RequestedDemand()
	cost, held := 0.0, false
	for k := range d {
		if total[k] <= 0 || d[k] == 0 {
			continue
		}
		held = held || alloc[k] > 0
		price := oasis.Price(float64(alloc[k]), float64(total[k]), u, l, p.Eta)
		cost += float64(d[k]) / float64(total[k]) * j.EstimatedWork() * price
	}
	if best-cost > 0 {
		return pass()
	}
	if p.Reject {
		p.decided[j.ID] = true
		return framework.Statusf(framework.Unresolvable, "payoff %.4g <= 0 (utility %.4g at the earliest completion, priced cost %.4g)", best-cost, best, cost)
	}
	if !held {
		// Nothing running holds what the job needs: nothing to save the
		// capacity for.
		return pass()
	}
	p.deferred[j.ID] = true
	return framework.Statusf(framework.Unschedulable, "deferred: payoff %.4g <= 0 (utility %.4g at the earliest completion, priced cost %.4g at tenant %q's prices); tested again when running jobs change",
		best-cost, best, cost, j.Tenant)
}

const payoffDescription = "admit: OASiS's payoff test for jobs with a utility (utility at the earliest completion vs resource-time at Eq. 22's prices, bounds learned per tenant); reject (false: a failed job is deferred and tested again as load changes; true: rejected for good, the paper's Alg. 1), eta (1), lfloor (1e-4), horizon_h (168), quantile (0.9), clip (4: U at most clip x the tenant's median), halflife_h (24), minjobs (3), samples (64)"

// newPayoff parses the payoff plugin's arguments.
func newPayoff(a policy.Params) (framework.Plugin, error) {
	if err := a.Check(PayoffName, payoffKeys...); err != nil {
		return nil, err
	}
	return parsePayoff(a)
}

// payoffKeys are the payoff plugin's arguments.
var payoffKeys = []string{"reject", "eta", "lfloor", "horizon_h", "quantile", "clip", "halflife_h", "minjobs", "samples"}

func parsePayoff(a policy.Params) (*Payoff, error) {
	p := NewPayoff()
	var err error
	if p.Reject, err = a.Bool("reject", false); err != nil {
		return nil, err
	}
	if p.Eta, err = a.FloatIn("eta", p.Eta, oasis.MinScale, oasis.MaxScale); err != nil {
		return nil, err
	}
	if p.LFloor, err = a.Float("lfloor", p.LFloor); err != nil {
		return nil, err
	}
	h, err := a.Float("horizon_h", 168)
	if err != nil {
		return nil, err
	}
	if !(p.Eta > 0) || !(p.LFloor > 0 && p.LFloor < 1) || !(h > 0 && h <= 24*365) {
		return nil, fmt.Errorf("payoff: parameters eta=%v lfloor=%v horizon_h=%v: want eta > 0, 0 < lfloor < 1, 0 < horizon_h <= 8760", p.Eta, p.LFloor, h)
	}
	p.Horizon = h * 3600
	if p.Quantile, err = a.FloatIn("quantile", p.Quantile, 0.5, 1); err != nil {
		return nil, err
	}
	if p.Clip, err = a.FloatIn("clip", p.Clip, 1, 1000); err != nil {
		return nil, err
	}
	hl, err := a.FloatIn("halflife_h", 24, 0.01, 24*365)
	if err != nil {
		return nil, err
	}
	p.HalfLife = hl * 3600
	if p.MinJobs, err = a.FloatIn("minjobs", p.MinJobs, 1, 1000); err != nil {
		return nil, err
	}
	if p.MaxSamples, err = a.IntIn("samples", p.MaxSamples, 1, 4096); err != nil {
		return nil, err
	}
	if float64(p.MaxSamples) < p.MinJobs {
		return nil, fmt.Errorf("payoff: parameters samples=%d minjobs=%v: want samples >= minjobs (else no tenant is ever priced)", p.MaxSamples, p.MinJobs)
	}
	return p, nil
}
