package policy

import (
	"math"
	"sort"
	"strings"
	"testing"
)

// FuzzParseSpec: a policy spec never panics the parser; an accepted spec
// has a name without ':' or surrounding space, keys that are non-empty and
// free of '=' and ';', and formatting it back and parsing again gives the
// same name and parameters.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"fifo", "oasis:slot=3600;slots=100", "k8s-default:window=-5", ",", ":", "a:=1", "a:b=1;b=2", "a:x=1=2", " fifo : a=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, params, err := ParseSpec(s)
		if err != nil {
			return
		}
		if name == "" || strings.Contains(name, ":") || strings.TrimSpace(name) != name {
			t.Fatalf("%q: name %q", s, name)
		}
		keys := make([]string, 0, len(params))
		for k := range params {
			if k == "" || strings.ContainsAny(k, "=;") {
				t.Fatalf("%q: key %q", s, k)
			}
			if strings.Contains(params[k], ";") {
				t.Fatalf("%q: value %q holds the separator", s, params[k])
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		back := name
		for i, k := range keys {
			sep := ";"
			if i == 0 {
				sep = ":"
			}
			back += sep + k + "=" + params[k]
		}
		name2, params2, err := ParseSpec(back)
		if err != nil || name2 != name || len(params2) != len(params) {
			t.Fatalf("%q -> %q: %v %q %v", s, back, err, name2, params2)
		}
		for k, v := range params {
			if params2[k] != v {
				t.Fatalf("%q -> %q: %s=%q became %q", s, back, k, v, params2[k])
			}
		}
	})
}

// FuzzParamsIn: FloatIn and IntIn return an error or a value within their
// bounds, never NaN or Inf, whatever the text (issue 17 item 10).
func FuzzParamsIn(f *testing.F) {
	for _, s := range []string{"1", "-5", "1e-300", "1e300", "NaN", "Inf", "9223372036854775807", "0x10", " 1", ""} {
		f.Add(s, -10.0, 10.0)
	}
	f.Fuzz(func(t *testing.T, s string, lo, hi float64) {
		if math.IsNaN(lo) || math.IsNaN(hi) {
			return
		}
		p := Params{"k": s}
		if v, err := p.FloatIn("k", 0, lo, hi); err == nil && (v < lo || v > hi || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("FloatIn(%q, [%v, %v]) = %v", s, lo, hi, v)
		}
		ilo, ihi := int(max(min(lo, 1e15), -1e15)), int(max(min(hi, 1e15), -1e15))
		if v, err := p.IntIn("k", 0, ilo, ihi); err == nil && (v < ilo || v > ihi) {
			t.Fatalf("IntIn(%q, [%d, %d]) = %d", s, ilo, ihi, v)
		}
	})
}
