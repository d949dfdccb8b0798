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

// Runtime runs a Profile as a policy.Policy. It owns the scheduling loop
// and runs it with a scheduling queue (pkg/scheduler/queue, given with
// WithQueue; scheduler.New gives the default one); plugins own the
// decisions at each extension point. Both executors run it the same way:
// the simulator and the Kubernetes controller keep one Runtime for a run
// and call ScheduleGuarded once per cycle.
type Runtime struct {
	p          Profile
	timeDriven bool
	cyc        Cycle // the current cycle's (see Schedule)
	tries      int   // jobs tried (see Tries)
	// fast is set when the profile's placement is one built-in strategy
	// and no Filter beyond node roles, so placement.Place is exact for it;
	// roleOnly when no Filter beyond node roles (exactRoom).
	fast, roleOnly bool
	opts           placement.Options
	now            placement.Ledger
	soon           placement.Ledger
	st             Statement
	// cands and keyed are one cycle's candidates and sort keys, reused.
	cands []*cluster.JobState
	keyed []keyedJob
	// pickers are the Score plugins told of each node taken.
	pickers []Picker
	plugins []Plugin
	// q is the scheduling queue; nil walks every pending job every
	// cycle (WithoutQueue).
	q schedulingQueue
	// guard is set during ScheduleGuarded (guard.go): panics are
	// contained per job and per Rebalance or Provision plugin.
	guard *guard
	// data is the map behind the cycles' typed data (Set), emptied and
	// reused by each cycle.
	data map[any]any
	// clocks are the TimeDriven plugins; quiet: the last cycle recorded
	// nothing but Waits (see idle).
	clocks []Plugin
	quiet  bool
	// reasons keeps the generic placement's failure messages while the
	// nodes are unchanged (nofit.go).
	reasons reasonMemo
}

var (
	_ policy.Policy     = (*Runtime)(nil)
	_ policy.TimeDriven = (*Runtime)(nil)
	_ policy.Guarded    = (*Runtime)(nil)
)

// schedulingQueue is what the Runtime asks of its scheduling queue, a
// *queue.Queue (pkg/scheduler/queue, which imports this package: the
// queue asks the Runtime for the walk's order and whether a job fits).
type schedulingQueue interface {
	Begin(c *Cycle) bool
	End(c *Cycle)
	Active() int
	IsActive(js *cluster.JobState) bool
	Walk(c *Cycle, try func(*cluster.JobState) (cont, committed, resort bool))
	Failed(c *Cycle, js *cluster.JobState, rejector Plugin)
	Started(js *cluster.JobState)
	WakeMid(c *Cycle, cur *cluster.JobState) []*cluster.JobState
	TakeWoke() []*cluster.JobState
	BeforeCommit(c *Cycle)
	Reset()
}

// NewRuntime checks a profile and returns its runtime, without a
// scheduling queue (every pending job is tried every cycle) until one is
// given with WithQueue: scheduler.New returns it with the default queue.
func NewRuntime(p Profile) (*Runtime, error) {
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
	r.plugins = r.Plugins()
	for _, pl := range r.plugins {
		if td, ok := pl.(TimeDriven); ok && td.TimeDriven() {
			r.timeDriven = true
			r.clocks = append(r.clocks, pl)
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
		if s, ok := p.Score[0].Score.(Strategy); ok {
			r.opts.Strategy = s.S
		} else {
			r.fast = false
		}
	default:
		r.fast = false
	}
	r.roleOnly = true
	for _, f := range p.Filter {
		if _, ok := f.(NodeRole); !ok {
			r.fast, r.roleOnly = false, false
		}
	}
	return r, nil
}

// WithQueue gives the runtime the scheduling queue q, a *queue.Queue made
// for it (queue.New(r, opts)).
func (r *Runtime) WithQueue(q schedulingQueue) *Runtime {
	r.q = q
	return r
}

// WithoutQueue turns the scheduling queue off: every pending job is tried
// every cycle (the exhaustive walk). Tests compare the two.
func (r *Runtime) WithoutQueue() *Runtime {
	r.q = nil
	return r
}

// Profile returns the profile the runtime runs.
func (r *Runtime) Profile() Profile { return r.p }

// Name implements policy.Policy.
func (r *Runtime) Name() string { return r.p.Name }

// Tries is the number of times the Runtime tried a pending job (admitted,
// sized, placed, offered to Preempt plugins); benchmarks report it.
func (r *Runtime) Tries() int { return r.tries }

// TimeDriven implements policy.TimeDriven.
func (r *Runtime) TimeDriven() bool { return r.timeDriven }

// Plugins lists every distinct plugin of the profile, in extension-point
// order.
func (r *Runtime) Plugins() []Plugin {
	var out []Plugin
	add := func(p Plugin) {
		if p == nil || slices.Contains(out, p) {
			return
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

// Schedule implements policy.Policy: one cycle of the profile, on the
// guarded path (ScheduleGuarded). A plugin's panic is contained as there;
// Schedule, which has no way to report it, panics with the first fault
// after the cycle, so that a caller without fault handling (a test, a
// tool) does not go on silently.
func (r *Runtime) Schedule(s *cluster.Snapshot) []policy.Action {
	acts, faults := r.ScheduleGuarded(s)
	if len(faults) > 0 {
		panic(fmt.Sprintf("framework: %s: %v", r.p.Name, faults[0]))
	}
	return acts
}

// schedule is one cycle: the queue brings back the jobs whose events
// happened, the walk tries the active jobs in QueueSort order, then the
// Rebalance and Provision plugins run.
func (r *Runtime) schedule(s *cluster.Snapshot) []policy.Action {
	p := &r.p
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
	// hand out).
	c := &r.cyc
	*c = Cycle{Snap: s, St: &r.st, rt: r, started: c.started[:0], failed: c.failed[:0]}
	if r.data != nil {
		clear(r.data)
		c.data = r.data
	}
	if r.q == nil {
		r.reasons.reset() // no queue to say whether the nodes changed
	}
	if r.q != nil {
		if r.q.Begin(c) && r.idle(c) {
			return nil
		}
	}
	if s.Pending.Len() > 0 {
		r.walk(c)
	}
	for _, pl := range p.Rebalance {
		r.guarded(c, policy.StageRebalance, pl.Name(), func() { pl.Rebalance(c) })
	}
	for _, pl := range p.Provision {
		r.guarded(c, policy.StageProvision, pl.Name(), func() { pl.Provision(c) })
	}
	if r.q != nil {
		r.q.End(c)
	}
	r.quiet = true
	for _, a := range r.st.acts {
		if _, ok := a.(policy.Wait); !ok {
			r.quiet = false
			break
		}
	}
	return r.st.acts
}

// idle reports whether a cycle on a cluster where nothing happened since
// the last one (no event, no job woken, no backoff or flush due), after a
// cycle that recorded nothing but Waits, is answered at once with no
// action: the jobs would fail as they did, and every TimeDriven plugin
// says, through EnqueueExtensions.Events(c, nil), that it needs no clock
// now (no EventAlways). A TimeDriven plugin without hints needs it.
func (r *Runtime) idle(c *Cycle) bool {
	if !r.quiet || r.q.Active() > 0 {
		return false
	}
	for _, pl := range r.clocks {
		ee, ok := pl.(EnqueueExtensions)
		if !ok || ee.Events(c, nil)&EventAlways != 0 {
			return false
		}
	}
	return true
}

// walk tries the cycle's candidates in QueueSort order until an Admit
// plugin blocks the rest. The candidates are the active jobs of the
// scheduling queue (every pending job without one), within the window.
// Without a QueueSort the queue is walked in its order as it is read, so
// a cycle that blocks at its head costs O(1), not O(queue).
func (r *Runtime) walk(c *Cycle) {
	if r.q != nil && r.p.Window == 0 {
		r.q.Walk(c, func(js *cluster.JobState) (cont, committed, resort bool) {
			if !r.try(c, js) {
				return false, false, false
			}
			committed, resort = c.committed, c.resort
			c.committed, c.resort = false, false
			return true, committed, resort
		})
		return
	}
	if r.p.QueueSort == nil && r.p.Window == 0 {
		// The exhaustive walk (WithoutQueue) in queue order, as read.
		for js := range c.Snap.Pending.All() {
			if !r.try(c, js) {
				return
			}
		}
		return
	}
	cands := r.candidates(c)
	for i := 0; i < len(cands); i++ {
		if !r.try(c, cands[i]) {
			break
		}
		if r.q != nil {
			// A start woke the next member of its bucket: it goes where
			// the walk would meet it.
			for _, w := range r.q.TakeWoke() {
				rest := cands[i+1:]
				k, _ := slices.BinarySearchFunc(rest, w, func(a, b *cluster.JobState) int { return r.WalkOrder(c, a, b) })
				cands = slices.Insert(cands, i+1+k, w)
			}
		}
		if c.committed {
			// A Preempt plugin acted on running jobs: room it gave back
			// may wake parked jobs whose turn is still to come.
			c.committed = false
			if r.q != nil {
				if woken := r.q.WakeMid(c, cands[i]); len(woken) > 0 {
					rest := append(woken, cands[i+1:]...)
					slices.SortFunc(rest, func(a, b *cluster.JobState) int { return r.WalkOrder(c, a, b) })
					cands = append(cands[:i+1], rest...)
				}
			}
		}
		if c.resort {
			c.resort = false
			r.sortJobs(c, cands[i+1:])
		}
	}
	r.cands = cands[:0]
}

// candidates returns the jobs to try this cycle, sorted.
func (r *Runtime) candidates(c *Cycle) []*cluster.JobState {
	s, win := c.Snap, r.p.Window
	cands := r.cands[:0]
	n := 0
	for js := range s.Pending.All() {
		if win > 0 && n >= win {
			break
		}
		n++
		if r.q == nil || r.q.IsActive(js) {
			cands = append(cands, js)
		}
	}
	r.sortJobs(c, cands)
	return cands
}

// sortJobs sorts js stably by the profile's QueueSort, ties in queue
// order (js must be in queue order when it is called on a fresh list):
// by keys computed once per job when it is a KeyedSort, else by Compare.
func (r *Runtime) sortJobs(c *Cycle, js []*cluster.JobState) {
	if r.p.QueueSort == nil {
		return
	}
	ks, ok := r.p.QueueSort.(KeyedSort)
	if !ok {
		cmp := func(a, b *cluster.JobState) int { return r.p.QueueSort.Compare(c, a, b) }
		if !slices.IsSortedFunc(js, cmp) {
			slices.SortStableFunc(js, cmp)
		}
		return
	}
	k := r.keyed[:0]
	for _, j := range js {
		k = append(k, keyedJob{key: ks.Key(c, j), js: j})
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

// QueueSort returns the profile's QueueSort, nil if none.
func (c *Cycle) QueueSort() QueueSort { return c.rt.p.QueueSort }

type keyedJob struct {
	key SortKey
	js  *cluster.JobState
}

// try admits, sizes, places and if need be preempts for one pending job,
// on a fork of the Statement that a panic discards (guard.go). It returns
// false when an Admit plugin blocked the rest of the queue.
func (r *Runtime) try(c *Cycle, js *cluster.JobState) bool {
	cont := true
	r.guarded(c, policy.StageJob, "", func() { cont = r.tryJob(c, js) }, js)
	return cont
}

// tryJob is try without the guard.
func (r *Runtime) tryJob(c *Cycle, js *cluster.JobState) bool {
	r.tries++
	for _, a := range r.p.Admit {
		st := a.Admit(c, js).WithPlugin(a.Name())
		switch st.Code() {
		case Success:
			continue
		case Blocked:
			return false
		case Unresolvable:
			c.St.Record(js, policy.Reject{Job: js.Job.ID, Reason: st.Reason()})
		default:
			c.St.waitFor(js, st)
			if r.q != nil {
				r.q.Failed(c, js, a)
			}
		}
		return true
	}
	pl, st := r.sizeAndPlace(c, &r.now, js)
	if st.IsSuccess() {
		r.started(c, js, pl)
		return true
	}
	if !r.preempt(c, js, st) {
		c.failed = append(c.failed, js)
		if r.q != nil {
			r.q.Failed(c, js, nil)
		}
	} else if r.q != nil {
		r.q.Started(js) // handled: waiting for room a Preempt plugin nominated
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
	if r.q != nil {
		r.q.Started(js)
	}
	for _, rp := range r.p.Reserve {
		rp.Reserve(c, js, pl)
	}
}

// preempt runs the Preempt plugins for a job that did not fit. It returns
// whether the job was handled (started, or waiting for room that is
// coming); otherwise a Wait with the reason has been recorded.
func (r *Runtime) preempt(c *Cycle, js *cluster.JobState, failed *Status) bool {
	reason := failed
	for _, pp := range r.p.Preempt {
		c.St.Fork()
		st := pp.Preempt(c, js, failed).WithPlugin(pp.Name())
		if r.q != nil && (st.Code() == Success || st.Code() == Wait) {
			r.q.BeforeCommit(c)
		}
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
			c.St.waitFor(js, st)
			return false
		case Wait:
			c.St.Commit()
			c.committed = true
			c.St.waitFor(js, st)
			return true
		default:
			c.St.Discard()
			if st.Reason() != "" {
				reason = st
			}
		}
	}
	c.St.waitFor(js, reason)
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
	sizes, dropped := r.sizes(c, js)
	if len(sizes) == 0 && dropped {
		return nil, NewStatus(Unschedulable, "size plugin "+r.p.Size.Name()+" proposed no counts within the groups' [min, max]").WithPlugin(r.p.Size.Name())
	}
	return r.placeSizes(c, l, js, sizes)
}

// sizes returns the replica counts to try for js, largest first, and
// whether it dropped some: counts a Size plugin proposes outside the
// groups' [Min, Max] (or not one per group) break its contract and are not
// tried (FitsNow's NoRoom answer reads the minimums, which every size must
// ask for at least).
func (r *Runtime) sizes(c *Cycle, js *cluster.JobState) ([][]int, bool) {
	if r.p.Size == nil {
		return [][]int{js.Job.RequestedCounts()}, false
	}
	out := r.p.Size.Size(c, js)
	if !slices.ContainsFunc(out, func(counts []int) bool { return !inBounds(js.Job, counts) }) {
		return out, false
	}
	var ok [][]int
	for _, counts := range out {
		if inBounds(js.Job, counts) {
			ok = append(ok, counts)
		}
	}
	return ok, true
}

// inBounds reports whether counts has one count per group of j, each
// within the group's [Min, Max].
func inBounds(j *cluster.Job, counts []int) bool {
	if len(counts) != len(j.Groups) {
		return false
	}
	for g, n := range counts {
		if n < j.Groups[g].Min || n > j.Groups[g].Max {
			return false
		}
	}
	return true
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
