package sim

import (
	"context"
	"math"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// caCatalog has a small and a large GPU type, priced so that the small
// one is cheapest for a 1-GPU pod and only the large one holds 4 GPUs.
var caCatalog = []cluster.InstanceType{
	{Name: "big", Capacity: resource.New(32, 128, 8), PricePerHour: 8},
	{Name: "small", Capacity: resource.New(4, 16, 1), PricePerHour: 1},
	{Name: "mid", Capacity: resource.New(16, 64, 4), PricePerHour: 5},
}

// caStarter starts every pending job first-fit on nodes whose Role admits
// the replica (ignoring placeholders'
// priority is the executor's business) and may add fixed actions on the
// first cycle; it can be time-driven to force a cycle on every tick.
type caStarter struct {
	first []policy.Action
	timed bool
	cycle int
}

func (p *caStarter) Name() string     { return "ca-starter" }
func (p *caStarter) TimeDriven() bool { return p.timed }
func (p *caStarter) Schedule(s *cluster.Snapshot) []policy.Action {
	p.cycle++
	var out []policy.Action
	if p.cycle == 1 {
		out = append(out, p.first...)
	}
	free := make([]resource.Vector, len(s.Nodes))
	for i, n := range s.Nodes {
		if n.Ready && !n.Gone {
			free[i] = n.Free().Add(n.Placeholder)
		}
	}
	for js := range s.Pending.All() {
		var pl cluster.Placement
		f := append([]resource.Vector(nil), free...)
		ok := true
		for g, grp := range js.Job.Groups {
			for r := 0; r < grp.Replicas; r++ {
				placed := false
				for i := range f {
					if r := s.Nodes[i].Role; r != "" && r != grp.Name {
						continue
					}
					if grp.Demand.Fits(f[i]) {
						f[i] = f[i].Sub(grp.Demand)
						pl = append(pl, cluster.Assignment{Group: g, Node: i})
						placed = true
						break
					}
				}
				ok = ok && placed
			}
		}
		if ok {
			free = f
			out = append(out, policy.Start{Job: js.Job.ID, Placement: pl})
		}
	}
	return out
}

func caJob(id string, submit, work float64, gpus int64, replicas int) *cluster.Job {
	return &cluster.Job{ID: id, Submit: submit, Work: work, Class: cluster.ClassBE,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(float64(gpus)*4, float64(gpus)*16, gpus),
			Replicas: replicas, Min: replicas, Max: replicas}}}
}

func caRun(t *testing.T, cfg Config, nodes []cluster.Node, jobs []*cluster.Job, p policy.Policy) (*Result, *Sim) {
	t.Helper()
	cfg.Check = true
	if cfg.Catalog == nil {
		cfg.Catalog = caCatalog
	}
	s, err := New(cfg, nodes, jobs, p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Refusals) > 0 {
		t.Fatalf("refusals: %v", r.Refusals)
	}
	return r, s
}

func types(s *Sim) map[string]int {
	out := map[string]int{}
	for _, n := range s.nodes {
		out[n.InstanceType]++
	}
	return out
}

// TestAutoscalerScaleUpDelayDownCost: a pending job makes the model add the
// cheapest type that holds it; the job starts when the node is ready; the
// node is released after the idle timeout; cost is price x (request to
// release).
func TestAutoscalerScaleUpDelayDownCost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gpus      int64
		replicas  int
		wantTypes map[string]int
		price     float64
	}{
		{"one GPU takes the small type", 1, 1, map[string]int{"small": 1}, 1},
		{"four GPUs need mid, cheaper than big", 4, 1, map[string]int{"mid": 1}, 5},
		{"two replicas of 4 GPUs: two mid nodes", 4, 2, map[string]int{"mid": 2}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const delay, work, idle = 300.0, 600.0, 900.0
			cfg := Config{Tick: 60, LaunchDelay: delay, Autoscaler: &Autoscaler{IdleTimeout: idle}}
			r, s := caRun(t, cfg, nil, []*cluster.Job{caJob("a", 0, work, tc.gpus, tc.replicas)}, &caStarter{})
			if got := types(s); len(got) != len(tc.wantTypes) || got[firstKey(tc.wantTypes)] != tc.wantTypes[firstKey(tc.wantTypes)] {
				t.Fatalf("provisioned %v, want %v", got, tc.wantTypes)
			}
			rec := r.Records[0]
			if rec.FirstStart != delay || rec.Finish != delay+work {
				t.Fatalf("start %g finish %g, want %g and %g", rec.FirstStart, rec.Finish, delay, delay+work)
			}
			m := r.Metrics()
			released := delay + work + idle
			for _, n := range s.nodes {
				if !n.Gone || s.nodeGone[n.Index] != released {
					t.Fatalf("node %s gone=%v at %g, want released at %g", n.Name, n.Gone, s.nodeGone[n.Index], released)
				}
			}
			if want := tc.price * released / 3600; math.Abs(m["cost"]-want) > 1e-9 {
				t.Fatalf("cost %g, want %g", m["cost"], want)
			}
			if m["pending_mean_s"] != delay || m["nodes_provisioned"] != float64(tc.replicas) || m["nodes_released"] != float64(tc.replicas) {
				t.Fatalf("metrics %v", m)
			}
			// Over-provisioned: whole nodes during the launch delay and the
			// idle timeout; none while the job runs, as each replica's
			// demand equals its node's capacity.
			nodes := float64(tc.replicas)
			wantOver := nodes * (delay + idle) / 3600
			if math.Abs(m["overprovisioned_node_hours"]-wantOver) > 1e-9 || math.Abs(m["node_hours"]-nodes*released/3600) > 1e-9 {
				t.Fatalf("overprovisioned %g node-hours (want %g), node_hours %g", m["overprovisioned_node_hours"], wantOver, m["node_hours"])
			}
			// The hourly series adds up to the run's figures, hour by hour
			// from hour 0.
			var nh, oh, cost float64
			for i, h := range r.Elastic {
				if h.Hour != i {
					t.Fatalf("hour %d at index %d", h.Hour, i)
				}
				nh, oh, cost = nh+h.NodeHours, oh+h.OverHours, cost+h.Cost
			}
			if len(r.Elastic) != int(math.Ceil(released/3600)) || math.Abs(nh-m["node_hours"]) > 1e-9 ||
				math.Abs(oh-m["overprovisioned_node_hours"]) > 1e-9 || math.Abs(cost-m["cost"]) > 1e-9 {
				t.Fatalf("hourly series (%d hours) sums to %g node-hours, %g over, $%g; run: %v", len(r.Elastic), nh, oh, cost, m)
			}
		})
	}
}

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}

// TestAutoscalerNoDoubleScaleUp: while a node is launching for a pending
// job, further cycles must not add more nodes for the same job; a job that
// fits the launching node's leftover does not add one either.
func TestAutoscalerNoDoubleScaleUp(t *testing.T) {
	jobs := []*cluster.Job{caJob("a", 0, 600, 4, 1), caJob("b", 60, 600, 2, 1)}
	// b (2 GPUs) arrives while the mid node for a is launching; a's pod
	// already fills it, so b needs its own node: the cheapest holding 2
	// GPUs is mid again.
	cfg := Config{Tick: 60, LaunchDelay: 300, Autoscaler: &Autoscaler{}}
	r, s := caRun(t, cfg, nil, jobs, &caStarter{timed: true})
	if got := types(s); got["mid"] != 2 || len(got) != 1 {
		t.Fatalf("provisioned %v, want two mid nodes", got)
	}
	if r.Records[1].FirstStart != 360 {
		t.Fatalf("b started at %g, want 360", r.Records[1].FirstStart)
	}
	// Two 1-GPU jobs at once share one scale-up pass: two small nodes.
	r, s = caRun(t, cfg, nil, []*cluster.Job{caJob("c", 0, 600, 1, 1), caJob("d", 0, 600, 1, 1)}, &caStarter{timed: true})
	if got := types(s); got["small"] != 2 || len(got) != 1 || r.Metrics()["nodes_provisioned"] != 2 {
		t.Fatalf("provisioned %v", got)
	}
}

// TestAutoscalerPlaceholders: pending placeholder units make the model add
// nodes; units are bound once the nodes are ready; a node holding a
// placeholder is never released; a real job takes placeholder capacity at
// once instead of waiting for a launch.
func TestAutoscalerPlaceholders(t *testing.T) {
	ph := policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "ph", Demand: resource.New(16, 64, 4), Count: 2, PlacementGroup: "pg-a"}}}
	cfg := Config{Tick: 60, LaunchDelay: 300, Autoscaler: &Autoscaler{IdleTimeout: 600, PlacementGroup: "pg-b"}}
	// z starts the clock at 0; a arrives long after the placeholder nodes
	// are ready.
	jobs := []*cluster.Job{caJob("z", 0, 1, 1, 1), caJob("a", 1200, 600, 4, 1)}
	r, s := caRun(t, cfg, nil, jobs, &caStarter{first: []policy.Action{ph}, timed: true})
	if got := types(s); got["mid"] != 3 || got["small"] != 1 {
		// two mid for the placeholders, one for the unit the job evicts
		t.Fatalf("provisioned %v, want 3 mid and 1 small", got)
	}
	held := 0
	for _, n := range s.nodes {
		want := "pg-a"
		if n.InstanceType == "small" {
			want = "pg-b"
		}
		if n.PlacementGroup != want {
			t.Fatalf("node %s in group %q, want %s", n.Name, n.PlacementGroup, want)
		}
		if !n.Placeholder.IsZero() {
			held++
			if n.Gone {
				t.Fatalf("node %s released although it holds a placeholder", n.Name)
			}
		}
	}
	if held != 2 {
		t.Fatalf("%d nodes hold placeholders at the end, want 2", held)
	}
	if got := r.Records[1].FirstStart; got != 1200 {
		t.Fatalf("job started at %g, want 1200 (on placeholder capacity)", got)
	}
	if s.PendingPlaceholders() != 0 {
		t.Fatalf("%d placeholder units still pending", s.PendingPlaceholders())
	}
	m := r.Metrics()
	if m["placeholder_node_hours"] <= 0 || m["overprovisioned_node_hours"] < m["placeholder_node_hours"] {
		t.Fatalf("placeholder %g, overprovisioned %g node-hours", m["placeholder_node_hours"], m["overprovisioned_node_hours"])
	}
}

// TestAutoscalerOptional: without the model the cluster stays as it is, the
// job waits for ever and no elastic metric appears; ElasticMetrics alone
// adds the metrics but no node.
func TestAutoscalerOptional(t *testing.T) {
	fixed := []cluster.Node{{Name: "f", InstanceType: "small", Capacity: resource.New(4, 16, 1), PricePerHour: 1}}
	for _, elastic := range []bool{false, true} {
		r, s := caRun(t, Config{Tick: 60, ElasticMetrics: elastic}, fixed, []*cluster.Job{caJob("a", 0, 600, 4, 1)}, &caStarter{})
		if len(s.nodes) != 1 || r.Records[0].FirstStart >= 0 {
			t.Fatalf("elastic=%v: %d nodes, job start %g", elastic, len(s.nodes), r.Records[0].FirstStart)
		}
		_, has := r.Metrics()["overprovisioned_node_hours"]
		if has != elastic {
			t.Fatalf("elastic=%v: overprovisioned metric present=%v", elastic, has)
		}
	}
}

// TestAutoscalerMaxNodes: the node bound caps a scale-up.
func TestAutoscalerMaxNodes(t *testing.T) {
	var jobs []*cluster.Job
	for i := 0; i < 5; i++ {
		jobs = append(jobs, caJob(string(rune('a'+i)), 0, 600, 1, 1))
	}
	cfg := Config{Tick: 60, LaunchDelay: 60, Autoscaler: &Autoscaler{MaxNodes: 3}}
	r, s := caRun(t, cfg, nil, jobs, &caStarter{})
	if len(s.nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(s.nodes))
	}
	if r.Metrics()["completed"] != 5 {
		t.Fatalf("completed %g of 5", r.Metrics()["completed"])
	}
}

// TestAutoscalerRoleAware: free capacity on a node whose Role is another
// replica group does not hold a pending pod, so the model adds a node for
// it; a pod of the node's own role uses it and adds nothing.
func TestAutoscalerRoleAware(t *testing.T) {
	for _, tc := range []struct {
		name      string
		group     string
		wantNodes int
		wantStart float64
	}{
		{"worker pod skips the ps node", "worker", 2, 300},
		{"ps pod uses the ps node", "ps", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := []cluster.Node{{Name: "ps0", Role: "ps", InstanceType: "mid", Capacity: resource.New(16, 64, 4), PricePerHour: 5}}
			j := caJob("a", 0, 600, 1, 1)
			j.Groups[0].Name = tc.group
			cfg := Config{Tick: 60, LaunchDelay: 300, Autoscaler: &Autoscaler{}}
			r, s := caRun(t, cfg, ps, []*cluster.Job{j}, &caStarter{timed: true})
			if len(s.nodes) != tc.wantNodes {
				t.Fatalf("%d nodes (%v), want %d", len(s.nodes), types(s), tc.wantNodes)
			}
			if tc.wantNodes == 2 && s.nodes[1].InstanceType != "small" {
				t.Fatalf("added %s, want small", s.nodes[1].InstanceType)
			}
			if got := r.Records[0].FirstStart; got != tc.wantStart {
				t.Fatalf("job started at %g, want %g", got, tc.wantStart)
			}
		})
	}
}

// TestCheapestFitTieBreak: the cheapest type that holds the demand wins;
// at equal price the one with fewer GPUs (a CPU-only pod should not take
// a GPU node), then the name.
func TestCheapestFitTieBreak(t *testing.T) {
	catalog := []cluster.InstanceType{
		{Name: "a-gpu", Capacity: resource.New(16, 64, 4), PricePerHour: 2},
		{Name: "b-cpu", Capacity: resource.New(16, 64, 0), PricePerHour: 2},
		{Name: "c-cpu", Capacity: resource.New(16, 64, 0), PricePerHour: 2},
		{Name: "d-gpu", Capacity: resource.New(16, 64, 1), PricePerHour: 3},
		{Name: "e-big", Capacity: resource.New(64, 256, 0), PricePerHour: 9},
	}
	s, err := New(Config{Tick: 60, Catalog: catalog, Autoscaler: &Autoscaler{}}, nil, nil, &caStarter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		demand resource.Vector
		want   string
	}{
		{"CPU-only: equal price, fewer GPUs, then name", resource.New(4, 16, 0), "b-cpu"},
		{"one GPU: only GPU types hold it, cheapest wins", resource.New(4, 16, 1), "a-gpu"},
		{"too big for the cheap types", resource.New(32, 16, 0), "e-big"},
		{"nothing holds it", resource.New(4, 16, 8), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if it := s.cheapestFit(tc.demand); it != nil {
				got = it.Name
			}
			if got != tc.want {
				t.Fatalf("cheapestFit(%v) = %q, want %q", tc.demand, got, tc.want)
			}
		})
	}
}
