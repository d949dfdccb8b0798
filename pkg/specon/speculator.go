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
	// gen counts Rebalance calls; jobMem.seen holds the last one that saw
	// the job running.
	gen uint64
	// Per-cycle working memory, kept to be reused: v is the cycle's view
	// (see viewOf), mems the running jobs' states in snapshot order, order
	// the running jobs sorted, ws and pos workerView's result and node
	// index, active, cands and candJS Alg. 3's input. Nothing in them is
	// read before it is rebuilt in the next cycle, but for prev and perm:
	// the previous cycle's running jobs and their sort permutation (see
	// sorted), with which mems is reused as well.
	v      view
	order  []running
	mems   []*jobMem
	prev   []*cluster.JobState
	perm   []int32
	ws     []Worker
	pos    []int
	active []int
	cands  []Movable
	candJS []*cluster.JobState
}

// running is a running job and its state, for one cycle.
type running struct {
	js *cluster.JobState
	m  *jobMem
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

// TimeDriven implements framework.TimeDriven: the monitor categorises on a
// clock, whether or not anything else happened.
func (*Speculator) TimeDriven() bool { return true }

// Events implements framework.EnqueueExtensions for a TimeDriven plugin:
// the clock matters to SpeCon only through the metric samples Alg. 1
// reads at each round and the candidates Alg. 3 may move. On a cluster
// whose running jobs (the ones the last Rebalance saw, with the state it
// left) report no metric, are neither converged nor marked by Alg. 2, and
// have no label write to confirm, a cycle categorises nothing, asks for
// nothing, moves nothing and writes no label, whatever the time: it needs
// no clock (0); otherwise EventAlways. SpeCon turns no job away.
func (p *Speculator) Events(c *framework.Cycle, _ *cluster.JobState) framework.Events {
	if p.clocklessOn(c.Snap) {
		return 0
	}
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (*Speculator) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

func (p *Speculator) clocklessOn(s *cluster.Snapshot) bool {
	if len(p.mems) != len(s.Running) || !slices.Equal(s.Running, p.prev) {
		return false
	}
	for i, js := range s.Running {
		m := p.mems[i]
		// (The last Rebalance brought every one's label cache up to date:
		// labOK set, dirty clear.)
		if len(js.Evals) > 0 || m.job != js.Job || m.cat == CC || m.migrated || m.check {
			return false
		}
	}
	return true
}

// view is one cycle's picture of where each job is and how much each node
// uses, with the cycle's starts and moves applied. (Free capacity is the
// Statement's Now ledger.)
type view struct {
	usage []resource.Vector
	where map[string]int // job ID -> node of its (first) replica
}

var viewKey = framework.NewKey[*view]("specon/view")

// viewOf returns the cycle's view, building it the first time in the
// cycle (by the first Speculator to ask: the key is the package's, so
// that every instance in a profile sees one view, as before). It reuses
// p's memory: the view of the previous cycle is not used any more.
func (p *Speculator) viewOf(c *framework.Cycle) *view {
	if v, ok := framework.Get(c, viewKey); ok {
		return v
	}
	s := c.Snap
	v := &p.v
	v.usage = v.usage[:0]
	for _, n := range s.Nodes {
		v.usage = append(v.usage, n.Usage)
	}
	if v.where == nil {
		v.where = make(map[string]int, len(s.Running))
	}
	clear(v.where)
	for _, js := range s.Running {
		if len(js.Placement) > 0 {
			v.where[js.Job.ID] = js.Placement[0].Node
		}
	}
	framework.Set(c, viewKey, v)
	return v
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
func (sp *Speculator) Reserve(c *framework.Cycle, js *cluster.JobState, p cluster.Placement) {
	if len(p) == 0 {
		return
	}
	v := sp.viewOf(c)
	v.add(js.Job, p, 1)
	v.where[js.Job.ID] = p[0].Node
}

// jobMem is SpeCon's state of one job; every field of memFields is
// mirrored in a label. lab caches the label values of labOf, field by
// field, so that a cycle in which a job's state did not change builds no
// strings for it.
type jobMem struct {
	memFields
	id    string       // the job's ID
	job   *cluster.Job // the Job its state held when last looked up
	seen  uint64       // the Speculator's gen when last seen running
	round int64        // last round categorised, -1 before
	lab   [6]string
	labOf memFields
	labOK bool
	// check: compare the job's labels with lab in this cycle's write pass,
	// as labels were written for it in the previous cycle (or it is new to
	// this Speculator) and a write the executor refused or lost must be
	// sent again. Otherwise its labels are as last compared, unless their
	// number changed: only the profile's plugins write them (in Kubernetes
	// they live in status, which tenants cannot write), so the pass skips
	// the job's six map lookups.
	check bool
	// dirty is set wherever memFields is written after the state was
	// built (Alg. 1, 2 and 3), so that labels compares fields only then.
	dirty bool
	// nlab is the number of labels the job carried when last compared: a
	// different number (another plugin's first label, a lost one) makes
	// the write pass compare again.
	nlab int
}

type memFields struct {
	cat Category
	// decided is the last round whose categorisation changed the job's
	// state (its category) or asked for reallocation (Alg. 1 line 13), -1
	// before. It is what the round label persists: a rebuilt Speculator
	// skips rounds up to it, so it never applies such a round twice, and
	// applying again a round that changed nothing changes nothing
	// (Categorize is a function of the category and the two growths, and
	// it left the category as it was), as long as the samples up to the
	// round's end are the same: on Kubernetes a report can reach the
	// status after its time, so a Speculator rebuilt in the same round
	// (a restart) may read a sample the first one did not. Persisting
	// every round instead would write a label on every running job at
	// every round.
	decided     int64
	convergedAt float64 // when it entered CC, -1 when not in CC
	migrated    bool    // Alg. 2 has decided for it (stay or move)
	markedAt    float64 // when Alg. 2 marked it migrated, -1 before (or unknown)
	move        string  // "", MoveMigrate or MoveRebalance
}

// memFromLabels rebuilds a job's state from its labels; missing, malformed
// or out-of-range labels fall back to a fresh job's state.
func memFromLabels(js *cluster.JobState) *jobMem {
	m := &jobMem{id: js.Job.ID, round: -1, check: true, memFields: memFields{cat: PC, decided: -1, convergedAt: -1, markedAt: -1}}
	l := js.Labels
	if c, err := ParseCategory(l[LabelCategory]); err == nil {
		m.cat = c
	}
	if v, ok := labelInt(l, LabelRound); ok {
		m.decided, m.round = v, v
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

// labelKeys are the keys of jobMem's labels, in the order of
// (*Speculator).labels.
var labelKeys = [6]string{LabelCategory, LabelRound, LabelConvergedAt, LabelMigrated, LabelMarkedAt, LabelMove}

// labels brings m.lab, the label values that represent m (by
// labelKeys), up to date and returns the set of those whose value changed
// (bit i for labelKeys[i]). It formats only the fields that changed since
// the last call (times are compared bit for bit, so that the cache never
// keeps a value the field would not format to).
func (p *Speculator) labels(m *jobMem) (changed uint8) {
	if m.labOK && !m.dirty {
		return 0
	}
	m.dirty = false
	f, o, all := &m.memFields, &m.labOf, !m.labOK
	set := func(i int, v string) {
		if v != m.lab[i] {
			m.lab[i] = v
			changed |= 1 << i
		}
	}
	if all || f.cat != o.cat {
		set(0, f.cat.String())
	}
	if all || f.decided != o.decided {
		if f.decided < 0 {
			set(1, "")
		} else {
			set(1, strconv.FormatInt(f.decided, 10))
		}
	}
	if all || math.Float64bits(f.convergedAt) != math.Float64bits(o.convergedAt) {
		set(2, timeLabel(f.convergedAt))
	}
	if all || f.migrated != o.migrated {
		mig := ""
		if f.migrated {
			mig = "true"
		}
		set(3, mig)
	}
	if all || math.Float64bits(f.markedAt) != math.Float64bits(o.markedAt) {
		set(4, timeLabel(f.markedAt))
	}
	if all || f.move != o.move {
		set(5, f.move)
	}
	m.labOf, m.labOK = *f, true
	return changed
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

	// Load state of running jobs (from memory, else from labels) and drop
	// that of jobs that left.
	p.gen++
	// The same running jobs as in the previous cycle have the same states,
	// found without a lookup: p.mem changes only in this loop and the one
	// after it, which leave p.mem[p.mems[i].id] == p.mems[i] for every i
	// (the Job is compared in case a job state's Job was replaced).
	same := slices.Equal(s.Running, p.prev) && len(p.mems) == len(s.Running)
	// sameJobs: also every job state holds the Job it held then, so the
	// previous cycle's order by (Submit, ID) holds as it was (a Job is
	// immutable).
	sameJobs := same
	mems, seen := p.mems[:0], 0
	for i, js := range s.Running {
		var m *jobMem
		if same && p.mems[i].job == js.Job {
			m = p.mems[i]
		} else {
			sameJobs = false
			id := js.Job.ID
			var ok bool
			if m, ok = p.mem[id]; !ok {
				m = memFromLabels(js)
				p.mem[id] = m
			}
			m.job = js.Job
		}
		if m.seen != p.gen {
			m.seen = p.gen
			// m.lab holds the labels at the start of the cycle. (It
			// does already unless the job is new: every Rebalance ends
			// with labels on every running job.)
			if !m.labOK {
				p.labels(m)
			}
			seen++
		}
		mems = append(mems, m)
	}
	p.mems = mems
	if len(p.mem) > seen { // some job left
		for id, m := range p.mem {
			if m.seen != p.gen {
				delete(p.mem, id)
			}
		}
	}
	order := p.sorted(s.Running, mems, sameJobs)

	round := int64(math.Floor(s.Now/p.P.Interval + 1e-9))
	tm := float64(round) * p.P.Interval

	// Alg. 1 on every running, not yet migrated job.
	var requests []*cluster.JobState
	for _, r := range order {
		js, m := r.js, r.m
		if js.Phase != cluster.Running || m.migrated || m.round >= round {
			continue
		}
		m.round = round
		g, prev, n := Growths(js.Evals, tm, p.P.Interval)
		if n == 0 {
			continue
		}
		st := Categorize(m.cat, g, prev, n == 2, p.P.Alpha)
		if st.Next == m.cat && !st.Converged {
			continue // nothing changes (convergedAt changes with the category only)
		}
		m.decided, m.dirty = round, true
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
	// worker or in the cluster. (Rebalance takes the cycle's view only
	// when it reads it, here and in Alg. 3: it is the snapshot plus this
	// cycle's Reserves, which built it already if there were any, and
	// moves, which come after the first read, so it is the same whenever
	// it is built.)
	for _, js := range requests {
		v := p.viewOf(c)
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
	p.rebalance(c, order, s.Now)

	// Write the labels that changed in this cycle, and those the job does
	// not carry (a write the executor refused or lost is sent again).
	for _, r := range order {
		js, m := r.js, r.m
		changed := p.labels(m)
		if changed == 0 && !m.check && len(js.Labels) == m.nlab {
			continue
		}
		wrote := false
		for i, key := range labelKeys {
			if changed&(1<<i) != 0 || js.Labels[key] != m.lab[i] {
				c.St.Record(js, policy.SetLabel{Job: js.Job.ID, Key: key, Value: m.lab[i]})
				wrote = true
			}
		}
		m.check, m.nlab = wrote, len(js.Labels)
	}
	return nil
}

// byStart is the order in which Rebalance visits the running jobs:
// submit time, then ID.
func byStart(a, b running) int {
	if c := cmp.Compare(a.js.Job.Submit, b.js.Job.Submit); c != 0 {
		return c
	}
	return cmp.Compare(a.js.Job.ID, b.js.Job.ID)
}

// sorted returns the running jobs rs, with their states mems, in byStart
// order (p.order, valid for the cycle). IDs are unique, so byStart is a
// total order and the result does not depend on the order of rs: when rs
// holds the same jobs as in the previous cycle (the same pointers, which
// p.prev keeps alive so that no other job can take an address), the
// previous permutation is tried first and kept if it is still sorted;
// sameJobs says that each of them holds the Job it held then, so that it
// is without a comparison.
func (p *Speculator) sorted(rs []*cluster.JobState, mems []*jobMem, sameJobs bool) []running {
	order := p.order[:0]
	if slices.Equal(rs, p.prev) {
		for _, i := range p.perm {
			order = append(order, running{rs[i], mems[i]})
		}
		ok := true
		for k := 1; k < len(order) && ok && !sameJobs; k++ {
			ok = byStart(order[k-1], order[k]) < 0
		}
		if ok {
			p.order = order
			return order
		}
		order = order[:0]
	}
	for i, js := range rs {
		order = append(order, running{js, mems[i]})
	}
	p.perm = p.perm[:0]
	for i := range order {
		p.perm = append(p.perm, int32(i))
	}
	slices.SortFunc(p.perm, func(a, b int32) int { return byStart(order[a], order[b]) })
	for k, i := range p.perm {
		order[k] = running{rs[i], mems[i]}
	}
	p.prev = append(p.prev[:0], rs...)
	p.order = order
	return order
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
// (Alg. 1 line 2). The list is p.ws, valid until the next call; p.pos
// maps a node index to its position in it (-1: not a worker for j).
func (p *Speculator) workerView(s *cluster.Snapshot, v *view, j *cluster.Job) []Worker {
	out, pos := p.ws[:0], p.pos[:0]
	for range s.Nodes {
		pos = append(pos, -1)
	}
	for _, n := range s.Nodes {
		if !n.Ready || n.Gone || !isWorker(n, j) {
			continue
		}
		pos[n.Index] = len(out)
		w := Worker{Node: n.Index}
		if capCPU := n.Capacity[resource.CPU]; capCPU > 0 {
			w.Usage = float64(v.usage[n.Index][resource.CPU]) / float64(capCPU)
		}
		out = append(out, w)
	}
	for id, node := range v.where {
		i := posOf(pos, node)
		if i < 0 {
			continue
		}
		cat := PC
		if m, ok := p.mem[id]; ok {
			cat = m.cat
		}
		out[i].Count[cat]++
	}
	p.ws, p.pos = out, pos
	return out
}

// posOf returns pos[node], -1 when node is out of its range.
func posOf(pos []int, node int) int {
	if node < 0 || node >= len(pos) {
		return -1
	}
	return pos[node]
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
	m.dirty = true
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
func (p *Speculator) rebalance(c *framework.Cycle, order []running, now float64) {
	if len(order) == 0 {
		return
	}
	// The candidates, but for being on a worker. Alg. 3 moves nothing
	// without a candidate, and the worker list and the gate only read the
	// view: with none, there is nothing to compute.
	cands, candJS := p.cands[:0], p.candJS[:0]
	for _, r := range order {
		js, m := r.js, r.m
		if js.Phase != cluster.Running || m.move != "" || js.Migrations > 0 {
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
		if since < 0 || c.St.Busy(js) {
			continue // no t_cj (a label lost or out of range), or busy
		}
		cands = append(cands, Movable{ID: js.Job.ID, Duration: now - since})
		candJS = append(candJS, js)
	}
	p.cands, p.candJS = cands, candJS
	if len(cands) == 0 {
		return
	}

	v := p.viewOf(c)
	ws := p.workerView(c.Snap, v, order[0].js.Job)
	pos := p.pos
	active := p.active[:0]
	idle := false
	for _, w := range ws {
		active = append(active, w.Active())
		idle = idle || w.Active() == 0
	}
	p.active = active
	if p.P.Rebalance == RebalanceGated && !idle && p.countActive(v, nil) > 0 {
		return
	}
	k := 0
	for i, mv := range cands {
		w := posOf(pos, v.where[mv.ID])
		if w < 0 {
			continue
		}
		mv.Worker = w
		cands[k], candJS[k] = mv, candJS[i]
		k++
	}
	cands, candJS = cands[:k], candJS[:k]
	for _, mv := range Rebalance(active, cands) {
		js := candJS[slices.IndexFunc(cands, func(x Movable) bool { return x.ID == mv.ID })]
		if !migrate(c, v, js, ws[mv.To].Node, fmt.Sprintf("specon: rebalance %d -> %d containers", active[mv.From], active[mv.To])) {
			continue
		}
		m := p.mem[mv.ID]
		if !m.migrated {
			m.markedAt = now
		}
		m.move, m.migrated = MoveRebalance, true
		m.dirty = true
	}
}
