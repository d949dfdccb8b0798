package python

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/k8s/report"
)

// python3 is the interpreter the client's tests run with; the client needs
// only its standard library.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH: the Python trainer client (clients/python) is tested with it: %v", err)
	}
	return py
}

// TestPythonClient runs the client's unittest suite (a stub API server in
// a thread; no torch needed).
func TestPythonClient(t *testing.T) {
	cmd := exec.Command(python3(t), "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest discover -s clients/python/tests: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if !strings.Contains(string(out), "\nOK") {
		t.Errorf("unittest did not report OK:\n%s", out)
	}
}

// TestPatchMatchesGo: for the same report, the Python client's patch body
// is byte for byte what report.Patch (what `drover report` and
// report.Send write) returns.
func TestPatchMatchesGo(t *testing.T) {
	m := func(f float64) *float64 { return &f }
	at := time.Date(2026, 11, 23, 19, 55, 18, 668799116, time.UTC)
	cases := []struct {
		name string
		r    report.Report
	}{
		{"progress only", report.Report{Progress: 0.5, Time: at}},
		{"whole second", report.Report{Progress: 1, Time: at.Truncate(time.Second)}},
		{"milliseconds", report.Report{Progress: 0.125, Time: at.Truncate(time.Millisecond)}},
		{"a loss", report.Report{Progress: 0.3333333333333333, Metric: m(2.0794415416798357), Time: at}},
		{"zero metric", report.Report{Progress: 0, Metric: m(0), Time: at}},
		{"tiny metric", report.Report{Progress: 0.01, Metric: m(1.5e-7), Time: at}},
		{"huge metric", report.Report{Progress: 0.01, Metric: m(-3.25e22), Time: at}},
		{"large plain metric", report.Report{Progress: 0.01, Metric: m(123456789012.5), Time: at}},
		{"checkpoint", report.Report{Progress: 0.42, Metric: m(0.31), Checkpoint: "s3://b/ckpt-420", CheckpointProgress: 0.4, Time: at}},
		{"odd checkpoint characters", report.Report{Progress: 0.42, Checkpoint: "/ckpt/a&b <c> \"q\" \\ é\u2028\t\x01", CheckpointProgress: 0.42, Time: at}},
	}
	type pyCase struct {
		Progress           float64  `json:"progress"`
		Metric             *float64 `json:"metric"`
		Checkpoint         string   `json:"checkpoint"`
		CheckpointProgress *float64 `json:"checkpoint_progress"`
		TimeNS             int64    `json:"time_ns"`
	}
	var in []pyCase
	var want []string
	for _, c := range cases {
		cp := c.r.CheckpointProgress
		in = append(in, pyCase{Progress: c.r.Progress, Metric: c.r.Metric, Checkpoint: c.r.Checkpoint, CheckpointProgress: &cp, TimeNS: c.r.Time.UnixNano()})
		b, err := report.Patch(c.r)
		if err != nil {
			t.Fatalf("%s: report.Patch: %v", c.name, err)
		}
		want = append(want, string(b))
	}
	arg, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const script = `import json, sys, drover
for c in json.loads(sys.argv[1]):
    print(drover.patch_body(c["progress"], c["metric"], c["checkpoint"] or None, c["checkpoint_progress"], c["time_ns"]).decode())`
	out, err := exec.Command(python3(t), "-c", script, string(arg)).Output()
	if err != nil {
		t.Fatalf("python3: %v: %s", err, errText(err))
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != len(cases) {
		t.Fatalf("python printed %d patches for %d reports:\n%s", len(got), len(cases), out)
	}
	for i, c := range cases {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("%s: the Python patch differs from report.Patch (-go +python):\n%s", c.name, diff)
		}
	}
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestGuideSnippetIsTheExample: every code block that docs/trainer.md
// marks as taken from examples/pytorch/train.py appears in that file
// verbatim, and together they stay under 20 lines.
func TestGuideSnippetIsTheExample(t *testing.T) {
	const marker = "<!-- from examples/pytorch/train.py -->"
	doc, err := os.ReadFile("../../docs/trainer.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/pytorch/train.py")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := markedBlocks(string(doc), marker)
	if err != nil {
		t.Fatalf("docs/trainer.md: %v", err)
	}
	if len(blocks) == 0 {
		t.Fatalf("docs/trainer.md has no code block marked %q", marker)
	}
	lines := 0
	for _, b := range blocks {
		if !strings.Contains(string(src), b.code) {
			t.Errorf("docs/trainer.md:%d: the block is not in examples/pytorch/train.py verbatim:\n%s", b.line, b.code)
		}
		lines += strings.Count(b.code, "\n")
	}
	if lines >= 20 {
		t.Errorf("the guide's snippet is %d lines, want under 20", lines)
	}
}

type block struct {
	line int // of the opening fence, 1-based
	code string
}

// markedBlocks returns the fenced code blocks that directly follow a
// marker line; an unclosed fence or a marker not followed by a fence is an
// error naming the line.
func markedBlocks(doc, marker string) ([]block, error) {
	ls := strings.Split(doc, "\n")
	var out []block
	for i := 0; i < len(ls); i++ {
		if strings.TrimSpace(ls[i]) != marker {
			continue
		}
		if i+1 >= len(ls) || !strings.HasPrefix(ls[i+1], "```") {
			return nil, fmt.Errorf("line %d: the marker is not followed by a code fence", i+1)
		}
		start := i + 1
		var code strings.Builder
		closed := false
		for j := start + 1; j < len(ls); j++ {
			if strings.HasPrefix(ls[j], "```") {
				closed, i = true, j
				break
			}
			code.WriteString(ls[j] + "\n")
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the code block is not closed", start+1)
		}
		out = append(out, block{line: start + 1, code: code.String()})
	}
	return out, nil
}
