package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
)

// A row with a parameter-server group gets OASiS's job model, defaulted so
// that it needs duration_s x replicas worker-seconds and the requested
// workers need exactly ps_replicas servers (issue 17 item 11: ps-drf and
// dorm dereferenced the missing model, oasis and rrh rejected every job).
func TestParseCSVPSParams(t *testing.T) {
	csv := "id,submit_s,duration_s,gpu,replicas,max_replicas,ps_replicas,ps_cpu,epochs,gradient_mb,worker_bw_mbs,sensitivity\n" +
		"a,0,100,1,4,8,2,1,,,,\n" +
		"b,0,100,1,2,2,1,1,5,10,100,critical\n" +
		"c,0,100,1,1,1,,,,,,\n"
	jobs, err := ParseCSV(strings.NewReader(csv), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []*cluster.PSParams{
		{Epochs: 1, Chunks: 8, MiniBatches: 1, MiniBatchTime: 50, WorkerBW: 1, PSBW: 2},
		{Epochs: 5, Chunks: 2, MiniBatches: 1, MiniBatchTime: 20 - 0.2, GradientMB: 10, WorkerBW: 100, PSBW: 200, Sensitivity: "critical"},
		nil,
	}
	for i, j := range jobs {
		if d := cmp.Diff(want[i], j.PS); d != "" {
			t.Errorf("job %s PS (-want +got):\n%s", j.ID, d)
		}
	}
}

// Bad values of the model columns and other bounds name file, line,
// column and field.
func TestParseCSVBounds(t *testing.T) {
	tests := []struct{ csv, want string }{
		{"submit_s,duration_s,gpu\n0,1e308,1\n", "t.csv:2:2: field duration_s: 1e+308 is above the limit 1e+09"},
		{"submit_s,duration_s,gpu,grace_s\n0,1,1,1e10\n", "t.csv:2:4: field grace_s: 1e+10 is above the limit 1e+09"},
		{"submit_s,,gpu\n0,1,1\n", "t.csv:1:2: field (column 2): empty column name"},
		{"submit_s,duration_s,gpu,epochs\n0,1,1,2\n", "t.csv:2:4: field epochs: is set but ps_replicas is not"},
		{"submit_s,duration_s,gpu,ps_replicas,ps_cpu,epochs\n0,1,1,1,1,0\n", "t.csv:2:6: field epochs: 0 is outside [1, 1000000]"},
		{"submit_s,duration_s,gpu,ps_replicas,ps_cpu,sensitivity\n0,1,1,1,1,meh\n", `t.csv:2:6: field sensitivity: "meh": want insensitive, sensitive or critical`},
		{"submit_s,duration_s,gpu,ps_replicas,ps_cpu,gradient_mb\n0,1,1,1,1,100\n", "t.csv:2:6: field gradient_mb: communication alone (200 s per mini-batch) exceeds"},
		{"submit_s,duration_s,gpu,utility\n0,1,1,sigmoid:1:1e13:0\n", "t.csv:2:4: field utility"},
	}
	for _, tc := range tests {
		_, err := ParseCSV(strings.NewReader(tc.csv), "t.csv")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.csv, err, tc.want)
		}
	}
}

// SniffFormat reads the header, not the path.
func TestSniffFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "philly_runs")
	os.Mkdir(dir, 0o755)
	tests := []struct {
		body string
		want Format
		err  string
	}{
		{"submit_s,duration_s,gpu\n0,1,1\n", FormatGeneric, ""},
		{"\ufefftimestamp,duration,num_gpus,gpu_time,cluster\n", FormatPhilly, ""},
		{"a,b\n", "", "header is neither"},
		{"", "", "empty file"},
	}
	for i, tc := range tests {
		p := filepath.Join(dir, "philly-"+string(rune('a'+i))+".csv")
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := SniffFormat(p)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.body, got, err, tc.want, tc.err)
		}
	}
}
