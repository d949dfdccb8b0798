package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct{ in, wantErr string }{
		{"", ""},
		{`{"progress":0.5,"metric":0.3,"checkpoint":"s3://b/c","checkpointProgress":0.4,"time":"2026-01-01T00:00:00Z"}`, ""},
		{`{"progress":1.5,"time":"2026-01-01T00:00:00Z"}`, "progress"},
		{`{"progress":0.5}`, "time"},
		{`{"progress":0.5,"checkpointProgress":-1,"time":"2026-01-01T00:00:00Z"}`, "checkpointProgress"},
		{`not json`, "drover.dev/report"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("Parse(%q) = %v, want error naming %q", c.in, err, c.wantErr)
		}
	}
}

// Patch produces a merge patch whose annotation parses back to the report.
func TestPatchRoundTrip(t *testing.T) {
	m := 0.25
	r := Report{Progress: 0.5, Metric: &m, Checkpoint: "ckpt-5", CheckpointProgress: 0.5, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err := Patch(r)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(p.Metadata.Annotations["drover.dev/report"])
	if err != nil {
		t.Fatal(err)
	}
	if got.Progress != 0.5 || *got.Metric != 0.25 || got.Checkpoint != "ckpt-5" || !got.Time.Equal(r.Time) {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := Patch(Report{Progress: -1}); err == nil {
		t.Error("Patch accepted progress -1")
	}
}
