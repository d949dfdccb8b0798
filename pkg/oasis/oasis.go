package oasis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Config sets up the OASiS policy.
type Config struct {
	// Slot is the slot length in seconds; it must equal the executor's
	// scheduling tick, since the schedule changes only at slot starts.
	Slot float64
	// Slots is the timespan T: slots [0, T) starting at time 0.
	Slots int
	// Eta is the price functions' scaling factor (the paper's eta_1 and
	// eta_2, taken equal).
	Eta float64
	// Bounds are the price constants; nil learns them online from the jobs
	// seen so far (the largest U and smallest L so far).
	Bounds *Bounds
	// LFloor is the smallest L as a fraction of the largest U (0 means
	// DefaultLFloor). See Bounds.floor.
	LFloor float64
	// U is how bounds learned online normalise U (UPerResource, the
	// paper's, unless set); given Bounds are used as they are.
	U UReading
}

// LabelSchedule is the job label that holds an admitted job's schedule
// (EncodeSchedule's format), so that a restarted scheduler rebuilds its
// allocations, and with them every price, from the cluster alone.
const LabelSchedule = "drover.dev/oasis-schedule"

// legacyLabelSchedule is the key LabelSchedule had before it moved under
// drover.dev/; restore still reads it, so that jobs admitted by an older
// scheduler keep their plans across an upgrade.
const legacyLabelSchedule = "oasis.schedule"

// Slot plan of one job: where its workers and PSs run in one slot.
type slotPlan struct {
	W, P []nodeCount
}

type nodeCount struct{ Node, N int }

// Plan is an admitted job's schedule: slot t's plan is Slots[t-Start].
type Plan struct {
	Start, End int // first slot and completion slot (inclusive)
	Slots      []slotPlan
	Utility    float64 // at the planned completion
	Cost       float64 // priced resource cost at admission
}

// Counts returns the worker and PS counts in slot t.
func (p *Plan) Counts(t int) (w, s int) {
	if t < p.Start || t > p.End {
		return 0, 0
	}
	sp := &p.Slots[t-p.Start]
	for _, c := range sp.W {
		w += c.N
	}
	for _, c := range sp.P {
		s += c.N
	}
	return w, s
}

// OASiS is the paper's online algorithm as a plugin, one instance per run
// (it is the admission state):
//
//   - Admit decides each new arrival once (Alg. 1): a job whose best
//     schedule (Alg. 2) has no positive payoff, or that is not a valid
//     parameter-server job, is rejected for good (Unresolvable, with the
//     payoff in the reason); an admitted job's schedule is recorded as the
//     LabelSchedule label and the job waits (Wait) for its plan's first
//     slot. Jobs decided before wait with their plan as the reason. Admit
//     never lets the Runtime place a job: the plan places it.
//   - Rebalance moves every admitted job, running or pending, to its plan
//     for the current slot through the Statement: start, stop, shrink and
//     grow, shrinks and stops before grows (Transition). A running job
//     past its planned completion slot is left as it is.
//
// Its state is the schedule of every admitted job and the resulting
// allocation per slot, node and resource; prices are a function of the
// allocation and are recomputed when needed, never stored. Per-node state
// is indexed by snapshot node index, which executors keep stable (a node
// that leaves is marked Gone, new nodes are appended): each cycle appends
// the nodes the snapshot gained and takes capacities from the nodes'
// readiness, so that plans use new nodes and avoid departed ones.
type OASiS struct {
	cfg     Config
	bounds  Bounds
	learned bool // bounds learned online
	ready   bool
	wp, pp  Pool
	nodeIdx map[string]int
	caps    []resource.Vector
	// alloc[t][h] is what admitted schedules take on node h in slot t.
	alloc   [][]resource.Vector
	plans   map[string]*Plan
	decided map[string]bool
	// Decisions made, for tests and reports.
	Admitted, Rejected int
	// PlannedUtility sums the admitted jobs' utilities at their planned
	// completion slots' ends.
	PlannedUtility float64
	scratch        scratch
}

var (
	_ framework.Admit      = (*OASiS)(nil)
	_ framework.Rebalance  = (*OASiS)(nil)
	_ framework.TimeDriven = (*OASiS)(nil)
)

// OASiSName is the name of the OASiS plugin and preset.
const OASiSName = "oasis"

// New returns an OASiS plugin.
func New(cfg Config) (*OASiS, error) {
	if cfg.Slot <= 0 || math.IsNaN(cfg.Slot) {
		return nil, fmt.Errorf("slot: %v is not a positive duration", cfg.Slot)
	}
	if cfg.Slots <= 0 {
		return nil, fmt.Errorf("slots: %d is not positive", cfg.Slots)
	}
	if cfg.Eta <= 0 || math.IsNaN(cfg.Eta) {
		return nil, fmt.Errorf("eta: %v is not positive", cfg.Eta)
	}
	if cfg.LFloor == 0 {
		cfg.LFloor = DefaultLFloor
	}
	if cfg.LFloor < 0 || cfg.LFloor > 1 {
		return nil, fmt.Errorf("lfloor: %v is not in (0, 1]", cfg.LFloor)
	}
	o := &OASiS{cfg: cfg, plans: map[string]*Plan{}, decided: map[string]bool{}}
	if cfg.Bounds != nil {
		o.bounds = cfg.Bounds.floor(cfg.LFloor)
	} else {
		o.learned = true
		o.bounds.LW, o.bounds.LP = math.Inf(1), math.Inf(1)
	}
	o.alloc = make([][]resource.Vector, cfg.Slots)
	return o, nil
}

// Name implements framework.Plugin.
func (*OASiS) Name() string { return OASiSName }

// TimeDriven implements framework.TimeDriven: the schedule changes at
// every slot start whether or not anything else happened.
func (*OASiS) TimeDriven() bool { return true }

// Plan returns the schedule of an admitted job, or nil.
func (o *OASiS) Plan(id string) *Plan { return o.plans[id] }

// sync brings the per-node state in step with the snapshot's node list:
// on the first cycle it builds the pools; on every cycle it appends the
// nodes the list gained (indices of known nodes never change) and takes
// each node's capacity from its readiness (a node not ready, or gone,
// has none to plan on).
func (o *OASiS) sync(s *cluster.Snapshot) {
	if !o.ready {
		o.wp, o.pp = newPool(s.Nodes, RoleWorker), newPool(s.Nodes, RolePS)
		o.nodeIdx = make(map[string]int, len(s.Nodes))
		o.caps = make([]resource.Vector, len(s.Nodes))
		for _, n := range s.Nodes {
			o.nodeIdx[n.Name] = n.Index
		}
		for t := range o.alloc {
			o.alloc[t] = make([]resource.Vector, len(s.Nodes))
		}
		o.ready = true
	}
	for i := len(o.caps); i < len(s.Nodes); i++ {
		n := s.Nodes[i]
		o.nodeIdx[n.Name] = i
		o.caps = append(o.caps, resource.Vector{})
		for t := range o.alloc {
			o.alloc[t] = append(o.alloc[t], resource.Vector{})
		}
		o.wp.add(n, RoleWorker)
		o.pp.add(n, RolePS)
	}
	for i, n := range s.Nodes {
		if n.Ready && !n.Gone {
			o.caps[i] = n.Capacity
		} else {
			o.caps[i] = resource.Vector{}
		}
	}
}

// cycleKey marks the cycles whose state sync and restore have run.
var cycleKey = framework.NewKey[bool]("oasis-cycle")

// prepare runs once per cycle, before the first decision: it brings the
// node state in step and adopts the schedules of labelled jobs this
// instance has not seen (after a restart).
func (o *OASiS) prepare(c *framework.Cycle) {
	if _, done := framework.Get(c, cycleKey); done {
		return
	}
	framework.Set(c, cycleKey, true)
	o.sync(c.Snap)
	o.restore(c.Snap)
}

// slotAt is the slot containing time t.
func (o *OASiS) slotAt(t float64) int { return int(math.Floor(t/o.cfg.Slot + 1e-9)) }

// Admit implements framework.Admit: Alg. 1 for a job not decided yet, and
// Wait (the plan starts it) for every job.
func (o *OASiS) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	o.prepare(c)
	j := js.Job
	if o.decided[j.ID] {
		return o.waiting(c, js)
	}
	o.decided[j.ID] = true
	if err := CheckJob(j); err != nil {
		o.Rejected++
		return framework.NewStatus(framework.Unresolvable, "oasis: "+err.Error())
	}
	if o.learned {
		o.learn(j)
	}
	plan := o.BestSchedule(j, arrivalSlot(c.Snap.Now, o.cfg.Slot))
	if plan == nil || plan.Utility-plan.Cost <= 0 {
		o.Rejected++
		reason := "oasis: no schedule finishes within the timespan"
		if plan != nil {
			reason = fmt.Sprintf("oasis: payoff %.4g <= 0 (utility %.4g, priced cost %.4g)", plan.Utility-plan.Cost, plan.Utility, plan.Cost)
		}
		return framework.NewStatus(framework.Unresolvable, reason)
	}
	o.admit(j, plan)
	o.Admitted++
	o.PlannedUtility += plan.Utility
	c.St.Record(js, policy.SetLabel{Job: j.ID, Key: LabelSchedule, Value: o.EncodeSchedule(plan, c.Snap)})
	return o.waiting(c, js)
}

// waiting is the Wait status of an admitted pending job. Its reason does
// not change from slot to slot while the job's situation does not, so
// that an executor that reports reasons is not told the same thing anew
// every slot.
func (o *OASiS) waiting(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	p := o.plans[js.Job.ID]
	if p == nil {
		return framework.NewStatus(framework.Wait, "oasis: rejected, no schedule")
	}
	t := o.slotAt(c.Snap.Now)
	switch {
	case t > p.End:
		return framework.Statusf(framework.Wait, "oasis: past its planned completion slot %d", p.End)
	case t < p.Start:
		return framework.Statusf(framework.Wait, "oasis: admitted, planned for slots %d-%d", p.Start, p.End)
	}
	if w, _ := p.Counts(t); w == 0 {
		return framework.Statusf(framework.Wait, "oasis: admitted, planned for slots %d-%d (none this slot)", p.Start, p.End)
	}
	return framework.NewStatus(framework.Wait, "oasis: starts on its plan this slot")
}

// Rebalance implements framework.Rebalance: every admitted job moves to
// its plan for the current slot.
func (o *OASiS) Rebalance(c *framework.Cycle) *framework.Status {
	o.prepare(c)
	o.follow(c)
	return nil
}

// learn widens the online bounds with a new job.
func (o *OASiS) learn(j *cluster.Job) {
	jb := jobBounds(j, &o.wp, &o.pp, o.cfg.Slot, o.cfg.Slots, o.cfg.U)
	b := &o.bounds
	for r := range b.UW {
		b.UW[r] = math.Max(b.UW[r], jb.UW[r])
		b.UP[r] = math.Max(b.UP[r], jb.UP[r])
	}
	b.LW = math.Min(b.LW, jb.LW)
	b.LP = math.Min(b.LP, jb.LP)
	*b = b.floor(o.cfg.LFloor)
}

func (o *OASiS) admit(j *cluster.Job, p *Plan) {
	o.plans[j.ID] = p
	for i := range p.Slots {
		t := p.Start + i
		for _, c := range p.Slots[i].W {
			o.alloc[t][c.Node] = o.alloc[t][c.Node].Add(j.Groups[GWorker].Demand.Scale(int64(c.N)))
		}
		for _, c := range p.Slots[i].P {
			o.alloc[t][c.Node] = o.alloc[t][c.Node].Add(j.Groups[GPS].Demand.Scale(int64(c.N)))
		}
	}
}

// UnitPrice is the current price of resource r on node h in slot t.
func (o *OASiS) UnitPrice(t, h int, r resource.Kind, ps bool) float64 {
	u, l := o.bounds.UW[r], o.bounds.LW
	if ps {
		u, l = o.bounds.UP[r], o.bounds.LP
	}
	return Price(float64(o.alloc[t][h][r]), float64(o.capacity(h)[r]), u, l, o.cfg.Eta)
}

func (o *OASiS) capacity(h int) resource.Vector { return o.caps[h] }

// ---- Alg. 2: the best schedule of one job ----

// scratch holds buffers reused across decisions.
type scratch struct {
	srv    []srvCost
	dp     []float64
	next   []float64
	pick   [][]int16
	costs  [][]float64 // per slot, cost of w workers (with their PSs)
	order  [][]srvCost // per slot: sorted worker servers, then PS servers
	porder [][]srvCost
}

type srvCost struct {
	node int
	unit float64
	cap  int
}

// BestSchedule is Alg. 2: for every completion slot from the first usable
// slot to T-1, the minimum-cost schedule (a dynamic program over how many
// workers, hence how much workload, each slot carries, each slot's cost
// from the greedy fill COST_t) and the payoff utility minus cost; it
// returns the plan with the highest payoff, or nil when no schedule
// finishes within the timespan. It does not change any state.
func (o *OASiS) BestSchedule(j *cluster.Job, first int) *Plan {
	p := j.PS
	T := o.cfg.Slots
	if first >= T || CheckJob(j) != nil { // never read a model the job lacks
		return nil
	}
	W := EstimatedWorkerSlots(j, o.cfg.Slot)
	n := T - first
	sc := &o.scratch
	if cap(sc.costs) < n {
		sc.costs = make([][]float64, n)
		sc.order = make([][]srvCost, n)
		sc.porder = make([][]srvCost, n)
		sc.pick = make([][]int16, n)
	}
	sc.costs, sc.order, sc.porder, sc.pick = sc.costs[:n], sc.order[:n], sc.porder[:n], sc.pick[:n]
	dw := o.wp.norm(j.Groups[GWorker].Demand)
	dp := o.pp.norm(j.Groups[GPS].Demand)
	// COST_t for every slot and worker count.
	for i := 0; i < n; i++ {
		t := first + i
		sc.order[i] = o.sortServers(sc.order[i][:0], t, &o.wp, j.Groups[GWorker].Demand, dw, false)
		sc.porder[i] = o.sortServers(sc.porder[i][:0], t, &o.pp, j.Groups[GPS].Demand, dp, true)
		wmax := min(p.Chunks, W)
		c := sc.costs[i][:0]
		c = append(c, 0)
		wcost, pcost := 0.0, 0.0
		wi, wleft := 0, 0
		if len(sc.order[i]) > 0 {
			wleft = sc.order[i][0].cap
		}
		pi, pleft, placedPS := 0, 0, 0
		if len(sc.porder[i]) > 0 {
			pleft = sc.porder[i][0].cap
		}
		for w := 1; w <= wmax; w++ {
			for wi < len(sc.order[i]) && wleft == 0 {
				wi++
				if wi < len(sc.order[i]) {
					wleft = sc.order[i][wi].cap
				}
			}
			if wi >= len(sc.order[i]) {
				break
			}
			wcost += sc.order[i][wi].unit
			wleft--
			need, ok := PSFor(p, w)
			if !ok {
				break
			}
			for placedPS < need {
				for pi < len(sc.porder[i]) && pleft == 0 {
					pi++
					if pi < len(sc.porder[i]) {
						pleft = sc.porder[i][pi].cap
					}
				}
				if pi >= len(sc.porder[i]) {
					break
				}
				pcost += sc.porder[i][pi].unit
				pleft--
				placedPS++
			}
			if placedPS < need {
				break
			}
			c = append(c, wcost+pcost)
		}
		sc.costs[i] = c
	}
	// DP_COST: dp[u] = least cost of u worker-slots in slots first..t.
	if cap(sc.dp) < W+1 {
		sc.dp, sc.next = make([]float64, W+1), make([]float64, W+1)
	}
	dpv, next := sc.dp[:W+1], sc.next[:W+1]
	for u := range dpv {
		dpv[u] = math.Inf(1)
	}
	dpv[0] = 0
	best := -1
	bestPay, bestCost, bestUtil := math.Inf(-1), 0.0, 0.0
	for i := 0; i < n; i++ {
		c := sc.costs[i]
		if cap(sc.pick[i]) < W+1 {
			sc.pick[i] = make([]int16, W+1)
		}
		pk := sc.pick[i][:W+1]
		for u := 0; u <= W; u++ {
			bv, bw := dpv[u], 0
			for w := 1; w < len(c) && w <= u; w++ {
				if v := dpv[u-w] + c[w]; v < bv {
					bv, bw = v, w
				}
			}
			next[u], pk[u] = bv, int16(bw)
		}
		sc.pick[i] = pk
		dpv, next = next, dpv
		if math.IsInf(dpv[W], 1) {
			continue
		}
		t := first + i
		util := utility(j, float64(t+1)*o.cfg.Slot-j.Submit)
		if pay := util - dpv[W]; pay > bestPay {
			best, bestPay, bestCost, bestUtil = i, pay, dpv[W], util
		}
	}
	if best < 0 {
		return nil
	}
	// Backtrack the worker counts and fill each slot greedily.
	counts := make([]int, best+1)
	u := W
	for i := best; i >= 0; i-- {
		counts[i] = int(sc.pick[i][u])
		u -= counts[i]
	}
	start := 0
	for start < best && counts[start] == 0 {
		start++
	}
	plan := &Plan{Start: first + start, End: first + best, Utility: bestUtil, Cost: bestCost}
	for i := start; i <= best; i++ {
		w := counts[i]
		ps, _ := PSFor(p, w)
		plan.Slots = append(plan.Slots, slotPlan{W: fill(sc.order[i], w), P: fill(sc.porder[i], ps)})
	}
	return plan
}

// fill takes n replicas from the cheapest servers first.
func fill(order []srvCost, n int) []nodeCount {
	var out []nodeCount
	for _, s := range order {
		if n == 0 {
			break
		}
		k := min(s.cap, n)
		out = append(out, nodeCount{s.node, k})
		n -= k
	}
	return out
}

// sortServers lists the pool's servers that can hold at least one replica
// of demand d in slot t, with the replica's priced cost, cheapest first
// (ties by node index, for determinism).
func (o *OASiS) sortServers(buf []srvCost, t int, pool *Pool, d resource.Vector, dn [resource.NumKinds]float64, ps bool) []srvCost {
	u, l := o.bounds.UW, o.bounds.LW
	if ps {
		u, l = o.bounds.UP, o.bounds.LP
	}
	for _, h := range pool.Nodes {
		free := o.caps[h].Sub(o.alloc[t][h])
		c := maxFit(d, free)
		if c <= 0 {
			continue
		}
		unit := 0.0
		for r := range dn {
			if dn[r] > 0 {
				unit += dn[r] * Price(float64(o.alloc[t][h][r]), float64(o.caps[h][r]), u[r], l, o.cfg.Eta)
			}
		}
		buf = append(buf, srvCost{node: h, unit: unit, cap: c})
	}
	slices.SortFunc(buf, func(a, b srvCost) int {
		if a.unit != b.unit {
			if a.unit < b.unit {
				return -1
			}
			return 1
		}
		return a.node - b.node
	})
	return buf
}

// maxFit is how many replicas of demand d fit in free.
func maxFit(d, free resource.Vector) int {
	n := math.MaxInt
	for r := range d {
		if d[r] > 0 {
			if free[r] < d[r] {
				return 0
			}
			n = min(n, int(free[r]/d[r]))
		}
	}
	if n == math.MaxInt {
		return 0
	}
	return n
}

// ---- following the schedule ----

// follow moves every admitted job to its plan for the current slot
// through the Statement (Transition), jobs in ID order.
func (o *OASiS) follow(c *framework.Cycle) {
	s := c.Snap
	t := o.slotAt(s.Now)
	jobs := activeJobs(s)
	targets := make([]cluster.Placement, len(jobs))
	for i, js := range jobs {
		if p := o.plans[js.Job.ID]; p != nil && t >= p.Start && t <= p.End {
			targets[i] = p.placement(t)
		}
	}
	Transition(c.St, jobs, targets, func(js *cluster.JobState) bool {
		p := o.plans[js.Job.ID]
		return p != nil && t > p.End // overran its plan: leave it be
	})
}

// ---- persistence ----

// EncodeSchedule writes a plan compactly for a job label:
// "start-end|t:node*n,node*n/node*n;t:..." with workers before the slash
// and parameter servers after it; slots without replicas are left out.
// Node names, not indices, so that it survives a rebuilt snapshot.
func (o *OASiS) EncodeSchedule(p *Plan, s *cluster.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d-%d|", p.Start, p.End)
	sep := ""
	for i, sp := range p.Slots {
		if len(sp.W) == 0 {
			continue
		}
		b.WriteString(sep)
		sep = ";"
		b.WriteString(strconv.Itoa(p.Start + i))
		b.WriteByte(':')
		for k, c := range sp.W {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s*%d", s.Nodes[c.Node].Name, c.N)
		}
		b.WriteByte('/')
		for k, c := range sp.P {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s*%d", s.Nodes[c.Node].Name, c.N)
		}
	}
	return b.String()
}

// maxScheduleCount bounds the replicas of one node in one slot of a
// decoded schedule, as the trace format bounds replica counts.
const maxScheduleCount = 100_000

// DecodeSchedule parses EncodeSchedule's format, resolving node names with
// index. The label may have been edited by hand, so its slot range is
// bounded by MaxSlots before the plan is allocated (a range of 2^62 slots
// was a makeslice panic) and each count by maxScheduleCount.
func DecodeSchedule(v string, index map[string]int) (*Plan, error) {
	head, body, ok := strings.Cut(v, "|")
	if !ok {
		return nil, fmt.Errorf("schedule %q: missing '|'", v)
	}
	a, b, ok := strings.Cut(head, "-")
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || start < 0 || end < start || end >= MaxSlots {
		return nil, fmt.Errorf("schedule %q: bad slot range %q (want 0 <= start <= end < %d)", v, head, MaxSlots)
	}
	p := &Plan{Start: start, End: end, Slots: make([]slotPlan, end-start+1)}
	list := func(s string) ([]nodeCount, error) {
		var out []nodeCount
		if s == "" {
			return nil, nil
		}
		for _, item := range strings.Split(s, ",") {
			name, cnt, ok := strings.Cut(item, "*")
			n, err := strconv.Atoi(cnt)
			h, known := index[name]
			if !ok || err != nil || n <= 0 || n > maxScheduleCount || !known {
				return nil, fmt.Errorf("schedule %q: bad entry %q", v, item)
			}
			out = append(out, nodeCount{h, n})
		}
		return out, nil
	}
	if body == "" {
		return p, nil
	}
	for _, part := range strings.Split(body, ";") {
		ts, rest, ok := strings.Cut(part, ":")
		t, err := strconv.Atoi(ts)
		if !ok || err != nil || t < start || t > end {
			return nil, fmt.Errorf("schedule %q: bad slot %q", v, ts)
		}
		ws, pss, _ := strings.Cut(rest, "/")
		w, err := list(ws)
		if err != nil {
			return nil, err
		}
		ps, err := list(pss)
		if err != nil {
			return nil, err
		}
		p.Slots[t-start] = slotPlan{W: w, P: ps}
	}
	return p, nil
}

// restore adopts the labelled schedules of jobs this instance has not seen
// (after a restart): allocations, and so prices, follow from them. Jobs
// that finished before the restart are not in the snapshot; their leftover
// reservations are forgotten, which only lowers prices of slots they no
// longer use.
func (o *OASiS) restore(s *cluster.Snapshot) {
	visit := func(js *cluster.JobState) {
		id := js.Job.ID
		if o.decided[id] {
			return
		}
		v, ok := js.Labels[LabelSchedule]
		if !ok {
			if v, ok = js.Labels[legacyLabelSchedule]; !ok {
				return
			}
		}
		p, err := DecodeSchedule(v, o.nodeIdx)
		if err != nil || p.End >= o.cfg.Slots {
			return // decided again as a new job
		}
		o.decided[id] = true
		o.Admitted++
		if o.learned && CheckJob(js.Job) == nil {
			o.learn(js.Job)
		}
		o.admit(js.Job, p)
	}
	for _, js := range s.Running {
		visit(js)
	}
	for js := range s.Pending.All() {
		visit(js)
	}
}

// Events implements framework.EnqueueExtensions: its admission follows
// a plan over time (slots, prices, reallocations on arrivals and
// completions), so a job it holds is asked again every cycle.
func (*OASiS) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (*OASiS) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }
