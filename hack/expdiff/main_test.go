package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	const head = "Figures of testdata/before (before) and testdata/after (after); marked (**!**): a relative change beyond %s, or a figure on one side only.\n\n" +
		"| report | policy | metric | before | after | change | |\n" +
		"|---|---|---|---:|---:|---:|---|\n"
	tests := []struct {
		name    string
		after   string
		tol     float64
		changed bool
		want    string
		wantErr string
	}{{
		name:  "every figure",
		after: "testdata/after",
		tol:   0.01,
		want: strings.Replace(head, "%s", "0.01", 1) +
			"| gone-quick | drf | completed | 1 | - | only before | **!** |\n" +
			"| new | drf | completed | - | 2 | only after | **!** |\n" +
			"| tiny | fifo | completed | 10 | 10 | 0 |  |\n" +
			"| tiny | fifo | jct_mean_s | 100 | 100.5 | 0.50% |  |\n" +
			"| tiny | fifo | makespan_s | 0 | 3 | from 0 | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | completed | 10 | 10 | 0 |  |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | jct_mean_s | 50 | 40 | -20.00% | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | preemptions | - | 1 | only after | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | unfinished:pending | 2 | - | only before | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1)#2 | completed | 9 | 9 | 0 |  |\n" +
			"\nSummary: 10 figures: 3 equal, 1 changed within 0.01, 2 changed beyond it, 2 only before, 2 only after.\n" +
			"Reports only before: gone-quick.\nReports only after: new.\n",
	}, {
		name:    "changed only, a tolerance that marks 0.5%",
		after:   "testdata/after",
		tol:     0.001,
		changed: true,
		want: strings.Replace(head, "%s", "0.001", 1) +
			"| gone-quick | drf | completed | 1 | - | only before | **!** |\n" +
			"| new | drf | completed | - | 2 | only after | **!** |\n" +
			"| tiny | fifo | jct_mean_s | 100 | 100.5 | 0.50% | **!** |\n" +
			"| tiny | fifo | makespan_s | 0 | 3 | from 0 | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | jct_mean_s | 50 | 40 | -20.00% | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | preemptions | - | 1 | only after | **!** |\n" +
			"| tiny | fitgpp (lambda=2, p=1) | unfinished:pending | 2 | - | only before | **!** |\n" +
			"\nSummary: 10 figures: 3 equal, 0 changed within 0.001, 3 changed beyond it, 2 only before, 2 only after.\n" +
			"Reports only before: gone-quick.\nReports only after: new.\n",
	}, {
		name:    "a file that is not a report",
		after:   "testdata/bad",
		tol:     0.01,
		wantErr: "after: testdata/bad/empty.json: not a drover report: unexpected end of JSON input",
	}, {
		name:    "no such directory",
		after:   "testdata/nonexistent",
		tol:     0.01,
		wantErr: "after: stat testdata/nonexistent: no such file or directory",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := run(&out, "testdata/before", tc.after, tc.tol, tc.changed)
			var gotErr string
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Fatalf("run error = %q, want %q", gotErr, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("run output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRelChange(t *testing.T) {
	tests := []struct {
		before, after, tol float64
		want               string
		wantMarked         bool
	}{
		{100, 101, 0.01, "1.00%", false},
		{100, 102, 0.01, "2.00%", true},
		{-50, -25, 0.01, "50.00%", true},
		{0, 1e-9, 0.5, "from 0", true},
	}
	for _, tc := range tests {
		got, marked := relChange(tc.before, tc.after, tc.tol)
		if got != tc.want || marked != tc.wantMarked {
			t.Errorf("relChange(%v, %v, %v) = %q, %v; want %q, %v", tc.before, tc.after, tc.tol, got, marked, tc.want, tc.wantMarked)
		}
	}
}
