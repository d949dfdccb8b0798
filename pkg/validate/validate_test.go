package validate

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// world is a State built by the fluent builders below. Free is each
// node's capacity less its allocation plus its placeholders, as both
// executors compute it at the start of a cycle.
type world struct {
	jobs    map[string]*cluster.JobState
	nodes   []*cluster.NodeState
	catalog []cluster.InstanceType
	limit   func(policy.Action) error
}

func (w *world) Job(id string) *cluster.JobState { return w.jobs[id] }
func (w *world) Nodes() []*cluster.NodeState     { return w.nodes }
func (w *world) Catalog() []cluster.InstanceType { return w.catalog }
func (w *world) Free(i int) resource.Vector      { n := w.nodes[i]; return n.Free().Add(n.Placeholder) }
func (w *world) Unsupported(a policy.Action) error {
	if w.limit == nil {
		return nil
	}
	return w.limit(a)
}
func makeWorld() *world { return &world{jobs: map[string]*cluster.JobState{}} }
func (w *world) node(n *nodeB) *world {
	n.ns.Index = len(w.nodes)
	w.nodes = append(w.nodes, &n.ns)
	return w
}
func (w *world) types(ts ...cluster.InstanceType) *world { w.catalog = ts; return w }

// pending adds a pending job.
func (w *world) pending(j *jobB) *world {
	w.jobs[j.j.ID] = cluster.NewJobState(&j.j)
	return w
}

// running adds a job running on placement p and charges its demand to
// the nodes.
func (w *world) running(j *jobB, p ...cluster.Assignment) *world {
	js := cluster.NewJobState(&j.j)
	js.Phase = cluster.Running
	js.Placement = p
	for _, a := range p {
		n := w.nodes[a.Node]
		n.Allocated = n.Allocated.Add(j.j.Groups[a.Group].Demand)
	}
	for _, ni := range js.Placement.Nodes() {
		w.nodes[ni].Jobs = append(w.nodes[ni].Jobs, js)
	}
	w.jobs[j.j.ID] = js
	return w
}

// phase sets a job's phase.
func (w *world) phase(id string, ph cluster.Phase) *world { w.jobs[id].Phase = ph; return w }

type nodeB struct{ ns cluster.NodeState }

// makeNode is a ready node with 8 cores, 32 GiB and 4 GPUs.
func makeNode(name string) *nodeB {
	return &nodeB{cluster.NodeState{Node: cluster.Node{Name: name, Capacity: resource.New(8, 32, 4)}, Ready: true}}
}
func (b *nodeB) role(r string) *nodeB { b.ns.Role = r; return b }
func (b *nodeB) launching() *nodeB    { b.ns.Ready = false; return b }
func (b *nodeB) gone() *nodeB         { b.ns.Ready, b.ns.Gone = false, true; return b }
func (b *nodeB) placeholder(v resource.Vector) *nodeB {
	b.ns.Allocated = b.ns.Allocated.Add(v)
	b.ns.Placeholder = b.ns.Placeholder.Add(v)
	return b
}

type jobB struct{ j cluster.Job }

// makeJob is a job with no groups; add them with group.
func makeJob(id string) *jobB { return &jobB{cluster.Job{ID: id, Work: 100}} }

// group adds a replica group whose replicas each need 1 core, 1 GiB and
// gpus GPUs.
func (b *jobB) group(name string, gpus int64, replicas, lo, hi int) *jobB {
	b.j.Groups = append(b.j.Groups, cluster.ReplicaGroup{Name: name, Demand: resource.New(1, 1, gpus), Replicas: replicas, Min: lo, Max: hi})
	return b
}

func on(g, node int) cluster.Assignment { return cluster.Assignment{Group: g, Node: node} }

func place(as ...cluster.Assignment) cluster.Placement { return as }

func TestCheck(t *testing.T) {
	// Two ready nodes, a launching one, a gone one and a PS-only one.
	base := func() *world {
		return makeWorld().node(makeNode("n0")).node(makeNode("n1")).node(makeNode("n2").launching()).
			node(makeNode("n3").gone()).node(makeNode("n4").role("ps"))
	}
	w2 := func() *jobB { return makeJob("w2").group("worker", 2, 2, 2, 2) }                         // 2 workers, 2 GPUs each
	el := func() *jobB { return makeJob("el").group("worker", 1, 2, 1, 4) }                         // elastic 1..4, wants 2
	ps := func() *jobB { return makeJob("ps").group("worker", 1, 1, 1, 1).group("ps", 0, 1, 1, 1) } // worker + ps
	tests := []struct {
		name   string
		w      *world
		action policy.Action
		want   string // "" when accepted
	}{
		// Start
		{"start", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 0), on(0, 1))}, ""},
		{"start unknown job", base(), policy.Start{Job: "zz", Placement: place(on(0, 0))}, `unknown job "zz"`},
		{"start running job", base().running(w2(), on(0, 0), on(0, 0)), policy.Start{Job: "w2", Placement: place(on(0, 1))}, "job w2 is Running, not Pending"},
		{"start empty", base().pending(w2()), policy.Start{Job: "w2"}, "empty placement"},
		{"start bad group", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(1, 0))}, "placement names group 1; the job has 1"},
		{"start bad node", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 9))}, "placement names node 9; there are 5"},
		{"start launching node", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 2))}, "node n2 is not ready"},
		{"start gone node", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 3))}, "node n3 is not ready"},
		{"start wrong role", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 4))}, "node n4 is for ps replicas, not worker"},
		{"start right role", base().pending(ps()), policy.Start{Job: "ps", Placement: place(on(0, 0), on(1, 4))}, ""},
		{"start above max", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 0), on(0, 0), on(0, 1))}, "group worker: 3 replicas is above max 2"},
		{"start below min (non-gang)", base().pending(w2()), policy.Start{Job: "w2", Placement: place(on(0, 0))}, ""},
		{"start over capacity", base().pending(w2()).running(makeJob("x").group("worker", 3, 1, 1, 1), on(0, 0)),
			policy.Start{Job: "w2", Placement: place(on(0, 0))}, "over capacity on node n0: needs cpu=1 memory=1Gi gpu=2, cpu=7 memory=31Gi gpu=1 free (short of gpu)"},
		{"start takes placeholder capacity", makeWorld().node(makeNode("n0").placeholder(resource.New(8, 32, 4))).pending(w2()),
			policy.Start{Job: "w2", Placement: place(on(0, 0), on(0, 0))}, ""},
		// Preempt
		{"preempt", base().running(w2(), on(0, 0), on(0, 1)), policy.Preempt{Job: "w2", Grace: 30}, ""},
		{"preempt no grace", base().running(w2(), on(0, 0), on(0, 1)), policy.Preempt{Job: "w2"}, ""},
		{"preempt pending", base().pending(w2()), policy.Preempt{Job: "w2"}, "job w2 is Pending, not Running"},
		{"preempt suspending", base().running(w2(), on(0, 0)).phase("w2", cluster.Suspending), policy.Preempt{Job: "w2"}, "job w2 is Suspending, not Running"},
		{"preempt negative grace", base().running(w2(), on(0, 0)), policy.Preempt{Job: "w2", Grace: -1}, "grace -1 is not a finite number >= 0"},
		{"preempt NaN grace", base().running(w2(), on(0, 0)), policy.Preempt{Job: "w2", Grace: math.NaN()}, "grace NaN is not a finite number >= 0"},
		// (b) the Kubernetes executor used to accept +Inf (and round it
		// with int64(math.Ceil(+Inf))).
		{"preempt infinite grace", base().running(w2(), on(0, 0)), policy.Preempt{Job: "w2", Grace: math.Inf(1)}, "grace +Inf is not a finite number >= 0"},
		// Migrate
		{"migrate", base().running(w2(), on(0, 0), on(0, 0)), policy.Migrate{Job: "w2", Placement: place(on(0, 1), on(0, 1))}, ""},
		{"migrate onto its own node", makeWorld().node(makeNode("n0")).running(w2(), on(0, 0), on(0, 0)),
			policy.Migrate{Job: "w2", Placement: place(on(0, 0), on(0, 0))}, ""},
		{"migrate pending", base().pending(w2()), policy.Migrate{Job: "w2", Placement: place(on(0, 1))}, "job w2 is Pending, not Running"},
		{"migrate changes counts", base().running(el(), on(0, 0), on(0, 0)), policy.Migrate{Job: "el", Placement: place(on(0, 1))},
			"migration changes replica counts [2] -> [1]; use Resize"},
		{"migrate above max", base().running(w2(), on(0, 0), on(0, 0)), policy.Migrate{Job: "w2", Placement: place(on(0, 1), on(0, 1), on(0, 1))},
			"group worker: 3 replicas is above max 2"},
		{"migrate over capacity", base().running(w2(), on(0, 0), on(0, 0)).running(makeJob("x").group("worker", 3, 1, 1, 1), on(0, 1)),
			policy.Migrate{Job: "w2", Placement: place(on(0, 0), on(0, 1))}, "over capacity on node n1: needs cpu=1 memory=1Gi gpu=2, cpu=7 memory=31Gi gpu=1 free (short of gpu)"},
		// Resize
		{"resize grow", base().running(el(), on(0, 0), on(0, 0)), policy.Resize{Job: "el", Placement: place(on(0, 0), on(0, 0), on(0, 1))}, ""},
		{"resize shrink to min", base().running(el(), on(0, 0), on(0, 0)), policy.Resize{Job: "el", Placement: place(on(0, 0))}, ""},
		{"resize above max", base().running(el(), on(0, 0)), policy.Resize{Job: "el", Placement: place(on(0, 0), on(0, 0), on(0, 0), on(0, 1), on(0, 1))},
			"group worker: 5 replicas is above max 4"},
		// (a) growing towards min is allowed (tf-operator binds the pods
		// of a partial start as room appears); shrinking below it is not.
		{"resize grow below min", base().running(ps(), on(1, 4)), policy.Resize{Job: "ps", Placement: place(on(1, 4), on(0, 0))}, ""},
		{"resize stay below min", base().running(w2(), on(0, 0)), policy.Resize{Job: "w2", Placement: place(on(0, 1))}, ""},
		{"resize shrink below min", base().running(w2(), on(0, 0), on(0, 0)), policy.Resize{Job: "w2", Placement: place(on(0, 0))},
			"group worker: 1 replicas is below min 2"},
		{"resize empty", base().running(el(), on(0, 0)), policy.Resize{Job: "el"}, "empty placement"},
		{"resize migrating", base().running(el(), on(0, 0)).phase("el", cluster.Migrating), policy.Resize{Job: "el", Placement: place(on(0, 0))},
			"job el is Migrating, not Running"},
		// Reject, Wait, SetLabel
		{"reject", base().pending(w2()), policy.Reject{Job: "w2"}, ""},
		{"reject running", base().running(w2(), on(0, 0)), policy.Reject{Job: "w2"}, "job w2 is Running, not Pending"},
		{"wait", base().pending(w2()), policy.Wait{Job: "w2"}, ""},
		{"wait unknown", base(), policy.Wait{Job: "w2"}, `unknown job "w2"`},
		{"wait rejected", base().pending(w2()).phase("w2", cluster.Rejected), policy.Wait{Job: "w2"}, "job w2 is Rejected, not Pending"},
		{"label running", base().running(w2(), on(0, 0)), policy.SetLabel{Job: "w2", Key: "k", Value: "v"}, ""},
		{"label unknown", base(), policy.SetLabel{Job: "w2", Key: "k"}, `unknown job "w2"`},
		// Nodes
		{"provision", base().types(cluster.InstanceType{Name: "big"}), policy.ProvisionNode{InstanceType: "big", Count: 2}, ""},
		{"provision unknown type", base(), policy.ProvisionNode{InstanceType: "big", Count: 1}, `instance type "big" is not in the catalogue`},
		{"provision none", base().types(cluster.InstanceType{Name: "big"}), policy.ProvisionNode{InstanceType: "big"}, "count 0 is not positive"},
		{"release", base(), policy.ReleaseNode{Node: "n1"}, ""},
		{"release launching", base(), policy.ReleaseNode{Node: "n2"}, ""},
		{"release gone", base(), policy.ReleaseNode{Node: "n3"}, `unknown node "n3"`},
		{"release busy", base().running(w2(), on(0, 1)), policy.ReleaseNode{Node: "n1"}, "node n1 still runs 1 jobs"},
		// Placeholders
		{"placeholders", base(), policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "p", Demand: resource.New(1, 1, 0), Count: 2}}}, ""},
		{"placeholders none", base(), policy.SetPlaceholders{}, ""},
		{"placeholders negative count", base(), policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "p", Demand: resource.New(1, 1, 0), Count: -1}}},
			`placeholder "p": count -1 or demand cpu=1 memory=1Gi is invalid`},
		{"placeholders zero demand", base(), policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "p", Count: 1}}},
			`placeholder "p": count 1 or demand 0 is invalid`},
		{"nil action", base(), nil, "unsupported action <nil>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := Check(tc.w, tc.action); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check(%#v) (-want +got):\n%s", tc.action, diff)
			}
		})
	}
}

// (c) A placement over capacity on several nodes is refused naming the
// first node it uses, every time (the Kubernetes executor used to range
// over a map and name any of them).
func TestCheckDeterministic(t *testing.T) {
	w := makeWorld()
	for _, n := range []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"} {
		w.node(makeNode(n))
	}
	w.pending(makeJob("j").group("worker", 4, 8, 8, 8))
	// Two replicas of 4 GPUs on each of four nodes: all four are over
	// capacity.
	var p cluster.Placement
	for _, ni := range []int{5, 2, 7, 0} {
		p = append(p, on(0, ni), on(0, ni))
	}
	const want = "over capacity on node n5: needs cpu=2 memory=2Gi gpu=8, cpu=8 memory=32Gi gpu=4 free (short of gpu)"
	for i := range 200 {
		err := Check(w, policy.Start{Job: "j", Placement: p})
		if err == nil || err.Error() != want {
			t.Fatalf("try %d: %v, want %s", i, err, want)
		}
	}
}

// An executor's own limits are asked first.
func TestCheckLimited(t *testing.T) {
	noNodes := errors.New("left to the cluster autoscaler")
	w := makeWorld().node(makeNode("n0")).types(cluster.InstanceType{Name: "big"})
	w.limit = func(a policy.Action) error {
		if _, ok := a.(policy.ProvisionNode); ok {
			return noNodes
		}
		return nil
	}
	if err := Check(w, policy.ProvisionNode{InstanceType: "big", Count: 1}); !errors.Is(err, noNodes) {
		t.Errorf("provision: %v, want the executor's limit", err)
	}
	if err := Check(w, policy.ReleaseNode{Node: "n0"}); err != nil {
		t.Errorf("release: %v", err)
	}
}

// Committed holds a stored placement's pending part to a Start's rules
// and the whole to the group bounds; what is carried out is not checked.
func TestCommitted(t *testing.T) {
	base := func() *world {
		return makeWorld().node(makeNode("n0")).node(makeNode("n1")).node(makeNode("n2").launching())
	}
	w2 := makeJob("w2").group("worker", 2, 2, 2, 2)
	tests := []struct {
		name        string
		w           *world
		whole, todo cluster.Placement
		want        string
	}{
		{"all carried out, node not ready since", base(), place(on(0, 2), on(0, 2)), nil, ""},
		{"pending part fits", base(), place(on(0, 0), on(0, 1)), place(on(0, 1)), ""},
		{"pending part on a node not ready", base(), place(on(0, 0), on(0, 2)), place(on(0, 2)), "node n2 is not ready"},
		{"pending part over capacity", base().running(makeJob("x").group("worker", 3, 1, 1, 1), on(0, 1)), place(on(0, 1), on(0, 1)), place(on(0, 1), on(0, 1)),
			"over capacity on node n1: needs cpu=2 memory=2Gi gpu=4, cpu=7 memory=31Gi gpu=1 free (short of gpu)"},
		{"above max, carried out or not", base(), place(on(0, 0), on(0, 0), on(0, 1)), nil, "group worker: 3 replicas is above max 2"},
		{"bad group", base(), place(on(1, 0)), nil, "placement names group 1; the job has 1"},
		{"bad node", base(), place(on(0, 7)), nil, "placement names node 7; there are 3"},
		{"empty", base(), nil, nil, "empty placement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := Committed(tc.w, &w2.j, tc.whole, tc.todo); err != nil {
				got = err.Error()
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
