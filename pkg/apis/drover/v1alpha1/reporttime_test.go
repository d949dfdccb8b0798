package v1alpha1_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// A metric history keeps its sub-second times through the JSON the API
// server stores and through the unstructured form (server-side apply, the
// dynamic client); metav1.Time would keep whole seconds only.
func TestReportTimeRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 23, 19, 55, 18, 668799116, time.UTC)
	for _, tc := range []struct {
		name string
		in   v1alpha1.ReportTime
		json string
	}{
		{"nanoseconds kept", v1alpha1.NewReportTime(at), `"2026-11-23T19:55:18.668799116Z"`},
		{"whole second", v1alpha1.NewReportTime(at.Truncate(time.Second)), `"2026-11-23T19:55:18Z"`},
		{"written in UTC", v1alpha1.NewReportTime(at.In(time.FixedZone("x", 3600))), `"2026-11-23T19:55:18.668799116Z"`},
		{"zero is null", v1alpha1.ReportTime{}, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Errorf("JSON %s, want %s", b, tc.json)
			}
			var back v1alpha1.ReportTime
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !back.Equal(tc.in.Time) {
				t.Errorf("read back %v, want %v", back, tc.in)
			}

			// Through the unstructured converter, inside a status.
			tj := &v1alpha1.TrainingJob{Status: v1alpha1.TrainingJobStatus{
				Evals:    []v1alpha1.EvalSample{{Time: tc.in, Value: 0.5}},
				Progress: &v1alpha1.ProgressStatus{Fraction: 0.5, ReportedAt: tc.in}}}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tj)
			if err != nil {
				t.Fatal(err)
			}
			var got v1alpha1.TrainingJob
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tj.Status, got.Status, cmp.Comparer(func(a, b v1alpha1.ReportTime) bool { return a.Equal(b.Time) })); diff != "" {
				t.Errorf("status through unstructured (-want +got):\n%s", diff)
			}
		})
	}
}

// The whole-second values an older drover stored (metav1.Time) still
// decode; what is not an RFC 3339 time is an error naming the value.
func TestReportTimeDecode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: `"2026-11-23T19:55:18Z"`, want: time.Date(2026, 11, 23, 19, 55, 18, 0, time.UTC)},
		{in: `"2026-11-23T20:55:18.5+01:00"`, want: time.Date(2026, 11, 23, 19, 55, 18, 5e8, time.UTC)},
		{in: `null`},
		{in: `"yesterday"`, wantErr: `report time "yesterday": parsing time "yesterday" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse "yesterday" as "2006"`},
		{in: `12`, wantErr: "report time: json: cannot unmarshal number into Go value of type string"},
	} {
		var got v1alpha1.ReportTime
		err := json.Unmarshal([]byte(tc.in), &got)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzReportTime: decoding never panics, and what decodes encodes to a
// value that decodes to the same instant.
func FuzzReportTime(f *testing.F) {
	for _, s := range []string{`"2026-11-23T19:55:18.668799116Z"`, `"2026-11-23T19:55:18Z"`, `null`, `""`, `"2026-11-23T19:55:18.1+14:00"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var a v1alpha1.ReportTime
		if json.Unmarshal([]byte(s), &a) != nil {
			return
		}
		b, err := json.Marshal(a)
		if err != nil {
			return // a year outside [0, 9999] is not RFC 3339
		}
		var c v1alpha1.ReportTime
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s -> %s: %v", s, b, err)
		}
		if !c.Equal(a.Time) {
			t.Fatalf("%s -> %s -> %v, want %v", s, b, c, a)
		}
	})
}
