package drover

import (
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/resource"
)

// ReserveName is the TE reservation's plugin name.
const ReserveName = "te-reserve"

// DefaultReserveWindow is how long a TE arrival keeps the reservation up:
// six hours (a few TE inter-arrival times on the scoreboard's regimes).
const DefaultReserveWindow = 6 * 3600.0

// Reserve is a small TE reservation that adapts to observed TE demand
// (issue 24, item 2): it keeps room for one TE trial free of BE jobs, on
// one node, so that a trial that arrives starts at once instead of
// preempting a BE job and waiting out its grace period.
//
// The reservation R is the largest TE job that arrived within the last
// Window seconds and fits one node (its GPUs at its requested counts);
// with no such arrival R is 0 and BE jobs backfill freely. A node's room
// for TE is its free GPUs plus the GPUs of the TE jobs running on it (a
// trial running in the reserve uses it; when it ends the room returns to
// the reserve). A BE job passes Admit when, placed at its requested counts
// on a fork of the Now ledger, it leaves the largest room for TE at least
// min(R, the largest room before it): it never takes the reserve, and
// while the reserve is short (a trial took it, or BE jobs hold it) it
// never makes it shorter, so the room grows back as jobs end. A BE job
// that fails is Unschedulable (the jobs behind it may still backfill
// elsewhere). TE jobs and jobs of no class always pass.
//
// The observed TE arrivals are the plugin's only state: each TE job is
// recorded (submit time and size) the first time Admit sees it pending,
// and forgotten once it is older than Window. After a restart the
// reservation is rebuilt from the TE jobs the snapshots show within one
// Window; until then it is smaller, never larger.
//
// Elastic jobs' scale-up (drover-scale-up) may grow into the reserve: a
// TE job shrinks them back at no grace period, which is what the reserve
// is for.
type Reserve struct {
	// Window is how long, in seconds, a TE arrival keeps the reservation
	// up.
	Window float64
	// Quantile of the recent TE jobs' sizes the reservation holds (1: the
	// largest; 0 counts as 1).
	Quantile float64

	// seen holds the observed TE arrivals by job ID: submit time and the
	// GPUs the job needs on one node (0 if it does not fit one).
	seen map[string]teArrival
}

type teArrival struct {
	submit float64
	gpus   int64
}

var (
	_ framework.Admit             = (*Reserve)(nil)
	_ framework.EnqueueExtensions = (*Reserve)(nil)
)

// NewReserve returns a TE reservation with the given window in seconds
// (> 0).
func NewReserve(window float64) (*Reserve, error) {
	if !(window > 0) {
		return nil, fmt.Errorf("te-reserve window %v s: must be > 0", window)
	}
	return &Reserve{Window: window, seen: map[string]teArrival{}}, nil
}

// Name implements framework.Plugin.
func (*Reserve) Name() string { return ReserveName }

// Events implements framework.EnqueueExtensions: whether a BE job may
// start depends on the TE arrivals and on the clock (the window), not on
// itself, so BE jobs are never parked; TE jobs it always passes.
func (*Reserve) Events(_ *framework.Cycle, js *cluster.JobState) framework.Events {
	if js != nil && js.Job.Class == cluster.ClassBE {
		return framework.EventAlways
	}
	return 0
}

// Requeue implements framework.EnqueueExtensions.
func (*Reserve) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// reserveCycle is the per-cycle view: the reservation and the GPUs of the
// running TE jobs per node.
type reserveCycle struct {
	r    int64
	teOn []int64
}

var reserveKey = framework.NewKey[*reserveCycle]("drover.te-reserve")

// Reservation is the GPUs the reservation holds at time now: the
// Quantile (nearest rank; 1: the largest) of the GPUs of the TE jobs that
// arrived within the window, a job that does not fit one node counting 0
// (0 if none arrived).
func (p *Reserve) Reservation(now float64) int64 {
	var gs []int64
	for _, a := range p.seen {
		if now-a.submit <= p.Window {
			gs = append(gs, a.gpus)
		}
	}
	if len(gs) == 0 {
		return 0
	}
	slices.Sort(gs)
	q := p.Quantile
	if q <= 0 || q > 1 {
		q = 1
	}
	return gs[max(int(math.Ceil(q*float64(len(gs))))-1, 0)]
}

// observe records a pending TE job and forgets arrivals older than the
// window.
func (p *Reserve) observe(c *framework.Cycle, js *cluster.JobState) {
	if p.seen == nil {
		p.seen = map[string]teArrival{}
	}
	if _, ok := p.seen[js.Job.ID]; ok {
		return
	}
	var nodeGPUs int64
	for _, n := range c.Snap.Nodes {
		if !n.Gone {
			nodeGPUs = max(nodeGPUs, n.Capacity[resource.GPU])
		}
	}
	g := js.Job.RequestedDemand()[resource.GPU]
	if g > nodeGPUs {
		g = 0
	}
	p.seen[js.Job.ID] = teArrival{submit: js.Job.Submit, gpus: g}
	for id, a := range p.seen {
		if c.Snap.Now-a.submit > p.Window {
			delete(p.seen, id)
		}
	}
}

// cycle returns the cycle's view, computed once.
func (p *Reserve) cycle(c *framework.Cycle) *reserveCycle {
	return framework.GetOrInit(c, reserveKey, func() *reserveCycle {
		rc := &reserveCycle{r: p.Reservation(c.Snap.Now), teOn: make([]int64, len(c.Snap.Nodes))}
		for _, r := range c.Snap.Running {
			if !isTE(r) {
				continue
			}
			for n, d := range r.Placement.DemandOn(r.Job) {
				rc.teOn[n] += d[resource.GPU]
			}
		}
		return rc
	})
}

// room is the largest room for TE on one node: free GPUs on the ledger
// plus the GPUs of running TE jobs.
func (rc *reserveCycle) room(c *framework.Cycle, free func(int) int64) int64 {
	var best int64
	for i, n := range c.Snap.Nodes {
		if !n.Ready || n.Gone {
			continue
		}
		best = max(best, free(i)+rc.teOn[i])
	}
	return best
}

// Admit implements framework.Admit.
func (p *Reserve) Admit(c *framework.Cycle, js *cluster.JobState) *framework.Status {
	if isTE(js) {
		p.observe(c, js)
		return nil
	}
	if js.Job.Class != cluster.ClassBE {
		return nil
	}
	rc := p.cycle(c)
	if rc.r == 0 {
		return nil
	}
	l := c.St.Now()
	free := func(i int) int64 { return l.Free(i)[resource.GPU] }
	before := rc.room(c, free)
	need := min(rc.r, before)
	// The job takes at most its GPUs from any node: a node with that much
	// room to spare keeps the reserve wherever the job goes.
	if before-js.Job.RequestedDemand()[resource.GPU] >= need {
		return nil
	}
	l.Fork()
	defer l.Revert()
	// Place takes the placement from the fork.
	if _, st := c.Place(l, js, js.Job.RequestedCounts()); !st.IsSuccess() {
		// It does not fit; the placement says why.
		return nil
	}
	if after := rc.room(c, free); after < need {
		return framework.Statusf(framework.Unschedulable, "te-reserve: keeping %d GPUs free on one node for TE trials (the largest that arrived within %gh)",
			rc.r, p.Window/3600)
	}
	return nil
}
