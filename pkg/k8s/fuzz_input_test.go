package k8s

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
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

// FuzzPolicyLabels: the policy-label annotation decodes to nil or to a map
// that encodes and decodes to itself; never a panic. (The tenant helper
// owns the decoder; this fuzzes what main has.)
func FuzzPolicyLabels(f *testing.F) {
	for _, s := range []string{`{"drover.dev/rr-slot":"9223372036854775807"}`, `{"a":"b","c":""}`, `{"a":1}`, `null`, `{`, ``, `{"a":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tj := testJob("j", t0, 1, "1", "0")
		tj.Annotations = map[string]string{v1alpha1.AnnotationLabels: s}
		m := PolicyLabels(&tj)
		if m == nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		tj.Annotations[v1alpha1.AnnotationLabels] = string(b)
		if m2 := PolicyLabels(&tj); !maps.Equal(m, m2) {
			t.Fatalf("%q: %v re-read as %v", s, m, m2)
		}
	})
}
