package specon

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Labels SpeCon persists on each job, so that a rebuilt policy (the
// Kubernetes controller after a restart) continues where it stopped and
// users can see each job's category.
const (
	LabelCategory    = "drover.dev/category"            // PC, WC or CC
	LabelRound       = "drover.dev/specon-round"        // last categorisation round applied
	LabelConvergedAt = "drover.dev/specon-converged-at" // time the job entered CC
	LabelMigrated    = "drover.dev/specon-migrated"     // "true" once Alg. 2 decided for it
	LabelMove        = "drover.dev/specon-move"         // "M" (Alg. 2) or "R" (Alg. 3) once moved
	LabelSlot        = "drover.dev/rr-slot"             // round-robin sequence number
)

// Move kinds as the paper marks them in Fig. 9 ("Job-ID-M", "Job-ID-R").
const (
	MoveMigrate   = "M"
	MoveRebalance = "R"
)

// Params are SpeCon's settings.
type Params struct {
	// Alpha is the categorisation threshold on the growth of the
	// normalised evaluation function per interval.
	Alpha float64
	// Interval is the categorisation interval t_m - t_m-1 in seconds.
	Interval float64
	// Weights are Alg. 2's category weights.
	Weights Weights
}

// DefaultParams are the paper's settings for every experiment after
// Table III: alpha 0.01, interval 30 s, weights 2 / 1.5 / 1.
var DefaultParams = Params{Alpha: 0.01, Interval: 30, Weights: DefaultWeights}

// Validate rejects settings the algorithms are not defined for.
func (p Params) Validate() error {
	var errs []error
	if !(p.Alpha > 0 && p.Alpha < 1) {
		errs = append(errs, fmt.Errorf("alpha=%v: must be in (0, 1)", p.Alpha))
	}
	if !(p.Interval > 0) || math.IsInf(p.Interval, 0) {
		errs = append(errs, fmt.Errorf("interval=%v: must be a positive number of seconds", p.Interval))
	}
	w := p.Weights
	for _, f := range []struct {
		k string
		v float64
	}{{"wpc", w.PC}, {"wwc", w.WC}, {"wcc", w.CC}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("%s=%v: must be a finite weight >= 0", f.k, f.v))
		}
	}
	if w.PC < w.WC || w.WC < w.CC {
		errs = append(errs, fmt.Errorf("weights wpc=%v, wwc=%v, wcc=%v: must be ordered wpc >= wwc >= wcc (progressing jobs weigh most)", w.PC, w.WC, w.CC))
	}
	return errors.Join(errs...)
}

// ParseParams reads alpha, interval, wpc, wwc and wcc, defaulting to
// DefaultParams, and validates them.
func ParseParams(ps policy.Params) (Params, error) {
	if err := ps.Check("specon", "alpha", "interval", "wpc", "wwc", "wcc"); err != nil {
		return Params{}, err
	}
	p := DefaultParams
	var err error
	get := func(key string, dst *float64) {
		if err == nil {
			*dst, err = ps.Float(key, *dst)
		}
	}
	get("alpha", &p.Alpha)
	get("interval", &p.Interval)
	get("wpc", &p.Weights.PC)
	get("wwc", &p.Weights.WC)
	get("wcc", &p.Weights.CC)
	if err != nil {
		return Params{}, err
	}
	return p, p.Validate()
}

// Entries registers `specon` and its baseline `default`.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "specon", Description: "SpeCon: round-robin initial placement, then categorise jobs PC/WC/CC by evaluation-function growth every interval, migrate a converged job once to the lowest-score worker, rebalance converged jobs (alpha=0.01;interval=30;wpc=2;wwc=1.5;wcc=1)",
			New: func(ps policy.Params) (policy.Policy, error) {
				p, err := ParseParams(ps)
				if err != nil {
					return nil, err
				}
				return New(p), nil
			}},
		{Name: "default", Description: "SpeCon's baseline DS: fixed round-robin initial placement over workers, never moves a job",
			New: func(ps policy.Params) (policy.Policy, error) {
				if err := ps.Check("default"); err != nil {
					return nil, err
				}
				return &Default{}, nil
			}},
	}
}

// maxLabel bounds every number read back from a label. Labels are not
// SpeCon's alone: whoever may edit a job (its tenant) can write any value,
// and a slot of math.MaxInt64 would overflow the next slot into a negative
// index, a round in the far future would stop the job's categorisation for
// good, and a NaN time would sort anywhere. A value outside [0, maxLabel)
// is ignored, as a malformed one is, and rewritten with SpeCon's own.
const maxLabel = 1 << 40

// labelInt reads label key as an integer in [0, maxLabel); ok is false
// when it is missing, malformed or out of range.
func labelInt(l map[string]string, key string) (int64, bool) {
	v, err := strconv.ParseInt(l[key], 10, 64)
	return v, err == nil && v >= 0 && v < maxLabel
}

// labelFloat reads label key as a number in [0, maxLabel) (NaN is not);
// ok is false when it is missing, malformed or out of range.
func labelFloat(l map[string]string, key string) (float64, bool) {
	v, err := strconv.ParseFloat(l[key], 64)
	return v, err == nil && v >= 0 && v < maxLabel
}

// roundRobin is the paper's fixed initial placement: the n-th container
// goes to worker n mod |W| ("container 1, 2, 3, 4 is hosted by Worker-1,
// -2, -3, -4, then container 5, 6, 7, 8 rotate"). The sequence number is
// kept in memory and in a label; a rebuilt policy resumes after the
// highest number among running jobs, which is exact as long as the most
// recently started job is still running.
type roundRobin struct {
	next int
	init bool
}

// workers lists the nodes that may host the job's containers, in index
// order: ready, not released, and eligible for every group (the manager
// is not).
func workers(s *cluster.Snapshot, j *cluster.Job) []*cluster.NodeState {
	var out []*cluster.NodeState
	for _, n := range s.Nodes {
		if !n.Ready || n.Gone {
			continue
		}
		ok := true
		for g := range j.Groups {
			ok = ok && placement.Eligible(n, j, g)
		}
		if ok {
			out = append(out, n)
		}
	}
	return out
}

// cycle is one scheduling cycle's what-if view: free capacity, usage and
// where each job is, with this cycle's decisions applied.
type cycle struct {
	s     *cluster.Snapshot
	free  []resource.Vector
	usage []resource.Vector
	where map[string]int // job ID -> node of its (first) replica
	out   []policy.Action
}

func newCycle(s *cluster.Snapshot) *cycle {
	c := &cycle{s: s, where: map[string]int{}}
	for _, n := range s.Nodes {
		c.free = append(c.free, n.Free().Add(n.Placeholder))
		c.usage = append(c.usage, n.Usage)
	}
	for _, js := range s.Running {
		if len(js.Placement) > 0 {
			c.where[js.Job.ID] = js.Placement[0].Node
		}
	}
	return c
}

// onOneNode places every replica of the job on node n.
func onOneNode(j *cluster.Job, n int) cluster.Placement {
	var p cluster.Placement
	for g := range j.Groups {
		for range j.Groups[g].Replicas {
			p = append(p, cluster.Assignment{Group: g, Node: n})
		}
	}
	return p
}

func (c *cycle) move(j *cluster.Job, from, to int) {
	d, u := j.RequestedDemand(), usageOf(j)
	if from >= 0 {
		c.free[from] = c.free[from].Add(d)
		c.usage[from] = c.usage[from].Sub(u)
	}
	c.free[to] = c.free[to].Sub(d)
	c.usage[to] = c.usage[to].Add(u)
	c.where[j.ID] = to
}

func usageOf(j *cluster.Job) resource.Vector {
	var v resource.Vector
	for g := range j.Groups {
		v = v.Add(j.Groups[g].EffectiveUsage().Scale(int64(j.Groups[g].Replicas)))
	}
	return v
}

// start places pending jobs round-robin; a job whose turn's worker is full
// goes to the next worker that fits.
func (r *roundRobin) start(c *cycle) {
	s := c.s
	if !r.init {
		r.init = true
		for _, js := range s.Running {
			if v, ok := labelInt(js.Labels, LabelSlot); ok && int(v) >= r.next {
				r.next = int(v) + 1
			}
		}
	}
	for js := range s.Pending.All() {
		j := js.Job
		ws := workers(s, j)
		if len(ws) == 0 {
			c.out = append(c.out, policy.Wait{Job: j.ID, Reason: "no ready worker node"})
			continue
		}
		d := j.RequestedDemand()
		slot := r.next
		placed := false
		for k := range ws {
			n := ws[(slot+k)%len(ws)].Index
			if !d.Fits(c.free[n]) {
				continue
			}
			c.out = append(c.out, policy.Start{Job: j.ID, Placement: onOneNode(j, n)},
				policy.SetLabel{Job: j.ID, Key: LabelSlot, Value: strconv.Itoa(slot)})
			c.move(j, -1, n)
			placed = true
			break
		}
		if !placed {
			c.out = append(c.out, policy.Wait{Job: j.ID, Reason: fmt.Sprintf("no worker has %v free", d)})
			continue
		}
		r.next++
	}
}

// Default is the paper's DS baseline: the fixed round-robin initial
// placement, and no migration ever.
type Default struct{ rr roundRobin }

var _ policy.Policy = (*Default)(nil)

// Name implements policy.Policy.
func (*Default) Name() string { return "default" }

// Schedule implements policy.Policy.
func (d *Default) Schedule(s *cluster.Snapshot) []policy.Action {
	c := newCycle(s)
	d.rr.start(c)
	return c.out
}

// jobMem is SpeCon's state of one job; every field is mirrored in a label.
type jobMem struct {
	cat         Category
	round       int64   // last round categorised, -1 before
	convergedAt float64 // when it entered CC, -1 when not in CC
	migrated    bool    // Alg. 2 has decided for it (stay or move)
	move        string  // "", MoveMigrate or MoveRebalance
}

// memFromLabels rebuilds a job's state from its labels; missing or
// malformed labels fall back to a fresh job's state.
func memFromLabels(js *cluster.JobState) *jobMem {
	m := &jobMem{cat: PC, round: -1, convergedAt: -1}
	l := js.Labels
	if c, err := ParseCategory(l[LabelCategory]); err == nil {
		m.cat = c
	}
	if v, ok := labelInt(l, LabelRound); ok {
		m.round = v
	}
	if v, ok := labelFloat(l, LabelConvergedAt); ok {
		m.convergedAt = v
	}
	m.migrated = l[LabelMigrated] == "true"
	m.move = l[LabelMove]
	if m.move == "" && js.Migrations > 0 {
		m.move = MoveMigrate // moved by a SpeCon instance whose label was lost
	}
	m.migrated = m.migrated || m.move != ""
	return m
}

// labels returns the label values that represent m.
func (m *jobMem) labels() [][2]string {
	ca := ""
	if m.convergedAt >= 0 {
		ca = strconv.FormatFloat(m.convergedAt, 'g', -1, 64)
	}
	mig := ""
	if m.migrated {
		mig = "true"
	}
	return [][2]string{{LabelCategory, m.cat.String()}, {LabelRound, strconv.FormatInt(m.round, 10)},
		{LabelConvergedAt, ca}, {LabelMigrated, mig}, {LabelMove, m.move}}
}

// Policy is SpeCon. Create it with New.
type Policy struct {
	P   Params
	rr  roundRobin
	mem map[string]*jobMem
}

var (
	_ policy.Policy     = (*Policy)(nil)
	_ policy.TimeDriven = (*Policy)(nil)
)

// New returns a SpeCon policy; p must be valid (ParseParams validates).
func New(p Params) *Policy {
	return &Policy{P: p, mem: map[string]*jobMem{}}
}

// Name implements policy.Policy.
func (*Policy) Name() string { return "specon" }

// TimeDriven implements policy.TimeDriven: the monitor categorises on a
// clock, whether or not anything else happened.
func (*Policy) TimeDriven() bool { return true }

// Schedule implements policy.Policy: start pending jobs round-robin; at
// each categorisation boundary run Alg. 1 on every job and Alg. 2 for
// every converged job that asks; on every cycle run Alg. 3 when every job
// has converged or a worker is idle; then persist what changed in labels.
func (p *Policy) Schedule(s *cluster.Snapshot) []policy.Action {
	c := newCycle(s)
	p.rr.start(c)

	// Load state of running jobs (from memory, else from labels) and drop
	// that of jobs that left.
	live := make(map[string]*cluster.JobState, len(s.Running))
	before := map[string][][2]string{}
	for _, js := range s.Running {
		id := js.Job.ID
		live[id] = js
		m, ok := p.mem[id]
		if !ok {
			m = memFromLabels(js)
			p.mem[id] = m
		}
		before[id] = m.labels()
	}
	for id := range p.mem {
		if live[id] == nil {
			delete(p.mem, id)
		}
	}
	running := slices.Clone(s.Running)
	slices.SortFunc(running, func(a, b *cluster.JobState) int {
		return cmp.Or(cmp.Compare(a.Job.Submit, b.Job.Submit), cmp.Compare(a.Job.ID, b.Job.ID))
	})

	round := int64(math.Floor(s.Now/p.P.Interval + 1e-9))
	tm := float64(round) * p.P.Interval

	// Alg. 1 on every running, not yet migrated job.
	var requests []*cluster.JobState
	for _, js := range running {
		m := p.mem[js.Job.ID]
		if js.Phase != cluster.Running || m.migrated || m.round >= round {
			continue
		}
		m.round = round
		g, prev, n := Growths(js.Evals, tm, p.P.Interval)
		if n == 0 {
			continue
		}
		st := Categorize(m.cat, g, prev, n == 2, p.P.Alpha)
		if st.Next == CC && m.cat != CC {
			m.convergedAt = tm
		}
		if st.Next != CC {
			m.convergedAt = -1
		}
		m.cat = st.Next
		if st.Converged {
			requests = append(requests, js)
		}
	}

	// Alg. 2 for each request, when other progressing or watching jobs
	// exist (line 15: |PC| + |WC| > 1, over the whole cluster).
	for _, js := range requests {
		if p.countActive(c) <= 1 {
			break
		}
		p.speculate(c, js)
	}

	// Alg. 3 on every cycle: the manager "keeps monitoring the cluster",
	// and a worker that just became idle is refilled at once. Running it
	// once per round instead would need the last round stored somewhere
	// a restarted controller can read; every cycle needs no state, and the
	// one-move-per-job rule bounds what it can do.
	p.rebalance(c, running, s.Now)

	for _, js := range running {
		m := p.mem[js.Job.ID]
		old := before[js.Job.ID]
		for i, kv := range m.labels() {
			if kv != old[i] || js.Labels[kv[0]] != kv[1] {
				c.out = append(c.out, policy.SetLabel{Job: js.Job.ID, Key: kv[0], Value: kv[1]})
			}
		}
	}
	return c.out
}

// countActive returns |PC| + |WC| over the jobs placed in this cycle's
// view; jobs started this cycle are PC.
func (p *Policy) countActive(c *cycle) int {
	n := 0
	for id := range c.where {
		if m, ok := p.mem[id]; !ok || m.cat != CC {
			n++
		}
	}
	return n
}

// view builds Alg. 2/3's worker list for job j and the per-category
// counts, from this cycle's what-if state. Jobs started this cycle count
// as PC (Alg. 1 line 2).
func (p *Policy) view(c *cycle, j *cluster.Job) []Worker {
	ws := workers(c.s, j)
	idx := map[int]int{}
	out := make([]Worker, len(ws))
	for i, n := range ws {
		idx[n.Index] = i
		out[i] = Worker{Node: n.Index}
		if capCPU := n.Capacity[resource.CPU]; capCPU > 0 {
			out[i].Usage = float64(c.usage[n.Index][resource.CPU]) / float64(capCPU)
		}
	}
	for id, node := range c.where {
		i, ok := idx[node]
		if !ok {
			continue
		}
		cat := PC
		if m, ok := p.mem[id]; ok {
			cat = m.cat
		}
		out[i].Count[cat]++
	}
	return out
}

// speculate is Alg. 2 for one converged job.
func (p *Policy) speculate(c *cycle, js *cluster.JobState) {
	m := p.mem[js.Job.ID]
	ws := p.view(c, js.Job)
	host := slices.IndexFunc(ws, func(w Worker) bool { return w.Node == c.where[js.Job.ID] })
	m.migrated = true // lines 9, 15, 20: decided once, whatever the outcome
	if host < 0 || js.Migrations > 0 || m.move != "" {
		return
	}
	target, _ := Choose(ws, host, p.P.Weights)
	if target == host {
		return
	}
	to := ws[target].Node
	if !js.Job.RequestedDemand().Fits(c.free[to]) {
		return // the chosen worker cannot take the request; stay
	}
	c.out = append(c.out, policy.Migrate{Job: js.Job.ID, Placement: onOneNode(js.Job, to),
		Reason: fmt.Sprintf("specon: converged; worker score %.1f -> %.1f", p.P.Weights.Score(ws[host].Count), p.P.Weights.Score(ws[target].Count))})
	c.move(js.Job, ws[host].Node, to)
	m.move = MoveMigrate
}

// rebalance is Alg. 3, run when every running job has converged or some
// worker is idle.
func (p *Policy) rebalance(c *cycle, running []*cluster.JobState, now float64) {
	if len(running) == 0 {
		return
	}
	ws := p.view(c, running[0].Job)
	idx := map[int]int{}
	active := make([]int, len(ws))
	idle := false
	for i, w := range ws {
		idx[w.Node] = i
		active[i] = w.Active()
		idle = idle || active[i] == 0
	}
	if !idle && p.countActive(c) > 0 {
		return
	}
	var cands []Movable
	byID := map[string]*cluster.JobState{}
	for _, js := range running {
		m := p.mem[js.Job.ID]
		i, ok := idx[c.where[js.Job.ID]]
		if !ok || js.Phase != cluster.Running || m.cat != CC || m.convergedAt < 0 || m.move != "" || js.Migrations > 0 {
			continue
		}
		cands = append(cands, Movable{ID: js.Job.ID, Worker: i, Duration: now - m.convergedAt})
		byID[js.Job.ID] = js
	}
	for _, mv := range Rebalance(active, cands) {
		js := byID[mv.ID]
		to := ws[mv.To].Node
		if !js.Job.RequestedDemand().Fits(c.free[to]) {
			continue
		}
		c.out = append(c.out, policy.Migrate{Job: mv.ID, Placement: onOneNode(js.Job, to),
			Reason: fmt.Sprintf("specon: rebalance %d -> %d containers", active[mv.From], active[mv.To])})
		c.move(js.Job, ws[mv.From].Node, to)
		m := p.mem[mv.ID]
		m.move, m.migrated = MoveRebalance, true
	}
}
