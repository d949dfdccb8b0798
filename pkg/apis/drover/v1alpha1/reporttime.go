package v1alpha1

import (
	"encoding/json"
	"fmt"
	"time"
)

// ReportTime is a trainer's report time, kept to the nanosecond.
//
// metav1.Time serialises whole seconds, and that is too coarse for a
// metric history: a trainer reports several times a second, and SpeCon
// reads the metric at round boundaries one interval apart (Alg. 1's
// E(t_m) - E(t_m-1)). Truncated on the status round trip, every sample of
// a second would claim the second's start, so the value "at" a boundary
// would be one from up to a second later, and the growths compared would
// be of unequal spans. ReportTime writes RFC 3339 with nanoseconds and
// reads any RFC 3339 time, fraction or not, so the whole-second values an
// older drover stored still decode.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
// +kubebuilder:object:generate=false
type ReportTime struct {
	time.Time `json:"-"`
}

// NewReportTime wraps t.
func NewReportTime(t time.Time) ReportTime { return ReportTime{Time: t} }

// DeepCopyInto copies the value: a time.Time holds no shared state that a
// copy must not alias (its *Location is immutable).
func (t *ReportTime) DeepCopyInto(out *ReportTime) { *out = *t }

// DeepCopy returns a copy of t.
func (t *ReportTime) DeepCopy() *ReportTime {
	if t == nil {
		return nil
	}
	out := *t
	return &out
}

// MarshalJSON writes the time in UTC as RFC 3339 with nanoseconds, or
// null for the zero time (as metav1.Time does). A year outside 0-9999,
// which RFC 3339 cannot write, is an error.
func (t ReportTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b, err := t.UTC().MarshalText() // RFC 3339 with nanoseconds
	if err != nil {
		return nil, fmt.Errorf("report time: %w", err)
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON reads null (the zero time) or an RFC 3339 string, with or
// without a fraction of a second.
func (t *ReportTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = ReportTime{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("report time: %w", err)
	}
	pt, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("report time %q: %w", s, err)
	}
	*t = ReportTime{Time: pt.Local()}
	return nil
}

// ToUnstructured implements value.UnstructuredConverter, so that
// converting to unstructured (server-side apply, the dynamic client)
// keeps the nanoseconds too.
func (t ReportTime) ToUnstructured() any {
	if t.IsZero() {
		return nil
	}
	b, err := t.UTC().MarshalText()
	if err != nil {
		return nil // not RFC 3339; JSON would refuse it too
	}
	return string(b)
}
