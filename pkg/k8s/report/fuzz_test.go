package report

import (
	"encoding/json"
	"math"
	"testing"
)

// FuzzParse: a report annotation is written by a trainer pod, so any text
// decodes to an error or to a report that passes Validate and survives a
// marshal and a second Parse unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"progress":0.42,"metric":0.31,"checkpoint":"s3://b/ckpt","checkpointProgress":0.4,"time":"2026-01-02T15:04:05Z"}`,
		`{"progress":1e308,"time":"2026-01-02T15:04:05Z"}`, `{"progress":0.5}`, `{"progress":0.5,"metric":1e999,"time":"2099-01-01T00:00:00Z"}`, `null`, `[]`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil || r == nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("%q: accepted but Validate: %v", s, err)
		}
		if math.IsNaN(r.Progress) || r.Metric != nil && math.IsNaN(*r.Metric) {
			t.Fatalf("%q: NaN accepted", s)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%q: marshal: %v", s, err)
		}
		r2, err := Parse(string(b))
		if err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		if r2.Progress != r.Progress || r2.Checkpoint != r.Checkpoint || r2.CheckpointProgress != r.CheckpointProgress ||
			!r2.Time.Equal(r.Time) || (r2.Metric == nil) != (r.Metric == nil) || r.Metric != nil && *r2.Metric != *r.Metric {
			t.Fatalf("%q -> %s: %+v became %+v", s, b, r, r2)
		}
	})
}
