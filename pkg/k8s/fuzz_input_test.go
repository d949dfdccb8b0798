package k8s

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/k8s/view"
)

// FuzzLoadConfig: any scheduler config file loads to an error or to a
// config that passes Validate, and Defaults leaves it unchanged (it was
// applied once already).
func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{"", "profile: drover\n", "period: -1s\n", "policy: fifo\nperiod: 1s\n", "nosuch: 1\n", "catalog:\n- name: a\n  capacity: {cpu: 1e18}\n", "{", "policy: 'oasis:slots=9223372036854775807'\n"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(path)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: accepted but Validate: %v", s, err)
		}
		b, _ := json.Marshal(c)
		c.Defaults()
		if b2, _ := json.Marshal(c); string(b) != string(b2) {
			t.Fatalf("%q: Defaults changed a loaded config:\n%s\n%s", s, b, b2)
		}
	})
}

// FuzzPolicyLabels: whatever status.policyLabels holds, PolicyLabels
// never panics and returns only entries that were stored and pass
// CheckPolicyLabel, within MaxPolicyLabels and MaxPolicyLabelBytes, with
// a nil error exactly when every stored entry was kept. (The tenant helper
// owns the decoder; this fuzzes its contract as documented.)
func FuzzPolicyLabels(f *testing.F) {
	f.Add(view.PolicyLabelPrefix+"rr-slot", "9223372036854775807", view.PolicyLabelPrefix+"x", "")
	f.Add("a", "b", view.PolicyLabelPrefix, "\x00")
	f.Add(view.PolicyLabelPrefix+"k", strings.Repeat("v", 5000), view.PolicyLabelPrefix+"\xff", "1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		tj := testJob("j", t0, 1, "1", "0")
		tj.Status.PolicyLabels = map[string]string{k1: v1, k2: v2}
		stored := maps.Clone(tj.Status.PolicyLabels)
		m, err := view.PolicyLabels(&tj)
		size := 0
		for k, v := range m {
			if sv, ok := stored[k]; !ok || sv != v {
				t.Fatalf("%q=%q was not stored as such", k, v)
			}
			if cerr := view.CheckPolicyLabel(k, v); cerr != nil {
				t.Fatalf("returned %q=%q that CheckPolicyLabel refuses: %v", k, v, cerr)
			}
			size += len(k) + len(v)
		}
		if len(m) > view.MaxPolicyLabels || size > view.MaxPolicyLabelBytes {
			t.Fatalf("%d labels, %d bytes", len(m), size)
		}
		if (err == nil) != (len(m) == len(stored)) {
			t.Fatalf("kept %d of %d, error %v", len(m), len(stored), err)
		}
	})
}
