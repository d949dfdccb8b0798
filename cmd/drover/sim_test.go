package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func drover(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestSimJSONContract(t *testing.T) {
	out, err := drover(t, "sim", "--quick", "--seeds", "1", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Experiment string
		Seed       uint64
		Results    []struct {
			Policy  string
			Metrics map[string]float64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if rep.Experiment != "overview" || rep.Seed != 1 || len(rep.Results) < 4 {
		t.Fatalf("report %+v", rep)
	}
	keys := []string{"jobs", "completed", "makespan_s", "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s",
		"slowdown_p50", "slowdown_p95", "slowdown_p99", "te_slowdown_p50", "te_slowdown_p95", "te_slowdown_p99",
		"be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99", "queue_delay_mean_s", "preemptions", "preempted_jobs",
		"migrations", "utility_total", "cost"}
	for _, r := range rep.Results {
		for _, k := range keys {
			if _, ok := r.Metrics[k]; !ok {
				t.Errorf("%s lacks %s", r.Policy, k)
			}
		}
	}
	again, _ := drover(t, "sim", "--quick", "--seeds", "1", "--format", "json")
	if again != out {
		t.Error("the same command printed different bytes")
	}
}

func TestSimTableAndOut(t *testing.T) {
	dir := t.TempDir()
	out, err := drover(t, "sim", "--quick", "--seeds", "1", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "policy") || !strings.Contains(out, "fifo") {
		t.Fatalf("table:\n%s", out)
	}
	for _, f := range []string{"report.json", "jct-cdf.svg", "gpu-util.svg", "jobs-fifo-seed1.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestSimTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "jobs.csv")
	os.WriteFile(trace, []byte("submit_s,duration_s,gpu,class\n0,100,1,TE\n10,50,2,BE\n"), 0o644)
	out, err := drover(t, "sim", "--trace", trace, "--policy", "fifo,drf", "--cluster", "1:gpu=2,cpu=8,mem_gib=32", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"completed": 2`) {
		t.Errorf("trace run output:\n%s", out)
	}
}

func TestSimErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("submit_s,duration_s,gpu\n0,abc,1\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--experiment", "nosuch"}, `unknown experiment "nosuch"`},
		{[]string{"sim", "--trace", bad, "--cluster", "1:gpu=1"}, "bad.csv:2:2: field duration_s"},
		{[]string{"sim", "--trace", bad}, "--trace needs --cluster"},
		{[]string{"sim", "--trace", bad, "--cluster", "1:gpu=1", "--policy", "nosuch"}, "bad.csv:2:2"},
		{[]string{"sim", "--format", "xml"}, "--format"},
		{[]string{"sim", "--policy", "fifo"}, "go with --trace"},
		{[]string{"sim", "--trace", filepath.Join(dir, "missing.csv"), "--cluster", "1:gpu=1"}, "missing.csv"},
	}
	for _, tc := range tests {
		_, err := drover(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	good := filepath.Join(dir, "good.csv")
	os.WriteFile(good, []byte("submit_s,duration_s,gpu\n0,1,1\n"), 0o644)
	if _, err := drover(t, "sim", "--trace", good, "--cluster", "1:gpu=1", "--policy", "nosuch"); err == nil || !strings.Contains(err.Error(), `unknown policy "nosuch"`) {
		t.Errorf("unknown policy: %v", err)
	}
}

func TestSimList(t *testing.T) {
	out, err := drover(t, "sim", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"overview", "philly", "fifo", "drf", "k8s-default", "binpack"} {
		if !strings.Contains(out, s) {
			t.Errorf("--list lacks %s", s)
		}
	}
}
