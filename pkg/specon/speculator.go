package specon

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// Speculator is SpeCon's manager, Alg. 1-3 over the running jobs.
//
//   - Reserve counts a job started in this cycle on its node (as PC, Alg. 1
//     line 2) in the cycle's view of where jobs are and what each worker
//     uses.
//   - Rebalance, once per cycle after placement: at each categorisation
//     boundary (every Interval seconds) it runs Alg. 1 on every running job
//     not yet marked migrated, and Alg. 2 for every converged job that
//     asks, when more than one other job is PC or WC (line 15) on its
//     worker (Params.Scope worker) or in the cluster (cluster); then Alg. 3
//     on every cycle (Params.Rebalance always) or only when a worker is
//     idle or every job has converged (gated), over the jobs marked
//     migrated (Params.Candidates migrated) or the CC jobs (converged);
//     then it writes the labels of every job whose state changed. Moves go
//     through Statement.Migrate, to a worker that has the job's request
//     free in the Now ledger; a job the Statement reports busy (touched by
//     another plugin this cycle) is not moved.
//
// Each job's state is kept in memory for the run and mirrored in labels
// (category, round, converged-at, migrated, migrated-at, move); a new
// instance rebuilds it from them, so a restarted controller continues
// where it stopped. Labels that are malformed or outside [0, 1<<40) count
// as missing.
type Speculator struct {
	P   Params
	mem map[string]*jobMem
	// live and before are Rebalance's per-cycle maps, kept to be reused.
	live   map[string]*cluster.JobState
	before map[string][6][2]string
}

var (
	_ framework.Reserve    = (*Speculator)(nil)
	_ framework.Rebalance  = (*Speculator)(nil)
	_ framework.TimeDriven = (*Speculator)(nil)
)

// NewSpeculator returns the plugin; p must be valid (ParseParams
// validates).
func NewSpeculator(p Params) *Speculator {
	return &Speculator{P: p, mem: map[string]*jobMem{}}
}

// Name implements framework.Plugin.
func (*Speculator) Name() string { return SpeConName }

// Requeue implements framework.Requeuer: SpeCon acts on running jobs,
// after the queue.
func (*Speculator) Requeue(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// TimeDriven implements framework.TimeDriven: the monitor categorises on a
// clock, whether or not anything else happened.
func (*Speculator) TimeDriven() bool { return true }

// view is one cycle's picture of where each job is and how much each node
// uses, with the cycle's starts and moves applied. (Free capacity is the
// Statement's Now ledger.)
type view struct {
	usage []resource.Vector
	where map[string]int // job ID -> node of its (first) replica
}

var viewKey = framework.NewKey[*view]("specon/view")

func viewOf(c *framework.Cycle) *view {
	return framework.GetOrInit(c, viewKey, func() *view {
		s := c.Snap
		v := &view{usage: make([]resource.Vector, len(s.Nodes)), where: map[string]int{}}
		for i, n := range s.Nodes {
			v.usage[i] = n.Usage
		}
		for _, js := range s.Running {
			if len(js.Placement) > 0 {
				v.where[js.Job.ID] = js.Placement[0].Node
			}
		}
		return v
	})
}

// add adds (sign 1) or removes (sign -1) the usage of job j at placement p.
func (v *view) add(j *cluster.Job, p cluster.Placement, sign int64) {
	for _, a := range p {
		v.usage[a.Node] = v.usage[a.Node].Add(j.Groups[a.Group].EffectiveUsage().Scale(sign))
	}
}

// move records that running job js now has placement p.
func (v *view) move(js *cluster.JobState, p cluster.Placement) {
	v.add(js.Job, js.Placement, -1)
	v.add(js.Job, p, 1)
	v.where[js.Job.ID] = p[0].Node
}

// Reserve implements framework.Reserve.
func (*Speculator) Reserve(c *framework.Cycle, js *cluster.JobState, p cluster.Placement) {
	if len(p) == 0 {
		return
	}
	v := viewOf(c)
	v.add(js.Job, p, 1)
	v.where[js.Job.ID] = p[0].Node
}

// jobMem is SpeCon's state of one job; every field of memFields is
// mirrored in a label. lab caches the labels of labOf, so that a cycle in
// which a job's state did not change builds no strings for it.
type jobMem struct {
	memFields
	lab   [6][2]string
	labOf memFields
	labOK bool
}

type memFields struct {
	cat         Category
	round       int64   // last round categorised, -1 before
	convergedAt float64 // when it entered CC, -1 when not in CC
	migrated    bool    // Alg. 2 has decided for it (stay or move)
	markedAt    float64 // when Alg. 2 marked it migrated, -1 before (or unknown)
	move        string  // "", MoveMigrate or MoveRebalance
}

// memFromLabels rebuilds a job's state from its labels; missing, malformed
// or out-of-range labels fall back to a fresh job's state.
func memFromLabels(js *cluster.JobState) *jobMem {
	m := &jobMem{memFields: memFields{cat: PC, round: -1, convergedAt: -1, markedAt: -1}}
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
	if v, ok := labelFloat(l, LabelMarkedAt); ok {
		m.markedAt = v
	}
	m.move = l[LabelMove]
	if m.move == "" && js.Migrations > 0 {
		m.move = MoveMigrate // moved by a SpeCon instance whose label was lost
	}
	m.migrated = m.migrated || m.move != ""
	return m
}

// labels returns the label values that represent m.
func (m *jobMem) labels() [6][2]string {
	if m.labOK && m.labOf == m.memFields {
		return m.lab
	}
	mig := ""
	if m.migrated {
		mig = "true"
	}
	m.lab = [6][2]string{{LabelCategory, m.cat.String()}, {LabelRound, strconv.FormatInt(m.round, 10)},
		{LabelConvergedAt, timeLabel(m.convergedAt)}, {LabelMigrated, mig}, {LabelMarkedAt, timeLabel(m.markedAt)}, {LabelMove, m.move}}
	m.labOf, m.labOK = m.memFields, true
	return m.lab
}

// timeLabel is the label value of a time, "" for none (negative).
func timeLabel(t float64) string {
	if t < 0 {
		return ""
	}
	return strconv.FormatFloat(t, 'g', -1, 64)
}

// Rebalance implements framework.Rebalance.
func (p *Speculator) Rebalance(c *framework.Cycle) *framework.Status {
	s := c.Snap
	v := viewOf(c)

	// Load state of running jobs (from memory, else from labels) and drop
	// that of jobs that left.
	if p.live == nil {
		p.live, p.before = map[string]*cluster.JobState{}, map[string][6][2]string{}
	}
	live, before := p.live, p.before
	clear(live)
	clear(before)
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

	// Alg. 2 for each request, when more than one other job is
	// progressing or watching (line 15: |PC| + |WC| > 1) on the job's
	// worker or in the cluster.
	for _, js := range requests {
		if p.countActive(v, js) <= 1 {
			continue
		}
		p.speculate(c, v, js)
	}

	// Alg. 3. The manager "keeps monitoring the cluster", and a worker that
	// just became idle is refilled at once, so it runs on every cycle (with
	// Rebalance gated, only when a worker is idle or every job has
	// converged). Running it once per round instead would need the last
	// round stored somewhere a restarted controller can read; every cycle
	// needs no state, and the one-move-per-job rule bounds what it can do.
	p.rebalance(c, v, running, s.Now)

	for _, js := range running {
		m := p.mem[js.Job.ID]
		old := before[js.Job.ID]
		for i, kv := range m.labels() {
			if kv != old[i] || js.Labels[kv[0]] != kv[1] {
				c.St.Record(js, policy.SetLabel{Job: js.Job.ID, Key: kv[0], Value: kv[1]})
			}
		}
	}
	return nil
}

// countActive returns |PC| + |WC| for Alg. 1 line 15 over the jobs placed
// in this cycle's view, on js's worker (Params.Scope worker) or over the
// cluster (js nil, or scope cluster); jobs started this cycle are PC.
func (p *Speculator) countActive(v *view, js *cluster.JobState) int {
	host, perWorker := -1, false
	if js != nil && p.P.Scope == ScopeWorker {
		host, perWorker = v.where[js.Job.ID], true
	}
	n := 0
	for id, node := range v.where {
		if perWorker && node != host {
			continue
		}
		if m, ok := p.mem[id]; !ok || m.cat != CC {
			n++
		}
	}
	return n
}

// workerView builds Alg. 2/3's worker list for job j and the per-category
// counts, from this cycle's view. Jobs started this cycle count as PC
// (Alg. 1 line 2).
func (p *Speculator) workerView(s *cluster.Snapshot, v *view, j *cluster.Job) []Worker {
	ws := workers(s, j)
	idx := map[int]int{}
	out := make([]Worker, len(ws))
	for i, n := range ws {
		idx[n.Index] = i
		out[i] = Worker{Node: n.Index}
		if capCPU := n.Capacity[resource.CPU]; capCPU > 0 {
			out[i].Usage = float64(v.usage[n.Index][resource.CPU]) / float64(capCPU)
		}
	}
	for id, node := range v.where {
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

// onOneNode places every replica of the running job, at its current
// counts, on node n. (A job an elastic plugin resized runs at counts other
// than its request; a migration must keep them.)
func onOneNode(js *cluster.JobState, n int) cluster.Placement {
	var p cluster.Placement
	for g, k := range js.Counts() {
		for range k {
			p = append(p, cluster.Assignment{Group: g, Node: n})
		}
	}
	return p
}

// migrate moves js to node to through the Statement, which refuses when
// the job's request does not fit there (the job's own replicas elsewhere
// do not count), and updates the view.
func migrate(c *framework.Cycle, v *view, js *cluster.JobState, to int, reason string) bool {
	pl := onOneNode(js, to)
	if !c.St.Migrate(js, pl, reason) {
		return false
	}
	v.move(js, pl)
	return true
}

// speculate is Alg. 2 for one converged job.
func (p *Speculator) speculate(c *framework.Cycle, v *view, js *cluster.JobState) {
	if c.St.Busy(js) {
		return
	}
	m := p.mem[js.Job.ID]
	ws := p.workerView(c.Snap, v, js.Job)
	host := slices.IndexFunc(ws, func(w Worker) bool { return w.Node == v.where[js.Job.ID] })
	m.migrated = true // lines 9, 15, 20: decided once, whatever the outcome
	m.markedAt = c.Snap.Now
	if host < 0 || js.Migrations > 0 || m.move != "" {
		return
	}
	target, _ := Choose(ws, host, p.P.Weights)
	if target == host {
		return
	}
	reason := fmt.Sprintf("specon: converged; worker score %.1f -> %.1f", p.P.Weights.Score(ws[host].Count), p.P.Weights.Score(ws[target].Count))
	if migrate(c, v, js, ws[target].Node, reason) {
		m.move = MoveMigrate
	} // else the chosen worker cannot take the request; stay
}

// rebalance is Alg. 3 over the candidates Params.Candidates names, on
// every cycle or (Params.Rebalance gated) only when every running job has
// converged or a worker is idle.
func (p *Speculator) rebalance(c *framework.Cycle, v *view, running []*cluster.JobState, now float64) {
	if len(running) == 0 {
		return
	}
	ws := p.workerView(c.Snap, v, running[0].Job)
	idx := map[int]int{}
	active := make([]int, len(ws))
	idle := false
	for i, w := range ws {
		idx[w.Node] = i
		active[i] = w.Active()
		idle = idle || active[i] == 0
	}
	if p.P.Rebalance == RebalanceGated && !idle && p.countActive(v, nil) > 0 {
		return
	}
	var cands []Movable
	byID := map[string]*cluster.JobState{}
	for _, js := range running {
		m := p.mem[js.Job.ID]
		i, ok := idx[v.where[js.Job.ID]]
		if !ok || js.Phase != cluster.Running || m.move != "" || js.Migrations > 0 || c.St.Busy(js) {
			continue
		}
		since := m.markedAt // t_cj: marked migrated by Alg. 2
		if p.P.Candidates == CandidatesConverged {
			since = m.convergedAt
			if m.cat != CC {
				continue
			}
		} else if !m.migrated {
			continue
		}
		if since < 0 {
			continue // no t_cj (a label lost or out of range)
		}
		cands = append(cands, Movable{ID: js.Job.ID, Worker: i, Duration: now - since})
		byID[js.Job.ID] = js
	}
	for _, mv := range Rebalance(active, cands) {
		js := byID[mv.ID]
		if !migrate(c, v, js, ws[mv.To].Node, fmt.Sprintf("specon: rebalance %d -> %d containers", active[mv.From], active[mv.To])) {
			continue
		}
		m := p.mem[mv.ID]
		if !m.migrated {
			m.markedAt = now
		}
		m.move, m.migrated = MoveRebalance, true
	}
}
