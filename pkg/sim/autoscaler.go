package sim

import (
	"math"
	"sort"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/resource"
)

// Autoscaler configures the simulator's model of Kubernetes'
// cluster-autoscaler. In Kubernetes the real cluster-autoscaler adds and
// removes nodes, not the scheduler, so in the simulator it is part of the
// executor rather than of any policy: a policy influences it only the way
// it would in a real cluster, by leaving pods pending or by holding
// placeholders (SetPlaceholders).
//
// After every scheduling cycle the model
//  1. places pending placeholder units on free capacity (the scheduler
//     binding the lowest-priority pods once room appears);
//  2. scales up: every replica of a pending job and every pending
//     placeholder unit is packed first-fit onto the free capacity of ready
//     nodes and the whole capacity of nodes still launching (real replicas
//     may also use capacity held by placeholders, which they preempt);
//     each one that does not fit opens a new node of the cheapest catalogue
//     type that holds it (later pods share the nodes opened in the same
//     pass first, like the cluster-autoscaler's binpacking estimator). The
//     nodes are ready after Config.LaunchDelay and cost their hourly price
//     from the request on;
//  3. scales down: a ready node with nothing placed on it (no job, no
//     placeholder) for IdleTimeout seconds is released.
type Autoscaler struct {
	// IdleTimeout is how long a node must stay empty before it is released
	// (default 600 s, the cluster-autoscaler's scale-down-unneeded-time).
	IdleTimeout float64
	// MaxNodes bounds the nodes alive at once, launching ones included
	// (0: unbounded), like a node group's max size.
	MaxNodes int
	// PlacementGroup is given to nodes added for real jobs; nodes added for
	// a placeholder unit go to the unit's placement group.
	PlacementGroup string
}

// caState is the simulator's bookkeeping for the autoscaler model and for
// the elastic-cluster metrics.
type caState struct {
	alive      []int     // indices of nodes not released, ascending
	idleSince  []float64 // per node: start of the current empty stretch, -1 if not empty
	next       float64   // time of the scheduled scale-down check, +Inf if none
	provisions int       // nodes added by the model
	releases   int       // nodes released by the model
	peak       int       // most nodes alive at once
	// integrals in node-seconds (and dollars) for the elastic metrics
	nodeSec, overSec, phSec, overCost float64
	hourly                            []ElasticHour
}

// ElasticHour is one hour of an elastic run (from time Hour*3600): node
// time in node-hours, the part of it over-provisioned and held by
// placeholders, and the cost of the nodes in dollars. Experiments use it
// to measure a window of a run and to chart node counts over time.
type ElasticHour struct {
	Hour                                         int
	NodeHours, OverHours, PlaceholderHours, Cost float64
}

// nodeAdded and nodeGoneCA keep the alive list current for every node,
// whoever provisions or releases it.
func (s *Sim) nodeAdded(i int) {
	s.ca.alive = append(s.ca.alive, i)
	s.ca.idleSince = append(s.ca.idleSince, -1)
	s.ca.peak = max(s.ca.peak, len(s.ca.alive))
}

func (s *Sim) nodeReleased(i int) {
	k := sort.SearchInts(s.ca.alive, i)
	if k < len(s.ca.alive) && s.ca.alive[k] == i {
		s.ca.alive = append(s.ca.alive[:k], s.ca.alive[k+1:]...)
	}
	s.ca.idleSince[i] = -1
}

// provision adds a node of type it that becomes ready after the launch
// delay.
func (s *Sim) provision(it *cluster.InstanceType, group string) {
	n := s.addNode(cluster.Node{InstanceType: it.Name, Capacity: it.Capacity, PricePerHour: it.PricePerHour,
		PlacementGroup: group}, s.cfg.LaunchDelay == 0)
	if !n.Ready {
		s.push(event{t: s.now + s.cfg.LaunchDelay, kind: evNodeReady, node: n.Index})
	}
}

// releaseNode gives back a node with no job on it; its placeholders become
// pending.
func (s *Sim) releaseNode(n *cluster.NodeState) {
	s.dropPlaceholdersOn(n)
	if n.Ready {
		s.capReady = s.capReady.Sub(n.Capacity)
	}
	n.Gone, n.Ready = true, false
	s.nodeGone[n.Index] = s.now
	s.nodeReleased(n.Index)
}

// afterCycle runs the executor-side steps that follow a scheduling cycle:
// binding pending placeholder units, then the autoscaler model. It reports
// whether it added nodes (the run must go on for them).
func (s *Sim) afterCycle() bool {
	s.placePendingUnits()
	if s.cfg.Autoscaler == nil {
		return false
	}
	added := s.scaleUp()
	s.scanIdle()
	return added
}

// placePendingUnits binds placeholder units that found no node when they
// were set or were evicted since, now that capacity may be free.
func (s *Sim) placePendingUnits() {
	for i := range s.phUnits {
		if s.phUnits[i].node < 0 {
			s.placeUnit(&s.phUnits[i])
		}
	}
}

// caPod is one pod the autoscaler model must find room for.
type caPod struct {
	demand resource.Vector
	group  string // placement group of a placeholder unit
	// role is the replica group name of a real pod: an existing node with
	// a Role holds only replicas of that group (placement.Eligible), so the
	// model must not count its free capacity for other pods.
	role string
	real bool
}

// caNew is a node the current scale-up pass has decided to add.
type caNew struct {
	it    *cluster.InstanceType
	group string
	free  resource.Vector
}

// scaleUp adds nodes for pods that fit neither the free capacity of ready
// nodes nor the capacity of nodes still launching.
func (s *Sim) scaleUp() bool {
	var pods []caPod
	for js := range s.queue.All() {
		for _, g := range js.Job.Groups {
			if g.Constraint != nil && !g.Constraint.Admits(&cluster.Node{}) {
				continue // a catalogue node has no labels or taints: adding one would not help
			}
			for r := 0; r < g.Replicas; r++ {
				pods = append(pods, caPod{demand: g.Demand, role: g.Name, real: true})
			}
		}
	}
	for _, u := range s.phUnits {
		if u.node < 0 {
			pods = append(pods, caPod{demand: u.demand, group: u.group})
		}
	}
	if len(pods) == 0 {
		return false
	}
	// free: what a pod may use on each alive node; held: placeholder
	// capacity only a real pod may take.
	free := make([]resource.Vector, len(s.ca.alive))
	held := make([]resource.Vector, len(s.ca.alive))
	for k, i := range s.ca.alive {
		n := s.nodes[i]
		if n.Ready {
			free[k], held[k] = n.Free(), n.Placeholder
		} else {
			free[k] = n.Capacity
		}
	}
	var added []caNew
	for _, p := range pods {
		if s.caFitExisting(p, free, held) {
			continue
		}
		fit := false
		for a := range added {
			if (p.real || added[a].group == p.group) && p.demand.Fits(added[a].free) {
				added[a].free = added[a].free.Sub(p.demand)
				fit = true
				break
			}
		}
		if fit {
			continue
		}
		it := s.cheapestFit(p.demand)
		if it == nil {
			continue // arrive() rejects jobs no type holds; a placeholder may be too big
		}
		if m := s.cfg.Autoscaler.MaxNodes; m > 0 && len(s.ca.alive)+len(added) >= m {
			continue
		}
		g := p.group
		if p.real {
			g = s.cfg.Autoscaler.PlacementGroup
		}
		added = append(added, caNew{it: it, group: g, free: it.Capacity.Sub(p.demand)})
	}
	for _, a := range added {
		s.provision(a.it, a.group)
		s.ca.provisions++
	}
	return len(added) > 0
}

// caFitExisting takes room for pod p on an alive node, first-fit; real pods
// may use placeholder capacity, but only on nodes whose Role admits them;
// placeholder units only free capacity (and prefer their own placement
// group, falling back to any, and ignore Role, as placeUnit does).
// Nodes the model adds come from the catalogue and have no Role, so they
// hold any pod.
func (s *Sim) caFitExisting(p caPod, free, held []resource.Vector) bool {
	if p.real {
		for k, i := range s.ca.alive {
			if r := s.nodes[i].Role; r != "" && r != p.role {
				continue
			}
			if both := free[k].Add(held[k]); p.demand.Fits(both) {
				// use free capacity first, the rest from placeholders
				from := p.demand.Min(free[k])
				free[k] = free[k].Sub(from)
				held[k] = held[k].Sub(p.demand.Sub(from))
				return true
			}
		}
		return false
	}
	for pass := 0; pass < 2; pass++ {
		for k, i := range s.ca.alive {
			if pass == 0 && p.group != "" && s.nodes[i].PlacementGroup != p.group {
				continue
			}
			if p.demand.Fits(free[k]) {
				free[k] = free[k].Sub(p.demand)
				return true
			}
		}
	}
	return false
}

// cheapestFit returns the cheapest catalogue type whose capacity holds d
// (ties: the smaller GPU count, then the name), or nil.
func (s *Sim) cheapestFit(d resource.Vector) *cluster.InstanceType {
	var best *cluster.InstanceType
	for i := range s.cfg.Catalog {
		t := &s.cfg.Catalog[i]
		if !d.Fits(t.Capacity) {
			continue
		}
		if best == nil || cheaperType(t, best) {
			best = t
		}
	}
	return best
}

// cheaperType orders catalogue types for cheapestFit: price, then GPU
// count (a tie keeps the GPUs for pods that need them), then name.
func cheaperType(a, b *cluster.InstanceType) bool {
	if a.PricePerHour != b.PricePerHour {
		return a.PricePerHour < b.PricePerHour
	}
	if ga, gb := a.Capacity[resource.GPU], b.Capacity[resource.GPU]; ga != gb {
		return ga < gb
	}
	return a.Name < b.Name
}

// scanIdle starts or ends the empty stretch of every alive node and
// schedules a scale-down check for the earliest one to expire.
func (s *Sim) scanIdle() {
	timeout := s.idleTimeout()
	due := math.Inf(1)
	for _, i := range s.ca.alive {
		n := s.nodes[i]
		if n.Ready && n.Allocated.IsZero() {
			if s.ca.idleSince[i] < 0 {
				s.ca.idleSince[i] = s.now
			}
			due = math.Min(due, s.ca.idleSince[i]+timeout)
		} else {
			s.ca.idleSince[i] = -1
		}
	}
	if !math.IsInf(due, 1) && (due < s.ca.next || s.ca.next < s.now) {
		s.ca.next = due
		s.push(event{t: due, kind: evScaleDown})
	}
}

func (s *Sim) idleTimeout() float64 {
	if t := s.cfg.Autoscaler.IdleTimeout; t > 0 {
		return t
	}
	return 600
}

// scaleDown releases nodes that have been empty for the idle timeout.
func (s *Sim) scaleDown() {
	if s.ca.next <= s.now {
		s.ca.next = math.Inf(1)
	}
	timeout := s.idleTimeout()
	var gone []*cluster.NodeState
	for _, i := range s.ca.alive {
		n := s.nodes[i]
		since := s.ca.idleSince[i]
		if since >= 0 && n.Ready && n.Allocated.IsZero() && s.now-since >= timeout-1e-9 {
			gone = append(gone, n)
		}
	}
	for _, n := range gone {
		s.releaseNode(n)
		s.ca.releases++
	}
	s.scanIdle()
}

// integrateElastic adds dt seconds of node time: every alive node (also a
// launching one, which is already paid for) counts, and the share of its
// capacity not used by real jobs (the dominant share of its allocation
// without placeholders) is over-provisioned.
func (s *Sim) integrateElastic(dt float64) {
	if dt <= 0 || !s.elastic() {
		return
	}
	var nodes, over, ph, overPrice, price float64
	for _, i := range s.ca.alive {
		n := s.nodes[i]
		o, p := 1.0, 0.0
		if n.Ready {
			o = 1 - n.Allocated.Sub(n.Placeholder).DominantShare(n.Capacity)
			p = n.Placeholder.DominantShare(n.Capacity)
		}
		nodes++
		over += o
		ph += p
		overPrice += o * n.PricePerHour
		price += n.PricePerHour
	}
	s.ca.nodeSec += nodes * dt
	s.ca.overSec += over * dt
	s.ca.phSec += ph * dt
	s.ca.overCost += overPrice * dt / 3600
	// split [now, now+dt) over the hours it spans
	for t0, t1 := s.lastT, s.lastT+dt; t0 < t1; {
		h := int(math.Floor(t0 / 3600))
		end := math.Min(t1, float64(h+1)*3600)
		for len(s.ca.hourly) == 0 || s.ca.hourly[len(s.ca.hourly)-1].Hour < h {
			s.ca.hourly = append(s.ca.hourly, ElasticHour{Hour: s.hourAfterLast()})
		}
		e := &s.ca.hourly[len(s.ca.hourly)-1]
		f := (end - t0) / 3600
		e.NodeHours += nodes * f
		e.OverHours += over * f
		e.PlaceholderHours += ph * f
		e.Cost += price * f
		t0 = end
	}
}

// hourAfterLast is the hour the next ElasticHour covers: the first hour of
// the run, then consecutive hours.
func (s *Sim) hourAfterLast() int {
	if len(s.ca.hourly) == 0 {
		return int(math.Floor(s.lastT / 3600))
	}
	return s.ca.hourly[len(s.ca.hourly)-1].Hour + 1
}

// elasticSeries returns the hourly elastic figures (nil unless the elastic
// metrics are on).
func (s *Sim) elasticSeries() []ElasticHour { return s.ca.hourly }

func (s *Sim) elastic() bool { return s.cfg.ElasticMetrics || s.cfg.Autoscaler != nil }

// elasticMetrics writes the elastic-cluster metrics into the extra
// metrics: node-hours, over-provisioned node-hours and their cost,
// placeholder node-hours, the autoscaler's counts, and pending time (first
// start minus submit; a job never started counts as pending until the end
// of the run, rejected jobs are left out).
func (s *Sim) elasticMetrics(end float64) {
	if !s.elastic() {
		return
	}
	s.extra["node_hours"] = s.ca.nodeSec / 3600
	s.extra["overprovisioned_node_hours"] = s.ca.overSec / 3600
	s.extra["overprovisioned_cost"] = s.ca.overCost
	s.extra["placeholder_node_hours"] = s.ca.phSec / 3600
	s.extra["nodes_peak"] = float64(s.ca.peak)
	if s.cfg.Autoscaler != nil {
		s.extra["nodes_provisioned"] = float64(s.ca.provisions)
		s.extra["nodes_released"] = float64(s.ca.releases)
	}
	var pend []float64
	never := 0.0
	for _, rt := range s.jobs {
		switch {
		case rt.rec.Rejected || !rt.arrived:
		case rt.rec.FirstStart >= 0:
			pend = append(pend, rt.rec.FirstStart-rt.rec.Submit)
		default:
			pend = append(pend, end-rt.rec.Submit)
			never++
		}
	}
	s.extra["pending_mean_s"] = metrics.Mean(pend)
	s.extra["pending_p95_s"] = metrics.Percentile(pend, 95)
	s.extra["pending_never_started"] = never
}
