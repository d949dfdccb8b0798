package cli

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// ClientConfig loads what kubectl would: --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config.
func TestClientConfig(t *testing.T) {
	home := t.TempDir()
	writeKubeconfig(t, filepath.Join(home, ".kube", "config"), "https://home.example:6443")
	env := filepath.Join(t.TempDir(), "env.kubeconfig")
	writeKubeconfig(t, env, "https://env.example:6443")
	flag := filepath.Join(t.TempDir(), "flag.kubeconfig")
	writeKubeconfig(t, flag, "https://flag.example:6443")
	t.Setenv("HOME", home)
	for _, tc := range []struct {
		name, path, env, want string
	}{
		{"~/.kube/config", "", "", "https://home.example:6443"},
		{"$KUBECONFIG", "", env, "https://env.example:6443"},
		{"--kubeconfig", flag, env, "https://flag.example:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			rc, err := ClientConfig(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if rc.Host != tc.want {
				t.Errorf("host %q, want %q", rc.Host, tc.want)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		t.Setenv("HOME", t.TempDir())
		t.Setenv("KUBECONFIG", "")
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		if _, err := ClientConfig(""); err == nil {
			t.Error("no kubeconfig anywhere: no error")
		}
	})
}
