package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/specon"
	"github.com/drover-sched/drover/pkg/workload"
)

// randomWorld is a small random workload: TE trials and elastic BE jobs,
// some with a parameter-server group, a utility or a loss curve, on a few
// nodes of 8 GPUs. Every preset must run it without a refused action.
func randomWorld(seed uint64) ([]cluster.Node, []*cluster.Job) {
	r := rand.New(rand.NewPCG(seed, 0xf00d))
	var nodes []cluster.Node
	for i := range 3 + r.IntN(4) {
		nodes = append(nodes, cluster.Node{Name: fmt.Sprintf("n%d", i), Capacity: resource.New(32, 256, 8)})
	}
	vae, _ := specon.ModelByName("vae")
	var jobs []*cluster.Job
	t := 0.0
	for i := range 25 + r.IntN(20) {
		t += r.ExpFloat64() * 120
		j := &cluster.Job{ID: fmt.Sprintf("j%02d", i), Submit: float64(int(t)), Seed: seed*1000 + uint64(i),
			Tenant: fmt.Sprintf("t%d", r.IntN(3)), Priority: r.IntN(3)}
		gpus := int64(1 << r.IntN(3))
		if r.Float64() < 0.3 {
			j.Class = cluster.ClassTE
			j.Work = float64(60 + r.IntN(600))
			j.Groups = []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(2, 8, gpus), Replicas: 1, Min: 1, Max: 1}}
		} else {
			j.Class = cluster.ClassBE
			j.Work = float64(1800 + r.IntN(7200))
			j.GracePeriod = float64(r.IntN(3) * 60)
			n := 1 + r.IntN(4)
			lo := 1 + r.IntN(n)
			j.Groups = []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(2, 8, gpus), Replicas: n, Min: lo, Max: n + r.IntN(3)}}
			if r.Float64() < 0.3 {
				j.Groups = append(j.Groups, cluster.ReplicaGroup{Name: "ps", Demand: resource.New(2, 8, 0), Replicas: 1, Min: 1, Max: 1})
			}
			j.CheckpointCost, j.RestoreCost = 5, 5
			if r.Float64() < 0.5 {
				j.Eval = vae.Curve
			}
		}
		if r.Float64() < 0.3 {
			j.Utility = cluster.Sigmoid{G1: 1 + 9*r.Float64(), G2: 0.001, G3: 2 * j.Work}
		}
		jobs = append(jobs, j)
	}
	return nodes, jobs
}

// TestEveryPresetKeepsTheInvariants runs every preset on random small
// workloads with the simulator's invariant checks on (no node over
// capacity, allocations equal placements, every job in one place, no work
// created or lost) and asserts: no refused action; gangs all or nothing
// (except tf-operator, which models kube-scheduler's partial starts); no
// job preempted more than P times under fitgpp (P = 1); no job migrated
// twice under specon; the same bytes for the same seed. Even seeds draw
// run-time estimates at sigma 1 (workload.DrawEstimates).
func TestEveryPresetKeepsTheInvariants(t *testing.T) {
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for _, e := range reg.Entries() {
		t.Run(e.Name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				run := func() ([]byte, *sim.Result) {
					nodes, jobs := randomWorld(seed)
					if seed%2 == 0 {
						// Policies that read estimates far off the truth
						// (sigma 1) must keep the invariants too.
						workload.DrawEstimates(jobs, 1, seed)
					}
					p, err := reg.New(e.Name)
					if err != nil {
						t.Fatal(err)
					}
					var partial []string
					cfg := sim.Config{Seed: seed, Tick: 30, SampleEvery: 30, Check: true, Horizon: 200000,
						Observe: func(_ float64, kind sim.Observed, js *cluster.JobState, _ string) {
							if kind != "start" || e.Name == "tf-operator" {
								return
							}
							for g, c := range js.Counts() {
								if c < js.Job.Groups[g].Min {
									partial = append(partial, fmt.Sprintf("%s group %d: %d < min %d", js.Job.ID, g, c, js.Job.Groups[g].Min))
								}
							}
						}}
					s, err := sim.New(cfg, nodes, jobs, p)
					if err != nil {
						t.Fatal(err)
					}
					res, err := s.Run(context.Background())
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if len(partial) > 0 {
						t.Errorf("seed %d: partial gangs started: %v", seed, partial)
					}
					b, err := json.Marshal(struct {
						M map[string]float64
						R any
					}{res.Metrics(), res.Records})
					if err != nil {
						t.Fatal(err)
					}
					return b, res
				}
				b1, res := run()
				if b2, _ := run(); !bytes.Equal(b1, b2) {
					t.Errorf("seed %d: two runs of the same seed differ", seed)
				}
				for _, rf := range res.Refusals {
					t.Errorf("seed %d: refused: %v", seed, rf)
				}
				for _, rec := range res.Records {
					if e.Name == "fitgpp" && rec.Preemptions > 1 {
						t.Errorf("seed %d: fitgpp preempted %s %d times (P = 1)", seed, rec.ID, rec.Preemptions)
					}
					if e.Name == "specon" && rec.Migrations > 1 {
						t.Errorf("seed %d: specon migrated %s %d times", seed, rec.ID, rec.Migrations)
					}
				}
			}
		})
	}
}

// constrainedWorld is randomWorld on a cluster with a dedicated pool: the
// first two nodes are labelled pool=team-a and tainted
// dedicated=team-a:NoSchedule (one of them also gpu=fast:NoExecute), the
// rest are shared. A fifth of the jobs tolerate the pool's taint and
// select it; a tenth only tolerate it (they may go anywhere); one job
// selects a pool no node has (it can never run); the others neither
// select nor tolerate, so they must never run on the pool.
func constrainedWorld(t *testing.T, seed uint64) ([]cluster.Node, []*cluster.Job, map[string]string) {
	nodes, jobs := randomWorld(seed)
	for i := range 2 {
		nodes[i].Labels = map[string]string{"pool": "team-a"}
		nodes[i].Taints = []cluster.Taint{{Key: "dedicated", Value: "team-a", Effect: cluster.TaintNoSchedule}}
	}
	nodes[1].Taints = append(nodes[1].Taints, cluster.Taint{Key: "gpu", Value: "fast", Effect: cluster.TaintNoExecute})
	tol := []corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "team-a", Effect: "NoSchedule"}, {Key: "gpu", Operator: "Exists"}}
	mk := func(s constraint.Spec) cluster.NodeConstraint {
		c, err := constraint.New(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	team := mk(constraint.Spec{NodeSelector: map[string]string{"pool": "team-a"}, Tolerations: tol})
	anywhere := mk(constraint.Spec{Tolerations: tol})
	nowhere := mk(constraint.Spec{NodeSelector: map[string]string{"pool": "nowhere"}})
	kind := map[string]string{}
	r := rand.New(rand.NewPCG(seed, 0xbeef))
	for i, j := range jobs {
		var c cluster.NodeConstraint
		switch x := r.Float64(); {
		case i == len(jobs)/2:
			c, kind[j.ID] = nowhere, "nowhere"
		case x < 0.2:
			c, kind[j.ID] = team, "team"
		case x < 0.3:
			c, kind[j.ID] = anywhere, "anywhere"
		default:
			kind[j.ID] = "shared"
		}
		for g := range j.Groups {
			j.Groups[g].Constraint = c
		}
	}
	return nodes, jobs, kind
}

// TestEveryPresetHonoursNodeConstraints runs every preset on the
// constrained world with the invariant checks on and asserts: no refused
// action; no replica ever started, migrated or resized onto a node whose
// taints or labels refuse its group (the tainted pool is never used by a
// job without the toleration); jobs selecting the pool run only there;
// the job no node accepts is rejected as unschedulable, naming the
// constraint, and never started.
func TestEveryPresetHonoursNodeConstraints(t *testing.T) {
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	seeds := 4
	if testing.Short() {
		seeds = 1
	}
	for _, e := range reg.Entries() {
		t.Run(e.Name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				nodes, jobs, kind := constrainedWorld(t, seed)
				p, err := reg.New(e.Name)
				if err != nil {
					t.Fatal(err)
				}
				var bad []string
				var snapNodes []*cluster.NodeState
				for i := range nodes {
					snapNodes = append(snapNodes, &cluster.NodeState{Node: nodes[i], Index: i, Ready: true})
				}
				used := map[string]bool{}
				cfg := sim.Config{Seed: seed, Tick: 30, SampleEvery: 30, Check: true, Horizon: 200000,
					Observe: func(_ float64, k sim.Observed, js *cluster.JobState, detail string) {
						switch k {
						case sim.ObsReject:
							if kind[js.Job.ID] == "nowhere" && !strings.Contains(detail, "didn't match Pod's node affinity/selector") {
								bad = append(bad, fmt.Sprintf("%s rejected without naming the selector: %s", js.Job.ID, detail))
							}
							return
						case sim.ObsStart, sim.ObsMigrate, sim.ObsResize:
						default:
							return
						}
						for _, a := range js.Placement {
							n := snapNodes[a.Node]
							if !placement.Eligible(n, js.Job, a.Group) {
								bad = append(bad, fmt.Sprintf("%s %s (%s) on %s: %s", k, js.Job.ID, kind[js.Job.ID], n.Name, placement.Why(n, js.Job, a.Group)))
							}
							if kind[js.Job.ID] == "team" && a.Node >= 2 {
								bad = append(bad, fmt.Sprintf("%s %s selects the pool but ran on %s", k, js.Job.ID, n.Name))
							}
							if kind[js.Job.ID] == "nowhere" {
								bad = append(bad, fmt.Sprintf("%s %s, which no node accepts", k, js.Job.ID))
							}
							used[kind[js.Job.ID]] = true
						}
					}}
				s, err := sim.New(cfg, nodes, jobs, p)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Run(context.Background())
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for _, b := range bad {
					t.Errorf("seed %d: %s", seed, b)
				}
				for _, rf := range res.Refusals {
					t.Errorf("seed %d: refused: %v", seed, rf)
				}
				if len(used) > 0 && !used["shared"] {
					t.Errorf("seed %d: no unconstrained job ran at all", seed)
				}
			}
		})
	}
}
