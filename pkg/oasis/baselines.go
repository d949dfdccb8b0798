package oasis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// The paper's four comparison schemes (Sec. V-A). They are registered as
// ps-fifo, ps-drf, rrh and dorm, because fifo and drf already name the
// general-purpose baselines of package baseline; the oasis experiments
// label their rows FIFO, DRF, RRH and Dorm.

// Plugin names.
const (
	ArrivalOrderName = "arrival-order"
	RoundRobinName   = "ps-round-robin"
	FitsEmptyName    = "fits-empty"
	DRFName          = "ps-drf"
	RRHName          = "rrh"
	DormName         = "dorm"
)

// ArrivalOrder orders pending jobs by submission time, earliest first;
// equal times keep queue order. OASiS decides arrivals in this order (an
// online algorithm sees jobs as they come).
type ArrivalOrder struct{}

var _ framework.QueueSort = ArrivalOrder{}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// order is the submission time, fixed.
func (ArrivalOrder) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (ArrivalOrder) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (ArrivalOrder) Name() string { return ArrivalOrderName }

// Compare implements framework.QueueSort.
func (ArrivalOrder) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	return cmp.Compare(a.Job.Submit, b.Job.Submit)
}

// RoundRobin places replicas on the eligible servers in turn, continuing
// where the last replica of the same group went (the paper places workers
// and PSs "on available servers in a round-robin fashion" for FIFO, DRF
// and RRH). As a Score plugin it ranks the feasible nodes by their
// distance after the group's cursor, so the Runtime takes the first
// feasible node from it, and as a framework.Picker it moves the cursor
// past each node the Runtime takes, also for the replicas of a gang that
// then fails (the cursor does not go back). One instance is one cursor.
type RoundRobin struct{ next []int }

var (
	_ framework.Score  = (*RoundRobin)(nil)
	_ framework.Picker = (*RoundRobin)(nil)
)

// Name implements framework.Plugin.
func (*RoundRobin) Name() string { return RoundRobinName }

func (rr *RoundRobin) cursor(g int) int {
	if g < 0 || g >= len(rr.next) {
		return 0
	}
	return rr.next[g]
}

func (rr *RoundRobin) advance(g, node int) {
	if g < 0 {
		return
	}
	for len(rr.next) <= g {
		rr.next = append(rr.next, 0)
	}
	rr.next[g] = node + 1
}

// Score implements framework.Score: minus the node's distance after the
// cursor of group g (of the first group, for a whole gang).
func (rr *RoundRobin) Score(c *framework.Cycle, _ *cluster.JobState, g int, node int) float64 {
	n := len(c.Snap.Nodes)
	return -float64(((node-rr.cursor(max(g, 0)))%n + n) % n)
}

// Picked implements framework.Picker.
func (rr *RoundRobin) Picked(_ *framework.Cycle, _ *cluster.JobState, g int, node int) {
	rr.advance(g, node)
}

// place is the same round-robin placement on ledger l, all or nothing,
// for plugins that compute placements themselves (ps-drf): the cursor
// moves as in Picked.
func (rr *RoundRobin) place(l *placement.Ledger, j *cluster.Job, counts []int) (cluster.Placement, bool) {
	nodes := l.Snapshot().Nodes
	l.Fork()
	var p cluster.Placement
	for g, c := range counts {
		d := j.Groups[g].Demand
		for k := 0; k < c; k++ {
			found := false
			for step := 0; step < len(nodes); step++ {
				i := (rr.cursor(g) + step) % len(nodes)
				if !placement.Eligible(nodes[i], j, g) || !l.Take(i, d) {
					continue
				}
				p = append(p, cluster.Assignment{Group: g, Node: i})
				rr.advance(g, i)
				found = true
				break
			}
			if !found {
				l.Revert()
				return nil, false
			}
		}
	}
	l.Commit()
	return canonical(p), true
}

// ---- FIFO ----

// FitsEmpty rejects a job whose requested counts do not fit on the
// cluster with nothing else running (placed round-robin from the first
// node): a fixed-size job that never fits would otherwise block a FIFO
// queue forever. It reads the Statement's ledger on a fork it discards.
type FitsEmpty struct{}

var _ framework.Admit = FitsEmpty{}

// Name implements framework.Plugin.
func (FitsEmpty) Name() string { return FitsEmptyName }

// Admit implements framework.Admit.
func (FitsEmpty) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	l := c.St.Now()
	l.Fork()
	defer l.Revert()
	for i, n := range c.Snap.Nodes {
		if n.Ready && !n.Gone {
			l.Give(i, n.Capacity.Sub(l.Free(i)))
		}
	}
	var rr RoundRobin
	if _, ok := rr.place(l, js.Job, js.Job.RequestedCounts()); ok {
		return nil
	}
	return framework.NewStatus(framework.Unresolvable, "ps-fifo: fixed size exceeds the empty cluster")
}

// ---- DRF ----

// DRF admits every job and, whenever the set of jobs changes (an arrival
// or a completion), recomputes every job's worker count by progressive
// filling: the job with the lowest dominant share (over both pools'
// capacity) gets one more worker, plus a PS when the bandwidth constraint
// asks for one, until no job can grow. Replicas are placed round-robin.
//
// As an Admit plugin it holds every pending job (Wait): jobs start only
// through the reallocation. As a Rebalance plugin it reallocates, on a
// fork of the Statement's ledger with every running job's resources given
// back, and moves every job to its new placement (Transition).
type DRF struct {
	rr  RoundRobin
	sig string
}

var (
	_ framework.Admit     = (*DRF)(nil)
	_ framework.Rebalance = (*DRF)(nil)
)

// Name implements framework.Plugin.
func (*DRF) Name() string { return DRFName }

// Admit implements framework.Admit.
func (*DRF) Admit(_ *framework.Cycle, js *cluster.JobState) *framework.Status {
	if err := CheckJob(js.Job); err != nil {
		return framework.NewStatus(framework.Unresolvable, "ps-drf: "+err.Error())
	}
	return framework.NewStatus(framework.Wait, "ps-drf: no share in the last reallocation (redone on each arrival and completion)")
}

// Rebalance implements framework.Rebalance.
func (d *DRF) Rebalance(c *framework.Cycle) *framework.Status {
	s := c.Snap
	jobs := activeJobs(s)
	if sig := signature(jobs); sig == d.sig {
		return nil
	} else {
		d.sig = sig
	}
	total := poolCapacity(s)
	l := c.St.Now()
	l.Fork()
	for _, js := range s.Running {
		l.GiveJob(js)
	}
	type st struct {
		w, ps int
		dem   resource.Vector
		done  bool
		place cluster.Placement
	}
	state := make([]st, len(jobs))
	for {
		best := -1
		bestShare := math.Inf(1)
		for i := range jobs {
			if state[i].done {
				continue
			}
			if sh := state[i].dem.DominantShare(total); sh < bestShare {
				best, bestShare = i, sh
			}
		}
		if best < 0 {
			break
		}
		j := jobs[best].Job
		x := &state[best]
		ps, ok := PSFor(j.PS, x.w+1)
		if !ok {
			x.done = true
			continue
		}
		add := []int{1, ps - x.ps}
		p, fits := d.rr.place(l, j, add)
		if !fits {
			x.done = true
			continue
		}
		x.w, x.ps = x.w+1, ps
		x.dem = j.Demand([]int{x.w, x.ps})
		x.place = canonical(append(x.place, p...))
	}
	l.Revert()
	targets := make([]cluster.Placement, len(jobs))
	for i := range jobs {
		targets[i] = state[i].place
	}
	Transition(c.St, jobs, targets, nil)
	return nil
}

// activeJobs are the running and pending jobs sorted by ID.
// activeJobs lists the running and pending parameter-server jobs, by ID.
// A job CheckJob refuses is left out: Admit rejects it in the same cycle,
// and its missing PS parameters must never be read.
func activeJobs(s *cluster.Snapshot) []*cluster.JobState {
	var jobs []*cluster.JobState
	for _, js := range s.Running {
		if CheckJob(js.Job) == nil {
			jobs = append(jobs, js)
		}
	}
	for js := range s.Pending.All() {
		if CheckJob(js.Job) == nil {
			jobs = append(jobs, js)
		}
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Job.ID < jobs[b].Job.ID })
	return jobs
}

func signature(jobs []*cluster.JobState) string {
	var b strings.Builder
	for _, js := range jobs {
		b.WriteString(js.Job.ID)
		b.WriteByte(',')
	}
	return b.String()
}

func poolCapacity(s *cluster.Snapshot) resource.Vector {
	var c resource.Vector
	for _, n := range s.Nodes {
		if n.Ready && !n.Gone {
			c = c.Add(n.Capacity)
		}
	}
	return c
}

// ---- RRH ----

// RRHOrder is the order in which RRH starts its admitted jobs.
type RRHOrder uint8

const (
	// RRHArrival starts admitted jobs in arrival order and does not skip:
	// a job that does not fit holds every job behind it. The paper says
	// nothing of an order (Sec. V-A: admission by utility minus delay
	// cost above a threshold, running jobs continue or pause), so its RRH
	// runs jobs as they came, like its FIFO. The default.
	RRHArrival RRHOrder = iota
	// RRHValue starts admitted jobs by expected utility per
	// resource-second, highest first, skipping those that do not fit (a
	// backfilling order after Irwin et al.'s FirstPrice, the RRH source
	// the paper cites). The other reading of an order the paper does not
	// state; rrh:order=value.
	RRHValue
)

// RRHOrderNames are the values of the rrh plugin's order parameter.
var RRHOrderNames = []string{"arrival", "value"}

func (o RRHOrder) String() string {
	if int(o) < len(RRHOrderNames) {
		return RRHOrderNames[o]
	}
	return fmt.Sprintf("RRHOrder(%d)", o)
}

// RRH is the risk-reward heuristic of Irwin, Grit and Chase (HPDC 2004) as
// the OASiS paper applies it, reconstructed (the paper gives one
// sentence): on arrival a job is admitted when its expected utility, at
// the completion its fixed size allows, minus the delay cost its run
// imposes on the admitted jobs waiting (each delayed by its run time
// scaled by its dominant share: Irwin et al.'s opportunity cost), exceeds
// Threshold times its priority g1; otherwise, or when its fixed size does
// not fit even the empty cluster, it is rejected. Running jobs keep their
// fixed counts; when admitted jobs wait, a running job whose future
// utility gain has fallen below the threshold is paused (suspended,
// progress kept) and resumes only when nothing admitted waits. Replicas
// are placed by the ps-round-robin plugin.
//
// Order decides how admitted jobs start (the paper names no order; see
// docs/oasis.md). RRHArrival (the default): in arrival order, a job that does not fit holding the jobs
// behind it, and the expected completion of an arrival is projected
// behind the admitted jobs ahead of it (aggregate capacity, running jobs
// freeing theirs as they finish). RRHValue (a stronger variant): by
// expected utility per resource-second, skipping jobs that do not fit,
// an arrival's expected start being when the running jobs have freed
// enough capacity for it. The delay cost is the same in both orders: in
// arrival order no admitted job waits behind an arrival, and the cost
// stands for the delay its resource-time imposes on the queue (Irwin et
// al. charge it whatever the order).
//
// Run times: Irwin et al. and the OASiS paper assume each job's run time
// known. RRH reads the estimate a production scheduler has instead
// (Job.EstimatedWork, JobState.EstimatedRemaining and EstimatedTimeLeft:
// the stated run time times the fraction not yet done), which is the exact
// run time wherever no estimate was drawn (the oasis experiments).
//
// One instance is the plugin at three points:
//
//   - QueueSort: paused jobs last; the others by arrival (RRHArrival) or
//     by expected utility per resource-second, highest first, ties by ID
//     (RRHValue).
//   - Admit: on its first call in a cycle it decides every new arrival, in
//     queue order, and, when admitted jobs wait, pauses the running jobs
//     without future gain (a preemption without grace through the
//     Statement, so their room is free for the jobs tried after). Then per
//     job: a rejected arrival is Unresolvable; a paused job waits while an
//     admitted job waits; under RRHArrival a job behind one that could not
//     start this cycle waits; any other job is tried.
//   - Reserve: a paused job that starts is no longer paused.
type RRH struct {
	Threshold float64
	Order     RRHOrder
	decided   map[string]bool
	paused    map[string]bool
}

var (
	_ framework.QueueSort = (*RRH)(nil)
	_ framework.Admit     = (*RRH)(nil)
	_ framework.Reserve   = (*RRH)(nil)
)

// NewRRH returns the RRH plugin with the given threshold and order.
func NewRRH(threshold float64, order RRHOrder) *RRH {
	return &RRH{Threshold: threshold, Order: order, decided: map[string]bool{}, paused: map[string]bool{}}
}

// Name implements framework.Plugin.
func (*RRH) Name() string { return RRHName }

// rrhOrder is the per-cycle data of RRH's queue order.
type rrhOrder struct {
	total   resource.Vector
	density map[*cluster.JobState]float64
}

// rrhCycle is RRH's decisions in one cycle.
type rrhCycle struct {
	rejected map[*cluster.JobState]string
	waiting  int // admitted jobs that wait (not paused)
}

var (
	rrhOrderKey = framework.NewKey[*rrhOrder]("rrh-order")
	rrhCycleKey = framework.NewKey[*rrhCycle]("rrh-cycle")
)

func (r *RRH) order(c *framework.Cycle) *rrhOrder {
	return framework.GetOrInit(c, rrhOrderKey, func() *rrhOrder {
		return &rrhOrder{total: poolCapacity(c.Snap), density: map[*cluster.JobState]float64{}}
	})
}

// density is a job's expected utility per resource-second if it started
// now.
func (r *RRH) density(c *framework.Cycle, js *cluster.JobState) float64 {
	o := r.order(c)
	if v, ok := o.density[js]; ok {
		return v
	}
	j := js.Job
	v := utility(j, c.Snap.Now+j.EstimatedWork()-j.Submit) / (j.EstimatedWork() * math.Max(j.RequestedDemand().DominantShare(o.total), 1e-9))
	o.density[js] = v
	return v
}

// Compare implements framework.QueueSort.
func (r *RRH) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	pa, pb := r.paused[a.Job.ID], r.paused[b.Job.ID]
	switch {
	case pa && pb:
		return 0
	case pa:
		return 1
	case pb:
		return -1
	}
	if r.Order == RRHArrival {
		return cmp.Compare(a.Job.Submit, b.Job.Submit)
	}
	return cmp.Or(cmp.Compare(r.density(c, b), r.density(c, a)), strings.Compare(a.Job.ID, b.Job.ID))
}

// Admit implements framework.Admit.
func (r *RRH) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	cy := framework.GetOrInit(c, rrhCycleKey, func() *rrhCycle { return r.decide(c) })
	if reason, ok := cy.rejected[js]; ok {
		return framework.NewStatus(framework.Unresolvable, reason)
	}
	if r.paused[js.Job.ID] && cy.waiting > 0 {
		return framework.NewStatus(framework.Wait, "rrh: paused without future gain; resumes when no admitted job waits")
	}
	if r.Order == RRHArrival && len(c.Failed()) > 0 {
		// Wait, not Blocked: the arrivals behind must still be told
		// their rejections this cycle.
		return framework.NewStatus(framework.Wait, "rrh: behind an admitted job that does not fit (arrival order)")
	}
	return nil
}

// release is when a job is expected to give back its demand.
type release struct {
	at float64
	d  resource.Vector
}

// fifoStarts projects on aggregate capacity when each job of queue
// starts if they start strictly in that order (none before the one ahead
// of it), each as soon as the jobs finished by then leave room for it:
// free is the capacity free now and rel the running jobs' releases. A job
// that never fits, and every job behind it, starts at +Inf.
func fifoStarts(now float64, free resource.Vector, rel []release, queue []*cluster.JobState) []float64 {
	ev := slices.Clone(rel)
	slices.SortStableFunc(ev, func(a, b release) int { return cmp.Compare(a.at, b.at) })
	starts := make([]float64, len(queue))
	cur, f := now, free
	for i, js := range queue {
		d := js.Job.RequestedDemand()
		for !d.Fits(f) && len(ev) > 0 {
			f = f.Add(ev[0].d)
			cur = math.Max(cur, ev[0].at)
			ev = ev[1:]
		}
		if !d.Fits(f) {
			for k := i; k < len(queue); k++ {
				starts[k] = math.Inf(1)
			}
			return starts
		}
		starts[i] = cur
		f = f.Sub(d)
		e := release{at: cur + js.EstimatedRemaining(now), d: d}
		k := sort.Search(len(ev), func(k int) bool { return ev[k].at > e.at })
		ev = slices.Insert(ev, k, e)
	}
	return starts
}

// decide decides the cycle's new arrivals in queue order and pauses the
// running jobs without future gain when admitted jobs wait.
func (r *RRH) decide(c *framework.Cycle) *rrhCycle {
	s := c.Snap
	cy := &rrhCycle{rejected: map[*cluster.JobState]string{}}
	total := poolCapacity(s)
	running := slices.Clone(s.Running)
	slices.SortFunc(running, func(a, b *cluster.JobState) int {
		return cmp.Or(cmp.Compare(a.EstimatedTimeLeft(s.Now), b.EstimatedTimeLeft(s.Now)), strings.Compare(a.Job.ID, b.Job.ID))
	})
	free := total
	for _, js := range s.Running {
		free = free.Sub(js.Job.Demand(js.Counts()))
	}
	// RRHValue: an arrival may start as soon as the running jobs that
	// finish first have freed enough aggregate capacity.
	estStart := func(d resource.Vector) float64 {
		f := free
		if d.Fits(f) {
			return s.Now
		}
		for _, js := range running {
			f = f.Add(js.Job.Demand(js.Counts()))
			if d.Fits(f) {
				return s.Now + js.EstimatedTimeLeft(s.Now)
			}
		}
		return math.Inf(1)
	}
	rel := make([]release, len(running))
	for i, js := range running {
		rel[i] = release{at: s.Now + js.EstimatedTimeLeft(s.Now), d: js.Job.Demand(js.Counts())}
	}
	var waiting []*cluster.JobState
	for js := range s.Pending.All() {
		if r.decided[js.Job.ID] && !r.paused[js.Job.ID] {
			waiting = append(waiting, js)
		}
	}
	if r.Order == RRHArrival {
		slices.SortStableFunc(waiting, func(a, b *cluster.JobState) int { return cmp.Compare(a.Job.Submit, b.Job.Submit) })
	}
	for js := range s.Pending.All() {
		j := js.Job
		if r.decided[j.ID] {
			continue
		}
		r.decided[j.ID] = true
		if err := CheckJob(j); err != nil {
			cy.rejected[js] = "rrh: " + err.Error()
			continue
		}
		if st := (FitsEmpty{}).Admit(c, js); !st.IsSuccess() {
			cy.rejected[js] = "rrh: fixed size exceeds the empty cluster"
			continue
		}
		d := j.RequestedDemand()
		// ends[k] is when waiting job k is expected to finish; start when
		// this arrival is expected to start.
		ends := make([]float64, len(waiting))
		var start float64
		if r.Order == RRHArrival {
			starts := fifoStarts(s.Now, free, rel, append(slices.Clone(waiting), js))
			for k, w := range waiting {
				ends[k] = starts[k] + w.EstimatedRemaining(s.Now)
			}
			start = starts[len(waiting)]
		} else {
			for k, w := range waiting {
				ends[k] = estStart(w.Job.RequestedDemand()) + w.Job.EstimatedWork()
			}
			start = estStart(d)
		}
		gain := utility(j, start+j.EstimatedWork()-j.Submit)
		share := d.DominantShare(total)
		cost := 0.0
		for k, w := range waiting {
			e := ends[k]
			cost += utility(w.Job, e-w.Job.Submit) - utility(w.Job, e+j.EstimatedWork()*share-w.Job.Submit)
		}
		if g1 := priority(j); gain-cost <= r.Threshold*g1 {
			cy.rejected[js] = fmt.Sprintf("rrh: gain %.3g - delay cost %.3g below threshold", gain, cost)
			continue
		}
		waiting = append(waiting, js)
	}
	cy.waiting = len(waiting)
	// Pause running jobs that can no longer gain while admitted jobs wait.
	if len(waiting) > 0 {
		for _, js := range running {
			if utility(js.Job, s.Now+js.EstimatedTimeLeft(s.Now)-js.Job.Submit) < r.Threshold*priority(js.Job) {
				r.paused[js.Job.ID] = true
				c.St.Evict(js, 0, "", "rrh: no future gain", true)
			}
		}
	}
	return cy
}

// Reserve implements framework.Reserve.
func (r *RRH) Reserve(_ *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	delete(r.paused, js.Job.ID)
}

func priority(j *cluster.Job) float64 {
	if sg, ok := j.Utility.(cluster.Sigmoid); ok {
		return sg.G1
	}
	return 1
}

// Events implements framework.EnqueueExtensions: its admission follows
// a plan over time (slots, prices, reallocations on arrivals and
// completions), so a job it holds is asked again every cycle.
func (*DRF) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (*DRF) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Events implements framework.EnqueueExtensions: its admission follows
// a plan over time (slots, prices, reallocations on arrivals and
// completions), so a job it holds is asked again every cycle.
func (*RRH) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (*RRH) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }
