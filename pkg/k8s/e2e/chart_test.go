package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/k8s"
)

// chartDir is charts/drover, from this package's directory.
var chartDir = filepath.Join("..", "..", "..", "charts", "drover")

// renderChart runs `helm template drover charts/drover --namespace
// drover-system` with args, using the helm that hack/testbin/helm.sh built
// (DROVER_HELM, which `make test` sets), and decodes the objects. Without
// DROVER_HELM the test is skipped, except in CI.
func renderChart(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	bin := os.Getenv("DROVER_HELM")
	if bin == "" {
		msg := "DROVER_HELM is unset: export DROVER_HELM=$(hack/testbin/helm.sh | tail -1), or run `make test`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI must run the chart's RBAC and admission tests")
		}
		t.Skip(msg)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"template", "drover", chartDir, "--namespace", "drover-system"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template %v: %v: %s", args, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding the rendered chart: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// applyChart server-side applies the rendered objects of the given kinds
// as the admin and deletes them when the test ends. It returns what it
// applied.
func applyChart(t *testing.T, objs []*unstructured.Unstructured, kinds ...string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	var applied []*unstructured.Unstructured
	for _, o := range objs {
		if !slices.Contains(kinds, o.GetKind()) {
			continue
		}
		if err := cl.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner("drover-e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		applied = append(applied, o)
	}
	t.Cleanup(func() {
		for _, o := range applied {
			_ = cl.Delete(context.Background(), o.DeepCopy())
		}
	})
	return applied
}

// chartConfig is the scheduler config in the rendered chart's ConfigMap.
func chartConfig(t *testing.T, objs []*unstructured.Unstructured) k8s.Config {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != "drover-scheduler" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := k8s.LoadConfig(p)
		if err != nil {
			t.Fatalf("the chart's config: %v", err)
		}
		return cfg
	}
	t.Fatal("the chart rendered no ConfigMap drover-scheduler")
	return k8s.Config{}
}

// impersonate returns restCfg acting as the given user, groups and extra
// info (the admin may impersonate anyone).
func impersonate(user string, groups []string, extra map[string][]string) *rest.Config {
	rc := rest.CopyConfig(restCfg)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups, Extra: extra}
	return rc
}

// serviceAccountUser is how the API server names a service account, with
// the groups it gives every service account token.
func serviceAccountUser(ns, name string) (string, []string) {
	return "system:serviceaccount:" + ns + ":" + name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

// forbiddenLog records the requests the API server answered 403, on the
// connections of a rest config it wraps.
type forbiddenLog struct {
	mu  sync.Mutex
	got []string
}

func (f *forbiddenLog) wrap(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusForbidden {
				f.mu.Lock()
				f.got = append(f.got, req.Method+" "+req.URL.Path)
				f.mu.Unlock()
			}
			return resp, err
		})
	})
	return rc
}

func (f *forbiddenLog) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// waitAllowed polls until try stops failing with Forbidden: the API
// server's RBAC and admission-policy caches take a moment to see new
// objects.
func waitAllowed(t *testing.T, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := try()
		if err == nil || !apierrors.IsForbidden(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still forbidden after 20s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitRefused polls until try fails with Forbidden and an error that
// contains want.
func waitRefused(t *testing.T, what, want string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := try()
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not refused with %q after 20s: %v", what, want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
