package charts_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// request is one API request of the scheduler's service account; ns is
// empty for cluster-scoped objects and for lists across namespaces.
type request struct {
	verb, group, resource, ns, name string
}

func (r request) String() string {
	return fmt.Sprintf("%s %s/%s %s/%s", r.verb, r.group, r.resource, r.ns, r.name)
}

// authorizer evaluates the rendered chart's RBAC for one service account,
// as the API server's RBAC authorizer does: a ClusterRoleBinding grants
// its ClusterRole everywhere, a RoleBinding grants its Role or ClusterRole
// in its own namespace.
type authorizer struct {
	clusterRoles map[string][]rbacv1.PolicyRule
	roles        map[string][]rbacv1.PolicyRule // namespace/name
	cluster      [][]rbacv1.PolicyRule          // granted everywhere
	namespaced   map[string][][]rbacv1.PolicyRule
}

func newAuthorizer(t *testing.T, objs []*unstructured.Unstructured, saNS, sa string) *authorizer {
	t.Helper()
	a := &authorizer{clusterRoles: map[string][]rbacv1.PolicyRule{}, roles: map[string][]rbacv1.PolicyRule{},
		namespaced: map[string][][]rbacv1.PolicyRule{}}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			a.clusterRoles[o.GetName()] = as[rbacv1.ClusterRole](t, o).Rules
		case "Role":
			a.roles[o.GetNamespace()+"/"+o.GetName()] = as[rbacv1.Role](t, o).Rules
		}
	}
	subject := func(ss []rbacv1.Subject) bool {
		return slices.ContainsFunc(ss, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Namespace == saNS && s.Name == sa
		})
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRoleBinding":
			b := as[rbacv1.ClusterRoleBinding](t, o)
			if subject(b.Subjects) {
				a.cluster = append(a.cluster, a.clusterRoles[b.RoleRef.Name])
			}
		case "RoleBinding":
			b := as[rbacv1.RoleBinding](t, o)
			if !subject(b.Subjects) {
				continue
			}
			rules := a.clusterRoles[b.RoleRef.Name]
			if b.RoleRef.Kind == "Role" {
				rules = a.roles[b.Namespace+"/"+b.RoleRef.Name]
			}
			a.namespaced[b.Namespace] = append(a.namespaced[b.Namespace], rules)
		}
	}
	return a
}

func (a *authorizer) allowed(r request) bool {
	match := func(rules []rbacv1.PolicyRule) bool {
		for _, p := range rules {
			if (slices.Contains(p.APIGroups, r.group) || slices.Contains(p.APIGroups, "*")) &&
				(slices.Contains(p.Resources, r.resource) || slices.Contains(p.Resources, "*")) &&
				(slices.Contains(p.Verbs, r.verb) || slices.Contains(p.Verbs, "*")) &&
				(len(p.ResourceNames) == 0 || (r.name != "" && slices.Contains(p.ResourceNames, r.name))) {
				return true
			}
		}
		return false
	}
	grants := a.cluster
	if r.ns != "" {
		grants = append(slices.Clone(grants), a.namespaced[r.ns]...)
	}
	return slices.ContainsFunc(grants, match)
}

// The chart's RBAC grants the scheduler what it uses where it uses it, and
// no more (issue 17 item 8): reads cluster-wide; no create on
// PriorityClasses; Deployments, ConfigMaps and Leases only in its own
// namespace and, for the ConfigMap and the Lease, by name; in the
// namespaced mode no write outside the listed namespaces. (Pods in
// kube-system, which RBAC cannot exclude in the cluster-wide mode, are
// refused by the scheduler-pods admission policy: see
// pkg/k8s/e2e TestLeastPrivilege.)
func TestRenderRBAC(t *testing.T) {
	common := map[request]bool{
		{"list", "", "pods", "", ""}:   true,
		{"watch", "", "nodes", "", ""}: true,
		{"get", "scheduling.k8s.io", "priorityclasses", "", "drover-placeholder"}:        true,
		{"get", "scheduling.k8s.io", "priorityclasses", "", "system-cluster-critical"}:   false,
		{"create", "scheduling.k8s.io", "priorityclasses", "", "stolen"}:                 false,
		{"update", "", "nodes", "", "n1"}:                                                false,
		{"create", "apps", "deployments", "drover-system", ""}:                           true,
		{"list", "apps", "deployments", "drover-system", ""}:                             true,
		{"create", "apps", "deployments", "team-a", ""}:                                  false,
		{"update", "apps", "deployments", "kube-system", "coredns"}:                      false,
		{"list", "apps", "deployments", "", ""}:                                          false,
		{"get", "", "configmaps", "drover-system", "drover-clock"}:                       true,
		{"get", "", "configmaps", "drover-system", "drover-scheduler"}:                   false,
		{"update", "", "configmaps", "kube-system", "coredns"}:                           false,
		{"get", "coordination.k8s.io", "leases", "drover-system", "drover-scheduler"}:    true,
		{"update", "coordination.k8s.io", "leases", "drover-system", "drover-scheduler"}: true,
		{"update", "coordination.k8s.io", "leases", "drover-system", "other"}:            false,
		{"update", "coordination.k8s.io", "leases", "kube-system", "kube-scheduler"}:     false,
		{"get", "", "secrets", "team-a", "creds"}:                                        false,
		{"create", "", "pods", "team-a", ""}:                                             true,
		{"create", "", "pods/binding", "team-a", "p"}:                                    true,
		{"update", "drover.dev", "trainingjobs/status", "team-a", "j"}:                   true,
		{"update", "drover.dev", "trainingjobs", "team-a", "j"}:                          false,
		{"patch", "drover.dev", "trainingjobs", "team-a", "j"}:                           false,
		{"create", "", "events", "team-a", ""}:                                           true,
	}
	cases := []struct {
		name string
		args []string
		want map[request]bool // beyond common
	}{
		{name: "cluster-wide", want: map[request]bool{
			{"create", "", "pods", "team-b", ""}:                           true,
			{"list", "drover.dev", "trainingjobs", "", ""}:                 true,
			{"update", "drover.dev", "trainingjobs/status", "team-b", "j"}: true,
		}},
		{name: "namespaced", args: []string{"--set", "config.namespaces={team-a}"}, want: map[request]bool{
			{"create", "", "pods", "team-b", ""}:                           false,
			{"create", "", "pods", "kube-system", ""}:                      false,
			{"delete", "", "pods", "team-b", "p"}:                          false,
			{"create", "", "pods/binding", "team-b", "p"}:                  false,
			{"list", "drover.dev", "trainingjobs", "", ""}:                 false,
			{"list", "drover.dev", "trainingjobs", "team-a", ""}:           true,
			{"update", "drover.dev", "trainingjobs/status", "team-b", "j"}: false,
			{"list", "scheduling.x-k8s.io", "podgroups", "team-a", ""}:     true,
			{"create", "", "events", "team-b", ""}:                         false,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAuthorizer(t, render(t, c.args...), namespace, "drover-scheduler")
			want, got := map[string]bool{}, map[string]bool{}
			for _, reqs := range []map[request]bool{common, c.want} {
				for r, ok := range reqs {
					want[r.String()], got[r.String()] = ok, a.allowed(r)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
		})
	}
}

// The admission policies are rendered by default and each has a switch.
func TestRenderAdmissionPolicies(t *testing.T) {
	policies := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, k := range kinds(objs) {
			if len(k) > len("ValidatingAdmissionPolicy") && k[:len("ValidatingAdmissionPolicy")] == "ValidatingAdmissionPolicy" {
				out = append(out, k)
			}
		}
		return out
	}
	cases := []struct {
		args []string
		want []string
	}{
		{nil, []string{"ValidatingAdmissionPolicy/drover-pod-labels", "ValidatingAdmissionPolicy/drover-report", "ValidatingAdmissionPolicy/drover-scheduler-pods",
			"ValidatingAdmissionPolicyBinding/drover-pod-labels", "ValidatingAdmissionPolicyBinding/drover-report", "ValidatingAdmissionPolicyBinding/drover-scheduler-pods"}},
		{[]string{"--set", "reportPolicy.enabled=false", "--set", "podLabelPolicy.enabled=false"}, []string{"ValidatingAdmissionPolicy/drover-scheduler-pods",
			"ValidatingAdmissionPolicyBinding/drover-scheduler-pods"}},
		{[]string{"--set", "schedulerPolicy.enabled=false", "--set", "reportPolicy.enabled=false"}, []string{"ValidatingAdmissionPolicy/drover-pod-labels",
			"ValidatingAdmissionPolicyBinding/drover-pod-labels"}},
		{[]string{"--set", "schedulerPolicy.enabled=false", "--set", "reportPolicy.enabled=false", "--set", "podLabelPolicy.enabled=false"}, nil},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, policies(render(t, c.args...))); diff != "" {
			t.Errorf("%v: policies (-want +got):\n%s", c.args, diff)
		}
	}
}
