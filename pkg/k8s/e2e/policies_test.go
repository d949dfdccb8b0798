package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedv1 "k8s.io/api/scheduling/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// testPolicies are policies only the tests register: fifo plus a fixed
// placeholder set, so the executor's placeholder mapping is tested
// whatever the autoscaler's forecast decides.
func testPolicies() []policy.Entry {
	return []policy.Entry{{Name: "test-placeholders", Description: "fifo + 3 placeholders of 2 CPU",
		New: func(policy.Params) (policy.Policy, error) { return &phPolicy{}, nil }}}
}

type phPolicy struct{ sent bool }

func (*phPolicy) Name() string { return "test-placeholders" }
func (p *phPolicy) Schedule(s *cluster.Snapshot) []policy.Action {
	if len(s.Placeholders) == 1 && s.Placeholders[0].Count == 3 {
		return nil
	}
	return []policy.Action{policy.SetPlaceholders{Placeholders: []cluster.Placeholder{{Name: "warm", Demand: resource.New(2, 4, 0), Count: 3}}}}
}

// Placeholders become a Deployment of pause pods at the -10 PriorityClass,
// and the snapshot reads them back (so the policy stops re-sending them).
func TestPlaceholdersAsDeployments(t *testing.T) {
	tc := newCluster(t, 1, "8", "0", standin.Config{})
	tc.startScheduler("test-placeholders", nil)
	d := &appsv1.Deployment{}
	tc.eventually("placeholder deployment", 10*time.Second, func() (bool, string) {
		err := cl.Get(context.Background(), client.ObjectKey{Namespace: "drover-system", Name: k8s.PlaceholderDeployment("warm")}, d)
		return err == nil, fmt.Sprint(err)
	})
	defer func() { _ = cl.Delete(context.Background(), d) }()
	if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.PriorityClassName != "drover-placeholder" {
		t.Errorf("deployment replicas %d priorityClass %q", *d.Spec.Replicas, d.Spec.Template.Spec.PriorityClassName)
	}
	if cpu := d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(); cpu != 2000 {
		t.Errorf("placeholder pod requests %dm CPU, want 2000m", cpu)
	}
	pc := &schedPriorityClass{}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "drover-placeholder"}, &pc.PriorityClass); err != nil || pc.Value != -10 {
		t.Errorf("PriorityClass drover-placeholder: %v value %d, want -10", err, pc.Value)
	}
	rv := d.ResourceVersion
	time.Sleep(500 * time.Millisecond)
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil || d.ResourceVersion != rv {
		t.Errorf("deployment rewritten every cycle (rv %s -> %s, %v)", rv, d.ResourceVersion, err)
	}
}

// The elastic policy scales a job up to its maximum on an idle node and
// down again for a higher-priority job; the executor adds and removes
// worker pods without touching the ones that stay.
func TestElasticScaleUpDown(t *testing.T) {
	requirePolicy(t, "elastic")
	tc := newCluster(t, 1, "16", "8", standin.Config{TimeScale: 1})
	tc.startScheduler("elastic", nil)
	tc.create(tc.job("flex", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 2, min: 1, max: 4, cpu: "2", gpu: "1"}))
	tc.eventually("scale-up to 4 workers", 20*time.Second, func() (bool, string) {
		tj := tc.get("flex")
		n := 0
		for _, p := range tc.pods("flex") {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
				n++
			}
		}
		return tj.Status.Resizes >= 1 && n == 4, fmt.Sprintf("resizes %d, %d bound pods", tj.Status.Resizes, n)
	})
	if ok, msg := tc.waitEvent("flex", "Resized"); !ok {
		t.Errorf("no Resized event: %s", msg)
	}
	first := map[string]bool{}
	for _, p := range tc.pods("flex") {
		first[p.Name] = true
	}
	big := tc.job("urgent", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 1, cpu: "8", gpu: "6"})
	big.Spec.Priority = 100
	tc.create(big)
	tc.waitPhase("urgent", v1alpha1.PhaseRunning, 20*time.Second)
	tj := tc.get("flex")
	if tj.Status.Resizes < 2 {
		t.Errorf("flex resized %d times, want up then down", tj.Status.Resizes)
	}
	live := 0
	for _, p := range tc.pods("flex") {
		if p.DeletionTimestamp == nil {
			live++
			if !first[p.Name] {
				t.Errorf("pod %s was created by the scale-down; kept replicas must stay", p.Name)
			}
		}
	}
	if live < 1 || live > 2 {
		t.Errorf("flex has %d live workers after the scale-down, want 1..2", live)
	}
	assertNoOvercommitGPU(t, tc, 8)
}

func assertNoOvercommitGPU(t *testing.T, tc *testCluster, capacity int64) {
	t.Helper()
	var pods corev1.PodList
	if err := cl.List(context.Background(), &pods, client.InNamespace(tc.ns)); err != nil {
		t.Fatal(err)
	}
	used := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded {
			used[p.Spec.NodeName] += k8s.PodDemand(&p.Spec)[resource.GPU]
		}
	}
	for n, u := range used {
		if u > capacity {
			t.Errorf("node %s: %d GPUs bound, capacity %d", n, u, capacity)
		}
	}
}

// OASiS rejects a parameter-server job whose payoff (utility minus priced
// cost) is not positive, and the rejection reaches the job's status and
// Events.
func TestOASiSRejectsNegativePayoff(t *testing.T) {
	requirePolicy(t, "oasis")
	tc := newCluster(t, 2, "16", "4", standin.Config{})
	// OASiS plans workers and parameter servers on separate server pools.
	for i, role := range []string{"worker", "ps"} {
		n := &corev1.Node{}
		if err := cl.Get(context.Background(), client.ObjectKey{Name: tc.kube.NodeName(i)}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels[k8s.LabelRole] = role
		if err := cl.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	tc.startScheduler("oasis:slot=2;slots=400", nil)
	j := tc.job("worthless", v1alpha1.ClassBE, 600,
		group{name: "worker", replicas: 2, cpu: "2", gpu: "1"}, group{name: "ps", replicas: 1, cpu: "2", gpu: "0"})
	j.Spec.ParameterServer = &v1alpha1.ParameterServerSpec{Epochs: 2, Chunks: 4, MiniBatches: 10, MiniBatchSeconds: 1,
		GradientMB: 10, WorkerBandwidthMBps: 100, PSBandwidthMBps: 100}
	j.Spec.Utility = &v1alpha1.Utility{Weight: 0}
	tc.create(j)
	// A job worth something is admitted and runs on the role pools.
	// OASiS picks the worker and PS counts per slot, within min..max.
	ok := tc.job("worthy", v1alpha1.ClassBE, 600,
		group{name: "worker", replicas: 2, min: 1, max: 8, cpu: "2", gpu: "1"}, group{name: "ps", replicas: 1, min: 1, max: 4, cpu: "2", gpu: "0"})
	ok.Spec.ParameterServer = j.Spec.ParameterServer
	ok.Spec.Utility = &v1alpha1.Utility{Weight: 100, Decay: 0.0001, TargetSeconds: 36000}
	tc.create(ok)
	got := tc.waitPhase("worthless", v1alpha1.PhaseRejected, 20*time.Second)
	if !strings.Contains(got.Status.Reason, "payoff") {
		t.Errorf("reason %q does not come from oasis", got.Status.Reason)
	}
	if ok, msg := tc.waitEvent("worthless", "Rejected"); !ok {
		t.Errorf("no Rejected event: %s", msg)
	}
	if len(tc.pods("worthless")) != 0 {
		t.Errorf("a rejected job got pods")
	}
	t.Logf("rejected: %s", got.Status.Reason)
	tc.waitPhase("worthy", v1alpha1.PhaseRunning, 20*time.Second)
}

// SpeCon categorises jobs from the metric their trainers report, and
// migrates a converged job once: its pods are deleted with the grace
// period and recreated on another node with the resume hint.
func TestSpeConMigratesOnce(t *testing.T) {
	requirePolicy(t, "specon")
	tc := newCluster(t, 2, "8", "0", standin.Config{TimeScale: 1, Curve: cluster.ExpCurve{Start: 2, Floor: 0.2, Rate: 12}})
	// The converged job shares its worker with one progressing job only, so
	// under the paper's per-worker reading no Alg. 2 request is made; the
	// idle-worker move comes from Alg. 3 over converged candidates.
	tc.startScheduler("specon:interval=1;candidates=converged", nil)
	// Round-robin puts sc0 and sc2 on one node and sc1 on the other; sc1
	// finishes first, then sc0 converges while sc2 still progresses, so
	// moving sc0 to the idle node is SpeCon's choice.
	var names []string
	for i, dur := range []int64{20, 4, 60} {
		n := fmt.Sprintf("sc%d", i)
		names = append(names, n)
		j := tc.job(n, v1alpha1.ClassBE, dur, group{name: "worker", replicas: 1, cpu: "1", gpu: "0"})
		j.Spec.Progress = &v1alpha1.ProgressSpec{Metric: "loss", LowerIsBetter: true}
		g := int64(1)
		j.Spec.GracePeriodSeconds = &g
		tc.create(j)
		time.Sleep(50 * time.Millisecond)
	}
	var moved string
	tc.eventually("a SpeCon migration", 45*time.Second, func() (bool, string) {
		var st []string
		for _, n := range names {
			tj := tc.get(n)
			if tj.Status.Migrations > 0 {
				moved = n
				return true, ""
			}
			st = append(st, fmt.Sprintf("%s:%s/%s/%d evals", n, tj.Status.Phase, tj.Status.ProgressCategory, len(tj.Status.Evals)))
		}
		return false, strings.Join(st, " ")
	})
	if ok, msg := tc.waitEvent(moved, "Migrated"); !ok {
		t.Errorf("no Migrated event: %s", msg)
	}
	tc.eventually("migrated job running again from its checkpoint", 20*time.Second, func() (bool, string) {
		tj := tc.get(moved)
		for _, p := range tc.pods(moved) {
			if p.DeletionTimestamp == nil && p.Annotations[v1alpha1.AnnotationResume] != "" &&
				(tj.Status.Phase == v1alpha1.PhaseRunning || tj.Status.Phase == v1alpha1.PhaseSucceeded) {
				return true, ""
			}
		}
		return tj.Status.Phase == v1alpha1.PhaseSucceeded, fmt.Sprintf("phase %s migrating %v", tj.Status.Phase, tj.Status.Migrating)
	})
	time.Sleep(2 * time.Second)
	if tj := tc.get(moved); tj.Status.Migrations != 1 {
		t.Errorf("%s migrated %d times, want once", moved, tj.Status.Migrations)
	}
}

type schedPriorityClass struct{ schedv1.PriorityClass }

// The predictive autoscaler (ladder model, no forecast warm-up) asks for
// placeholders sized from the instance catalogue as soon as there is
// demand; the executor creates them as pause-pod Deployments.
func TestAutoscalerPlaceholders(t *testing.T) {
	requirePolicy(t, "predictive")
	tc := newCluster(t, 2, "8", "4", standin.Config{})
	tc.tune = func(c *k8s.Config) {
		c.Catalog = []k8s.InstanceType{{Name: "gpu-node", PricePerHour: 3, Capacity: corev1.ResourceList{
			corev1.ResourceCPU: apiresource.MustParse("8"), corev1.ResourceMemory: apiresource.MustParse("64Gi"), k8s.GPUResource: apiresource.MustParse("4")}}}
	}
	tc.startScheduler("predictive:model=ladder;tick=1", nil)
	tc.create(tc.job("demand", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 2, cpu: "4", gpu: "2"}))
	tc.waitPhase("demand", v1alpha1.PhaseRunning, 20*time.Second)
	var deps appsv1.DeploymentList
	tc.eventually("placeholder deployments", 20*time.Second, func() (bool, string) {
		if err := cl.List(context.Background(), &deps, client.InNamespace("drover-system"), client.HasLabels{v1alpha1.LabelPlaceholder}); err != nil {
			return false, err.Error()
		}
		return len(deps.Items) > 0, "none yet"
	})
	for _, d := range deps.Items {
		t.Logf("placeholder %s: %d x %v", d.Name, *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Resources.Requests)
		if d.Spec.Template.Spec.PriorityClassName != "drover-placeholder" {
			t.Errorf("%s: priority class %q", d.Name, d.Spec.Template.Spec.PriorityClassName)
		}
		_ = cl.Delete(context.Background(), &d)
	}
}
