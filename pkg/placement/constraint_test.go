package placement_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/resource"
)

// pool builds a snapshot: nodes 0-1 a tainted, labelled GPU pool
// (pool=team-a, dedicated=team-a:NoSchedule), nodes 2-3 plain, node 4
// labelled zone=b; 8 GPUs each, all free.
func pool(t *testing.T, withTable bool) *cluster.Snapshot {
	t.Helper()
	s := &cluster.Snapshot{Pending: cluster.NewQueue()}
	if withTable {
		s.Eligibility = cluster.NewEligibility()
	}
	for i := range 5 {
		n := cluster.Node{Name: fmt.Sprintf("n%d", i), Capacity: resource.New(0, 0, 8)}
		switch {
		case i < 2:
			n.Labels = map[string]string{"pool": "team-a"}
			n.Taints = []cluster.Taint{{Key: "dedicated", Value: "team-a", Effect: cluster.TaintNoSchedule}}
		case i == 4:
			n.Labels = map[string]string{"zone": "b"}
		}
		s.Nodes = append(s.Nodes, &cluster.NodeState{Node: n, Index: i, Ready: true})
	}
	return s
}

type jobB struct{ j cluster.Job }

func mkJob(replicas int, gpus int64) *jobB {
	return &jobB{cluster.Job{ID: "j", Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(0, 0, gpus), Replicas: replicas, Min: replicas, Max: replicas}}}}
}

func (b *jobB) spec(t *testing.T, s constraint.Spec) *jobB {
	t.Helper()
	c, err := constraint.New(s)
	if err != nil {
		t.Fatal(err)
	}
	b.j.Groups[0].Constraint = c
	return b
}
func (b *jobB) obj() *cluster.Job { return &b.j }

var (
	tolerateTeam = constraint.Spec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "team-a", Effect: "NoSchedule"}}}
	teamOnly     = constraint.Spec{NodeSelector: map[string]string{"pool": "team-a"}, Tolerations: tolerateTeam.Tolerations}
	preferZoneB  = constraint.Spec{Affinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
		{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"b"}}}}}}}}
)

func nodesOf(p cluster.Placement) []int {
	var out []int
	for _, a := range p {
		out = append(out, a.Node)
	}
	return out
}

func TestPlaceHonoursConstraints(t *testing.T) {
	tests := []struct {
		name    string
		job     func(t *testing.T) *cluster.Job
		opt     placement.Options
		want    []int
		wantErr string
	}{
		{"no toleration: never the tainted pool", func(t *testing.T) *cluster.Job { return mkJob(3, 8).obj() },
			placement.Options{Strategy: placement.FirstFit}, []int{2, 3, 4}, ""},
		{"no toleration: the pool is not enough", func(t *testing.T) *cluster.Job { return mkJob(4, 8).obj() },
			placement.Options{Strategy: placement.Spread}, nil, "no node has gpu=8 free for replica 4 of group worker; group worker may use 3 of 5 nodes"},
		{"selector and toleration: only the pool", func(t *testing.T) *cluster.Job { return mkJob(2, 4).spec(t, teamOnly).obj() },
			placement.Options{Strategy: placement.Spread}, []int{0, 1}, ""},
		{"selector: gang on one node in the pool", func(t *testing.T) *cluster.Job { return mkJob(2, 4).spec(t, teamOnly).obj() },
			placement.Options{Strategy: placement.Spread, Gang: placement.OneNodeOnly}, []int{0, 0}, ""},
		{"toleration alone: anywhere, first fit takes the pool", func(t *testing.T) *cluster.Job { return mkJob(1, 8).spec(t, tolerateTeam).obj() },
			placement.Options{Strategy: placement.FirstFit}, []int{0}, ""},
		{"preferred affinity wins over spread", func(t *testing.T) *cluster.Job { return mkJob(1, 1).spec(t, preferZoneB).obj() },
			placement.Options{Strategy: placement.Spread}, []int{4}, ""},
		{"preferred affinity never crosses a taint", func(t *testing.T) *cluster.Job { return mkJob(4, 8).spec(t, preferZoneB).obj() },
			placement.Options{Strategy: placement.Spread}, nil, "may use 3 of 5 nodes"},
	}
	for _, tc := range tests {
		for _, table := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/table=%v", tc.name, table), func(t *testing.T) {
				s := pool(t, table)
				l := placement.NewLedger(s, true)
				p, err := placement.Place(l, tc.job(t), tc.job(t).RequestedCounts(), tc.opt)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, nodesOf(p)); d != "" {
					t.Errorf("nodes (-want +got):\n%s", d)
				}
				for _, a := range p {
					if !placement.Eligible(s.Nodes[a.Node], tc.job(t), a.Group) {
						t.Errorf("placed on %s, which Eligible refuses: %s", s.Nodes[a.Node].Name, placement.Why(s.Nodes[a.Node], tc.job(t), a.Group))
					}
				}
			})
		}
	}
}

func TestWhyNamesTheRule(t *testing.T) {
	s := pool(t, true)
	s.Nodes[3].Role = "ps"
	j := mkJob(1, 1).spec(t, constraint.Spec{NodeSelector: map[string]string{"zone": "b"}}).obj()
	var got []string
	for _, n := range s.Nodes {
		got = append(got, placement.Why(n, j, 0))
	}
	want := []string{
		"taint-toleration: node(s) had untolerated taint {dedicated: team-a}",
		"taint-toleration: node(s) had untolerated taint {dedicated: team-a}",
		"node-affinity: node(s) didn't match Pod's node affinity/selector",
		"node-role: node is for ps",
		"",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Why (-want +got):\n%s", d)
	}
}

func TestEligibleSetFastPath(t *testing.T) {
	s := pool(t, true)
	for _, n := range s.Nodes {
		n.Taints, n.Labels = nil, nil
	}
	l := placement.NewLedger(s, true)
	if set := l.Eligible(mkJob(1, 1).obj(), 0); !set.All() || set.MaxPref != 0 {
		t.Errorf("untainted cluster, unconstrained job: set %+v, want All", set)
	}
	s = pool(t, true)
	l = placement.NewLedger(s, true)
	set := l.Eligible(mkJob(1, 1).obj(), 0)
	if set.All() || set.Len() != 3 || set.Has(0) || !set.Has(2) {
		t.Errorf("tainted pool, no toleration: len %d has(0) %v", set.Len(), set.Has(0))
	}
	// Nodes appended later (a provisioned node) are added to the cached set.
	s.Nodes = append(s.Nodes, &cluster.NodeState{Node: cluster.Node{Name: "n5", Capacity: resource.New(0, 0, 8),
		Taints: []cluster.Taint{{Key: "x", Effect: cluster.TaintNoExecute}}}, Index: 5, Ready: true})
	set = l.Eligible(mkJob(1, 1).obj(), 0)
	if set.Len() != 3 || set.Has(5) {
		t.Errorf("after a tainted node joined: len %d has(5) %v", set.Len(), set.Has(5))
	}
}
