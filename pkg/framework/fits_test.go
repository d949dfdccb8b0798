package framework_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// passAll is a Filter that refuses no node: a profile with it places by
// the same rules as one without, but the Runtime cannot tell, so it places
// every replica instead of answering from the room (exactRoom).
type passAll struct{}

func (passAll) Name() string { return "pass-all" }
func (passAll) Filter(*framework.Cycle, *cluster.JobState, int, *cluster.NodeState) *framework.Status {
	return nil
}

// detailed renders actions with the Wait reasons.
func detailed(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case policy.Start:
			out = append(out, fmt.Sprintf("start %s %v", a.Job, a.Placement))
		case policy.Wait:
			out = append(out, "wait "+a.Job+": "+a.Reason)
		default:
			out = append(out, policy.Kind(a)+" "+a.Target())
		}
	}
	return out
}

// TestRoomAnswersAreThePlacements checks the generic placement's answers
// from the room alone (a failure found without placing, noRoomMiss; a
// NoRoom or Fits from FitsNow) against placing every replica: on random
// clusters (nodes short of room, not ready, with a role) and random jobs
// (one or two groups, one of them of CPU only), a profile whose Filter
// plugins are the role rule schedules the same starts with the same Wait
// reasons, word for word, as one with a Filter that refuses nothing, in
// every gang mode; and the same starts as the exhaustive walk, which asks
// no FitsNow: a job parked by a wrong answer (NoRoom, or no Fits) would
// not start after the release of room before the second cycle.
func TestRoomAnswersAreThePlacements(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 23))
	gangs := []placement.Gang{placement.PerReplica, placement.OneNodeFirst, placement.OneNodeOnly}
	compared := 0
	for trial := range 300 {
		w := newWorld()
		for i := range 2 + r.IntN(6) {
			switch r.IntN(6) {
			case 0:
				w.roleNode(fmt.Sprintf("ps%d", i), "ps")
			default:
				w.node(fmt.Sprintf("n%d", i), int64(r.IntN(9)))
				if r.IntN(8) == 0 {
					w.s.Nodes[len(w.s.Nodes)-1].Ready = false
				}
			}
		}
		var jobs []*cluster.Job
		for k := range 1 + r.IntN(6) {
			j := job(fmt.Sprintf("j%d", k), int64(1+r.IntN(4)), 1+r.IntN(5))
			j.Groups[0].Min = j.Groups[0].Replicas
			if r.IntN(2) == 0 {
				j.Groups = append(j.Groups, cluster.ReplicaGroup{Name: "ps", Demand: resource.New(float64(1+r.IntN(3)), 1, 0),
					Replicas: 1 + r.IntN(2)})
				j.Groups[1].Min, j.Groups[1].Max = j.Groups[1].Replicas, j.Groups[1].Replicas
			}
			jobs = append(jobs, j)
		}
		gang := gangs[r.IntN(len(gangs))]
		// The room released before the second cycle, per node.
		release := make([]int64, len(w.s.Nodes))
		for i := range release {
			release[i] = int64(r.IntN(5))
		}
		var got [3][]string
		variants := []struct {
			filters    []framework.Filter
			exhaustive bool
		}{{[]framework.Filter{framework.NodeRole{}}, false}, {[]framework.Filter{framework.NodeRole{}, passAll{}}, false},
			{[]framework.Filter{framework.NodeRole{}}, true}}
		for v, vr := range variants {
			rt, err := scheduler.New(framework.Profile{Name: "t", Filter: vr.filters, Gang: gang,
				Score: []framework.WeightedScore{{Score: lastNode{}, Weight: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			if vr.exhaustive {
				rt.WithoutQueue()
			}
			w1 := &world{s: &cluster.Snapshot{Pending: cluster.NewQueue(), Seed: 1, Nodes: w.s.Nodes}}
			w1.pending(jobs...)
			acts := rt.Schedule(w1.s)
			// The second cycle, after room was released, asks the queue's
			// FitsNow for the jobs the first one parked.
			started := map[string]bool{}
			for _, a := range acts {
				if st, ok := a.(policy.Start); ok {
					started[st.Job] = true
				}
			}
			w2 := &world{s: &cluster.Snapshot{Pending: cluster.NewQueue(), Seed: 1, Now: 60}}
			for i, n := range w.s.Nodes {
				m := *n
				m.Allocated = m.Allocated.Sub(resource.New(float64(release[i]), float64(release[i]), release[i])).Max(resource.Vector{})
				w2.s.Nodes = append(w2.s.Nodes, &m)
			}
			for _, j := range jobs {
				if !started[j.ID] {
					w2.pending(j)
				}
			}
			got[v] = append(detailed(acts), detailed(rt.Schedule(w2.s))...)
		}
		if diff := gocmp.Diff(got[1], got[0]); diff != "" {
			t.Fatalf("trial %d (%v): role rule only vs a pass-all filter (-placed +from the room):\n%s", trial, gang, diff)
		}
		// The exhaustive walk tries every waiting job (a Wait each); the
		// queue parks them: the starts are the same.
		if diff := gocmp.Diff(starts(got[2]), starts(got[0])); diff != "" {
			t.Fatalf("trial %d (%v): starts without vs with the queue (-exhaustive +queue):\n%s", trial, gang, diff)
		}
		for _, a := range got[0] {
			if a[:4] == "wait" {
				compared++
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d waits compared; the trials are too easy", compared)
	}
}

func starts(acts []string) []string {
	var out []string
	for _, a := range acts {
		if strings.HasPrefix(a, "start") {
			out = append(out, a)
		}
	}
	return out
}

// outOfBounds is a Size plugin that breaks its contract: it proposes one
// replica fewer than the group's minimum.
type outOfBounds struct{}

func (outOfBounds) Name() string { return "out-of-bounds" }
func (outOfBounds) Size(_ *framework.Cycle, js *cluster.JobState) [][]int {
	return [][]int{{js.Job.Groups[0].Min - 1}}
}

// TestSizesOutsideBoundsAreNotTried: counts below a group's minimum are
// not placed (FitsNow's NoRoom reads the minimums), and the job waits with
// a reason that names the plugin.
func TestSizesOutsideBoundsAreNotTried(t *testing.T) {
	j := job("j1", 1, 4)
	j.Groups[0].Min = 3
	rt, err := scheduler.New(framework.Profile{Name: "t", Size: outOfBounds{}, Score: pack()})
	if err != nil {
		t.Fatal(err)
	}
	got := detailed(rt.Schedule(newWorld().node("a", 8).pending(j).s))
	want := []string{"wait j1: size plugin out-of-bounds proposed no counts within the groups' [min, max]"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}
