// Package resource holds the resource vector that every part of drover
// measures capacity and demand in.
//
// A Vector is a fixed-size array rather than a map so that the simulator's
// hot path (fit checks on every placement attempt) allocates nothing. Adding
// a kind means adding a constant before NumKinds and a name in kindNames.
package resource

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind names one resource dimension.
type Kind int

// Resource kinds. Units: CPU in millicores, Memory and Storage in bytes,
// GPU in devices, Bandwidth in megabits per second.
const (
	CPU Kind = iota
	Memory
	GPU
	Storage
	Bandwidth
	NumKinds
)

var kindNames = [NumKinds]string{"cpu", "memory", "gpu", "storage", "bandwidth"}

func (k Kind) String() string {
	if k < 0 || k >= NumKinds {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// ParseKind maps a kind name ("cpu", "memory", ...) to its Kind.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown resource kind %q (want one of %s)", s, strings.Join(kindNames[:], ", "))
}

// Common byte sizes for building vectors.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Vector is an amount of every resource kind.
type Vector [NumKinds]int64

// New builds a vector from CPU cores, memory GiB and GPUs, the three kinds
// almost every caller sets.
func New(cores float64, memGiB float64, gpus int64) Vector {
	var v Vector
	v[CPU] = int64(cores*1000 + 0.5)
	v[Memory] = int64(memGiB*float64(GiB) + 0.5)
	v[GPU] = gpus
	return v
}

// Add returns v + o.
func (v Vector) Add(o Vector) Vector {
	for i := range v {
		v[i] += o[i]
	}
	return v
}

// Sub returns v - o.
func (v Vector) Sub(o Vector) Vector {
	for i := range v {
		v[i] -= o[i]
	}
	return v
}

// Scale returns v * n.
func (v Vector) Scale(n int64) Vector {
	for i := range v {
		v[i] *= n
	}
	return v
}

// Fits reports whether v fits in capacity c, component by component.
func (v Vector) Fits(c Vector) bool {
	for i := range v {
		if v[i] > c[i] {
			return false
		}
	}
	return true
}

// IsZero reports whether every component is zero.
func (v Vector) IsZero() bool { return v == Vector{} }

// AnyNegative reports whether some component is below zero, the sign of an
// accounting bug.
func (v Vector) AnyNegative() bool {
	for _, x := range v {
		if x < 0 {
			return true
		}
	}
	return false
}

// Max returns the component-wise maximum.
func (v Vector) Max(o Vector) Vector {
	for i := range v {
		if o[i] > v[i] {
			v[i] = o[i]
		}
	}
	return v
}

// Min returns the component-wise minimum.
func (v Vector) Min(o Vector) Vector {
	for i := range v {
		if o[i] < v[i] {
			v[i] = o[i]
		}
	}
	return v
}

// Short names the first kind where v exceeds c, or "" when v fits. Callers
// use it to explain why a placement failed.
func (v Vector) Short(c Vector) string {
	for i := range v {
		if v[i] > c[i] {
			return Kind(i).String()
		}
	}
	return ""
}

// Share returns v[k]/c[k] for each kind with non-zero capacity; kinds with
// zero capacity contribute 0. Used by DRF and by FitGpp's scale-free size.
func (v Vector) Share(c Vector) [NumKinds]float64 {
	var s [NumKinds]float64
	for i := range v {
		if c[i] > 0 {
			s[i] = float64(v[i]) / float64(c[i])
		}
	}
	return s
}

// DominantShare returns the largest share of v in c over all kinds.
func (v Vector) DominantShare(c Vector) float64 {
	m := 0.0
	for _, s := range v.Share(c) {
		if s > m {
			m = s
		}
	}
	return m
}

// String renders non-zero components, e.g. "cpu=4 memory=16Gi gpu=1".
func (v Vector) String() string {
	var b strings.Builder
	for i, x := range v {
		if x == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Kind(i).String())
		b.WriteByte('=')
		switch Kind(i) {
		case CPU:
			b.WriteString(strconv.FormatFloat(float64(x)/1000, 'g', -1, 64))
		case Memory, Storage:
			b.WriteString(formatBytes(x))
		default:
			b.WriteString(strconv.FormatInt(x, 10))
		}
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

func formatBytes(x int64) string {
	switch {
	case x%GiB == 0:
		return strconv.FormatInt(x/GiB, 10) + "Gi"
	case x%MiB == 0:
		return strconv.FormatInt(x/MiB, 10) + "Mi"
	default:
		return strconv.FormatInt(x, 10)
	}
}
