package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// apply validates one action against the current state and carries it out,
// or returns why not. Validation happens before any change, so a refused
// action leaves nothing half-applied.
func (s *Sim) apply(a policy.Action) error {
	switch a := a.(type) {
	case policy.Start:
		rt, err := s.jobIn(a.Job, cluster.Pending)
		if err != nil {
			return err
		}
		if err := s.validPlacement(rt, a.Placement, nil); err != nil {
			return err
		}
		s.queue.Remove(rt.st)
		rt.st.Phase = cluster.Running
		rt.st.Reason = ""
		if rt.st.FirstStart < 0 {
			rt.st.FirstStart = s.now
			rt.rec.FirstStart = s.now
		}
		if rt.suspended >= 0 {
			rt.rec.RescheduleDelays = append(rt.rec.RescheduleDelays, s.now-rt.suspended)
			rt.suspended = -1
		}
		rt.st.LastStart = s.now
		s.update(rt)
		s.allocate(rt, a.Placement)
		s.observe("start", rt.st, s.describe(a.Placement))
	case policy.Preempt:
		rt, err := s.jobIn(a.Job, cluster.Running)
		if err != nil {
			return err
		}
		if !(a.Grace >= 0) || math.IsInf(a.Grace, 0) {
			return fmt.Errorf("grace %v is not a finite number >= 0", a.Grace)
		}
		s.observe("preempt", rt.st, fmt.Sprintf("grace=%gs by=%s %s", a.Grace, a.By, a.Reason))
		if a.Grace == 0 {
			s.suspend(rt)
			return nil
		}
		st := rt.st
		s.update(rt)
		st.Phase = cluster.Suspending
		st.GraceEnds = s.now + a.Grace
		s.setRate(rt)
		for _, as := range st.Placement {
			n := s.nodes[as.Node]
			n.Releasing = n.Releasing.Add(st.Job.Groups[as.Group].Demand)
		}
		s.push(event{t: st.GraceEnds, kind: evGraceEnd, job: rt, ver: rt.pver})
	case policy.Migrate:
		rt, err := s.jobIn(a.Job, cluster.Running)
		if err != nil {
			return err
		}
		if err := s.validPlacement(rt, a.Placement, rt.st.Placement); err != nil {
			return err
		}
		if !slices.Equal(a.Placement.Counts(len(rt.st.Job.Groups)), rt.st.Counts()) {
			return fmt.Errorf("migration changes replica counts %v -> %v; use Resize", rt.st.Counts(), a.Placement.Counts(len(rt.st.Job.Groups)))
		}
		from := s.describe(rt.st.Placement)
		s.release(rt)
		st := rt.st
		st.Phase = cluster.Migrating
		st.Migrations++
		rt.rec.Migrations++
		pause := st.Job.CheckpointCost + st.Job.RestoreCost
		st.PauseEnds = s.now + pause
		s.allocate(rt, a.Placement)
		s.push(event{t: st.PauseEnds, kind: evPauseEnd, job: rt, ver: rt.pver})
		s.observe("migrate", st, from+" -> "+s.describe(a.Placement))
	case policy.Resize:
		rt, err := s.jobIn(a.Job, cluster.Running)
		if err != nil {
			return err
		}
		if err := s.validPlacement(rt, a.Placement, rt.st.Placement); err != nil {
			return err
		}
		// A group may not shrink below its minimum; it may stay below it
		// only while growing towards it (a non-gang start completing).
		cur, next := rt.st.Counts(), a.Placement.Counts(len(rt.st.Job.Groups))
		for g, c := range next {
			if grp := &rt.st.Job.Groups[g]; c < grp.Min && c < cur[g] {
				return fmt.Errorf("group %s: %d replicas is below min %d", grp.Name, c, grp.Min)
			}
		}
		s.release(rt)
		st := rt.st
		st.Resizes++
		rt.rec.Resizes++
		if c := st.Job.RescaleCost; c > 0 {
			st.Phase = cluster.Migrating
			st.PauseEnds = s.now + c
			s.allocate(rt, a.Placement)
			s.push(event{t: st.PauseEnds, kind: evPauseEnd, job: rt, ver: rt.pver})
		} else {
			s.allocate(rt, a.Placement)
		}
		s.observe("resize", st, s.describe(a.Placement))
	case policy.Reject:
		rt, err := s.jobIn(a.Job, cluster.Pending)
		if err != nil {
			return err
		}
		s.queue.Remove(rt.st)
		s.reject(rt, a.Reason)
	case policy.Wait:
		rt, err := s.jobIn(a.Job, cluster.Pending)
		if err != nil {
			return err
		}
		rt.st.Reason = a.Reason
	case policy.SetLabel:
		rt, ok := s.byID[a.Job]
		if !ok || !rt.arrived {
			return fmt.Errorf("unknown job %q", a.Job)
		}
		if rt.st.Labels == nil {
			rt.st.Labels = map[string]string{}
		}
		rt.st.Labels[a.Key] = a.Value
	case policy.ProvisionNode:
		var it *cluster.InstanceType
		for i := range s.cfg.Catalog {
			if s.cfg.Catalog[i].Name == a.InstanceType {
				it = &s.cfg.Catalog[i]
			}
		}
		if it == nil {
			return fmt.Errorf("instance type %q is not in the catalogue", a.InstanceType)
		}
		if a.Count <= 0 {
			return fmt.Errorf("count %d is not positive", a.Count)
		}
		for i := 0; i < a.Count; i++ {
			s.provision(it, a.PlacementGroup)
		}
	case policy.ReleaseNode:
		var n *cluster.NodeState
		for _, o := range s.nodes {
			if o.Name == a.Node && !o.Gone {
				n = o
			}
		}
		if n == nil {
			return fmt.Errorf("unknown node %q", a.Node)
		}
		if len(n.Jobs) > 0 {
			return fmt.Errorf("node %s still runs %d jobs", n.Name, len(n.Jobs))
		}
		s.releaseNode(n)
	case policy.SetPlaceholders:
		for _, p := range a.Placeholders {
			if p.Count < 0 || p.Demand.AnyNegative() || p.Demand.IsZero() {
				return fmt.Errorf("placeholder %q: count %d or demand %v is invalid", p.Name, p.Count, p.Demand)
			}
		}
		s.setPlaceholders(a.Placeholders)
	default:
		return fmt.Errorf("unsupported action %T", a)
	}
	return nil
}

func (s *Sim) jobIn(id string, want cluster.Phase) (*jobRT, error) {
	rt, ok := s.byID[id]
	if !ok || !rt.arrived {
		return nil, fmt.Errorf("unknown job %q", id)
	}
	if rt.st.Phase != want {
		return nil, fmt.Errorf("job %s is %s, not %s", id, rt.st.Phase, want)
	}
	return rt, nil
}

// validPlacement checks a placement for a job whose current placement (nil
// if pending) would be given back first.
func (s *Sim) validPlacement(rt *jobRT, p, current cluster.Placement) error {
	j := rt.st.Job
	if len(p) == 0 {
		return errors.New("empty placement")
	}
	for _, a := range p {
		if a.Group < 0 || a.Group >= len(j.Groups) {
			return fmt.Errorf("placement names group %d; the job has %d", a.Group, len(j.Groups))
		}
		if a.Node < 0 || a.Node >= len(s.nodes) {
			return fmt.Errorf("placement names node %d; there are %d", a.Node, len(s.nodes))
		}
		n := s.nodes[a.Node]
		if !n.Ready || n.Gone {
			return fmt.Errorf("node %s is not ready", n.Name)
		}
		if !placement.Eligible(n, j, a.Group) {
			return fmt.Errorf("node %s is for %s replicas, not %s", n.Name, n.Role, j.Groups[a.Group].Name)
		}
	}
	counts := p.Counts(len(j.Groups))
	for g, c := range counts {
		if c > j.Groups[g].Max {
			return fmt.Errorf("group %s: %d replicas is above max %d", j.Groups[g].Name, c, j.Groups[g].Max)
		}
	}
	need := p.DemandOn(j)
	have := current.DemandOn(j)
	for _, ni := range p.Nodes() { // in placement order, so the reason is reproducible
		d := need[ni]
		n := s.nodes[ni]
		free := n.Free().Add(n.Placeholder).Add(have[ni])
		if !d.Fits(free) {
			return fmt.Errorf("over capacity on node %s: needs %v, %v free (short of %s)", n.Name, d, free, d.Short(free))
		}
	}
	return nil
}

func (s *Sim) describe(p cluster.Placement) string {
	out := ""
	for i, ni := range p.Nodes() {
		if i > 0 {
			out += ","
		}
		out += s.nodes[ni].Name
	}
	return out
}

// Placeholders are modelled as units of capacity on nodes. A unit that
// finds no node stays pending; the count of pending units is what a
// cluster autoscaler would react to.
type phUnit struct {
	name   string
	demand resource.Vector
	group  string
	node   int // -1 when pending
}

func (s *Sim) setPlaceholders(ps []cluster.Placeholder) {
	for _, n := range s.nodes {
		s.dropPlaceholdersOn(n)
	}
	s.phUnits = s.phUnits[:0]
	s.placeholders = append([]cluster.Placeholder(nil), ps...)
	for _, p := range ps {
		for i := 0; i < p.Count; i++ {
			u := phUnit{name: p.Name, demand: p.Demand, group: p.PlacementGroup, node: -1}
			s.placeUnit(&u)
			s.phUnits = append(s.phUnits, u)
		}
	}
}

func (s *Sim) placeUnit(u *phUnit) {
	for pass := 0; pass < 2; pass++ {
		for _, n := range s.nodes {
			if !n.Ready || n.Gone || (pass == 0 && u.group != "" && n.PlacementGroup != u.group) {
				continue
			}
			if u.demand.Fits(n.Free()) {
				n.Allocated = n.Allocated.Add(u.demand)
				n.Placeholder = n.Placeholder.Add(u.demand)
				u.node = n.Index
				return
			}
		}
	}
}

func (s *Sim) dropPlaceholdersOn(n *cluster.NodeState) {
	for i := range s.phUnits {
		if s.phUnits[i].node == n.Index {
			s.phUnits[i].node = -1
		}
	}
	n.Allocated = n.Allocated.Sub(n.Placeholder)
	n.Placeholder = resource.Vector{}
}

// evictPlaceholders frees placeholder units on the nodes of p until the
// job's demand fits without them; evicted units become pending.
func (s *Sim) evictPlaceholders(p cluster.Placement, j *cluster.Job) {
	for ni, d := range p.DemandOn(j) {
		n := s.nodes[ni]
		for i := range s.phUnits {
			if d.Fits(n.Free()) || n.Placeholder.IsZero() {
				break
			}
			u := &s.phUnits[i]
			if u.node != ni {
				continue
			}
			n.Allocated = n.Allocated.Sub(u.demand)
			n.Placeholder = n.Placeholder.Sub(u.demand)
			u.node = -1
		}
	}
}

// PendingPlaceholders counts placeholder units that found no node.
func (s *Sim) PendingPlaceholders() int {
	c := 0
	for _, u := range s.phUnits {
		if u.node < 0 {
			c++
		}
	}
	return c
}
