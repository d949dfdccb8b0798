package resource

import "testing"

func TestVectorArithmetic(t *testing.T) {
	a := New(4, 16, 1)
	b := New(2, 8, 0)
	if got, want := a.Add(b), New(6, 24, 1); got != want {
		t.Errorf("Add = %v, want %v", got, want)
	}
	if got, want := a.Sub(b), New(2, 8, 1); got != want {
		t.Errorf("Sub = %v, want %v", got, want)
	}
	if got, want := b.Scale(3), New(6, 24, 0); got != want {
		t.Errorf("Scale = %v, want %v", got, want)
	}
	if got, want := a.Max(New(8, 1, 0)), New(8, 16, 1); got != want {
		t.Errorf("Max = %v, want %v", got, want)
	}
	if got, want := a.Min(New(8, 1, 0)), New(4, 1, 0); got != want {
		t.Errorf("Min = %v, want %v", got, want)
	}
}

func TestFitsAndShort(t *testing.T) {
	capacity := New(8, 32, 2)
	tests := []struct {
		name  string
		d     Vector
		fits  bool
		short string
	}{
		{"empty", Vector{}, true, ""},
		{"exact", New(8, 32, 2), true, ""},
		{"cpu over", New(8.001, 1, 0), false, "cpu"},
		{"memory over", New(1, 33, 0), false, "memory"},
		{"gpu over", New(1, 1, 3), false, "gpu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Fits(capacity); got != tc.fits {
				t.Errorf("Fits = %v, want %v", got, tc.fits)
			}
			if got := tc.d.Short(capacity); got != tc.short {
				t.Errorf("Short = %q, want %q", got, tc.short)
			}
		})
	}
}

func TestShares(t *testing.T) {
	c := New(10, 100, 4)
	d := New(5, 10, 1)
	if got := d.DominantShare(c); got != 0.5 {
		t.Errorf("DominantShare = %v, want 0.5", got)
	}
	var zeroCap Vector
	if got := d.DominantShare(zeroCap); got != 0 {
		t.Errorf("DominantShare with no capacity = %v, want 0", got)
	}
}

func TestStringAndKinds(t *testing.T) {
	if got, want := New(4, 16, 1).String(), "cpu=4 memory=16Gi gpu=1"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := (Vector{}).String(); got != "0" {
		t.Errorf("zero String = %q", got)
	}
	for k := Kind(0); k < NumKinds; k++ {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseKind("tpu"); err == nil {
		t.Error("ParseKind(tpu) succeeded")
	}
	if !New(-1, 0, 0).AnyNegative() || New(1, 1, 1).AnyNegative() {
		t.Error("AnyNegative wrong")
	}
}
