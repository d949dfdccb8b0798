package sim

import (
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/validate"
)

// apply validates one action against the current state (validate.Check)
// and carries it out, or returns why not. Validation happens before any
// change, so a refused action leaves nothing half-applied.
func (s *Sim) apply(a policy.Action) error {
	if err := validate.Check((*view)(s), a); err != nil {
		return err
	}
	switch a := a.(type) {
	case policy.Start:
		rt := s.byID[a.Job]
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
		s.observe(ObsStart, rt.st, s.describe(a.Placement))
	case policy.Preempt:
		rt := s.byID[a.Job]
		s.observe(ObsPreempt, rt.st, fmt.Sprintf("grace=%gs by=%s %s", a.Grace, a.By, a.Reason))
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
		rt := s.byID[a.Job]
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
		s.observe(ObsMigrate, st, from+" -> "+s.describe(a.Placement))
	case policy.Resize:
		rt := s.byID[a.Job]
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
		s.observe(ObsResize, st, s.describe(a.Placement))
	case policy.Reject:
		rt := s.byID[a.Job]
		s.queue.Remove(rt.st)
		s.reject(rt, a.Reason)
	case policy.Wait:
		s.byID[a.Job].st.Reason = a.Reason
	case policy.SetLabel:
		st := s.byID[a.Job].st
		if st.Labels == nil {
			st.Labels = map[string]string{}
		}
		st.Labels[a.Key] = a.Value
	case policy.ProvisionNode:
		var it *cluster.InstanceType
		for i := range s.cfg.Catalog {
			if s.cfg.Catalog[i].Name == a.InstanceType {
				it = &s.cfg.Catalog[i] // the last of a name, as always
			}
		}
		for range a.Count {
			s.provision(it, a.PlacementGroup)
		}
	case policy.ReleaseNode:
		s.releaseNode(validate.Node((*view)(s), a.Node))
	case policy.SetPlaceholders:
		s.setPlaceholders(a.Placeholders)
	}
	return nil
}

// view is the simulator as validate.Check reads it: its live state, which
// each applied action updates at once.
type view Sim

var _ validate.State = (*view)(nil)

// Job implements validate.State: a job that has arrived, in any phase.
func (v *view) Job(id string) *cluster.JobState {
	if rt, ok := v.byID[id]; ok && rt.arrived {
		return rt.st
	}
	return nil
}

// Nodes implements validate.State.
func (v *view) Nodes() []*cluster.NodeState { return v.nodes }

// Free implements validate.State.
func (v *view) Free(i int) resource.Vector {
	n := v.nodes[i]
	return n.Free().Add(n.Placeholder)
}

// Catalog implements validate.State.
func (v *view) Catalog() []cluster.InstanceType { return v.cfg.Catalog }

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
