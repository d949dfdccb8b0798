package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// TestStolenSchedulerToken: with the chart's RBAC and admission policies
// applied, the scheduler's service account (impersonated, as a stolen
// token would be used) cannot patch the image of, label, delete or evict a
// pod in kube-system or a tenant's pod that drover does not schedule, nor
// change the image or labels of a pod it does schedule; it can still
// annotate and delete its own pods, which is all the scheduler does to
// pods (issue 28 item 1: patch image, label and delete in kube-system all
// succeeded, the policy matched CREATE only).
func TestStolenSchedulerToken(t *testing.T) {
	ctx := context.Background()
	tc := newCluster(t, 1, "8", "0", standin.Config{})
	objs := renderChart(t)
	applyChart(t, objs, "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "PriorityClass",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	user, groups := serviceAccountUser("drover-system", "drover-scheduler")
	sc, err := client.New(impersonate(user, groups, nil), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(ns, name, scheduler string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
		if scheduler == "drover" {
			p.Labels[v1alpha1.OptInLabel] = "BE"
		}
		if err := cl.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Delete(ctx, p, client.GracePeriodSeconds(0)) })
		return p
	}
	system := mk("kube-system", "stolen-token-victim", "default-scheduler")
	tenant := mk(tc.ns, "tenant-pod", "default-scheduler")
	own := mk(tc.ns, "drover-pod", "drover")

	patch := func(p *corev1.Pod, body string, opts ...client.PatchOption) func() error {
		return func() error {
			return sc.Patch(ctx, p.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(body)), opts...)
		}
	}
	image := func(p *corev1.Pod) func() error {
		return patch(p, `{"spec":{"containers":[{"name":"c","image":"attacker:latest"}]}}`)
	}
	label := func(p *corev1.Pod) func() error { return patch(p, `{"metadata":{"labels":{"app":"stolen"}}}`) }
	del := func(p *corev1.Pod) func() error {
		return func() error { return sc.Delete(ctx, p.DeepCopy(), client.GracePeriodSeconds(0)) }
	}
	evict := func(p *corev1.Pod) func() error {
		return func() error {
			return sc.SubResource("eviction").Create(ctx, p.DeepCopy(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
		}
	}
	// The policy takes effect once the API server's policy cache has it.
	waitRefused(t, "patching a kube-system pod's image", "drover-scheduler may not update pods in namespace kube-system", func() error {
		return sc.Patch(ctx, system.DeepCopy(), client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"containers":[{"name":"c","image":"attacker:latest"}]}}`)), client.DryRunAll)
	})
	forbidden := []struct {
		name  string
		write func() error
		want  string
	}{
		{"patch the image of a kube-system pod", image(system), "may not update pods in namespace kube-system"},
		{"label a kube-system pod", label(system), "may not update pods in namespace kube-system"},
		{"delete a kube-system pod", del(system), "may not delete pods in namespace kube-system"},
		{"evict a kube-system pod", evict(system), "cannot create resource \"pods/eviction\""},
		{"patch the image of a tenant's pod of another scheduler", image(tenant), "only pods it schedules"},
		{"label a tenant's pod of another scheduler", label(tenant), "only pods it schedules"},
		{"delete a tenant's pod of another scheduler", del(tenant), "only pods it schedules"},
		{"evict a tenant's pod", evict(tenant), "cannot create resource \"pods/eviction\""},
		{"patch the image of a pod drover schedules", image(own), "may not change the labels, containers"},
		{"label a pod drover schedules", label(own), "may not change the labels, containers"},
		{"evict a pod drover schedules", evict(own), "cannot create resource \"pods/eviction\""},
	}
	for _, w := range forbidden {
		err := w.write()
		if !apierrors.IsForbidden(err) || !contains(err, w.want) {
			t.Errorf("%s as the scheduler: %v, want Forbidden with %q", w.name, err, w.want)
		}
	}
	// What the scheduler does to its own pods still goes through.
	if err := patch(own, `{"metadata":{"annotations":{"drover.dev/rejected":"test"}}}`)(); err != nil {
		t.Errorf("annotating a pod drover schedules: %v", err)
	}
	if err := del(own)(); err != nil {
		t.Errorf("deleting a pod drover schedules: %v", err)
	}
	// And the forbidden writes changed nothing.
	for _, p := range []*corev1.Pod{system, tenant} {
		got := &corev1.Pod{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Errorf("%s/%s: %v", p.Namespace, p.Name, err)
			continue
		}
		if got.Spec.Containers[0].Image != p.Spec.Containers[0].Image || got.Labels["app"] != p.Name {
			t.Errorf("%s/%s changed: image %s labels %v", p.Namespace, p.Name, got.Spec.Containers[0].Image, got.Labels)
		}
	}
}

// TestTenantPodLabels: with the chart's admission policies applied, a
// tenant cannot give a bare pod the class TE in a namespace that is not
// labelled drover.dev/te-allowed=true (its TE pod preempted another team's
// BE job), nor the drover.dev/placeholder label outside the placeholder
// namespace (such a pod was force-deleted with grace 0 as a placeholder);
// BE pods, and TE pods in an allowed namespace, are admitted (issue 28
// item 3).
func TestTenantPodLabels(t *testing.T) {
	ctx := context.Background()
	tc := newCluster(t, 1, "8", "0", standin.Config{})
	objs := renderChart(t)
	applyChart(t, objs, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	// The tenant may create pods in its namespace (a Role of its own).
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: tc.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "update", "patch"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: tc.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "team-a"}}}
	for _, o := range []client.Object{role, rb} {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Delete(ctx, o) })
	}
	tenant, err := client.New(impersonate("team-a", []string{"system:authenticated"}, nil), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	grace := int64(3600)
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tc.ns, Labels: labels},
			Spec: corev1.PodSpec{SchedulerName: "drover", NodeName: tc.kube.NodeName(0), TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}
	waitAllowed(t, "creating pods as the tenant", func() error {
		return tenant.Create(ctx, pod("probe", map[string]string{v1alpha1.OptInLabel: "BE"}), client.DryRunAll)
	})
	waitRefused(t, "a TE pod", "drover.dev/schedule: TE is allowed only in namespaces labelled drover.dev/te-allowed=true", func() error {
		return tenant.Create(ctx, pod("te", map[string]string{v1alpha1.OptInLabel: "TE"}), client.DryRunAll)
	})
	tests := []struct {
		name   string
		labels map[string]string
		want   string // "" admitted
	}{
		{"BE bare pod", map[string]string{v1alpha1.OptInLabel: "BE"}, ""},
		{"TE bare pod", map[string]string{v1alpha1.OptInLabel: "TE"}, "drover.dev/schedule: TE is allowed only in namespaces labelled"},
		{"te (lower case) bare pod", map[string]string{v1alpha1.OptInLabel: "te"}, "drover.dev/schedule: TE is allowed only"},
		{"placeholder label", map[string]string{v1alpha1.LabelPlaceholder: "warm"}, "the drover.dev/placeholder label is reserved to placeholder pods in namespace drover-system"},
	}
	for _, tt := range tests {
		err := tenant.Create(ctx, pod("attack", tt.labels), client.DryRunAll)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want admitted", tt.name, err)
		case tt.want != "" && (!apierrors.IsForbidden(err) || !contains(err, tt.want)):
			t.Errorf("%s: %v, want Forbidden with %q", tt.name, err, tt.want)
		}
	}
	// Relabelling an admitted BE pod to TE is an UPDATE, refused alike.
	be := pod("be", map[string]string{v1alpha1.OptInLabel: "BE"})
	if err := tenant.Create(ctx, be); err != nil {
		t.Fatal(err)
	}
	err = tenant.Patch(ctx, be, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"drover.dev/schedule":"TE"}}}`)))
	if !apierrors.IsForbidden(err) {
		t.Errorf("relabelling a BE pod TE: %v, want Forbidden", err)
	}
	// A namespace the admin marked may run TE pods.
	ns := &corev1.Namespace{}
	if err := cl.Get(ctx, client.ObjectKey{Name: tc.ns}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"drover.dev/te-allowed": "true"}
	if err := cl.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, "a TE pod in a namespace labelled drover.dev/te-allowed=true", func() error {
		return tenant.Create(ctx, pod("te", map[string]string{v1alpha1.OptInLabel: "TE"}), client.DryRunAll)
	})
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
