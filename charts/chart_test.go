package charts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/pkg/k8s"
)

const (
	chart     = "drover"
	release   = "drover"
	namespace = "drover-system"
	// manifestsArgs are the Makefile's MANIFESTS_ARGS (`make manifests`).
	manifestsArgs = "template drover charts/drover --namespace drover-system"
	nonDefault    = "testdata/values-nondefault.yaml"
)

// helmBin is the helm that hack/testbin/helm.sh built, from DROVER_HELM
// (`make test` sets it). Without it the helm tests skip, except in CI.
func helmBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DROVER_HELM")
	if p == "" {
		msg := "DROVER_HELM is unset: run `make test`, or export DROVER_HELM=$(hack/testbin/helm.sh | tail -1) (builds helm v3.19.0 from Go modules, cached)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI must run the chart tests")
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("DROVER_HELM=%s is not an executable: %v", p, err)
	}
	return p
}

// helm runs helm with its config, cache and data under a temp dir (so a
// test never reads or writes the user's) and returns stdout.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func helmErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := helmBin(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(err.Error() + ": " + stderr.String())
	}
	return stdout.String(), nil
}

// render runs helm template and decodes the objects.
func render(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out := helm(t, append([]string{"template", release, chart, "--namespace", namespace}, args...)...)
	return decode(t, out)
}

func decode(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if err == io.EOF {
				return objs
			}
			t.Fatalf("decoding the rendered chart: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// as converts an unstructured object to a typed one.
func as[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	if u == nil {
		t.Fatal("object missing")
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// loadConfig runs the scheduler's own config parser on a rendered
// ConfigMap, as the scheduler does at start-up.
func loadConfig(t *testing.T, cm *corev1.ConfigMap) (k8s.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(cm.Data["config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	return k8s.LoadConfig(p)
}

// The chart's copy of the CRD is the generated one (`make generate`).
func TestChartCRDIsGenerated(t *testing.T) {
	a, err := os.ReadFile("../config/crd/drover.dev_trainingjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("drover/files/drover.dev_trainingjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("charts/drover/files/drover.dev_trainingjobs.yaml differs from config/crd: run `make generate`")
	}
}

// Every value of values.yaml is in the chart's README: each leaf, or a
// map the README lists as a whole.
func TestValuesDocumented(t *testing.T) {
	b, err := os.ReadFile("drover/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("drover/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if strings.Contains(string(readme), "`"+prefix+"`") {
			return
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, sub := range m {
				walk(prefix+"."+k, sub)
			}
			return
		}
		t.Errorf("value %s is not in charts/drover/README.md", prefix)
	}
	for k, v := range values {
		walk(k, v)
	}
}

func TestLint(t *testing.T) {
	helm(t, "lint", "--strict", chart)
	helm(t, "lint", "--strict", chart, "-f", nonDefault)
}

func TestRenderDefaults(t *testing.T) {
	objs := render(t)
	want := []string{
		"ClusterRole/drover-scheduler", "ClusterRole/drover-trainer", "ClusterRoleBinding/drover-scheduler",
		"ConfigMap/drover-scheduler", "CustomResourceDefinition/trainingjobs.drover.dev", "Deployment/drover-scheduler",
		"PriorityClass/drover-placeholder", "Role/drover-scheduler", "Role/drover-scheduler-leader-election",
		"RoleBinding/drover-scheduler", "RoleBinding/drover-scheduler-leader-election",
		"Service/drover-scheduler", "ServiceAccount/drover-scheduler",
		"ValidatingAdmissionPolicy/drover-pod-labels", "ValidatingAdmissionPolicy/drover-report", "ValidatingAdmissionPolicy/drover-scheduler-pods",
		"ValidatingAdmissionPolicyBinding/drover-pod-labels", "ValidatingAdmissionPolicyBinding/drover-report", "ValidatingAdmissionPolicyBinding/drover-scheduler-pods",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	d := as[appsv1.Deployment](t, find(t, objs, "Deployment", "drover-scheduler"))
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	switch {
	case *d.Spec.Replicas != 2:
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	case d.Namespace != namespace:
		t.Errorf("namespace %q", d.Namespace)
	case c.Image != "ghcr.io/drover-sched/drover-scheduler:0.1.0":
		t.Errorf("image %s, want the appVersion tag", c.Image)
	case ps.PriorityClassName != "system-cluster-critical":
		t.Errorf("priorityClassName %q", ps.PriorityClassName)
	case ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot:
		t.Errorf("pod security context %+v: want runAsNonRoot", ps.SecurityContext)
	case c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation:
		t.Errorf("container security context %+v: want a read-only root and no privilege escalation", c.SecurityContext)
	case c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero():
		t.Errorf("resources %+v: want requests", c.Resources)
	case c.LivenessProbe == nil || c.ReadinessProbe == nil:
		t.Error("probes missing")
	case !slices.Equal(c.Args, []string{"--config=/etc/drover/config.yaml"}) || len(c.Command) > 0:
		t.Errorf("command %v args %v: want the image's entrypoint with --config", c.Command, c.Args)
	case ps.ServiceAccountName != "drover-scheduler":
		t.Errorf("service account %q", ps.ServiceAccountName)
	}
	cfg, err := loadConfig(t, as[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "drover-scheduler")))
	if err != nil {
		t.Fatalf("the default config does not load: %v", err)
	}
	if cfg.Policy != "drover" || cfg.Profile != nil || !cfg.LeaderElection || cfg.LeaderElectionNamespace != namespace ||
		cfg.PlaceholderNamespace != namespace || cfg.LeaderElectionID != "drover-scheduler" || cfg.MetricsAddr != ":8080" || cfg.HealthAddr != ":8081" {
		t.Errorf("config %+v", cfg)
	}
	crd := find(t, objs, "CustomResourceDefinition", "trainingjobs.drover.dev")
	if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Errorf("CRD annotations %v: want helm.sh/resource-policy: keep", crd.GetAnnotations())
	}
	gen, err := os.ReadFile("../config/crd/drover.dev_trainingjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want0 := decode(t, string(gen))[0]
	got := crd.DeepCopy()
	ann := got.GetAnnotations()
	delete(ann, "helm.sh/resource-policy")
	got.SetAnnotations(ann)
	if !reflect.DeepEqual(got.Object, want0.Object) {
		t.Error("the rendered CRD differs from config/crd beyond the keep annotation")
	}
	pc := as[schedv1.PriorityClass](t, find(t, objs, "PriorityClass", "drover-placeholder"))
	if pc.Value != -10 || pc.GlobalDefault {
		t.Errorf("placeholder PriorityClass %+v", pc)
	}
	role := as[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "drover-scheduler"))
	if !allows(role.Rules, "", "pods/binding", "create") || !allows(role.Rules, "drover.dev", "trainingjobs/status", "update") {
		t.Errorf("the scheduler's ClusterRole cannot bind pods or write status: %+v", role.Rules)
	}
}

func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func TestRenderNonDefault(t *testing.T) {
	objs := render(t, "-f", nonDefault)
	for _, want := range []string{"ServiceMonitor/drover-scheduler", "ConfigMap/drover-dashboard",
		"CustomResourceDefinition/podgroups.scheduling.x-k8s.io", "ServiceAccount/drover-sa"} {
		if !slices.Contains(kinds(objs), want) {
			t.Errorf("%s not rendered; got %v", want, kinds(objs))
		}
	}
	d := as[appsv1.Deployment](t, find(t, objs, "Deployment", "drover-scheduler"))
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	switch {
	case *d.Spec.Replicas != 3:
		t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
	case c.Image != "registry.example.com/ml/drover-scheduler:v9.9.9" || c.ImagePullPolicy != corev1.PullAlways:
		t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
	case ps.PriorityClassName != "":
		t.Errorf("priorityClassName %q, want none", ps.PriorityClassName)
	case !slices.Equal(c.Args, []string{"--config=/etc/drover/config.yaml", "-v", "1"}):
		t.Errorf("args %v", c.Args)
	case c.Ports[0].ContainerPort != 9090 || c.Ports[1].ContainerPort != 9091:
		t.Errorf("ports %+v", c.Ports)
	case ps.ServiceAccountName != "drover-sa" || len(ps.Tolerations) != 1 || len(ps.ImagePullSecrets) != 1:
		t.Errorf("pod spec %+v", ps)
	case d.Spec.Template.Labels["team"] != "ml-platform" || d.Spec.Template.Annotations["prometheus.io/scrape"] != "":
		t.Errorf("pod metadata %+v", d.Spec.Template.ObjectMeta)
	}
	cfg, err := loadConfig(t, as[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "drover-scheduler")))
	if err != nil {
		t.Fatalf("the non-default config does not load: %v", err)
	}
	if cfg.Policy != "" || cfg.Profile == nil || cfg.Profile.Name != "spread-priority" || cfg.Period.Duration != 2*time.Second ||
		!slices.Equal(cfg.Namespaces, []string{"team-a", "team-b"}) || cfg.PlaceholderNamespace != "placeholders" || cfg.LeaderElectionID != "drover-lease" ||
		cfg.MetricsAddr != ":9090" || cfg.HealthAddr != ":9091" || len(cfg.Catalog) != 1 || *cfg.QueuePositions != 0 {
		t.Errorf("config %+v", cfg)
	}
	if a := find(t, objs, "CustomResourceDefinition", "trainingjobs.drover.dev").GetAnnotations(); a["helm.sh/resource-policy"] != "" {
		t.Errorf("crds.keep=false still annotates the CRD: %v", a)
	}
	dash := as[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "drover-dashboard"))
	file, err := os.ReadFile("drover/dashboards/drover.json")
	if err != nil {
		t.Fatal(err)
	}
	if dash.Namespace != "monitoring" || dash.Labels["grafana_dashboard"] != "1" || strings.TrimSpace(dash.Data["drover.json"]) != strings.TrimSpace(string(file)) {
		t.Errorf("dashboard ConfigMap in %q with labels %v does not carry dashboards/drover.json", dash.Namespace, dash.Labels)
	}
	sm := find(t, objs, "ServiceMonitor", "drover-scheduler")
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["interval"] != "15s" {
		t.Errorf("ServiceMonitor endpoints %v", eps)
	}
	svc := as[corev1.Service](t, find(t, objs, "Service", "drover-scheduler"))
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the Service has %v", k, v, svc.Labels)
		}
	}
}

// An unknown config field still stops the scheduler at start-up, naming
// the field, as it did before the chart.
func TestConfigTypoFailsAtStartUp(t *testing.T) {
	objs := render(t, "--set", "config.polcy=specon")
	_, err := loadConfig(t, as[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "drover-scheduler")))
	if err == nil || !strings.Contains(err.Error(), "polcy") {
		t.Errorf("error %v, want one naming polcy", err)
	}
}

// deploy/drover.yaml is the chart rendered with its defaults.
func TestManifestsUpToDate(t *testing.T) {
	b, err := os.ReadFile("../deploy/drover.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	for strings.HasPrefix(file, "#") { // the header `make manifests` writes
		file = file[strings.Index(file, "\n")+1:]
	}
	args := strings.Fields(manifestsArgs)
	args[2] = chart // charts/drover, seen from charts/
	if got := helm(t, args...); got != file {
		t.Error("deploy/drover.yaml is stale: run `make manifests` and commit it")
	}
}

// The Grafana dashboard is valid JSON, queries only metrics drover (or
// controller-runtime) exports, and every panel says which metric it shows.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("drover/dashboards/drover.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID, Title string
		Panels     []struct {
			ID                       int
			Type, Title, Description string
			Targets                  []struct{ Expr, RefID string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboards/drover.json is not valid JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("uid %q title %q, %d panels", d.UID, d.Title, len(d.Panels))
	}
	exported := droverMetrics(t)
	// Not drover's: controller-runtime's leader election gauge.
	external := map[string]bool{"leader_election_master_status": true}
	docs, err := os.ReadFile("../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	metricRe := regexp.MustCompile(`[a-z_]+_[a-z_]+\b`)
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if !strings.Contains(string(docs), "| "+p.Title+" |") {
			t.Errorf("panel %q has no row in the dashboard table of docs/kubernetes.md", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: a target without expr or refId", p.Title)
			}
			for _, name := range metricRe.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				switch {
				case strings.HasPrefix(name, "drover_"):
					if !exported[base] {
						t.Errorf("panel %q queries %s, which drover does not export", p.Title, name)
					}
					if !strings.Contains(p.Description, base) {
						t.Errorf("panel %q: its description does not name %s", p.Title, base)
					}
				case strings.HasSuffix(name, "_status") || strings.HasSuffix(name, "_total"):
					if !external[name] {
						t.Errorf("panel %q queries %s, which nothing here exports", p.Title, name)
					}
				}
			}
		}
	}
	for name := range exported {
		if !strings.Contains(string(docs), name) {
			t.Errorf("metric %s is not documented in docs/kubernetes.md", name)
		}
	}
}

// droverMetrics returns the names of the scheduler's metrics.
func droverMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	m := reflect.ValueOf(k8s.DefaultMetrics()).Elem()
	re := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for i := range m.NumField() {
		c, ok := m.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		ch := make(chan *prometheus.Desc, 4)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if s := re.FindStringSubmatch(d.String()); s != nil {
				out[s[1]] = true
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metrics: %v", len(out), out)
	}
	return out
}

// The chart on a real API server: the rendered output passes a
// server-side dry run (defaults and non-default values), `helm install`
// creates the scheduler's Deployment, RBAC and the CRD, an upgrade rolls a
// config change, and `helm uninstall` keeps the CRD and its TrainingJobs.
// There is no kubelet, so the scheduler pods never run here; pkg/k8s/e2e
// runs the scheduler in-process against the same kind of API server.
func TestChartOnAPIServer(t *testing.T) {
	helmBin(t)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if testing.Short() {
			t.Skip("KUBEBUILDER_ASSETS is unset and -short is set: skipping the API-server chart test")
		}
		t.Fatal("KUBEBUILDER_ASSETS is unset: export KUBEBUILDER_ASSETS=$(hack/testbin/build.sh | tail -1), or run `make test`; -short skips this test")
	}
	env := &envtest.Environment{}
	rc, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "chart-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{namespace, "monitoring", "placeholders", "team-a", "team-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)}); err != nil {
			t.Fatal(err)
		}
	}
	smCRD, err := os.ReadFile("testdata/servicemonitor-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range decode(t, string(smCRD)) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		waitEstablished(t, c, o.GetName())
	}

	t.Run("dry-run", func(t *testing.T) {
		for _, values := range [][]string{nil, {"-f", nonDefault}} {
			for _, o := range render(t, values...) {
				err := c.Patch(ctx, o, client.Apply, client.FieldOwner("drover-chart-test"), client.ForceOwnership, client.DryRunAll)
				if err != nil {
					t.Errorf("values %v: server-side dry run of %s %s: %v", values, o.GetKind(), o.GetName(), err)
				}
			}
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "drover-scheduler"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("after a dry run the Deployment exists (or: %v)", err)
		}
	})

	t.Run("install", func(t *testing.T) {
		helm(t, "install", release, chart, "--namespace", namespace, "--kubeconfig", kubeconfig)
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "drover-scheduler"}, d); err != nil {
			t.Fatalf("the scheduler Deployment: %v", err)
		}
		if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.ServiceAccountName != "drover-scheduler" {
			t.Errorf("Deployment replicas %d, service account %q", *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName)
		}
		for _, o := range []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metaNS("drover-scheduler")},
			&corev1.ConfigMap{ObjectMeta: metaNS("drover-scheduler")},
			&corev1.Service{ObjectMeta: metaNS("drover-scheduler")},
			&rbacv1.ClusterRole{ObjectMeta: metaName("drover-scheduler")},
			&rbacv1.ClusterRole{ObjectMeta: metaName("drover-trainer")},
			&schedv1.PriorityClass{ObjectMeta: metaName("drover-placeholder")},
			&rbacv1.Role{ObjectMeta: metaNS("drover-scheduler")},
			&rbacv1.Role{ObjectMeta: metaNS("drover-scheduler-leader-election")},
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metaName("drover-report")},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metaName("drover-report")},
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metaName("drover-scheduler-pods")},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metaName("drover-scheduler-pods")},
		} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Errorf("%T %s: %v", o, o.GetName(), err)
			}
		}
		crb := &rbacv1.ClusterRoleBinding{}
		if err := c.Get(ctx, client.ObjectKey{Name: "drover-scheduler"}, crb); err != nil {
			t.Fatal(err)
		}
		if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "drover-scheduler" || crb.Subjects[0].Namespace != namespace || crb.RoleRef.Name != "drover-scheduler" {
			t.Errorf("ClusterRoleBinding %+v", crb)
		}
		crd := waitEstablished(t, c, "trainingjobs.drover.dev")
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD annotations %v", crd.GetAnnotations())
		}
		// The installed CRD serves TrainingJobs (and validates them).
		// Established comes before the API server's discovery serves the
		// new kind, and the client's REST mapper asks discovery: a "no
		// matches for kind" in between is retried, anything else fails.
		tj := exampleJob(t)
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := c.Create(ctx, tj)
			if err == nil {
				break
			}
			if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
				t.Fatalf("creating a TrainingJob from examples/: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		before := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "drover-scheduler"}, before); err != nil {
			t.Fatal(err)
		}
		helm(t, "upgrade", release, chart, "--namespace", namespace, "--kubeconfig", kubeconfig,
			"--set", "replicaCount=3", "--set", "config.policy=specon")
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "drover-scheduler"}, d); err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d after the upgrade, want 3", *d.Spec.Replicas)
		}
		key := "checksum/config"
		if d.Spec.Template.Annotations[key] == before.Spec.Template.Annotations[key] {
			t.Error("a config change did not change the pod template (the pods would not restart)")
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "drover-scheduler"}, cm); err != nil {
			t.Fatal(err)
		}
		if cfg, err := loadConfig(t, cm); err != nil || cfg.Policy != "specon" {
			t.Errorf("upgraded config: policy %q, %v", cfg.Policy, err)
		}
	})

	t.Run("uninstall keeps the CRD", func(t *testing.T) {
		helm(t, "uninstall", release, "--namespace", namespace, "--kubeconfig", kubeconfig)
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "drover-scheduler"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the Deployment is still there after uninstall (or: %v)", err)
		}
		waitEstablished(t, c, "trainingjobs.drover.dev")
		tj := exampleJob(t)
		if err := c.Get(ctx, client.ObjectKeyFromObject(tj), tj); err != nil {
			t.Errorf("the TrainingJob is gone with the release: %v", err)
		}
	})
}

func exampleJob(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("../examples/04-be-xgboost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, string(b))[0]
}

// waitEstablished waits for a CRD's Established condition.
func waitEstablished(t *testing.T, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd)
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cd := range conds {
				if m := cd.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return crd
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s not established: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func metaNS(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}
