package framework

import (
	"errors"
	"fmt"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
)

// WeightedScore is a Score plugin with its weight in the sum.
type WeightedScore struct {
	Score
	Weight float64
}

// Profile says which plugins run at which extension point. Build one by
// hand, from a preset, or from a ProfileSpec with a plugin Registry.
type Profile struct {
	// Name is what the runtime reports as its policy name.
	Name string
	// QueueSort orders pending jobs; nil keeps queue order.
	QueueSort QueueSort
	Admit     []Admit
	// Size proposes counts; nil tries the requested counts only.
	Size   Size
	Filter []Filter
	// Score ranks nodes; empty means most-allocated (pack).
	Score []WeightedScore
	// Gang is how a gang is kept together; OneNodeFirstFit makes its
	// one-node stage take the lowest-indexed node that holds it all.
	Gang            placement.Gang
	OneNodeFirstFit bool
	Preempt         []Preempt
	Reserve         []Reserve
	Rebalance       []Rebalance
	Provision       []Provision
	// Window bounds how many pending jobs (in queue order, before
	// QueueSort) one cycle considers, as kube-scheduler and Volcano bound
	// a cycle; 0 means all.
	Window int
	// Future keeps the Soon ledger (what jobs in their grace period will
	// free), for Preempt plugins that wait for victims.
	Future bool
	// ScoreAll turns off feasible-node sampling on large clusters.
	ScoreAll bool

	// Place, when set, places jobs instead of Filter, Score and Gang.
	Place Place
}

// Runtime runs a Profile as a policy.Policy. It owns the scheduling loop;
// plugins own the decisions at each extension point.
type Runtime struct {
	p          Profile
	timeDriven bool
	cyc        Cycle // the current cycle's (see Schedule)
	// inOrder and inOrderStep are walk's pass over a queue in its order.
	inOrder     inOrderWalk
	inOrderStep func(*cluster.JobState) bool
	// resorts: a Reserve plugin may call Cycle.Resort (it is not an
	// OrderKeeper).
	resorts    bool
	idleCycles int // cycles answered at once (see IdleCycles)
	tries      int // jobs tried (see Tries)
	// fast is set when the profile's placement is one built-in strategy
	// and no Filter beyond node roles, so placement.Place's sampled scan
	// is exact for it.
	fast bool
	// uniform: every Filter is the node-role rule or a UniformFilter.
	uniform bool
	opts    placement.Options
	now     placement.Ledger
	soon    placement.Ledger
	st      Statement
	// cands is the buffer of one cycle's candidates, reused across
	// cycles: a long queue would otherwise be copied into a fresh slice
	// every cycle.
	cands []*cluster.JobState
	// keyed is sortJobs' buffer, reused across cycles.
	keyed []keyedJob
	// keys are the StableKeys QueueSort's keys of earlier cycles, by job,
	// valid while the stamp they were computed under, keyStamp, holds.
	keys     map[*cluster.Job]SortKey
	keyStamp any
	// keyGen counts the memos made: a key noted under one generation is
	// the memo's while it lasts (parkedJob.key).
	keyGen uint64
	// pickers are the Score plugins told of each node taken.
	pickers []Picker
	// q is the scheduling queue (queue.go): nil unless every plugin is a
	// Requeuer; plugins are the profile's, asked for QueueingHints.
	q       *schedQueue
	plugins []Plugin
	// requeuers is plugins as Requeuers (with q), asserted once rather
	// than for every job that fails; hinters, as RunningHinters (nil for
	// the others), by the same index.
	requeuers []Requeuer
	hinters   []RunningHinter
	// still answers unchanged idle cycles of Clockless profiles (queue.go).
	still *stillness
	// guard is set during ScheduleGuarded (guard.go): panics are
	// contained per job and per Rebalance or Provision plugin.
	guard *guard
	// data is the map behind the cycles' typed data (Set), emptied and
	// reused by each cycle: a time-driven profile whose plugins keep
	// per-cycle data made a map every cycle, most cycles of a long queue.
	data map[any]any
}

var (
	_ policy.Policy     = (*Runtime)(nil)
	_ policy.TimeDriven = (*Runtime)(nil)
)

// New checks a profile and returns its runtime.
func New(p Profile) (*Runtime, error) {
	if p.Name == "" {
		return nil, errors.New("profile: name is empty")
	}
	if p.Window < 0 {
		return nil, fmt.Errorf("profile %s: window %d is negative", p.Name, p.Window)
	}
	for i, s := range p.Score {
		if !(s.Weight > 0) {
			return nil, fmt.Errorf("profile %s: score[%d] (%s): weight %v must be positive", p.Name, i, s.Name(), s.Weight)
		}
	}
	r := &Runtime{p: p}
	for _, pl := range r.Plugins() {
		if td, ok := pl.(TimeDriven); ok && td.TimeDriven() {
			r.timeDriven = true
		}
	}
	for _, s := range p.Score {
		if pk, ok := s.Score.(Picker); ok {
			r.pickers = append(r.pickers, pk)
		}
	}
	r.opts = placement.Options{Strategy: placement.Pack, Gang: p.Gang, OneNodeFirstFit: p.OneNodeFirstFit, ScoreAll: p.ScoreAll}
	r.fast = true
	switch len(p.Score) {
	case 0:
	case 1:
		if s, ok := p.Score[0].Score.(StrategyScore); ok {
			r.opts.Strategy = s.Strategy()
		} else {
			r.fast = false
		}
	default:
		r.fast = false
	}
	r.uniform = true
	for _, f := range p.Filter {
		if _, ok := f.(roleOnly); !ok {
			r.fast = false
			if u, ok := f.(UniformFilter); !ok || !u.Uniform() {
				r.uniform = false
			}
		}
	}
	r.plugins = r.Plugins()
	for _, rp := range p.Reserve {
		if k, ok := rp.(OrderKeeper); !ok || !k.KeepsOrder() {
			r.resorts = true
		}
	}
	r.still = newStillness(r)
	r.q = newSchedQueue()
	for _, pl := range r.plugins {
		rq, ok := pl.(Requeuer)
		if !ok {
			r.q, r.requeuers, r.hinters = nil, nil, nil
			break
		}
		r.requeuers = append(r.requeuers, rq)
		rh, _ := pl.(RunningHinter)
		r.hinters = append(r.hinters, rh)
		_, w := pl.(Watcher)
		_, sk := pl.(Skipper)
		r.q.watchers = r.q.watchers || w || sk
	}
	return r, nil
}

// Queueing reports whether the runtime sets aside jobs that failed until an
// event could make them fit (see Requeuer): true when every plugin of the
// profile is a Requeuer.
func (r *Runtime) Queueing() bool { return r.q != nil }

// WithoutQueue turns the scheduling queue off (every pending job is tried
// every cycle) and the answer of unchanged idle cycles (see Clockless).
// The decisions are the same either way (tests compare the two); only the
// work differs.
func (r *Runtime) WithoutQueue() *Runtime {
	r.q, r.still = nil, nil
	return r
}

// Profile returns the profile the runtime runs.
func (r *Runtime) Profile() Profile { return r.p }

// Name implements policy.Policy.
func (r *Runtime) Name() string { return r.p.Name }

// IdleCycles is the number of cycles the Runtime answered at once, with
// no action, as idle (see Clockless and ClocklessOn); benchmarks report it.
func (r *Runtime) IdleCycles() int { return r.idleCycles }

// Tries is the number of times the Runtime tried a pending job (admitted,
// sized, placed, offered to Preempt plugins), counting every job the
// scheduling queue did not set aside; benchmarks report it.
func (r *Runtime) Tries() int { return r.tries }

// TimeDriven implements policy.TimeDriven.
func (r *Runtime) TimeDriven() bool { return r.timeDriven }

// Plugins lists every distinct plugin of the profile, in extension-point
// order.
func (r *Runtime) Plugins() []Plugin {
	var out []Plugin
	add := func(p Plugin) {
		if p == nil {
			return
		}
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	p := r.p
	if p.QueueSort != nil {
		add(p.QueueSort)
	}
	for _, x := range p.Admit {
		add(x)
	}
	if p.Size != nil {
		add(p.Size)
	}
	for _, x := range p.Filter {
		add(x)
	}
	for _, x := range p.Score {
		add(x.Score)
	}
	if p.Place != nil {
		add(p.Place)
	}
	for _, x := range p.Preempt {
		add(x)
	}
	for _, x := range p.Reserve {
		add(x)
	}
	for _, x := range p.Rebalance {
		add(x)
	}
	for _, x := range p.Provision {
		add(x)
	}
	return out
}

// Schedule implements policy.Policy: one cycle of the profile.
func (r *Runtime) Schedule(s *cluster.Snapshot) []policy.Action {
	p := &r.p
	if s.Pending.Len() == 0 && len(p.Rebalance) == 0 && len(p.Provision) == 0 {
		return nil
	}
	if r.still != nil && r.still.idle(s) {
		r.idleCycles++
		return nil
	}
	r.now.Reset(s, true)
	if p.Future {
		r.soon.Reset(s, true)
		for i, n := range s.Nodes {
			if n.Ready && !n.Gone && !n.Releasing.IsZero() {
				r.soon.Give(i, n.Releasing)
			}
		}
	}
	r.st.reset(&r.now, &r.soon, p.Future)
	// The Cycle is the Runtime's, reset: it is valid only during the call
	// (plugins keep nothing of it, not even the slices Started and Failed
	// hand out), and a long replay runs a cycle per tick.
	c := &r.cyc
	*c = Cycle{Snap: s, St: &r.st, rt: r, started: c.started[:0], failed: c.failed[:0], later: c.later[:0]}
	if r.data != nil {
		clear(r.data)
		c.data = r.data
	}
	c.inOrder = p.QueueSort == nil
	if qo, ok := p.QueueSort.(QueueOrdered); ok && s.Pending.Len() > 0 {
		c.inOrder = qo.InQueueOrder(c)
	}
	if r.q != nil {
		r.q.begin(c, r)
	}

	if s.Pending.Len() > 0 {
		r.queue(c)
	}
	for _, pl := range p.Rebalance {
		if r.guard != nil {
			r.guarded(c, policy.StageRebalance, pl.Name(), func() { pl.Rebalance(c) })
			continue
		}
		pl.Rebalance(c)
	}
	for _, pl := range p.Provision {
		if r.guard != nil {
			r.guarded(c, policy.StageProvision, pl.Name(), func() { pl.Provision(c) })
			continue
		}
		pl.Provision(c)
	}
	if r.q != nil {
		r.q.finish(c)
	}
	if r.still != nil {
		r.still.record(s, r.st.acts)
	}
	return r.st.acts
}

// queue walks the pending jobs in QueueSort order. Without a QueueSort,
// or when the queue is in its order already (QueueOrdered), it walks the
// executor's queue lazily, so a cycle that blocks at the head of a long
// queue costs O(1), not O(queue).
func (r *Runtime) queue(c *Cycle) {
	p := &r.p
	s := c.Snap
	if r.q != nil {
		r.walk(c) // with the scheduling queue (queue.go)
		return
	}
	if c.inOrder {
		n := 0
		for js := range s.Pending.All() {
			if p.Window > 0 && n >= p.Window {
				return
			}
			n++
			if !r.try(c, js) {
				return
			}
		}
		return
	}
	cands := r.cands[:0]
	for js := range s.Pending.All() {
		if p.Window > 0 && len(cands) >= p.Window {
			break
		}
		cands = append(cands, js)
	}
	r.cands = cands
	sortJobs := func(js []*cluster.JobState) { r.sortJobs(c, js) }
	sortJobs(cands)
	for i := 0; i < len(cands); i++ {
		if !r.try(c, cands[i]) {
			return
		}
		if c.resort {
			c.resort = false
			sortJobs(cands[i+1:])
		}
	}
}

// sortJobs sorts js stably by the profile's QueueSort: by keys computed
// once per job when it is a KeyedSort, else by Compare.
func (r *Runtime) sortJobs(c *Cycle, js []*cluster.JobState) {
	ks, ok := r.p.QueueSort.(KeyedSort)
	if !ok {
		// A queue often is in the sort's order already (FCFS: enqueue
		// times); checking costs fewer comparisons than the stable sort.
		cmp := func(a, b *cluster.JobState) int { return r.p.QueueSort.Compare(c, a, b) }
		if !slices.IsSortedFunc(js, cmp) {
			slices.SortStableFunc(js, cmp)
		}
		return
	}
	k := r.keyed[:0]
	if sk, ok := ks.(StableKeys); ok {
		keys := r.keyMemo(c, sk)
		for _, j := range js {
			key, ok := keys[j.Job]
			if !ok {
				key = ks.Key(c, j)
				keys[j.Job] = key
			}
			k = append(k, keyedJob{key: key, js: j})
		}
	} else {
		for _, j := range js {
			k = append(k, keyedJob{key: ks.Key(c, j), js: j})
		}
	}
	byKey := func(a, b keyedJob) int { return CompareKeys(a.key, b.key) }
	if !slices.IsSortedFunc(k, byKey) {
		slices.SortStableFunc(k, byKey)
		for i := range k {
			js[i] = k[i].js
		}
	}
	clear(k)
	r.keyed = k[:0]
}

// keyMemo returns the memo of sk's keys, checked against sk's stamp once
// per cycle.
func (r *Runtime) keyMemo(c *Cycle, sk StableKeys) map[*cluster.Job]SortKey {
	if c.keysChecked {
		return r.keys
	}
	c.keysChecked = true
	stamp := sk.KeyStamp(c)
	// Jobs that left the queue leave their keys behind: the memo is
	// dropped when it holds many more jobs than are pending.
	if r.keys == nil || stamp != r.keyStamp || len(r.keys) > 2*c.Snap.Pending.Len()+1024 {
		r.keys, r.keyStamp = make(map[*cluster.Job]SortKey, c.Snap.Pending.Len()), stamp
		r.keyGen++
	}
	return r.keys
}

// QueueSort returns the profile's QueueSort, nil if none.
func (c *Cycle) QueueSort() QueueSort { return c.rt.p.QueueSort }

// SortKey returns js's key under the profile's QueueSort when it is a
// KeyedSort (from the Runtime's memo when it has StableKeys), and false
// otherwise: for a plugin that looks for the first job in queue-sort
// order among many, at the cost of a lookup per job.
func (c *Cycle) SortKey(js *cluster.JobState) (SortKey, bool) {
	ks, ok := c.rt.p.QueueSort.(KeyedSort)
	if !ok {
		return SortKey{}, false
	}
	sk, ok := ks.(StableKeys)
	if !ok {
		return ks.Key(c, js), true
	}
	keys := c.rt.keyMemo(c, sk)
	key, ok := keys[js.Job]
	if !ok {
		key = ks.Key(c, js)
		keys[js.Job] = key
	}
	return key, true
}

type keyedJob struct {
	key SortKey
	js  *cluster.JobState
}

// try admits, sizes, places and if need be preempts for one pending job.
// It returns false when an Admit plugin blocked the rest of the queue.
func (r *Runtime) try(c *Cycle, js *cluster.JobState) bool {
	if r.guard != nil {
		return r.tryGuarded(c, js)
	}
	return r.tryJob(c, js)
}

// tryJob is try without the guard.
func (r *Runtime) tryJob(c *Cycle, js *cluster.JobState) bool {
	r.tries++
	q := r.q
	if q != nil && len(q.skippers) > 0 {
		q.trying(js)
	}
	for _, a := range r.p.Admit {
		st := a.Admit(c, js).WithPlugin(a.Name())
		switch st.Code() {
		case Success:
			continue
		case Blocked:
			c.stop = js
			return false
		case Unresolvable:
			c.St.Record(js, policy.Reject{Job: js.Job.ID, Reason: st.Reason()})
		default:
			c.St.wait(js, st.Reason())
		}
		return true
	}
	pl, st := r.attempt(c, js)
	if st.IsSuccess() {
		r.started(c, js, pl)
	} else {
		if q != nil && len(q.skippers) > 0 {
			// The jobs set aside whose turns came before js's make what
			// their attempts would have, before any Preempt plugin acts.
			q.flushSkips(c, js)
		}
		if !r.preempt(c, js, st) {
			c.failed = append(c.failed, js)
			if q != nil {
				q.failed(c, js, r.requeuers, c.St.reason(js))
			}
		}
	}
	if c.committed {
		c.committed = false
		c.merge = r.q != nil && r.q.committed(c)
	}
	return true
}

// started records the start of js on pl, which is already taken from
// Now (unless a Preempt plugin recorded the start itself), and tells the
// Reserve plugins.
func (r *Runtime) started(c *Cycle, js *cluster.JobState, pl cluster.Placement) {
	if c.St.Op(js) != OpStart {
		if c.St.hasSoon {
			c.St.soon.TakePlacement(js.Job, pl)
		}
		c.St.Record(js, policy.Start{Job: js.Job.ID, Placement: pl})
	}
	c.started = append(c.started, js)
	if r.q != nil && r.resorts {
		r.q.started(c, r.p.QueueSort, js)
	}
	for _, rp := range r.p.Reserve {
		rp.Reserve(c, js, pl)
	}
}

// preempt runs the Preempt plugins for a job that did not fit. It returns
// whether the job was handled (started, or waiting for room that is
// coming); otherwise a Wait with the reason has been recorded.
func (r *Runtime) preempt(c *Cycle, js *cluster.JobState, failed *Status) bool {
	if q := r.q; q != nil && q.cur != nil {
		// The attempt's class is known (see Cycle.Echo); no plugin has
		// committed yet, and the first that does ends the loop.
		c.echo = Echo{cl: q.cur, epoch: q.epoch}
		defer func() { c.echo = Echo{} }()
	}
	reason := failed
	for _, pp := range r.p.Preempt {
		c.St.Fork()
		st := pp.Preempt(c, js, failed).WithPlugin(pp.Name())
		switch st.Code() {
		case Success:
			c.St.Commit()
			c.committed = true
			if c.St.Op(js) == OpStart {
				r.started(c, js, lastStart(c.St.acts, js.Job.ID))
				return true
			}
			if pl, st := r.sizeAndPlace(c, &r.now, js); st.IsSuccess() {
				r.started(c, js, pl)
				return true
			}
			c.St.wait(js, st.Reason())
			return false
		case Wait:
			c.St.Commit()
			c.committed = true
			c.St.wait(js, st.Reason())
			return true
		default:
			c.St.Discard()
			if st.Reason() != "" {
				reason = st
			}
		}
	}
	c.St.wait(js, reason.Reason())
	return false
}

func lastStart(acts []policy.Action, id string) cluster.Placement {
	for i := len(acts) - 1; i >= 0; i-- {
		if a, ok := acts[i].(policy.Start); ok && a.Job == id {
			return a.Placement
		}
	}
	return nil
}

// sizeAndPlace tries the Size plugin's counts in order on ledger l and
// returns the first placement that fits (taken from l).
func (r *Runtime) sizeAndPlace(c *Cycle, l *placement.Ledger, js *cluster.JobState) (cluster.Placement, *Status) {
	return r.placeSizes(c, l, js, r.sizes(c, js))
}

// sizes returns the replica counts to try for js, largest first.
func (r *Runtime) sizes(c *Cycle, js *cluster.JobState) [][]int {
	if r.p.Size != nil {
		return r.p.Size.Size(c, js)
	}
	return [][]int{js.Job.RequestedCounts()}
}

// placeSizes tries sizes in order on ledger l and returns the first
// placement that fits (taken from l).
func (r *Runtime) placeSizes(c *Cycle, l *placement.Ledger, js *cluster.JobState, sizes [][]int) (cluster.Placement, *Status) {
	var last *Status
	for _, counts := range sizes {
		pl, st := r.place(c, l, js, counts)
		if st.IsSuccess() {
			return pl, nil
		}
		last = st
	}
	if last == nil {
		last = NewStatus(Unschedulable, "no size to try")
	}
	return nil, last
}

// place finds nodes for counts of js on l and takes them, all or nothing.
func (r *Runtime) place(c *Cycle, l *placement.Ledger, js *cluster.JobState, counts []int) (cluster.Placement, *Status) {
	if r.p.Place != nil {
		pl, st := r.p.Place.Place(c, l, js, counts)
		return pl, st.WithPlugin(r.p.Place.Name())
	}
	if r.fast {
		pl, err := placement.Place(l, js.Job, counts, r.opts)
		if err != nil {
			return nil, StatusOf(Unschedulable, err).WithPlugin("placement")
		}
		return pl, nil
	}
	return r.placeGeneric(c, l, js, counts)
}
