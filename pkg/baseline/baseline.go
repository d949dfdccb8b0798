// Package baseline holds the reference policies every drover policy is
// compared against, as framework presets, and the generic plugins they are
// made of:
//
//   - fifo: queue order, head-of-line blocking, pack placement;
//   - k8s-default: priority then queue order, a job that does not fit is
//     skipped, least-allocated (spread) placement, like kube-scheduler with
//     a gang plugin;
//   - binpack: k8s-default with most-allocated (pack) placement;
//   - drf: Dominant Resource Fairness across tenants (Ghodsi et al.),
//     skipping jobs that do not fit, spread placement.
//
// The plugins (priority and drf queue orders, head-of-line admission) are
// reused by the papers' presets and by the drover profile.
package baseline

import (
	"cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// Plugin names.
const (
	PriorityName   = "priority"
	DRFName        = "drf"
	HeadOfLineName = "head-of-line"
)

// Priority orders pending jobs by priority, highest first; equal
// priorities keep queue order.
type Priority struct{}

var _ framework.QueueSort = Priority{}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// order is the jobs' priorities, ties in queue order: it never changes
// while they wait.
func (Priority) Events(*framework.Cycle, *cluster.JobState) framework.Events { return 0 }

// Requeue implements framework.EnqueueExtensions.
func (Priority) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Name implements framework.Plugin.
func (Priority) Name() string { return PriorityName }

// Compare implements framework.QueueSort.
func (Priority) Compare(_ *framework.Cycle, a, b *cluster.JobState) int {
	return cmp.Compare(b.Job.Priority, a.Job.Priority)
}

// HeadOfLine is strict FIFO admission: once a job in this cycle could not
// be started, it and every job behind it wait (head-of-line blocking, the
// behaviour FitGpp and the other papers compare against).
type HeadOfLine struct{}

var (
	_ framework.Admit             = HeadOfLine{}
	_ framework.EnqueueExtensions = HeadOfLine{}
)

// Name implements framework.Plugin.
func (HeadOfLine) Name() string { return HeadOfLineName }

// Admit implements framework.Admit.
func (HeadOfLine) Admit(c *framework.Cycle, _ *cluster.JobState) *framework.Status {
	if len(c.Failed()) > 0 {
		return framework.NewStatus(framework.Blocked, "behind the head of the queue")
	}
	return nil
}

// Events implements framework.EnqueueExtensions: head-of-line blocking
// needs every job that fails to be tried (it reads Cycle.Failed), so
// nothing is parked (a blocked queue costs one job per cycle anyway).
func (HeadOfLine) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (HeadOfLine) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// DRF orders pending jobs by the dominant share their tenant would have
// with the job started, lowest first (Ghodsi et al.); ties go to the job
// that has waited longer. It is also a Reserve plugin: each start adds to
// its tenant's use and re-sorts the jobs not yet tried. Jobs without a
// tenant are each their own tenant.
type DRF struct{}

var (
	_ framework.KeyedSort         = DRF{}
	_ framework.Reserve           = DRF{}
	_ framework.EnqueueExtensions = DRF{}
)

type drfState struct {
	total resource.Vector
	use   map[string]resource.Vector
	queue cluster.PendingQueue
}

var drfKey = framework.NewKey[*drfState]("drf")

// Name implements framework.Plugin.
func (DRF) Name() string { return DRFName }

func (DRF) state(c *framework.Cycle) *drfState {
	return framework.GetOrInit(c, drfKey, func() *drfState {
		s := c.Snap
		st := &drfState{total: s.ReadyCapacity(), use: map[string]resource.Vector{}, queue: s.Pending}
		for _, js := range s.Running {
			st.use[tenant(js)] = st.use[tenant(js)].Add(js.Job.Demand(js.Counts()))
		}
		return st
	})
}

// Compare implements framework.QueueSort.
func (d DRF) Compare(c *framework.Cycle, a, b *cluster.JobState) int {
	st := d.state(c)
	share := func(js *cluster.JobState) float64 {
		return st.use[tenant(js)].Add(js.Job.RequestedDemand()).DominantShare(st.total)
	}
	pos := func(js *cluster.JobState) int { i, _ := st.queue.Order(js); return i }
	return cmp.Or(cmp.Compare(share(a), share(b)), cmp.Compare(pos(a), pos(b)))
}

// Key implements framework.KeyedSort: the dominant share, then the queue
// position.
func (d DRF) Key(c *framework.Cycle, js *cluster.JobState) framework.SortKey {
	st := d.state(c)
	pos, _ := st.queue.Order(js)
	return framework.SortKey{st.use[tenant(js)].Add(js.Job.RequestedDemand()).DominantShare(st.total), float64(pos)}
}

// Reserve implements framework.Reserve.
func (d DRF) Reserve(c *framework.Cycle, js *cluster.JobState, _ cluster.Placement) {
	st := d.state(c)
	t := tenant(js)
	st.use[t] = st.use[t].Add(js.Job.RequestedDemand())
	c.Resort()
}

// Events implements framework.EnqueueExtensions for a QueueSort: the
// shares move with the running jobs and the capacity.
func (DRF) Events(*framework.Cycle, *cluster.JobState) framework.Events {
	return framework.EventRunning | framework.EventNodes
}

// Requeue implements framework.EnqueueExtensions.
func (DRF) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

func tenant(js *cluster.JobState) string {
	if js.Job.Tenant != "" {
		return js.Job.Tenant
	}
	return "job/" + js.Job.ID
}

// Strategy returns the built-in Score plugin for a placement strategy.
func Strategy(s placement.Strategy) framework.WeightedScore {
	return framework.WeightedScore{Score: framework.Strategy{S: s}, Weight: 1}
}

// FIFOProfile is the fifo preset: queue order, head-of-line blocking.
func FIFOProfile(s placement.Strategy) framework.Profile {
	return framework.Profile{Name: "fifo", Admit: []framework.Admit{HeadOfLine{}},
		Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{Strategy(s)}}
}

// NewFIFO returns the fifo preset's runtime with the given placement.
func NewFIFO(s placement.Strategy) *framework.Runtime {
	r, err := scheduler.New(FIFOProfile(s))
	if err != nil {
		panic(err) // a fixed, valid profile
	}
	return r
}

// Plugins returns the registry entries of the generic plugins.
func Plugins() []profile.PluginEntry {
	none := func(name string, p framework.Plugin) func(policy.Params) (framework.Plugin, error) {
		return func(a policy.Params) (framework.Plugin, error) { return p, a.Check(name) }
	}
	return []profile.PluginEntry{
		{Name: PriorityName, Description: "queueSort: priority, highest first, then queue order", New: none(PriorityName, Priority{})},
		{Name: DRFName, Description: "queueSort, reserve: lowest dominant share of the job's tenant first (Ghodsi et al.), re-ranked after each start", New: none(DRFName, DRF{})},
		{Name: HeadOfLineName, Description: "admit: strict FIFO, a job that could not start blocks every job behind it", New: none(HeadOfLineName, HeadOfLine{})},
		{Name: "least-allocated", Description: "score: the node with the most free after placing (spread, kube-scheduler's LeastAllocated)", New: none("least-allocated", framework.Strategy{S: placement.Spread})},
		{Name: "most-allocated", Description: "score: the node with the least free after placing (pack, best fit)", New: none("most-allocated", framework.Strategy{S: placement.Pack})},
		{Name: "first-fit", Description: "score: the lowest-indexed node that fits", New: none("first-fit", framework.Strategy{S: placement.FirstFit})},
		{Name: "node-affinity", Description: "score: the summed weights of the preferred node-affinity terms a node matches (kube-scheduler's NodeAffinity score; placement's built-in strategies add it by themselves)", New: none("node-affinity", NodeAffinity{})},
		{Name: "node-role", Description: "filter: a node with a role takes only replicas of that group (always enforced)", New: none("node-role", framework.NodeRole{})},
	}
}

// Entries returns the registry entries of the baseline presets.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "fifo", Description: "strict arrival order, non-preemptive, head-of-line blocking; placement=pack|spread|first-fit (default pack)",
			New: func(p policy.Params) (policy.Policy, error) {
				st, _, err := options(p, placement.Pack, "fifo")
				if err != nil {
					return nil, err
				}
				return scheduler.New(FIFOProfile(st))
			}},
		{Name: "k8s-default", Description: "priority then arrival order, skips jobs that do not fit, least-allocated spread placement; window=N jobs per cycle (0: all)",
			New: ordered("k8s-default", placement.Spread)},
		{Name: "binpack", Description: "like k8s-default with most-allocated (bin-packing) placement",
			New: ordered("binpack", placement.Pack)},
		{Name: "drf", Description: "dominant resource fairness across tenants, skips jobs that do not fit, spread placement; window=N",
			New: func(p policy.Params) (policy.Policy, error) {
				st, w, err := options(p, placement.Spread, "drf", "window")
				if err != nil {
					return nil, err
				}
				return scheduler.New(framework.Profile{Name: "drf", QueueSort: DRF{}, Reserve: []framework.Reserve{DRF{}},
					Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{Strategy(st)}, Window: w})
			}},
	}
}

func ordered(name string, def placement.Strategy) policy.Factory {
	return func(p policy.Params) (policy.Policy, error) {
		st, w, err := options(p, def, name, "window")
		if err != nil {
			return nil, err
		}
		return scheduler.New(framework.Profile{Name: name, QueueSort: Priority{},
			Filter: []framework.Filter{framework.NodeRole{}}, Score: []framework.WeightedScore{Strategy(st)}, Window: w})
	}
}

// MaxWindow bounds the window parameter (jobs tried per cycle; 0: all).
const MaxWindow = 1_000_000

func options(p policy.Params, def placement.Strategy, name string, extra ...string) (placement.Strategy, int, error) {
	if err := p.Check(name, append([]string{"placement"}, extra...)...); err != nil {
		return 0, 0, err
	}
	w, err := p.IntIn("window", 0, 0, MaxWindow)
	if err != nil {
		return 0, 0, err
	}
	st := def
	if v, ok := p["placement"]; ok {
		if st, err = placement.ParseStrategy(v); err != nil {
			return 0, 0, err
		}
	}
	return st, w, nil
}
