package oasis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// The paper's four comparison schemes (Sec. V-A). They are registered as
// ps-fifo, ps-drf, rrh and dorm, because fifo and drf already name the
// general-purpose baselines of package baseline; the oasis experiments
// label their rows FIFO, DRF, RRH and Dorm.

// roundRobin places replicas on a pool's eligible servers in turn,
// continuing where the last placement stopped (the paper places workers and
// PSs "on available servers in a round-robin fashion" for FIFO, DRF and
// RRH). It is all or nothing.
type roundRobin struct{ next [2]int }

func (rr *roundRobin) place(l *placement.Ledger, j *cluster.Job, counts []int) (cluster.Placement, bool) {
	nodes := l.Snapshot().Nodes
	l.Fork()
	var p cluster.Placement
	for g, c := range counts {
		d := j.Groups[g].Demand
		for k := 0; k < c; k++ {
			found := false
			for step := 0; step < len(nodes); step++ {
				i := (rr.next[g] + step) % len(nodes)
				if !placement.Eligible(nodes[i], j, g) || !l.Take(i, d) {
					continue
				}
				p = append(p, cluster.Assignment{Group: g, Node: i})
				rr.next[g] = i + 1
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

// fixedCounts are the job's requested worker and PS counts: FIFO and RRH
// run a job at a fixed size for its whole course.
func fixedCounts(j *cluster.Job) []int { return j.RequestedCounts() }

// ---- FIFO ----

// FIFO admits every job and runs jobs in arrival order at their fixed
// worker and PS counts; the head of the queue blocks the rest.
type FIFO struct{ rr roundRobin }

// Name implements policy.Policy.
func (*FIFO) Name() string { return "ps-fifo" }

// Schedule implements policy.Policy.
func (f *FIFO) Schedule(s *cluster.Snapshot) []policy.Action {
	var out []policy.Action
	l := placement.NewLedger(s, true)
	for js := range s.Pending.All() {
		p, ok := f.rr.place(l, js.Job, fixedCounts(js.Job))
		if !ok && !fitsEmpty(s, js.Job, fixedCounts(js.Job)) {
			out = append(out, policy.Reject{Job: js.Job.ID, Reason: "ps-fifo: fixed size exceeds the empty cluster"})
			continue
		}
		if !ok {
			return append(out, policy.Wait{Job: js.Job.ID, Reason: "ps-fifo: head of queue does not fit"})
		}
		out = append(out, policy.Start{Job: js.Job.ID, Placement: p})
	}
	return out
}

// fitsEmpty reports whether counts of job j fit on the cluster with
// nothing else running (a fixed-size job that never fits would block FIFO
// forever).
func fitsEmpty(s *cluster.Snapshot, j *cluster.Job, counts []int) bool {
	empty := &cluster.Snapshot{Nodes: make([]*cluster.NodeState, len(s.Nodes))}
	for i, n := range s.Nodes {
		empty.Nodes[i] = &cluster.NodeState{Node: n.Node, Index: n.Index, Ready: n.Ready, Gone: n.Gone}
	}
	var rr roundRobin
	_, ok := rr.place(placement.NewLedger(empty, true), j, counts)
	return ok
}

// ---- DRF ----

// DRF admits every job and, whenever the set of jobs changes (an arrival
// or a completion), recomputes every job's worker count by progressive
// filling: the job with the lowest dominant share (over both pools'
// capacity) gets one more worker, plus a PS when the bandwidth constraint
// asks for one, until no job can grow. Replicas are placed round-robin.
type DRF struct {
	rr  roundRobin
	sig string
}

// Name implements policy.Policy.
func (*DRF) Name() string { return "ps-drf" }

// Schedule implements policy.Policy.
func (d *DRF) Schedule(s *cluster.Snapshot) []policy.Action {
	jobs := activeJobs(s)
	if sig := signature(jobs); sig == d.sig {
		return nil
	} else {
		d.sig = sig
	}
	total := poolCapacity(s)
	l := placement.NewLedger(s, true)
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
	targets := make([]cluster.Placement, len(jobs))
	for i := range jobs {
		targets[i] = state[i].place
	}
	return Transition(jobs, targets, nil)
}

// activeJobs are the running and pending jobs sorted by ID.
func activeJobs(s *cluster.Snapshot) []*cluster.JobState {
	var jobs []*cluster.JobState
	jobs = append(jobs, s.Running...)
	for js := range s.Pending.All() {
		jobs = append(jobs, js)
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

// RRH is the risk-reward heuristic of Irwin, Grit and Chase (HPDC 2004) as
// the OASiS paper applies it, reconstructed (the paper gives one
// sentence): on arrival a job is admitted when its expected utility, at
// the completion its fixed size allows after the queue ahead of it, minus
// the delay cost its run imposes on the admitted jobs waiting behind it,
// exceeds Threshold times its priority g1; otherwise it is rejected.
// Running jobs keep their fixed counts; when admitted jobs wait, a running
// job whose future utility gain has fallen below the threshold is paused
// (suspended, progress kept) and resumes only when nothing admitted waits.
// Waiting jobs start in order of expected utility per resource-second,
// round-robin placed, skipping those that do not fit.
type RRH struct {
	Threshold float64
	rr        roundRobin
	decided   map[string]bool
	paused    map[string]bool
}

// Name implements policy.Policy.
func (*RRH) Name() string { return "rrh" }

// Schedule implements policy.Policy.
func (r *RRH) Schedule(s *cluster.Snapshot) []policy.Action {
	if r.decided == nil {
		r.decided, r.paused = map[string]bool{}, map[string]bool{}
	}
	var out []policy.Action
	total := poolCapacity(s)
	// Estimated start: when the running jobs that finish first have freed
	// enough aggregate capacity.
	running := slices.Clone(s.Running)
	slices.SortFunc(running, func(a, b *cluster.JobState) int {
		return cmp.Or(cmp.Compare(a.TimeLeft(s.Now), b.TimeLeft(s.Now)), strings.Compare(a.Job.ID, b.Job.ID))
	})
	free := total
	for _, js := range s.Running {
		free = free.Sub(js.Job.Demand(js.Counts()))
	}
	estStart := func(d resource.Vector) float64 {
		f := free
		if d.Fits(f) {
			return s.Now
		}
		for _, js := range running {
			f = f.Add(js.Job.Demand(js.Counts()))
			if d.Fits(f) {
				return s.Now + js.TimeLeft(s.Now)
			}
		}
		return math.Inf(1)
	}
	var waiting []*cluster.JobState
	for js := range s.Pending.All() {
		if r.decided[js.Job.ID] && !r.paused[js.Job.ID] {
			waiting = append(waiting, js)
		}
	}
	for js := range s.Pending.All() {
		j := js.Job
		if r.decided[j.ID] {
			continue
		}
		r.decided[j.ID] = true
		d := j.RequestedDemand()
		start := estStart(d)
		gain := utility(j, start+j.Work-j.Submit)
		share := d.DominantShare(total)
		cost := 0.0
		for _, w := range waiting {
			e := estStart(w.Job.RequestedDemand()) + w.Job.Work
			cost += utility(w.Job, e-w.Job.Submit) - utility(w.Job, e+j.Work*share-w.Job.Submit)
		}
		if g1 := priority(j); gain-cost <= r.Threshold*g1 || CheckJob(j) != nil {
			out = append(out, policy.Reject{Job: j.ID, Reason: fmt.Sprintf("rrh: gain %.3g - delay cost %.3g below threshold", gain, cost)})
			continue
		}
		waiting = append(waiting, js)
	}
	l := placement.NewLedger(s, true)
	// Pause running jobs that can no longer gain while admitted jobs wait.
	if len(waiting) > 0 {
		for _, js := range running {
			if utility(js.Job, s.Now+js.TimeLeft(s.Now)-js.Job.Submit) < r.Threshold*priority(js.Job) {
				r.paused[js.Job.ID] = true
				l.GiveJob(js)
				out = append(out, policy.Preempt{Job: js.Job.ID, Reason: "rrh: no future gain"})
			}
		}
	}
	density := func(js *cluster.JobState) float64 {
		j := js.Job
		return utility(j, s.Now+j.Work-j.Submit) / (j.Work * math.Max(j.RequestedDemand().DominantShare(total), 1e-9))
	}
	slices.SortStableFunc(waiting, func(a, b *cluster.JobState) int {
		return cmp.Or(cmp.Compare(density(b), density(a)), strings.Compare(a.Job.ID, b.Job.ID))
	})
	started := false
	for _, js := range waiting {
		if p, ok := r.rr.place(l, js.Job, fixedCounts(js.Job)); ok {
			out = append(out, policy.Start{Job: js.Job.ID, Placement: p})
			started = true
		}
	}
	if !started && len(waiting) == 0 {
		var paused []*cluster.JobState
		for js := range s.Pending.All() {
			if r.paused[js.Job.ID] {
				paused = append(paused, js)
			}
		}
		for _, js := range paused {
			if p, ok := r.rr.place(l, js.Job, fixedCounts(js.Job)); ok {
				delete(r.paused, js.Job.ID)
				out = append(out, policy.Start{Job: js.Job.ID, Placement: p})
			}
		}
	}
	return out
}

func priority(j *cluster.Job) float64 {
	if sg, ok := j.Utility.(cluster.Sigmoid); ok {
		return sg.G1
	}
	return 1
}
