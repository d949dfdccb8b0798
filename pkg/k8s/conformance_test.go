package k8s

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
	dres "github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// The conformance test runs the same scripts through both executors: a
// cluster (nodes, running and pending jobs, placeholders) and the actions
// a policy returns in one cycle. The simulator reaches the cluster's state
// with a setup cycle (starts, placeholders, provisioned nodes); the
// Kubernetes executor reads it from objects on a controller-runtime fake
// client. Both must show the policy the same cluster and refuse the same
// actions with the same reasons.

// conf is one script.
type conf struct {
	name  string
	nodes []confNode
	// launching nodes are added after the others (named zz-p1, zz-p2, ...):
	// the simulator provisions them, the Kubernetes executor sees them not
	// ready.
	launching int
	jobs      []confJob
	ph        []cluster.Placeholder
	actions   []policy.Action
	// k8s, when set, is what the Kubernetes executor refuses where it
	// differs from the simulator on purpose; the comment on the script
	// says why.
	k8s []string
	// k8sRuns is how many times the Kubernetes executor runs the script
	// (default 3): a reason that depends on map order differs between
	// runs.
	k8sRuns int
}

type confNode struct {
	name, role string
	cap        dres.Vector
}

type confJob struct {
	id        string // ns/name
	groups    []cluster.ReplicaGroup
	placement cluster.Placement // nil when pending
}

// script starts a script; nodes n0 and n1 have 8 cores, 64 GiB and 4 GPUs.
func script(name string) *confB {
	b := &confB{conf{name: name}}
	return b.node("n0", "").node("n1", "")
}

type confB struct{ c conf }

func (b *confB) node(name, role string) *confB {
	b.c.nodes = append(b.c.nodes, confNode{name: name, role: role, cap: dres.New(8, 64, 4)})
	return b
}
func (b *confB) launchingNode() *confB { b.c.launching++; return b }
func (b *confB) pending(id string, gs ...cluster.ReplicaGroup) *confB {
	b.c.jobs = append(b.c.jobs, confJob{id: id, groups: gs})
	return b
}
func (b *confB) running(id string, p cluster.Placement, gs ...cluster.ReplicaGroup) *confB {
	b.c.jobs = append(b.c.jobs, confJob{id: id, groups: gs, placement: p})
	return b
}
func (b *confB) placeholders(ps ...cluster.Placeholder) *confB { b.c.ph = ps; return b }
func (b *confB) do(acts ...policy.Action) *confB               { b.c.actions = acts; return b }
func (b *confB) k8sRefuses(rs ...string) *confB                { b.c.k8s = rs; return b }
func (b *confB) runs(n int) *confB                             { b.c.k8sRuns = n; return b }

// grp is a replica group whose replicas each need 1 core, 1 GiB and gpus
// GPUs.
func grp(name string, gpus int64, replicas, lo, hi int) cluster.ReplicaGroup {
	return cluster.ReplicaGroup{Name: name, Demand: dres.New(1, 1, gpus), Replicas: replicas, Min: lo, Max: hi}
}

// workers is a fixed-size worker group.
func workers(n int, gpus int64) cluster.ReplicaGroup { return grp("worker", gpus, n, n, n) }

// at places replicas of group 0 on the given nodes, in order.
func at(nodes ...int) cluster.Placement {
	p := make(cluster.Placement, len(nodes))
	for i, n := range nodes {
		p[i] = cluster.Assignment{Node: n}
	}
	return p
}

var confScripts = []*confB{
	script("start").pending("ns/a", workers(2, 2)).
		do(policy.Start{Job: "ns/a", Placement: at(0, 1)}),
	script("start over capacity after an earlier start").pending("ns/a", workers(2, 2)).pending("ns/b", workers(1, 1)).
		do(policy.Start{Job: "ns/a", Placement: at(0, 0)}, policy.Start{Job: "ns/b", Placement: at(0)}),
	// (c) The Kubernetes executor ranged over a map of nodes, so which
	// node it named varied from run to run; both name the first used.
	// (The job fits the empty cluster, 16 of 16 GPUs: a gang larger than
	// the cluster is held out of the Kubernetes queue as Unschedulable,
	// see TestBuildHoldsImpossibleJobs.)
	script("over capacity on several nodes names the first").node("n2", "").node("n3", "").pending("ns/a", workers(4, 4)).
		do(policy.Start{Job: "ns/a", Placement: at(2, 2, 1, 1)}).runs(20),
	script("start on a launching node").launchingNode().pending("ns/a", workers(1, 1)).
		do(policy.Start{Job: "ns/a", Placement: at(2)}),
	script("start on a node of another role").node("n2", "ps").pending("ns/a", workers(1, 1)).
		do(policy.Start{Job: "ns/a", Placement: at(2)}),
	script("start a worker and a server on their roles").node("n2", "ps").pending("ns/a", workers(1, 1), grp("ps", 0, 1, 1, 1)).
		do(policy.Start{Job: "ns/a", Placement: cluster.Placement{{Group: 0, Node: 0}, {Group: 1, Node: 2}}}),
	script("start above max, empty, bad node, bad group").pending("ns/a", workers(1, 1)).
		do(policy.Start{Job: "ns/a", Placement: at(0, 1)}, policy.Start{Job: "ns/a"}, policy.Start{Job: "ns/a", Placement: at(7)},
			policy.Start{Job: "ns/a", Placement: cluster.Placement{{Group: 3}}}),
	script("start unknown and running jobs").running("ns/r", at(0), workers(1, 1)).
		do(policy.Start{Job: "ns/zz", Placement: at(1)}, policy.Start{Job: "ns/r", Placement: at(1)}),
	script("start below min (no gang)").pending("ns/a", workers(2, 1)).
		do(policy.Start{Job: "ns/a", Placement: at(0)}),
	script("start then label it (SpeCon)").pending("ns/a", workers(1, 1)).
		do(policy.Start{Job: "ns/a", Placement: at(0)}, policy.SetLabel{Job: "ns/a", Key: "drover.dev/slot", Value: "0"}),
	script("start takes placeholder capacity").placeholders(cluster.Placeholder{Name: "ph", Demand: dres.New(8, 64, 4), Count: 2}).
		pending("ns/a", workers(2, 4)).
		do(policy.Start{Job: "ns/a", Placement: at(0, 1)}),
	script("a preempted job holds its resources through its grace").running("ns/r", at(0, 0), workers(2, 2)).pending("ns/a", workers(1, 1)).
		do(policy.Preempt{Job: "ns/r", Grace: 30}, policy.Start{Job: "ns/a", Placement: at(0)}, policy.Preempt{Job: "ns/r", Grace: 30}),
	// (b) The Kubernetes executor accepted +Inf (and deleted the pods
	// with a grace of int64(math.Ceil(+Inf))).
	script("preempt with a grace that is not a finite number >= 0").running("ns/r", at(0), workers(1, 1)).
		do(policy.Preempt{Job: "ns/r", Grace: math.Inf(1)}, policy.Preempt{Job: "ns/r", Grace: math.NaN()},
			policy.Preempt{Job: "ns/r", Grace: -1}, policy.Preempt{Job: "ns/r", Grace: 0.5}),
	script("preempt a pending job").pending("ns/a", workers(1, 1)).
		do(policy.Preempt{Job: "ns/a", Grace: 1}),
	script("migrate, then migrate again").running("ns/r", at(0, 0), workers(2, 1)).
		do(policy.Migrate{Job: "ns/r", Placement: at(1, 1)}, policy.Migrate{Job: "ns/r", Placement: at(0, 0)}),
	script("migrate onto its own nodes").running("ns/r", at(0, 0), workers(2, 2)).
		do(policy.Migrate{Job: "ns/r", Placement: at(0, 0)}),
	// The Kubernetes executor accepted a migration that changed the
	// replica counts.
	script("migrate changing the counts").running("ns/r", at(0, 0), grp("worker", 1, 2, 1, 4)).
		do(policy.Migrate{Job: "ns/r", Placement: at(1)}),
	script("migrate over capacity").running("ns/r", at(0, 0), workers(2, 2)).running("ns/s", at(1, 1), workers(2, 2)).
		do(policy.Migrate{Job: "ns/r", Placement: at(1, 1)}),
	// (a) tf-operator starts a job partially (no gang) and binds its other
	// pods as room appears with a Resize that grows the group while it
	// is still below its minimum: allowed. The Kubernetes executor
	// refused it.
	script("resize grows towards min").running("ns/r", at(0), workers(4, 1)).
		do(policy.Resize{Job: "ns/r", Placement: at(0, 1)}),
	script("resize adds servers while the workers stay below min").node("n2", "ps").
		running("ns/r", at(0), workers(2, 1), grp("ps", 0, 1, 1, 1)).
		do(policy.Resize{Job: "ns/r", Placement: cluster.Placement{{Group: 0, Node: 0}, {Group: 1, Node: 2}}}),
	script("resize shrinks below min").running("ns/r", at(0, 1), grp("worker", 1, 2, 2, 4)).
		do(policy.Resize{Job: "ns/r", Placement: at(0)}),
	script("resize within bounds, above max").running("ns/r", at(0, 1), grp("worker", 1, 2, 1, 3)).running("ns/s", at(0, 1), grp("worker", 1, 2, 1, 3)).
		do(policy.Resize{Job: "ns/r", Placement: at(0)}, policy.Resize{Job: "ns/s", Placement: at(0, 0, 1, 1)}),
	script("reject, then wait").pending("ns/a", workers(1, 1)).running("ns/r", at(0), workers(1, 1)).
		do(policy.Reject{Job: "ns/a", Reason: "no"}, policy.Wait{Job: "ns/a", Reason: "later"}, policy.Reject{Job: "ns/r"}, policy.Wait{Job: "ns/r"}),
	script("labels").running("ns/r", at(0), workers(1, 1)).
		do(policy.SetLabel{Job: "ns/r", Key: "drover.dev/k", Value: "v"}, policy.SetLabel{Job: "ns/zz", Key: "drover.dev/k", Value: "v"}),
	script("invalid placeholders").pending("ns/a", workers(1, 1)).
		do(policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "ph", Demand: dres.New(1, 1, 0), Count: -1}}},
			policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "ph", Count: 1}}},
			policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "ph", Demand: dres.New(1, 1, 0), Count: 1}}}),

	// Deliberate differences. The Kubernetes executor leaves nodes to the
	// cluster autoscaler, and a placeholder's name must be a Kubernetes
	// name (the simulator takes any; the predictive plugin sanitises the
	// instance type in its names, autoscale.PlaceholderName).
	script("nodes and placeholder names").pending("ns/a", workers(1, 1)).
		do(policy.ReleaseNode{Node: "n1"}, policy.ProvisionNode{InstanceType: "zz", Count: 1},
			policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "ph-g4dn.xlarge-1", Demand: dres.New(1, 1, 0), Count: 1}}}).
		k8sRefuses("release n1: node release is left to the cluster autoscaler",
			"provision zz: node provisioning is left to the cluster autoscaler (drover expresses demand with placeholders)",
			`placeholders placeholders: placeholder name "ph-g4dn.xlarge-1" is not a DNS-1123 label`),
	// Policy labels are stored in status.policyLabels and read back every
	// cycle: the Kubernetes executor keeps them to the documented form
	// (keys under drover.dev/, bounded sizes; issue 17, item 1).
	script("labels outside drover.dev/ or too long").running("ns/r", at(0), workers(1, 1)).
		do(policy.SetLabel{Job: "ns/r", Key: "slot", Value: "0"}, policy.SetLabel{Job: "ns/r", Key: "drover.dev/v", Value: strings.Repeat("x", view.MaxPolicyLabelValue+1)}).
		k8sRefuses(`label ns/r: job ns/r: cannot store the policy label: key "slot": not of the form drover.dev/<name>`,
			"label ns/r: job ns/r: cannot store the policy label: key drover.dev/v: value of 65537 bytes, more than 65536"),
	// A preemption with no grace suspends the job at once in the
	// simulator (it is pending again and its resources are free); on
	// Kubernetes its pods take a moment to go, so it is Suspending until
	// the next cycle.
	script("preempt with no grace, then reuse").running("ns/r", at(0, 0), workers(2, 2)).pending("ns/a", workers(1, 4)).
		do(policy.Preempt{Job: "ns/r"}, policy.Start{Job: "ns/a", Placement: at(0)}, policy.Start{Job: "ns/r", Placement: at(1, 1)}).
		k8sRefuses("start ns/a: over capacity on node n0: needs cpu=1 memory=1Gi gpu=4, cpu=6 memory=62Gi free (short of gpu)",
			"start ns/r: job ns/r is Suspending, not Pending"),
	// A resized job's pods change during the cycle on Kubernetes, so it
	// takes no second action until the next cycle.
	script("resize, then preempt").running("ns/r", at(0), grp("worker", 1, 1, 1, 2)).
		do(policy.Resize{Job: "ns/r", Placement: at(0, 1)}, policy.Preempt{Job: "ns/r", Grace: 5}).
		k8sRefuses("preempt ns/r: job ns/r is Migrating, not Running"),
}

// confSeen is what the policy saw: node indices and names with their
// accounting, jobs with their phase and placement, and the queue.
// PendingIsQueue is set when Snapshot.Pending was the executor's mutable
// *cluster.Queue rather than a read-only view.
type confSeen struct {
	Nodes, Jobs, Pending []string
	PendingIsQueue       bool
}

func seeSnapshot(s *cluster.Snapshot) confSeen {
	var c confSeen
	for _, n := range s.Nodes {
		c.Nodes = append(c.Nodes, fmt.Sprintf("%d %s ready=%v gone=%v role=%q allocated=%v placeholder=%v",
			n.Index, n.Name, n.Ready, n.Gone, n.Role, n.Allocated, n.Placeholder))
	}
	for _, js := range s.Running {
		var as []string
		for _, a := range js.Placement {
			as = append(as, fmt.Sprintf("%d@%d", a.Group, a.Node))
		}
		slices.Sort(as)
		c.Jobs = append(c.Jobs, fmt.Sprintf("%s %s %s", js.Job.ID, js.Phase, strings.Join(as, ",")))
	}
	slices.Sort(c.Jobs)
	for js := range s.Pending.All() {
		c.Pending = append(c.Pending, js.Job.ID)
	}
	_, c.PendingIsQueue = s.Pending.(*cluster.Queue)
	return c
}

// confPolicy returns one batch of actions per cycle and records what it
// saw in the last.
type confPolicy struct {
	batches [][]policy.Action
	seen    confSeen
}

func (p *confPolicy) Name() string { return "conformance" }
func (p *confPolicy) Schedule(s *cluster.Snapshot) []policy.Action {
	if len(p.batches) == 0 {
		return nil
	}
	b := p.batches[0]
	p.batches = p.batches[1:]
	if len(p.batches) == 0 {
		p.seen = seeSnapshot(s)
	}
	return b
}

func refusalStrings(rs []policy.Refusal) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s: %s", policy.Kind(r.Action), r.Action.Target(), r.Reason))
	}
	return out
}

// launchType is the instance type of launching nodes.
var launchType = cluster.InstanceType{Name: "zz", Capacity: dres.New(8, 64, 4)}

// runSim runs a script in the simulator: a setup cycle, then the script's
// actions. Jobs are long enough not to finish meanwhile.
func runSim(t *testing.T, c conf) (confSeen, []string) {
	t.Helper()
	var nodes []cluster.Node
	for _, n := range c.nodes {
		nodes = append(nodes, cluster.Node{Name: n.name, Role: n.role, Capacity: n.cap})
	}
	var jobs []*cluster.Job
	var setup []policy.Action
	for _, j := range c.jobs {
		jobs = append(jobs, &cluster.Job{ID: j.id, Class: cluster.ClassBE, Work: 1e6, GracePeriod: 30, Groups: j.groups})
		if j.placement != nil {
			setup = append(setup, policy.Start{Job: j.id, Placement: j.placement})
		}
	}
	if len(c.ph) > 0 {
		setup = append(setup, policy.SetPlaceholders{Placeholders: c.ph})
	}
	cfg := sim.Config{Check: true, Catalog: []cluster.InstanceType{launchType}, LaunchDelay: 100}
	if c.launching > 0 {
		setup = append(setup, policy.ProvisionNode{InstanceType: launchType.Name, Count: c.launching})
	}
	pol := &confPolicy{batches: [][]policy.Action{setup, c.actions}}
	if len(setup) == 0 {
		pol.batches = pol.batches[1:]
	}
	s, err := sim.New(cfg, nodes, jobs, pol)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.batches) > 0 {
		t.Fatal("simulator: the script's cycle did not run")
	}
	return pol.seen, refusalStrings(res.Refusals)
}

// runK8s runs a script in the Kubernetes executor: one cycle over
// objects that hold the script's state.
func runK8s(t *testing.T, c conf) (confSeen, []string) {
	t.Helper()
	var objs []client.Object
	free := map[string]dres.Vector{}
	var ready []string
	node := func(name, role string, cap dres.Vector, isReady bool) {
		n := testNode(name, "1", "0", isReady)
		n.Status.Allocatable = apply.ResourceList(cap)
		if role != "" {
			n.Labels = map[string]string{view.LabelRole: role}
		}
		objs = append(objs, &n)
		if isReady {
			free[name] = cap
			ready = append(ready, name)
		}
	}
	for _, n := range c.nodes {
		node(n.name, n.role, n.cap, true)
	}
	for i := range c.launching {
		node(fmt.Sprintf("zz-p%d", i+1), "", launchType.Capacity, false)
	}
	names := func(p cluster.Placement) (ns []string) {
		for _, a := range p {
			name := fmt.Sprintf("zz-p%d", a.Node-len(c.nodes)+1)
			if a.Node < len(c.nodes) {
				name = c.nodes[a.Node].name
			}
			ns = append(ns, name)
		}
		return ns
	}
	for i, j := range c.jobs {
		name := strings.TrimPrefix(j.id, "ns/")
		tj := v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Millisecond)), UID: types.UID("uid-" + name)},
			Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE}}
		for _, g := range j.groups {
			lo, hi := int32(g.Min), int32(g.Max)
			tj.Spec.ReplicaGroups = append(tj.Spec.ReplicaGroups, v1alpha1.ReplicaGroup{Name: g.Name, Replicas: int32(g.Replicas),
				MinReplicas: &lo, MaxReplicas: &hi, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
					Resources: corev1.ResourceRequirements{Requests: apply.ResourceList(g.Demand)}}}}}})
		}
		if j.placement != nil {
			tj.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1}
			count := map[[2]string]int32{}
			idx := map[string]int{}
			for k, node := range names(j.placement) {
				g := j.groups[j.placement[k].Group]
				count[[2]string{g.Name, node}]++
				free[node] = free[node].Sub(g.Demand)
				pod := replicaPod(name, g.Name, node, "1", nil)
				pod.Name = PodName(name, g.Name, 1, idx[g.Name])
				idx[g.Name]++
				pod.Spec.Containers[0].Resources.Requests = apply.ResourceList(g.Demand)
				objs = append(objs, &pod)
			}
			for k, n := range count {
				tj.Status.Placement = append(tj.Status.Placement, v1alpha1.Assignment{Group: k[0], Node: k[1], Count: n})
			}
			slices.SortFunc(tj.Status.Placement, func(x, y v1alpha1.Assignment) int { return strings.Compare(x.Group+"/"+x.Node, y.Group+"/"+y.Node) })
		}
		objs = append(objs, &tj)
	}
	// Placeholder pods, first fit on ready nodes as the simulator places
	// its placeholder units.
	k := 0
	for _, p := range c.ph {
		for range p.Count {
			for _, n := range ready {
				if p.Demand.Fits(free[n]) {
					free[n] = free[n].Sub(p.Demand)
					k++
					objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ph-%d", k), Namespace: "drover-system",
						Labels: map[string]string{v1alpha1.LabelPlaceholder: p.Name}},
						Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "pause",
							Resources: corev1.ResourceRequirements{Requests: apply.ResourceList(p.Demand)}}}}})
					break
				}
			}
		}
	}
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake}).Build()
	cfg := Config{}
	cfg.Defaults()
	pol := &confPolicy{batches: [][]policy.Action{c.actions}}
	e := New(cfg, cl, nil, nil, pol, logr.Discard())
	e.Now = func() time.Time { return t0 }
	e.Origin = t0
	res, err := e.Cycle(context.Background())
	if err != nil {
		t.Fatalf("kubernetes: %v", err)
	}
	return pol.seen, refusalStrings(res.Refusals)
}

// bindFake does what the API server does with a Binding, which the fake
// client does not support.
func bindFake(ctx context.Context, c client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
	b, ok := subObj.(*corev1.Binding)
	if sub != "binding" || !ok {
		return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), pod); err != nil {
		return err
	}
	pod.Spec.NodeName = b.Target.Name
	return c.Update(ctx, pod)
}

func TestConformance(t *testing.T) {
	for _, b := range confScripts {
		c := b.c
		t.Run(c.name, func(t *testing.T) {
			simSeen, simRefused := runSim(t, c)
			if simSeen.PendingIsQueue {
				t.Error("the simulator gave the policy its own queue")
			}
			runs := c.k8sRuns
			if runs == 0 {
				runs = 3
			}
			for range runs {
				k8sSeen, k8sRefused := runK8s(t, c)
				if diff := cmp.Diff(simSeen, k8sSeen); diff != "" {
					t.Fatalf("the policy saw different clusters (-simulator +kubernetes):\n%s", diff)
				}
				want := simRefused
				if c.k8s != nil {
					want = c.k8s
				}
				if diff := cmp.Diff(want, k8sRefused); diff != "" {
					t.Fatalf("refusals (-simulator +kubernetes):\n%s", diff)
				}
			}
		})
	}
}

// The scripts refuse what they mean to: a script that refuses nothing
// where it should would make the comparison above vacuous.
func TestConformanceScriptsRefuse(t *testing.T) {
	want := map[string][]string{
		"start over capacity after an earlier start":     {"start ns/b: over capacity on node n0: needs cpu=1 memory=1Gi gpu=1, cpu=6 memory=62Gi free (short of gpu)"},
		"over capacity on several nodes names the first": {"start ns/a: over capacity on node n2: needs cpu=2 memory=2Gi gpu=8, cpu=8 memory=64Gi gpu=4 free (short of gpu)"},
		"preempt with a grace that is not a finite number >= 0": {
			"preempt ns/r: grace +Inf is not a finite number >= 0",
			"preempt ns/r: grace NaN is not a finite number >= 0",
			"preempt ns/r: grace -1 is not a finite number >= 0",
		},
		"resize grows towards min":    nil,
		"resize shrinks below min":    {"resize ns/r: group worker: 1 replicas is below min 2"},
		"migrate changing the counts": {"migrate ns/r: migration changes replica counts [2] -> [1]; use Resize"},
	}
	for _, b := range confScripts {
		w, ok := want[b.c.name]
		if !ok {
			continue
		}
		delete(want, b.c.name)
		if _, got := runSim(t, b.c); !cmp.Equal(w, got) {
			t.Errorf("%s: refusals %q, want %q", b.c.name, got, w)
		}
	}
	for name := range want {
		t.Errorf("no script %q", name)
	}
}
