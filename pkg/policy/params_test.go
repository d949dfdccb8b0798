package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FloatIn and IntIn: absent keys give the default, values outside the range
// are errors naming the key, the text and the range (issue 17 item 10).
func TestParamsIn(t *testing.T) {
	type result struct {
		F   float64
		I   int
		Err string
	}
	p := Params{"in": "5", "lo": "-1", "hi": "1e300", "tiny": "1e-300", "nan": "NaN", "big": "9223372036854775807", "x": "x"}
	tests := []struct {
		key  string
		want result
	}{
		{"absent", result{F: 2, I: 2}},
		{"in", result{F: 5, I: 5}},
		{"lo", result{Err: `parameter lo="-1": want a number in [1, 10]`}},
		{"hi", result{Err: `parameter hi="1e300": want a number in [1, 10]`}},
		{"tiny", result{Err: `parameter tiny="1e-300": want a number in [1, 10]`}},
		{"nan", result{Err: `parameter nan="NaN": not a finite number`}},
		{"big", result{Err: `parameter big="9223372036854775807": want a number in [1, 10]`}}, // FloatIn reports first; IntIn alike
		{"x", result{Err: `parameter x="x": not a number`}},
	}
	for _, tc := range tests {
		var got result
		f, err := p.FloatIn(tc.key, 2, 1, 10)
		if err != nil {
			got.Err = err.Error()
		}
		got.F = f
		i, err := p.IntIn(tc.key, 2, 1, 10)
		if err != nil && got.Err == "" {
			got.Err = err.Error()
		}
		if got.Err == "" {
			got.I = i
		} else {
			got.F, got.I = 0, 0
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.key, d)
		}
	}
}
