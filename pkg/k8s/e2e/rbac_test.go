package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// The scheduler runs under exactly the chart's RBAC (its ClusterRoles,
// Roles and bindings, rendered by helm and applied to the API server, and
// the scheduler impersonating its service account), with leader election
// on: it schedules a job to completion without one request refused, and
// the writes that made its old ClusterRole close to cluster-admin are
// refused: a pod in kube-system, a kube-system Lease or ConfigMap, another
// Lease of its own namespace, a PriorityClass, a Deployment outside its
// namespace; in the namespaced mode also a pod in a namespace not listed
// (issue 17 item 8).
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	// Objects the forbidden writes aim at, as an attacker would find them.
	for _, o := range []client.Object{
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "other-controller", Namespace: "drover-system"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}, Data: map[string]string{"Corefile": ".:53 {}"}},
	} {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// On today's chart some of the writes below succeed: undo them, above
	// all a globalDefault PriorityClass, which every later pod would get.
	t.Cleanup(func() {
		zero := client.GracePeriodSeconds(0)
		for _, ns := range []string{"kube-system", "drover-system", "default"} {
			_ = cl.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stolen-token", Namespace: ns}}, zero)
		}
		_ = cl.Delete(ctx, &schedv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "stolen-default"}})
	})
	for _, mode := range []struct {
		name       string
		namespaced bool
	}{{"cluster-wide", false}, {"namespaced", true}} {
		t.Run(mode.name, func(t *testing.T) {
			tc := newCluster(t, 2, "8", "4", standin.Config{TimeScale: 20})
			args := []string{"--set", "config.leaderElectionID=drover-rbac-e2e"}
			if mode.namespaced {
				args = append(args, "--set", "config.namespaces={"+tc.ns+"}")
			}
			objs := renderChart(t, args...)
			applyChart(t, objs, "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "PriorityClass",
				"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
			chart := chartConfig(t, objs)
			user, groups := serviceAccountUser("drover-system", "drover-scheduler")
			sched := impersonate(user, groups, nil)
			sc, err := client.New(sched, client.Options{Scheme: k8s.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			pod := func(ns string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stolen-token", Namespace: ns},
					Spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "attacker:latest"}}}}
			}
			waitAllowed(t, "listing TrainingJobs as the scheduler", func() error {
				return sc.List(ctx, &v1alpha1.TrainingJobList{}, client.InNamespace(tc.ns))
			})
			// The admission policies take effect once the API server's
			// policy cache has them (a dry run is admitted like a write).
			waitRefused(t, "a pod in kube-system", "", func() error {
				return sc.Create(ctx, pod("kube-system"), client.DryRunAll)
			})
			refused := &forbiddenLog{}
			tc.rest = refused.wrap(sched)
			tc.tune = func(c *k8s.Config) {
				c.LeaderElection, c.LeaderElectionNamespace, c.LeaderElectionID = chart.LeaderElection, chart.LeaderElectionNamespace, chart.LeaderElectionID
				c.PlaceholderNamespace, c.PlaceholderPriorityClass = chart.PlaceholderNamespace, chart.PlaceholderPriorityClass
				if len(chart.Namespaces) > 0 {
					c.Namespace, c.Namespaces = "", chart.Namespaces
				}
			}
			tc.startScheduler("fifo", nil)
			tc.create(tc.job("least", v1alpha1.ClassBE, 20, group{name: "worker", replicas: 2, cpu: "1", gpu: "2"}))
			// Fail at the first refused request: a scheduler missing a
			// permission mostly retries quietly until the timeout.
			tc.eventually("least Succeeded with no request refused", 60*time.Second, func() (bool, string) {
				if got := refused.list(); len(got) > 0 {
					tc.stopScheduler()
					t.Fatalf("requests of the scheduler refused under the chart's RBAC: %v", got)
				}
				tj := tc.get("least")
				return tj.Status.Phase == v1alpha1.PhaseSucceeded, fmt.Sprintf("phase %s reason %q", tj.Status.Phase, tj.Status.Reason)
			})
			if ok, msg := tc.waitEvent("least", "Completed"); !ok {
				t.Errorf("no Completed Event (Events are written under the chart's RBAC too): %s", msg)
			}
			tc.stopScheduler()
			if diff := cmp.Diff([]string(nil), refused.list()); diff != "" {
				t.Errorf("requests of the scheduler refused under the chart's RBAC (-want +got):\n%s", diff)
			}

			update := func(o client.Object) func() error {
				return func() error {
					if err := cl.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
						return err
					}
					o.SetLabels(map[string]string{"owned-by": "stolen-token"})
					return sc.Update(ctx, o)
				}
			}
			writes := []struct {
				name  string
				write func() error
			}{
				{name: "create a pod in kube-system", write: func() error { return sc.Create(ctx, pod("kube-system")) }},
				{name: "create a pod in drover-system", write: func() error { return sc.Create(ctx, pod("drover-system")) }},
				{name: "create a pod that no TrainingJob owns, in a tenant namespace", write: func() error { return sc.Create(ctx, pod("default")) }},
				{name: "update a kube-system Lease",
					write: update(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"}})},
				{name: "update another Lease of drover-system",
					write: update(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "other-controller", Namespace: "drover-system"}})},
				{name: "update the coredns ConfigMap",
					write: update(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}})},
				{name: "create a globalDefault PriorityClass", write: func() error {
					return sc.Create(ctx, &schedv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "stolen-default"}, Value: 1000000, GlobalDefault: true})
				}},
				{name: "create a Deployment outside drover-system", write: func() error {
					labels := map[string]string{"app": "x"}
					return sc.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "stolen", Namespace: tc.ns},
						Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
							Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod(tc.ns).Spec}}})
				}},
			}
			for _, w := range writes {
				if err := w.write(); !apierrors.IsForbidden(err) {
					t.Errorf("%s as the scheduler: %v, want Forbidden", w.name, err)
				}
			}
		})
	}
}
