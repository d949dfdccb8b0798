package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/k8s/report"
)

// podNameExtra is the user extra in which the API server names the pod a
// service account token is bound to.
const podNameExtra = "authentication.kubernetes.io/pod-name"

// The chart's ValidatingAdmissionPolicy, on the real API server (its
// ValidatingAdmissionPolicy admission plugin and RBAC authorizer): a
// trainer's service account, holding the drover-trainer role, may write
// the report of the pod its token is bound to and no other pod's, nor
// without a bound token; a tenant who may create and patch pods may not
// write a report or create a pod with one; the scheduler may not either;
// other annotations stay writable, and cluster admins may write reports.
// The labels and annotations that make a pod a job's replica are the
// scheduler's alone: nobody else creates a pod with them or changes them
// (issue 17 item 3).
func TestReportOnlyFromItsPod(t *testing.T) {
	ctx := context.Background()
	tc := newCluster(t, 0, "1", "0", standin.Config{})
	objs := renderChart(t)
	applied := applyChart(t, objs, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole", "ClusterRoleBinding")
	var policies []string
	for _, o := range applied {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			policies = append(policies, o.GetKind()+"/"+o.GetName())
		}
	}
	for _, want := range []string{"ValidatingAdmissionPolicy/drover-report", "ValidatingAdmissionPolicyBinding/drover-report"} {
		if !slices.Contains(policies, want) {
			t.Fatalf("the chart renders %v, no %s", policies, want)
		}
	}
	// Two jobs' pods, and the RBAC of docs/kubernetes.md: drover-trainer
	// bound to the trainers' service account; a tenant with a Role that
	// creates and patches pods.
	for _, name := range []string{"job-a-worker-0-0", "job-b-worker-0-0"} {
		tc.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns, Labels: map[string]string{v1alpha1.LabelJob: name[:5]}},
			Spec: corev1.PodSpec{ServiceAccountName: "trainer", Containers: []corev1.Container{{Name: "trainer", Image: "trainer:latest"}}}})
	}
	tc.create(
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: tc.ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "drover-trainer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainer", Namespace: tc.ns},
				{Kind: "ServiceAccount", Name: "trainer", Namespace: "other"}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: tc.ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/status"}, Verbs: []string{"get", "create", "patch", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: tc.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}},
	)
	trainer, saGroups := serviceAccountUser(tc.ns, "trainer")
	otherTrainer, otherGroups := serviceAccountUser("other", "trainer")
	scheduler, schedGroups := serviceAccountUser("drover-system", "drover-scheduler")
	boundTo := func(pod string) map[string][]string { return map[string][]string{podNameExtra: {pod}} }
	as := func(rc *rest.Config) client.Client {
		c, err := client.New(rc, client.Options{Scheme: k8s.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	patch := func(key, value string) client.Patch {
		return client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)))
	}
	forged := func() string {
		b, err := json.Marshal(report.Report{Progress: 1, Checkpoint: "s3://attacker/ckpt", CheckpointProgress: 1, Time: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sendAs := func(c client.Client, pod string) func() error {
		return func() error {
			r := report.Report{Progress: 0.5, Checkpoint: "s3://team/ckpt", CheckpointProgress: 0.5, Time: time.Now().UTC()}
			return report.Send(ctx, c, tc.ns, pod, r)
		}
	}
	const refusal, notScheduler = "may be written only by that pod", "are set only by the drover scheduler"
	// The policy takes effect once the API server's policy cache has it.
	waitRefused(t, "a report on another pod", refusal, sendAs(as(impersonate(trainer, saGroups, boundTo("job-a-worker-0-0"))), "job-b-worker-0-0"))

	cases := []struct {
		name    string
		rc      *rest.Config
		write   func(c client.Client) error
		refused string // a part of the policy's message; empty: allowed
	}{
		{name: "a trainer writes its own pod's report",
			rc: impersonate(trainer, saGroups, boundTo("job-a-worker-0-0")), write: func(c client.Client) error { return sendAs(c, "job-a-worker-0-0")() }},
		{name: "a trainer writes another job's pod's report", refused: refusal,
			rc: impersonate(trainer, saGroups, boundTo("job-a-worker-0-0")), write: func(c client.Client) error { return sendAs(c, "job-b-worker-0-0")() }},
		{name: "the trainers' service account without a bound token (no pod name)", refused: refusal,
			rc: impersonate(trainer, saGroups, nil), write: func(c client.Client) error { return sendAs(c, "job-a-worker-0-0")() }},
		{name: "a service account of another namespace bound to a pod of that name", refused: refusal,
			rc: impersonate(otherTrainer, otherGroups, boundTo("job-a-worker-0-0")),
			write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-a-worker-0-0"), patch(v1alpha1.AnnotationReport, forged()))
			}},
		{name: "a trainer removes another pod's report", refused: refusal,
			rc: impersonate(trainer, saGroups, boundTo("job-b-worker-0-0")), write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-a-worker-0-0"), client.RawPatch(types.MergePatchType,
					[]byte(`{"metadata":{"annotations":{"drover.dev/report":null}}}`)))
			}},
		{name: "a trainer sets another annotation on another pod (RBAC's business, not the policy's)",
			rc: impersonate(trainer, saGroups, boundTo("job-a-worker-0-0")), write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-b-worker-0-0"), patch("example.com/note", "x"))
			}},
		{name: "a tenant who may patch pods writes a report", refused: refusal,
			rc: impersonate("alice", []string{"system:authenticated"}, nil), write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-b-worker-0-0"), patch(v1alpha1.AnnotationReport, forged()))
			}},
		{name: "a tenant writes a report through pods/status", refused: refusal,
			rc: impersonate("alice", []string{"system:authenticated"}, nil), write: func(c client.Client) error {
				return c.Status().Patch(ctx, podRef(tc.ns, "job-b-worker-0-0"), patch(v1alpha1.AnnotationReport, forged()))
			}},
		{name: "a tenant creates a pod that carries a report", refused: refusal,
			rc: impersonate("alice", []string{"system:authenticated"}, nil), write: func(c client.Client) error {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-b-worker-0-9", Namespace: tc.ns,
					Labels: map[string]string{v1alpha1.LabelJob: "job-b"}, Annotations: map[string]string{v1alpha1.AnnotationReport: forged()}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
				return c.Create(ctx, p)
			}},
		{name: "the scheduler writes a report", refused: refusal,
			rc: impersonate(scheduler, schedGroups, boundTo("drover-scheduler-0")), write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-b-worker-0-0"), patch(v1alpha1.AnnotationReport, forged()))
			}},
		{name: "a trainer changes another replica's attempt label", refused: notScheduler,
			rc: impersonate(trainer, saGroups, boundTo("job-a-worker-0-0")), write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-b-worker-0-0"), client.RawPatch(types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"drover.dev/attempt":"7"}}}`)))
			}},
		{name: "a trainer changes its own pod's node annotation", refused: notScheduler,
			rc: impersonate(trainer, saGroups, boundTo("job-a-worker-0-0")), write: func(c client.Client) error {
				return c.Patch(ctx, podRef(tc.ns, "job-a-worker-0-0"), patch(v1alpha1.AnnotationNode, "elsewhere"))
			}},
		{name: "a tenant creates a pod labelled as another job's replica", refused: notScheduler,
			rc: impersonate("alice", []string{"system:authenticated"}, nil), write: func(c client.Client) error {
				return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-b-worker-0-8", Namespace: tc.ns,
					Labels: map[string]string{v1alpha1.LabelJob: "job-b"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
			}},
		{name: "a tenant creates a pod of its own",
			rc: impersonate("alice", []string{"system:authenticated"}, nil), write: func(c client.Client) error {
				return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "alices", Namespace: tc.ns},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
			}},
		{name: "the scheduler creates a replica pod",
			rc: impersonate(scheduler, schedGroups, nil), write: func(c client.Client) error {
				owner := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "job-c", Namespace: tc.ns, UID: "c0ffee"}}
				return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-c-worker-0-0", Namespace: tc.ns,
					Labels:          map[string]string{v1alpha1.LabelJob: "job-c", v1alpha1.LabelGroup: "worker", v1alpha1.LabelAttempt: "1"},
					Annotations:     map[string]string{v1alpha1.AnnotationNode: "n1"},
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1alpha1.GroupVersion.WithKind("TrainingJob"))}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
			}},
		{name: "a cluster admin writes a report",
			rc: restCfg, write: func(c client.Client) error { return sendAs(c, "job-b-worker-0-0")() }},
	}
	for _, c := range cases {
		err := c.write(as(c.rc))
		switch {
		case c.refused != "" && !(apierrors.IsForbidden(err) && (strings.Contains(err.Error(), c.refused) ||
			c.name == "the scheduler writes a report" && strings.Contains(err.Error(), "drover-scheduler may update only pods"))):
			// The scheduler and alice would be refused by RBAC alone
			// without the policy; the message says which refused. The
			// scheduler's write is refused by two admission policies (the
			// report's and, since issue 28, the scheduler's own pod
			// policy), in either order: either refusal counts.
			t.Errorf("%s: %v, want the admission policy's refusal (%q)", c.name, err, c.refused)
		case c.refused == "" && err != nil:
			t.Errorf("%s: %v, want it allowed", c.name, err)
		}
	}
	// The trainer's own report is what the pod carries; the forged ones
	// never landed.
	p := &corev1.Pod{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: "job-a-worker-0-0"}, p); err != nil {
		t.Fatal(err)
	}
	if r, err := report.Parse(p.Annotations[v1alpha1.AnnotationReport]); err != nil || r == nil || r.Checkpoint != "s3://team/ckpt" {
		t.Errorf("job-a's pod carries report %+v (%v), want its trainer's", r, err)
	}
}

func podRef(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}
