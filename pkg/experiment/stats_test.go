package experiment

import (
	"math"
	"testing"
)

func TestMeanCI95(t *testing.T) {
	tests := []struct {
		name       string
		xs         []float64
		mean, half float64
	}{
		{"two values", []float64{1, 3}, 2, 12.706}, // sd sqrt(2), standard error 1
		{"constant", []float64{5, 5, 5, 5}, 5, 0},
		// sd of 1..10 is sqrt(55/6); t(9) = 2.262.
		{"one to ten", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5.5, 2.262 * math.Sqrt(55.0/6/10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, h := MeanCI95(tt.xs)
			if math.Abs(m-tt.mean) > 1e-12 || math.Abs(h-tt.half) > 1e-9 {
				t.Errorf("MeanCI95(%v) = %v ± %v, want %v ± %v", tt.xs, m, h, tt.mean, tt.half)
			}
		})
	}
	if _, h := MeanCI95([]float64{1}); !math.IsNaN(h) {
		t.Errorf("one value: half-width %v, want NaN", h)
	}
	if TCrit(1000) != 1.96 || TCrit(1) != 12.706 {
		t.Errorf("TCrit(1000) = %v, TCrit(1) = %v", TCrit(1000), TCrit(1))
	}
}

func TestChangeCI95(t *testing.T) {
	// b is exactly 0.9 a on every seed: the change is -10% with no spread.
	a := []float64{100, 120, 80, 110}
	b := []float64{90, 108, 72, 99}
	c, h := ChangeCI95(a, b)
	if math.Abs(c+0.1) > 1e-12 || h > 1e-12 {
		t.Errorf("proportional pairs: change %v ± %v, want -0.1 ± 0", c, h)
	}
	// A noisy pair: the interval must cover the change of the means and
	// shrink as the same pattern is repeated over more seeds.
	a = []float64{100, 100, 100, 100}
	b = []float64{80, 120, 90, 110}
	c, h4 := ChangeCI95(a, b)
	if c != 0 || !(h4 > 0) {
		t.Errorf("noisy pairs: change %v ± %v, want 0 ± positive", c, h4)
	}
	var a16, b16 []float64
	for range 4 {
		a16, b16 = append(a16, a...), append(b16, b...)
	}
	if _, h16 := ChangeCI95(a16, b16); !(h16 < h4/2) {
		t.Errorf("16 seeds: half-width %v, want under half of 4 seeds' %v", h16, h4)
	}
}
