package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSimBadInput feeds drover sim each bad input of issue 17 item 10 (a
// panic, hangs, inputs accepted silently, misleading errors) and asserts
// the error names the flag, or the file, line and field.
func TestSimBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.csv", "submit_s,duration_s,gpu\n0,100,1\n")
	huge := write("huge.csv", "submit_s,duration_s,gpu\n0,1e308,1\n")
	hugeSubmit := write("hs.csv", "submit_s,duration_s,gpu\n1e308,10,1\n")
	emptyCol := write("ec.csv", "submit_s,,duration_s,gpu\n0,,100,1\n")
	badUtil := write("bu.csv", "submit_s,duration_s,gpu,utility\n0,10,1,sigmoid:1e300:0:1\n")
	bigPrio := write("bp.csv", "submit_s,duration_s,gpu,priority\n0,10,1,99999999999\n")
	neither := write("neither.csv", "a,b\n1,2\n")
	psCols := write("pscols.csv", "submit_s,duration_s,gpu,epochs\n0,10,1,3\n")
	psBad := write("psbad.csv", "submit_s,duration_s,gpu,ps_replicas,ps_cpu,mini_batch_s\n0,10,1,1,1,50\n")
	headerOnly := write("ho.csv", "submit_s,duration_s,gpu\n")
	hexNum := write("hex.csv", "submit_s,duration_s,gpu\n0x1p6,100,1\n")
	underscore := write("us.csv", "submit_s,duration_s,gpu\n1_000,100,1\n")
	tinyCPU := write("tc.csv", "submit_s,duration_s,gpu,cpu\n0,100,1,0.0001\n")
	phillyHeader := write("ph.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n")
	hugeCount := write("hc.csv", "time,a\n0,1e308\n300,1\n")
	tinyStep := write("ts.csv", "time,a\n0,1\n1e-300,2\n")
	bom := write("bom.csv", "\ufefftime,a\n"+series(8*24*12))
	cl := "1:gpu=8,cpu=48,mem_gib=384"
	tr := func(args ...string) []string {
		return append([]string{"sim", "--trace", good, "--cluster", cl}, args...)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"slots overflow (was a panic)", tr("--policy", "oasis:slots=9223372036854775807"), `--policy: policy oasis: parameter slots="9223372036854775807": want an integer in [1, 100000]`},
		{"slots 1e9 (24 GB)", tr("--policy", "oasis:slots=1000000000"), `parameter slots="1000000000": want an integer in [1, 100000]`},
		{"tick below resolution (hang)", tr("--tick", "1e-15"), "--tick 1e-15: want 0 (after every event) or seconds in [0.001, 86400]"},
		{"tick negative", tr("--tick", "-1"), "--tick -1"},
		{"tick NaN", tr("--tick", "NaN"), "--tick NaN"},
		{"oasis slot tiny (hang)", tr("--policy", "oasis:slot=1e-300"), `parameter slot="1e-300": want a number in [1, 3.1536e+07]`},
		{"specon interval tiny (hang)", tr("--policy", "specon:interval=1e-300"), `parameter interval="1e-300": want a number in [1, 86400]`},
		{"predictive warmup huge", tr("--policy", "predictive:warmup=1e300"), `parameter warmup="1e300": want a number in [0, 8760]`},
		{"window negative", tr("--policy", "k8s-default:window=-5"), `parameter window="-5": want an integer in [0, 1000000]`},
		{"fitgpp lambda huge", tr("--policy", "fitgpp:lambda=1e300"), `parameter lambda="1e300"`},
		{"fitgpp p huge", tr("--policy", "fitgpp:p=9223372036854775807"), "parameter p=9223372036854775807: want an integer in [1, 1000000] or inf"},
		{"dragon starve negative", tr("--policy", "dragon:starve_s=-1"), `parameter starve_s="-1": want a number in [0, 3.1536e+07]`},
		{"dorm adjust huge", tr("--policy", "dorm:adjust=9999999999"), `parameter adjust="9999999999"`},
		{"policy comma", tr("--policy", ","), `--policy ",": entry 1 is empty`},
		{"policy empty entry", tr("--policy", "fifo,,drf"), `--policy "fifo,,drf": entry 2 is empty`},
		{"policy twice", tr("--policy", "fifo,fifo"), "fifo given twice"},
		{"seeds 0", tr("--seeds", "0"), "--seeds 0: want 1 to 1000"},
		{"seeds negative", []string{"sim", "-e", "overview", "--seeds", "-2"}, "--seeds -2: want 1 to 1000"},
		{"workers huge", tr("--workers", "100000"), "--workers 100000"},
		{"role bogus", []string{"sim", "--trace", good, "--cluster", "1:gpu=8,role=bogus"}, `--cluster: cluster spec pool 1: role="bogus": want worker or ps`},
		{"duplicate key", []string{"sim", "--trace", good, "--cluster", "1:gpu=8,gpu=4"}, "--cluster: cluster spec pool 1: key gpu given twice"},
		{"cpu rounds to 0", []string{"sim", "--trace", good, "--cluster", "1:gpu=8,cpu=1e-9"}, `cpu="1e-9" rounds to 0 (the smallest amount is 0.001)`},
		{"mem overflow", []string{"sim", "--trace", good, "--cluster", "1:mem_gib=1e12"}, `mem_gib="1e12" is outside [0, 1e+06]`},
		{"cluster total overflow", []string{"sim", "--trace", good, "--cluster", "1000000:mem_gib=1e6"}, "the cluster's total memory exceeds"},
		{"node count", []string{"sim", "--trace", good, "--cluster", "1000001:gpu=1"}, "count 1000001 brings the cluster to 1000001 nodes, above the limit 1000000"},
		{"duration 1e308 (NaN metrics)", []string{"sim", "--trace", huge, "--cluster", cl}, "huge.csv:2:2: field duration_s: 1e+308 is above the limit 1e+09"},
		{"submit 1e308", []string{"sim", "--trace", hugeSubmit, "--cluster", cl}, "hs.csv:2:1: field submit_s: 1e+308 is above the limit 1e+09"},
		{"priority huge", []string{"sim", "--trace", bigPrio, "--cluster", cl}, "bp.csv:2:4: field priority: 99999999999 is outside"},
		{"utility huge", []string{"sim", "--trace", badUtil, "--cluster", cl}, "bu.csv:2:4: field utility"},
		{"empty header column", []string{"sim", "--trace", emptyCol, "--cluster", cl}, "ec.csv:1:2: field (column 2): empty column name"},
		{"format neither", []string{"sim", "--trace", neither, "--cluster", cl}, "neither.csv:1: header is neither the generic format"},
		{"format flag", tr("--trace-format", "json"), `--trace-format "json": want generic or philly`},
		{"ps model without ps group", []string{"sim", "--trace", psCols, "--cluster", cl}, "pscols.csv:2:4: field epochs: is set but ps_replicas is not"},
		{"ps model inconsistent", []string{"sim", "--trace", psBad, "--cluster", cl}, "psbad.csv:2:6: field mini_batch_s: the model needs 50 worker-seconds, duration_s x replicas is 10"},
		// Issue 28 item 7: inputs accepted silently.
		{"header-only trace (0 jobs, exit 0)", []string{"sim", "--trace", headerOnly, "--cluster", cl}, "ho.csv:2: no jobs: the trace has a header but no rows"},
		{"header-only philly trace", []string{"sim", "--trace", phillyHeader, "--cluster", cl}, "ph.csv:2: no jobs"},
		{"hex float in a trace", []string{"sim", "--trace", hexNum, "--cluster", cl}, `hex.csv:2:1: field submit_s: "0x1p6" is not a decimal number`},
		{"digit separator in a trace", []string{"sim", "--trace", underscore, "--cluster", cl}, `us.csv:2:1: field submit_s: "1_000" is not a decimal number`},
		{"cpu=0.0001 beside a GPU", []string{"sim", "--trace", tinyCPU, "--cluster", cl}, "tc.csv:2:4: field cpu: 0.0001 rounds to 0 (the smallest amount is 0.001)"},
		{"series count 1e308 (MSE NaN)", []string{"forecast", "--series", hugeCount, "--models", "static"}, "hc.csv:2:2 (bucket a): count 1e+308 is above the limit 1e+09"},
		{"series step 1e-300 (-9223372036854775808 test steps)", []string{"forecast", "--series", tinyStep, "--models", "static"}, "ts.csv:3: time 1e-300 is 1e-300 s after the first row's: the step must be at least 1 s"},
		{"series with a BOM is accepted", []string{"forecast", "--series", bom, "--models", "static"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := drover(t, tc.args...)
			if tc.want == "" {
				if err != nil || out == "" {
					t.Errorf("%v: error %v, output %q; want success with output", tc.args, err, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v:\nerror %v\nwant  %q", tc.args, err, tc.want)
			}
		})
	}
}

// series returns n rows of a 5-minute series with one bucket a (a daily
// wave), without the header.
func series(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d,%d\n", i*300, 5+(i/12)%24)
	}
	return b.String()
}

// TestForecastBadFlags: drover forecast bounds its numeric flags and names
// the flag (issue 17 item 10).
func TestForecastBadFlags(t *testing.T) {
	ok := forecastFlags{models: "static", format: "table", testDays: 1}
	tests := []struct {
		edit func(*forecastFlags)
		want string
	}{
		{func(f *forecastFlags) { f.skip = "NaN" }, `--skip-days "NaN": want a number of days in [0, 3650] or auto`},
		{func(f *forecastFlags) { f.skip = "1e300" }, `--skip-days "1e300"`},
		{func(f *forecastFlags) { f.window = -1 }, "--window -1: want 0 (the network's default) to 100000 steps"},
		{func(f *forecastFlags) { f.steps = -5 }, "--train-steps -5: want 0 (the model's default) to 10000000"},
		{func(f *forecastFlags) { f.testDays = -1 }, "--test-days -1: want days in (0, 3650]"},
	}
	for _, tc := range tests {
		f := ok
		tc.edit(&f)
		if err := runForecast(&bytes.Buffer{}, f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", f, err, tc.want)
		}
	}
}

// TestSimTraceFormatAndReasons: the format comes from the header, not the
// path (a generic file under philly_runs/ failed with "missing column
// timestamp"), and the table counts rejected jobs by reason (issue 17
// item 11).
func TestSimTraceFormatAndReasons(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "philly_runs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "jobs.csv")
	rows := "submit_s,duration_s,gpu\n0,100,1\n" + strings.Repeat("1,100,16\n", 5)
	if err := os.WriteFile(trace, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := drover(t, "sim", "--trace", trace, "--cluster", "1:gpu=8,cpu=48,mem_gib=384", "--policy", "fifo")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rejected fifo: 5 jobs", "5  unschedulable: a worker replica needs gpu=N, more gpu than any node has"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out, err = drover(t, "sim", "--trace", trace, "--cluster", "1:cpu=48,mem_gib=384", "--policy", "fifo", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"rejected": {`) || !strings.Contains(out, "more gpu than any node has") {
		t.Errorf("JSON lacks the rejected reasons:\n%s", out)
	}
}

// TestSimPSTrace: a generic trace with parameter-server groups carries
// OASiS's job model, so oasis, rrh, dorm and ps-drf schedule its jobs
// instead of rejecting every one (issue 17 item 11).
func TestSimPSTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "ps.csv")
	body := "id,submit_s,duration_s,gpu,cpu,replicas,min_replicas,max_replicas,ps_replicas,ps_cpu,utility\n" +
		"a,0,3600,1,1,2,1,4,1,1,sigmoid:100:0:7200\n" +
		"b,10,7200,2,1,1,1,2,1,1,sigmoid:50:0:9000\n" +
		"c,20,1800,1,1,1,1,1,1,1,sigmoid:10:0:9000\n"
	if err := os.WriteFile(trace, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := drover(t, "sim", "--trace", trace, "--cluster", "2:gpu=8,cpu=48,mem_gib=384,role=worker+1:cpu=8,mem_gib=30,role=ps",
		"--policy", "oasis,rrh,dorm,ps-drf", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Policy  string
			Metrics map[string]float64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Metrics["completed"] < 1 {
			t.Errorf("%s completed %v of 3 jobs:\n%s", r.Policy, r.Metrics["completed"], out)
		}
	}
}

// TestArchitectureProfileExample runs the profile: example of
// docs/ARCHITECTURE.md ("Profiles as configuration") through drover sim
// --profile, as the doc says it runs (issue 28 item 7: it was refused with
// unknown field "profile").
func TestArchitectureProfileExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### Profiles as configuration")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "### Profiles as configuration" section`)
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 || !strings.HasPrefix(block, "profile:\n") {
		t.Fatalf("no ```yaml block starting with profile: in the section:\n%.300s", rest)
	}
	dir := t.TempDir()
	prof := filepath.Join(dir, "profile.yaml")
	trace := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(prof, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trace, []byte("submit_s,duration_s,gpu\n0,100,1\n5,50,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := drover(t, "sim", "--trace", trace, "--cluster", "1:gpu=8,cpu=48,mem_gib=384", "--profile", prof, "--format", "json")
	if err != nil {
		t.Fatalf("drover sim --profile <the doc's example>: %v", err)
	}
	var rep struct {
		Results []struct {
			Policy  string
			Metrics map[string]float64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  name: (\S+)`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("the example has no name:\n%s", block)
	}
	if len(rep.Results) != 1 || rep.Results[0].Policy != m[1] || rep.Results[0].Metrics["completed"] != 2 {
		t.Errorf("want one result, %s, 2 jobs completed:\n%s", m[1], out)
	}
}
