package baseline

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// world builds a snapshot: one node per entry of freeGPUs (8 GPUs each),
// running jobs (tenant, gpus) on node 0, and pending jobs in queue order.
type pend struct {
	id, tenant string
	gpus       int64
	prio       int
}

func world(freeGPUs []int64, running []pend, pending []pend) *cluster.Snapshot {
	s := &cluster.Snapshot{Pending: cluster.NewQueue()}
	for i, f := range freeGPUs {
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: cluster.Node{Name: "n", Capacity: resource.New(8, 8, 8)}, Index: i, Ready: true,
			Allocated: resource.New(float64(8-f), float64(8-f), 8-f)})
	}
	mk := func(p pend) *cluster.JobState {
		return cluster.NewJobState(&cluster.Job{ID: p.id, Tenant: p.tenant, Priority: p.prio, Work: 1,
			Groups: []cluster.ReplicaGroup{{Name: "w", Demand: resource.New(float64(p.gpus), float64(p.gpus), p.gpus), Replicas: 1, Min: 1, Max: 1}}})
	}
	for _, r := range running {
		js := mk(r)
		js.Phase = cluster.Running
		js.Placement = cluster.Placement{{Node: 0}}
		s.Running = append(s.Running, js)
	}
	for _, p := range pending {
		s.Pending.(*cluster.Queue).PushBack(mk(p))
	}
	return s
}

func started(acts []policy.Action) []string {
	var out []string
	for _, a := range acts {
		if st, ok := a.(policy.Start); ok {
			out = append(out, st.Job)
		}
	}
	return out
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		free    []int64
		running []pend
		pending []pend
		want    []string
	}{
		{"fifo blocks behind the head", "fifo", []int64{4}, nil,
			[]pend{{id: "big", gpus: 8}, {id: "small", gpus: 1}}, nil},
		{"fifo starts in order while they fit", "fifo", []int64{4}, nil,
			[]pend{{id: "a", gpus: 2}, {id: "b", gpus: 2}, {id: "c", gpus: 1}}, []string{"a", "b"}},
		{"k8s-default skips the blocked job", "k8s-default", []int64{4}, nil,
			[]pend{{id: "big", gpus: 8}, {id: "small", gpus: 1}}, []string{"small"}},
		{"k8s-default honours priority", "k8s-default", []int64{2}, nil,
			[]pend{{id: "low", gpus: 2}, {id: "high", gpus: 2, prio: 5}}, []string{"high"}},
		{"drf favours the tenant with less", "drf", []int64{4, 0}, []pend{{id: "r", tenant: "A", gpus: 4}},
			[]pend{{id: "a1", tenant: "A", gpus: 4}, {id: "b1", tenant: "B", gpus: 4}}, []string{"b1"}},
		{"drf re-ranks after each start", "drf", []int64{4, 4}, nil,
			[]pend{{id: "a1", tenant: "A", gpus: 2}, {id: "a2", tenant: "A", gpus: 2}, {id: "b1", tenant: "B", gpus: 2}, {id: "b2", tenant: "B", gpus: 2}},
			[]string{"a1", "b1", "a2", "b2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := policy.NewRegistry()
			if err := r.Add(Entries()...); err != nil {
				t.Fatal(err)
			}
			p, err := r.New(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			got := started(p.Schedule(world(tc.free, tc.running, tc.pending)))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("started (-want +got):\n%s", d)
			}
		})
	}
}

func TestRegistryErrors(t *testing.T) {
	r := policy.NewRegistry()
	if err := r.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(Entries()[0]); err == nil {
		t.Error("duplicate registration accepted")
	}
	for _, bad := range []string{"nosuch", "fifo:placement=diagonal", "fifo:colour=red", "fifo:placement", "k8s-default:window=x", ""} {
		if _, err := r.New(bad); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
	if _, err := r.New("fifo:placement=spread"); err != nil {
		t.Error(err)
	}
}
