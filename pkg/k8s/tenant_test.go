package k8s

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// Tests of what tenants can do to the scheduler (issue 17, items 1, 2
// and 4): the state the scheduler reads back and the identity it
// charges.

// tenantJob builds TrainingJobs for these tests.
type tenantJob struct{ tj v1alpha1.TrainingJob }

func aJob(name string) *tenantJob { return &tenantJob{tj: testJob(name, t0, 1, "2", "1")} }

func (b *tenantJob) ns(ns string) *tenantJob     { b.tj.Namespace = ns; return b }
func (b *tenantJob) tenant(t string) *tenantJob  { b.tj.Spec.Tenant = t; return b }
func (b *tenantJob) replicas(n int32) *tenantJob { b.tj.Spec.ReplicaGroups[0].Replicas = n; return b }
func (b *tenantJob) annotation(k, v string) *tenantJob {
	if b.tj.Annotations == nil {
		b.tj.Annotations = map[string]string{}
	}
	b.tj.Annotations[k] = v
	return b
}
func (b *tenantJob) labels(kv ...string) *tenantJob {
	b.tj.Status.PolicyLabels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		b.tj.Status.PolicyLabels[kv[i]] = kv[i+1]
	}
	return b
}

// running places the job's replicas: "node=count" pairs, phase Running.
func (b *tenantJob) running(at ...v1alpha1.Assignment) *tenantJob {
	b.tj.Status.Phase, b.tj.Status.Attempt, b.tj.Status.Placement = v1alpha1.PhaseRunning, 1, at
	return b
}
func (b *tenantJob) obj() *v1alpha1.TrainingJob { tj := b.tj.DeepCopy(); return tj }

func on(node string, n int32) v1alpha1.Assignment {
	return v1alpha1.Assignment{Group: "worker", Node: node, Count: n}
}

func TestPolicyLabels(t *testing.T) {
	long := strings.Repeat("v", view.MaxPolicyLabelValue+1)
	tests := []struct {
		name    string
		job     *tenantJob
		want    map[string]string
		wantErr string // substring; "" for none
	}{
		{name: "none", job: aJob("j")},
		{name: "valid", job: aJob("j").labels("drover.dev/rr-slot", "3", "drover.dev/category", "CC"),
			want: map[string]string{"drover.dev/rr-slot": "3", "drover.dev/category": "CC"}},
		// The reviewer's annotation: a user-writable place, never read.
		{name: "annotation ignored", job: aJob("j").annotation(v1alpha1.AnnotationLabels, `{"drover.dev/rr-slot":"9223372036854775807"}`)},
		{name: "foreign key, long value, bad UTF-8 dropped", job: aJob("j").labels("drover.dev/ok", "1", "rr-slot", "2", "drover.dev/long", long, "drover.dev/bin", "\xff"),
			want:    map[string]string{"drover.dev/ok": "1"},
			wantErr: `trainingjob ns/j: status.policyLabels: dropped 3 of 4 entries: key drover.dev/bin: value is not valid UTF-8 text`},
		{name: "prefix alone", job: aJob("j").labels("drover.dev/", "1"),
			wantErr: `key "drover.dev/": not of the form drover.dev/<name>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := view.PolicyLabels(tc.job.obj())
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// At most MaxPolicyLabels entries, the first in key order.
	var kv []string
	for i := range view.MaxPolicyLabels + 2 {
		kv = append(kv, "drover.dev/k"+string(rune('a'+i)), "v")
	}
	got, err := view.PolicyLabels(aJob("j").labels(kv...).obj())
	if len(got) != view.MaxPolicyLabels || got["drover.dev/k"+string(rune('a'+view.MaxPolicyLabels))] != "" || err == nil {
		t.Errorf("%d labels kept (error %v), want the first %d and an error", len(got), err, view.MaxPolicyLabels)
	}
}

// cycleWith runs cycles of a preset over the objects with a fake client,
// returning the client and the events recorded.
func cycleWith(t *testing.T, spec string, cfg Config, cycles int, objs ...client.Object) (client.Client, *record.FakeRecorder) {
	t.Helper()
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake}).Build()
	off := 0
	cfg.QueuePositions = &off
	rec := record.NewFakeRecorder(100)
	e := testExecutor(t, cl, spec, cfg, rec)
	for range cycles {
		if _, err := e.Cycle(context.Background()); err != nil {
			t.Fatalf("cycle: %v", err)
		}
	}
	return cl, rec
}

func getJob(t *testing.T, cl client.Client, ns, name string) *v1alpha1.TrainingJob {
	t.Helper()
	tj := &v1alpha1.TrainingJob{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tj); err != nil {
		t.Fatal(err)
	}
	return tj
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Issue 17, item 1: SpeCon's round-robin slot used to be read back from
// the drover.dev/policy-labels annotation, which the job's owner can
// write: a slot of 4 there chose the worker of the next job (5 mod 3),
// and MaxInt64 crashed the scheduler. The annotation is ignored now, and
// the slot is kept in status.policyLabels.
func TestPolicyLabelsLiveInStatus(t *testing.T) {
	n1, n2, n3 := testNode("n1", "16", "8", true), testNode("n2", "16", "8", true), testNode("n3", "16", "8", true)
	old := aJob("old").running(on("n1", 1)).annotation(v1alpha1.AnnotationLabels, `{"drover.dev/rr-slot":"4"}`).obj()
	evil := aJob("evil").running(on("n1", 1)).annotation(v1alpha1.AnnotationLabels, `{"drover.dev/rr-slot":"9223372036854775807"}`).obj()
	next := aJob("next").obj()
	next.CreationTimestamp.Time = t0.Add(time.Second)
	cl, _ := cycleWith(t, "default", Config{}, 1, &n1, &n2, &n3, old, evil, next)
	got := getJob(t, cl, "ns", "next")
	if d := cmp.Diff(map[string]string{"drover.dev/rr-slot": "0"}, got.Status.PolicyLabels); d != "" {
		t.Errorf("next: status.policyLabels (-want +got):\n%s", d)
	}
	if got.Annotations[v1alpha1.AnnotationLabels] != "" {
		t.Errorf("next: the annotation was written: %q", got.Annotations[v1alpha1.AnnotationLabels])
	}
	if d := cmp.Diff([]v1alpha1.Assignment{on("n1", 1)}, got.Status.Placement); d != "" {
		t.Errorf("next: placement (-want +got), slot 0 is the first worker:\n%s", d)
	}
}

// Labels in status that the scheduler would never have written (someone
// granted trainingjobs/status wrote them) are dropped, the valid ones
// kept, with a Warning Event.
func TestBadStatusLabelsRepaired(t *testing.T) {
	n1 := testNode("n1", "16", "8", true)
	j := aJob("j").running(on("n1", 1)).labels("drover.dev/rr-slot", "2", "foreign", "x").obj()
	cl, rec := cycleWith(t, "fifo", Config{}, 1, &n1, j)
	if d := cmp.Diff(map[string]string{"drover.dev/rr-slot": "2"}, getJob(t, cl, "ns", "j").Status.PolicyLabels); d != "" {
		t.Errorf("status.policyLabels (-want +got):\n%s", d)
	}
	ev := strings.Join(events(rec), "\n")
	if !strings.Contains(ev, `Warning PolicyLabelsDropped trainingjob ns/j: status.policyLabels: dropped 1 of 2 entries: key "foreign"`) {
		t.Errorf("events:\n%s\nwant a PolicyLabelsDropped warning naming the key", ev)
	}
}

// Issue 17, item 4: the tenant comes from the namespace, or from the
// operator's mapping in the scheduler config, never from spec.tenant.
func TestTenantFromNamespace(t *testing.T) {
	tests := []struct {
		name    string
		tenants map[string]string
		job     *tenantJob
		want    string
	}{
		{name: "namespace", job: aJob("j").ns("team-a"), want: "team-a"},
		{name: "spec.tenant ignored", job: aJob("j").ns("team-a").tenant("team-b"), want: "team-a"},
		{name: "mapped", tenants: map[string]string{"team-a-dev": "team-a"}, job: aJob("j").ns("team-a-dev").tenant("team-b"), want: "team-a"},
		{name: "not mapped", tenants: map[string]string{"team-a-dev": "team-a"}, job: aJob("j").ns("team-c").tenant("team-a"), want: "team-c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := view.ToJob(tc.job.obj(), view.Options{Tenants: tc.tenants, DefaultDuration: 60})
			if err != nil {
				t.Fatal(err)
			}
			if j.Tenant != tc.want {
				t.Errorf("tenant %q, want %q", j.Tenant, tc.want)
			}
		})
	}
	// The executor shows it in status.tenant (kubectl's Tenant column).
	n1 := testNode("n1", "16", "8", true)
	// A job started now, and one running from before status.tenant was
	// shown, both get it.
	cl, _ := cycleWith(t, "fifo", Config{Tenants: map[string]string{"ns": "team-a"}}, 1, &n1, aJob("j").tenant("team-b").obj(),
		aJob("old").running(on("n1", 1)).obj())
	for _, name := range []string{"j", "old"} {
		if got := getJob(t, cl, "ns", name).Status.Tenant; got != "team-a" {
			t.Errorf("%s: status.tenant %q, want team-a", name, got)
		}
	}
}

func TestTenantsConfig(t *testing.T) {
	tests := []struct {
		tenants map[string]string
		wantErr string
	}{
		{tenants: map[string]string{"team-a-dev": "team-a", "team-a-prod": "team-a"}},
		{tenants: map[string]string{"Team": "a"}, wantErr: `tenants: key "Team" is not a namespace name`},
		{tenants: map[string]string{"ns": ""}, wantErr: `tenants[ns]: "" is not a DNS-1123 label`},
		{tenants: map[string]string{"ns": "a b"}, wantErr: `tenants[ns]: "a b" is not a DNS-1123 label`},
	}
	for _, tc := range tests {
		c := Config{Tenants: tc.tenants}
		c.Defaults()
		err := c.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: error %v, want %q", tc.tenants, err, tc.wantErr)
		}
	}
}

// boom is an Admit plugin that panics on one job, as SpeCon's slot
// overflow did on a tenant's label.
type boom struct{ job string }

func (*boom) Name() string { return "boom" }
func (b *boom) Admit(_ *framework.Cycle, js *cluster.JobState) *framework.Status {
	if js.Job.ID == b.job {
		var slots []int
		_ = slots[len(js.Job.ID)-20]
	}
	return nil
}

// panicky is a policy that is not Guarded and panics.
type panicky struct{}

func (panicky) Name() string                               { return "panicky" }
func (panicky) Schedule(*cluster.Snapshot) []policy.Action { panic("bug") }

// Issue 17, item 1: a plugin that panics on one job costs that job (Failed,
// with the panic in its reason and a Warning Event), not the process: the
// other jobs start in the same cycle and the cycle returns.
func TestPolicyPanicCostsOneJob(t *testing.T) {
	rt, err := scheduler.New(framework.Profile{Name: "boom", Admit: []framework.Admit{&boom{job: "ns/boom"}}})
	if err != nil {
		t.Fatal(err)
	}
	n1 := testNode("n1", "16", "8", true)
	ok1, bad, ok2 := aJob("ok1").obj(), aJob("boom").obj(), aJob("ok2").obj()
	bad.CreationTimestamp.Time, ok2.CreationTimestamp.Time = t0.Add(time.Second), t0.Add(2*time.Second)
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&n1, ok1, bad, ok2).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake}).Build()
	cfg := Config{}
	cfg.Defaults()
	rec := record.NewFakeRecorder(100)
	e := New(cfg, cl, nil, rec, rt, logr.Discard())
	e.Now = func() time.Time { return t0.Add(time.Minute) }
	e.Origin = t0
	res, err := e.Cycle(context.Background())
	if err != nil {
		t.Fatalf("cycle: %v", err)
	}
	if len(res.Faults) != 1 || res.Faults[0].Job != "ns/boom" {
		t.Errorf("faults %+v, want one for ns/boom", res.Faults)
	}
	for name, want := range map[string]v1alpha1.TrainingJobPhase{"ok1": v1alpha1.PhaseAdmitted, "ok2": v1alpha1.PhaseAdmitted, "boom": v1alpha1.PhaseFailed} {
		if got := getJob(t, cl, "ns", name).Status.Phase; got != want {
			t.Errorf("%s: phase %s, want %s", name, got, want)
		}
	}
	if r := getJob(t, cl, "ns", "boom").Status.Reason; !strings.HasPrefix(r, "PolicyPanic: policy boom panicked while deciding about this job: runtime error: index out of range") ||
		!strings.Contains(r, "tenant_test.go") {
		t.Errorf("boom: reason %q", r)
	}
	if ev := strings.Join(events(rec), "\n"); !strings.Contains(ev, "Warning PolicyPanic PolicyPanic: policy boom panicked") {
		t.Errorf("events:\n%s\nwant a PolicyPanic warning", ev)
	}
	// The next cycle does not meet the job again.
	if res, err := e.Cycle(context.Background()); err != nil || len(res.Faults) != 0 {
		t.Errorf("second cycle: faults %v, error %v", res.Faults, err)
	}

	// A policy that is not Guarded is recovered around the whole call.
	e = New(cfg, cl, nil, rec, panicky{}, logr.Discard())
	e.Now, e.Origin = func() time.Time { return t0.Add(time.Minute) }, t0
	res, err = e.Cycle(context.Background())
	if err != nil || len(res.Faults) != 1 || res.Faults[0].Stage != policy.StageCycle || res.Faults[0].Value != "bug" {
		t.Errorf("unguarded policy: faults %+v, error %v", res.Faults, err)
	}
}

// idle is a policy that decides nothing, so that a test sees only what
// the executor does with what it reads back.
type idle struct{}

func (idle) Name() string                               { return "idle" }
func (idle) Schedule(*cluster.Snapshot) []policy.Action { return nil }

// Issue 17, item 2: a status.placement written by hand is checked as a
// policy's Start is before the executor creates or binds anything for
// it; one that fails is requeued (PlacementRefused), never acted on.
// What is already bound is a fact and is not checked again.
func TestStoredPlacementChecked(t *testing.T) {
	cordoned := testNode("cordoned", "64", "4", true)
	cordoned.Spec.Unschedulable = true
	small, other := testNode("small", "64", "4", true), testNode("other", "64", "4", true)
	tiny := testNode("tiny", "64", "8", true) // room for 3 replicas, slots for 2 pods
	tiny.Status.Allocatable[corev1.ResourcePods] = *resourceQ("2")
	gpus4 := func(name string, replicas int32) *tenantJob {
		b := aJob(name).replicas(replicas)
		b.tj.Spec.ReplicaGroups[0].Template.Spec.Containers[0].Resources.Requests[view.GPUResource] = *resourceQ("4")
		return b
	}
	admitted := func(b *tenantJob, at ...v1alpha1.Assignment) *v1alpha1.TrainingJob {
		tj := b.running(at...).obj()
		tj.Status.Phase = v1alpha1.PhaseAdmitted
		return tj
	}
	bound := func(job, node string, i int) *corev1.Pod {
		p := replicaPod(job, "worker", node, "1", nil)
		p.Name = fmt.Sprintf("%s-worker-a1-%d", job, i)
		p.Spec.Containers[0].Resources.Requests[view.GPUResource] = *resourceQ("4")
		return &p
	}
	tests := []struct {
		name    string
		objs    []client.Object
		refused map[string]string // job -> substring of its PlacementRefused reason
		pods    map[string]int    // node -> pods bound after the cycle
	}{
		{name: "the reviewer's: 5 x 4 GPUs on a cordoned 4-GPU node",
			objs:    []client.Object{admitted(gpus4("j", 5), on("cordoned", 5))},
			refused: map[string]string{"j": "status.placement: node cordoned is not ready"}},
		{name: "5 x 4 GPUs on a ready 4-GPU node",
			objs:    []client.Object{admitted(gpus4("j", 5), on("small", 5))},
			refused: map[string]string{"j": "status.placement: over capacity on node small: needs cpu=10 gpu=20"}},
		{name: "above the group's maximum",
			objs:    []client.Object{admitted(gpus4("j", 1), on("small", 5))},
			refused: map[string]string{"j": "status.placement: group worker: 5 replicas is above max 1"}},
		{name: "a count of 2^31-1 is not expanded",
			objs:    []client.Object{admitted(gpus4("j", 1), on("small", 2147483647))},
			refused: map[string]string{"j": "above max 1"}},
		{name: "more pods than the node's pod slots",
			objs:    []client.Object{admitted(aJob("j").replicas(3), on("tiny", 3))},
			refused: map[string]string{"j": "status.placement: over capacity on node tiny: Too many pods: 3 more, 0 of 2 allocatable in use"}},
		{name: "a group the job does not have",
			objs:    []client.Object{admitted(gpus4("j", 1), v1alpha1.Assignment{Group: "ps", Node: "small", Count: 1})},
			refused: map[string]string{"j": `group "ps" is not a replica group of the job`}},
		{name: "a job admitted before keeps the node; the edited one is refused",
			objs: []client.Object{
				withAdmitted(admitted(gpus4("first", 1), on("small", 1)), t0),
				withAdmitted(admitted(gpus4("second", 1), on("small", 1)), t0.Add(time.Second))},
			refused: map[string]string{"second": "over capacity on node small"},
			pods:    map[string]int{"small": 1}},
		{name: "legit: bound replicas on a node cordoned since",
			objs: []client.Object{gpus4("j", 1).running(on("cordoned", 1)).obj(), bound("j", "cordoned", 0)},
			pods: map[string]int{"cordoned": 1}},
		{name: "legit: migrating in place while the old pod terminates",
			objs: []client.Object{migrating(admitted(gpus4("j", 1), on("small", 1))), terminating(bound("j", "small", 0))},
			pods: map[string]int{}},
		{name: "legit: admitted, pods still to create",
			objs: []client.Object{admitted(gpus4("j", 2), on("small", 1), on("other", 1))},
			pods: map[string]int{"small": 1, "other": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]client.Object{&cordoned, &small, &other, &tiny}, tc.objs...)
			cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.TrainingJob{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake}).Build()
			cfg := Config{}
			cfg.Defaults()
			rec := record.NewFakeRecorder(100)
			e := New(cfg, cl, nil, rec, idle{}, logr.Discard())
			e.Now, e.Origin = func() time.Time { return t0.Add(time.Minute) }, t0
			if _, err := e.Cycle(context.Background()); err != nil {
				t.Fatalf("cycle: %v", err)
			}
			var jobs v1alpha1.TrainingJobList
			if err := cl.List(context.Background(), &jobs); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, tj := range jobs.Items {
				if strings.HasPrefix(tj.Status.Reason, view.ReasonPlacementRefused) {
					if tj.Status.Phase != v1alpha1.PhaseSuspended || len(tj.Status.Placement) != 0 {
						t.Errorf("%s: refused but phase %s placement %v", tj.Name, tj.Status.Phase, tj.Status.Placement)
					}
					got[tj.Name] = tj.Status.Reason
				}
			}
			for name, want := range tc.refused {
				if !strings.Contains(got[name], want) {
					t.Errorf("%s: reason %q, want PlacementRefused with %q", name, got[name], want)
				}
			}
			for name, r := range got {
				if _, ok := tc.refused[name]; !ok {
					t.Errorf("%s refused: %s", name, r)
				}
			}
			var pods corev1.PodList
			if err := cl.List(context.Background(), &pods); err != nil {
				t.Fatal(err)
			}
			perNode := map[string]int{}
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
					perNode[p.Spec.NodeName]++
				}
			}
			want := tc.pods
			if want == nil {
				want = map[string]int{}
			}
			if d := cmp.Diff(want, perNode); d != "" {
				t.Errorf("live pods bound per node (-want +got):\n%s", d)
			}
		})
	}
}

func withAdmitted(tj *v1alpha1.TrainingJob, at time.Time) *v1alpha1.TrainingJob {
	tj.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionTrue, Reason: "Placed",
		LastTransitionTime: metav1.NewTime(at)}}
	return tj
}

func resourceQ(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func migrating(tj *v1alpha1.TrainingJob) *v1alpha1.TrainingJob {
	tj.Status.Migrating, tj.Status.Attempt = true, 2
	return tj
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute + 10*time.Second)}
	p.Finalizers = []string{"test/hold"}
	return p
}
