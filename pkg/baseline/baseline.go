// Package baseline holds the reference policies every drover policy is
// compared against: strict FIFO, a Kubernetes-default-like scheduler
// (priority order, no head-of-line blocking, least-allocated spread), the
// same with bin-packing placement, and Dominant Resource Fairness.
package baseline

import (
	"cmp"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// FIFO starts jobs strictly in arrival order and never preempts. When the
// head of the queue does not fit, nothing behind it starts (head-of-line
// blocking), which is the behaviour FitGpp and the other papers compare
// against.
type FIFO struct {
	Placement placement.Options
	ledger    placement.Ledger // reused across cycles
}

var _ policy.Policy = (*FIFO)(nil)

// Name implements policy.Policy.
func (*FIFO) Name() string { return "fifo" }

// Schedule implements policy.Policy.
func (f *FIFO) Schedule(s *cluster.Snapshot) []policy.Action {
	var out []policy.Action
	l := &f.ledger
	first := true
	for js := range s.Pending.All() {
		if first {
			l.Reset(s, true)
			first = false
		}
		p, err := placement.Place(l, js.Job, js.Job.RequestedCounts(), f.Placement)
		if err != nil {
			return append(out, policy.Wait{Job: js.Job.ID, Reason: "head of queue: " + err.Error()})
		}
		out = append(out, policy.Start{Job: js.Job.ID, Placement: p})
	}
	return out
}

// Ordered starts jobs in a policy-defined order and skips those that do not
// fit, so small jobs can pass a blocked large one. With priority order and
// spread placement it behaves like kube-scheduler with a gang plugin.
type Ordered struct {
	name      string
	Placement placement.Options
	// Window bounds how many pending jobs one cycle considers, as
	// kube-scheduler and Volcano bound a cycle; 0 means all.
	Window int
}

var _ policy.Policy = (*Ordered)(nil)

// Name implements policy.Policy.
func (o *Ordered) Name() string { return o.name }

// Schedule implements policy.Policy.
func (o *Ordered) Schedule(s *cluster.Snapshot) []policy.Action {
	cands := window(s, o.Window)
	slices.SortStableFunc(cands, func(a, b *cluster.JobState) int {
		return cmp.Compare(b.Job.Priority, a.Job.Priority)
	})
	return startInOrder(s, cands, o.Placement, nil)
}

// window collects up to n pending jobs in queue order.
func window(s *cluster.Snapshot, n int) []*cluster.JobState {
	var out []*cluster.JobState
	for js := range s.Pending.All() {
		if n > 0 && len(out) >= n {
			break
		}
		out = append(out, js)
	}
	return out
}

// startInOrder tries each candidate; after each start it calls reorder (if
// set) so that an order depending on allocations (DRF) stays current.
func startInOrder(s *cluster.Snapshot, cands []*cluster.JobState, o placement.Options,
	next func(started *cluster.JobState, rest []*cluster.JobState)) []policy.Action {
	if len(cands) == 0 {
		return nil
	}
	l := placement.NewLedger(s, true)
	var out []policy.Action
	var blocked *cluster.JobState
	var reason string
	for i := 0; i < len(cands); i++ {
		js := cands[i]
		p, err := placement.Place(l, js.Job, js.Job.RequestedCounts(), o)
		if err != nil {
			if blocked == nil {
				blocked, reason = js, err.Error()
			}
			continue
		}
		out = append(out, policy.Start{Job: js.Job.ID, Placement: p})
		if next != nil {
			next(js, cands[i+1:])
		}
	}
	if blocked != nil {
		out = append(out, policy.Wait{Job: blocked.Job.ID, Reason: reason})
	}
	return out
}

// DRF starts the pending job of the tenant with the lowest dominant share
// of the cluster first (Ghodsi et al.), skipping jobs that do not fit. Jobs
// without a tenant are each their own tenant.
type DRF struct {
	Placement placement.Options
	Window    int
}

var _ policy.Policy = (*DRF)(nil)

// Name implements policy.Policy.
func (*DRF) Name() string { return "drf" }

// Schedule implements policy.Policy.
func (d *DRF) Schedule(s *cluster.Snapshot) []policy.Action {
	total := s.ReadyCapacity()
	use := map[string]resource.Vector{}
	for _, js := range s.Running {
		use[tenant(js)] = use[tenant(js)].Add(js.Job.Demand(js.Counts()))
	}
	cands := window(s, d.Window)
	pos := make(map[*cluster.JobState]int, len(cands))
	for i, js := range cands {
		pos[js] = i
	}
	share := func(js *cluster.JobState) float64 {
		t := tenant(js)
		return use[t].Add(js.Job.RequestedDemand()).DominantShare(total)
	}
	// Ties in share go to the job that has waited longer (queue order).
	sortByShare := func(c []*cluster.JobState) {
		slices.SortFunc(c, func(a, b *cluster.JobState) int {
			return cmp.Or(cmp.Compare(share(a), share(b)), cmp.Compare(pos[a], pos[b]))
		})
	}
	sortByShare(cands)
	return startInOrder(s, cands, d.Placement, func(started *cluster.JobState, rest []*cluster.JobState) {
		t := tenant(started)
		use[t] = use[t].Add(started.Job.RequestedDemand())
		sortByShare(rest)
	})
}

func tenant(js *cluster.JobState) string {
	if js.Job.Tenant != "" {
		return js.Job.Tenant
	}
	return "job/" + js.Job.ID
}

// Entries returns the registry entries of the baselines.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: "fifo", Description: "strict arrival order, non-preemptive, head-of-line blocking; placement=pack|spread|first-fit (default pack)",
			New: func(p policy.Params) (policy.Policy, error) {
				o, err := options(p, placement.Pack, "fifo")
				return &FIFO{Placement: o}, err
			}},
		{Name: "k8s-default", Description: "priority then arrival order, skips jobs that do not fit, least-allocated spread placement",
			New: func(p policy.Params) (policy.Policy, error) {
				o, err := options(p, placement.Spread, "k8s-default", "window")
				w, _ := p.Int("window", 0)
				return &Ordered{name: "k8s-default", Placement: o, Window: w}, err
			}},
		{Name: "binpack", Description: "like k8s-default with most-allocated (bin-packing) placement",
			New: func(p policy.Params) (policy.Policy, error) {
				o, err := options(p, placement.Pack, "binpack", "window")
				w, _ := p.Int("window", 0)
				return &Ordered{name: "binpack", Placement: o, Window: w}, err
			}},
		{Name: "drf", Description: "dominant resource fairness across tenants, skips jobs that do not fit, spread placement",
			New: func(p policy.Params) (policy.Policy, error) {
				o, err := options(p, placement.Spread, "drf", "window")
				w, _ := p.Int("window", 0)
				return &DRF{Placement: o, Window: w}, err
			}},
	}
}

func options(p policy.Params, def placement.Strategy, name string, extra ...string) (placement.Options, error) {
	if err := p.Check(name, append([]string{"placement"}, extra...)...); err != nil {
		return placement.Options{}, err
	}
	if _, err := p.Int("window", 0); err != nil {
		return placement.Options{}, err
	}
	st := def
	if v, ok := p["placement"]; ok {
		var err error
		if st, err = placement.ParseStrategy(v); err != nil {
			return placement.Options{}, err
		}
	}
	return placement.Options{Strategy: st}, nil
}
