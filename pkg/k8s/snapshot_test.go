package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/policy"
	dres "github.com/drover-sched/drover/pkg/resource"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testNode(name string, cpu, gpu string, ready bool) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"), view.GPUResource: resource.MustParse(gpu)}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: rl, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

func testJob(name string, created time.Time, replicas int32, cpu, gpu string) v1alpha1.TrainingJob {
	return v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created), UID: types.UID("uid-" + name)},
		Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE, ReplicaGroups: []v1alpha1.ReplicaGroup{{Name: "worker", Replicas: replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), view.GPUResource: resource.MustParse(gpu)}}}}}}}}}}
}

func replicaPod(job, group, node string, attempt string, deleting *metav1.Time) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job + "-" + group + "-" + node, Namespace: "ns", DeletionTimestamp: deleting,
		Labels:      map[string]string{v1alpha1.LabelJob: job, v1alpha1.LabelGroup: group, v1alpha1.LabelAttempt: attempt},
		Annotations: map[string]string{v1alpha1.AnnotationNode: node}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), view.GPUResource: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// Build maps TrainingJob status and pods to the snapshot's phases, queue
// order and node accounting.
func TestBuild(t *testing.T) {
	running := testJob("run", t0, 2, "2", "1")
	running.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1,
		Placement: []v1alpha1.Assignment{{Group: "worker", Node: "a", Count: 2}}}
	suspended := testJob("sus", t0.Add(time.Second), 1, "2", "1")
	req := metav1.NewTime(t0.Add(50 * time.Second))
	suspended.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseSuspended, Attempt: 1, RequeuedAt: &req}
	suspending := testJob("susp", t0.Add(2*time.Second), 1, "2", "1")
	suspending.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseSuspended, Attempt: 1, RequeuedAt: &req}
	later := testJob("later", t0.Add(3*time.Second), 1, "2", "1")
	earlier := testJob("earlier", t0.Add(-time.Second), 1, "2", "1")
	done := testJob("done", t0, 1, "2", "1")
	done.Status.Phase = v1alpha1.PhaseSucceeded
	now := t0.Add(60 * time.Second)
	grace := metav1.NewTime(now.Add(10 * time.Second))
	w := &view.World{
		Nodes: []corev1.Node{testNode("b", "8", "4", true), testNode("a", "8", "4", true), testNode("c", "8", "4", false)},
		Jobs:  []v1alpha1.TrainingJob{later, running, suspended, suspending, earlier, done},
		Pods: []corev1.Pod{
			// Only one of run's two pods is visible yet: the placement is charged.
			replicaPod("run", "worker", "a", "1", nil),
			replicaPod("susp", "worker", "b", "1", &grace),
			// A pod drover does not manage.
			{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "x"}, Spec: corev1.PodSpec{NodeName: "b", Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}},
		},
	}
	v := view.Build(w, now, view.Options{DefaultDuration: 100, StuckAfter: time.Minute})
	s := v.Snap
	var names []string
	for _, n := range s.Nodes {
		names = append(names, fmt.Sprintf("%s:%v", n.Name, n.Ready))
	}
	if got := strings.Join(names, " "); got != "a:true b:true c:false" {
		t.Errorf("nodes %s", got)
	}
	var q []string
	for js := range s.Pending.All() {
		q = append(q, js.Job.ID)
	}
	// The preempted job with no pods left heads the queue; then arrival order.
	if got := strings.Join(q, " "); got != "ns/sus ns/earlier ns/later" {
		t.Errorf("queue %q", got)
	}
	phases := map[string]cluster.Phase{}
	for _, js := range s.Running {
		phases[js.Job.ID] = js.Phase
	}
	if phases["ns/run"] != cluster.Running || phases["ns/susp"] != cluster.Suspending || len(phases) != 2 {
		t.Errorf("running %v", phases)
	}
	a, b := s.Nodes[0], s.Nodes[1]
	if a.Allocated[dres.CPU] != 4000 || a.Allocated[dres.GPU] != 2 {
		t.Errorf("node a allocated %v, want the 2-replica placement", a.Allocated)
	}
	if b.Allocated[dres.CPU] != 3000 || b.Releasing[dres.CPU] != 2000 {
		t.Errorf("node b allocated %v releasing %v", b.Allocated, b.Releasing)
	}
	if js := s.Job("ns/susp"); js.GraceEnds != (view.Options{}).Seconds(grace.Time) {
		t.Errorf("grace ends %v", js.GraceEnds)
	}
	if js := s.Job("ns/run"); js.Rate <= 0 || js.Job.Work != 100 {
		t.Errorf("running job rate %v work %v", js.Rate, js.Job.Work)
	}
}

// A pod terminating past its deadline plus StuckAfter is reported and no
// longer holds its job in Suspending.
func TestBuildStuck(t *testing.T) {
	j := testJob("j", t0, 1, "2", "1")
	req := metav1.NewTime(t0)
	j.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseSuspended, Attempt: 1, RequeuedAt: &req}
	del := metav1.NewTime(t0.Add(time.Second))
	w := &view.World{Nodes: []corev1.Node{testNode("a", "8", "4", true)}, Jobs: []v1alpha1.TrainingJob{j},
		Pods: []corev1.Pod{replicaPod("j", "worker", "a", "1", &del)}}
	for _, c := range []struct {
		after time.Duration
		phase cluster.Phase
		stuck int
	}{{5 * time.Second, cluster.Suspending, 0}, {time.Minute, cluster.Pending, 1}} {
		v := view.Build(w, t0.Add(c.after), view.Options{DefaultDuration: 100, StuckAfter: 10 * time.Second})
		jv := v.Jobs["ns/j"]
		if jv.St.Phase != c.phase || len(jv.Stuck) != c.stuck {
			t.Errorf("after %v: phase %s stuck %d, want %s %d", c.after, jv.St.Phase, len(jv.Stuck), c.phase, c.stuck)
		}
		if v.Snap.Nodes[0].Allocated[dres.CPU] != 2000 {
			t.Errorf("after %v: the terminating pod's CPU is not charged: %v", c.after, v.Snap.Nodes[0].Allocated)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	// The config shipped in deploy/ parses.
	cases := []struct{ name, body, wantErr string }{
		{"deploy", deployConfig(t), ""},
		{"empty", "", ""},
		{"typo", "polcy: fifo\n", "polcy"},
		{"period", "period: 1ms\n", "period"},
		{"skew", "reportClockSkew: 2h\n", "reportClockSkew"},
		{"namespaces", "namespaces: [team-a, Team_B]\n", "namespaces[1]"},
		{"namespaces twice", "namespaces: [team-a, team-a]\n", "namespaces[1]"},
		{"namespace and namespaces", "namespace: a\nnamespaces: [b]\n", "namespace and namespaces"},
		{"namespaced mode", "namespaces: [team-a, team-b]\n", ""},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name+".yaml")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(p)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.wantErr)
		case c.wantErr == "" && (cfg.Policy == "" || cfg.Period.Duration == 0):
			t.Errorf("%s: defaults not filled: %+v", c.name, cfg)
		}
	}
}

// Opted-in plain pods are one-replica jobs: pending in arrival order with
// TrainingJobs when unbound, running on their node when bound; pods for
// another scheduler or rejected ones are not jobs.
func TestBuildOptIn(t *testing.T) {
	pod := func(name, sched, node string, created time.Time, ann map[string]string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{v1alpha1.OptInLabel: "TE"}, Annotations: ann},
			Spec: corev1.PodSpec{SchedulerName: sched, NodeName: node, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	}
	w := &view.World{Nodes: []corev1.Node{testNode("a", "8", "4", true)},
		Jobs: []v1alpha1.TrainingJob{testJob("tj", t0.Add(2*time.Second), 1, "2", "1")},
		Pods: []corev1.Pod{
			pod("first", "drover", "", t0.Add(time.Second), nil),
			pod("late", "drover", "", t0.Add(3*time.Second), nil),
			pod("bound", "drover", "a", t0, nil),
			pod("foreign", "default-scheduler", "", t0, nil),
			pod("rejected", "drover", "", t0, map[string]string{view.AnnotationRejected: "no"}),
		}}
	v := view.Build(w, t0.Add(time.Minute), view.Options{DefaultDuration: 100, SchedulerName: "drover"})
	var q []string
	for js := range v.Snap.Pending.All() {
		q = append(q, js.Job.ID)
	}
	if got := strings.Join(q, " "); got != "pod:ns/first ns/tj pod:ns/late" {
		t.Errorf("queue %q", got)
	}
	if len(v.Snap.Running) != 1 || v.Snap.Running[0].Job.ID != "pod:ns/bound" || v.Snap.Running[0].Job.Class != cluster.ClassTE {
		t.Errorf("running %v", v.Snap.Running)
	}
	if c := v.Snap.Nodes[0].Allocated[dres.CPU]; c != 1000 {
		t.Errorf("node a allocated %dm CPU, want the bound pod's 1000m", c)
	}
}

// A node keeps its index from cycle to cycle: a new node is appended, a
// departed one stays Gone at its index, and one that comes back gets its
// index again.
func TestBuildNodeTable(t *testing.T) {
	nodes := func(names ...string) []corev1.Node {
		var out []corev1.Node
		for _, n := range names {
			out = append(out, testNode(n, "8", "4", true))
		}
		return out
	}
	cycles := []struct {
		nodes []corev1.Node
		want  []string
	}{
		{nodes("c", "b"), []string{"0 b", "1 c"}},
		{nodes("c", "a", "b", "d"), []string{"0 b", "1 c", "2 a", "3 d"}},
		{nodes("a", "c", "d"), []string{"0 b gone", "1 c", "2 a", "3 d"}},
		{nodes("d", "c", "b", "a"), []string{"0 b", "1 c", "2 a", "3 d"}},
		{nodes(), []string{"0 b gone", "1 c gone", "2 a gone", "3 d gone"}},
	}
	o := view.Options{DefaultDuration: 100, Nodes: view.NewNodeTable()}
	for i, c := range cycles {
		v := view.Build(&view.World{Nodes: c.nodes}, t0, o)
		var got []string
		for j, n := range v.Snap.Nodes {
			s := fmt.Sprintf("%d %s", n.Index, n.Name)
			if n.Gone {
				s += " gone"
			}
			if n.Index != j || n.Gone == n.Ready || n.Capacity.IsZero() {
				t.Errorf("cycle %d: node %s: index %d at %d, ready %v gone %v, capacity %v", i, n.Name, n.Index, j, n.Ready, n.Gone, n.Capacity)
			}
			got = append(got, s)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("cycle %d: nodes (-want +got):\n%s", i, diff)
		}
	}
}

// indexPolicy remembers the index of node "c" in the first cycle, as
// OASiS caches node indices, and starts a job there in the second.
type indexPolicy struct {
	cycle int
	c     int
	seen  [][]string
}

func (p *indexPolicy) Name() string { return "index" }
func (p *indexPolicy) Schedule(s *cluster.Snapshot) []policy.Action {
	p.cycle++
	var names []string
	for _, n := range s.Nodes {
		names = append(names, fmt.Sprintf("%s gone=%v", n.Name, n.Gone))
		if p.cycle == 1 && n.Name == "c" {
			p.c = n.Index
		}
	}
	p.seen = append(p.seen, names)
	if p.cycle == 2 {
		return []policy.Action{policy.Start{Job: "ns/j", Placement: cluster.Placement{{Node: p.c}}}}
	}
	return nil
}

// The executor's snapshots keep node identity across cycles: a node added
// between two cycles does not shift the others (they used to be re-sorted
// by name every cycle), so an index a policy kept still names the same
// node; a node that leaves is shown Gone at its index.
func TestExecutorNodeIdentity(t *testing.T) {
	b, c := testNode("b", "8", "4", true), testNode("c", "8", "4", true)
	j := testJob("j", t0, 1, "2", "1")
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&b, &c, &j).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: bindFake}).Build()
	cfg := Config{}
	cfg.Defaults()
	pol := &indexPolicy{}
	e := New(cfg, cl, nil, nil, pol, logr.Discard())
	e.Now = func() time.Time { return t0 }
	e.Origin = t0
	ctx := context.Background()
	cycle := func() {
		t.Helper()
		if _, err := e.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	a := testNode("a", "8", "4", true)
	if err := cl.Create(ctx, &a); err != nil {
		t.Fatal(err)
	}
	cycle()
	got := &v1alpha1.TrainingJob{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(&j), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Placement) != 1 || got.Status.Placement[0].Node != "c" {
		t.Errorf("the job went to %v, want node c (index %d in the first cycle)", got.Status.Placement, pol.c)
	}
	if err := cl.Delete(ctx, &b); err != nil {
		t.Fatal(err)
	}
	cycle()
	want := [][]string{
		{"b gone=false", "c gone=false"},
		{"b gone=false", "c gone=false", "a gone=false"},
		{"b gone=true", "c gone=false", "a gone=false"},
	}
	if diff := cmp.Diff(want, pol.seen); diff != "" {
		t.Errorf("nodes per cycle (-want +got):\n%s", diff)
	}
}

// In the namespaced mode (Options.InScope), opted-in pods of other
// namespaces are not jobs, since the scheduler may not bind them there;
// bound ones still take capacity on their node.
func TestBuildOutOfScope(t *testing.T) {
	pod := func(ns, name, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{v1alpha1.OptInLabel: "BE"}},
			Spec: corev1.PodSpec{SchedulerName: "drover", NodeName: node, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	}
	w := &view.World{Nodes: []corev1.Node{testNode("a", "8", "4", true)},
		Pods: []corev1.Pod{pod("team", "mine", ""), pod("other", "theirs", ""), pod("other", "theirs-bound", "a")}}
	cases := []struct {
		name      string
		inScope   func(string) bool
		pending   []string
		running   []string
		allocated int64
	}{
		{name: "every namespace", pending: []string{"pod:other/theirs", "pod:team/mine"}, running: []string{"pod:other/theirs-bound"}, allocated: 1000},
		{name: "namespaced mode", inScope: func(ns string) bool { return ns == "team" }, pending: []string{"pod:team/mine"}, allocated: 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := view.Build(w, t0.Add(time.Minute), view.Options{DefaultDuration: 100, SchedulerName: "drover", InScope: c.inScope})
			var pending, running []string
			for js := range v.Snap.Pending.All() {
				pending = append(pending, js.Job.ID)
			}
			for _, js := range v.Snap.Running {
				running = append(running, js.Job.ID)
			}
			slices.Sort(pending)
			if diff := cmp.Diff(c.pending, pending); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.running, running); diff != "" {
				t.Errorf("running (-want +got):\n%s", diff)
			}
			if got := v.Snap.Nodes[0].Allocated[dres.CPU]; got != c.allocated {
				t.Errorf("node a allocated %dm CPU, want %dm", got, c.allocated)
			}
		})
	}
}
