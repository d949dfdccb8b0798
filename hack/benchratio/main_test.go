package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTable(t *testing.T) {
	tests := []struct {
		file    string
		limit   float64
		want    string
		wantErr string
	}{{
		file:  "testdata/bench.txt",
		limit: 10,
		want: "Median cpu time per replay (ms) and ratio to fifo on the same queue; ** above 10x.\n\n" +
			"| profile | philly | gangs |\n" +
			"|---|---:|---:|\n" +
			"| fifo | 20.0 (1.0x, n=3) | 15.0 (1.0x, n=2) |\n" +
			"| k8s-default | 60.0 (3.0x, n=1) | 45.0 (3.0x, n=1) |\n" +
			"| k8s-default+newcomer | **300.0 (15.0x, n=1)** | - |\n" +
			"\nAbove 10x (1): philly/k8s-default+newcomer 15.0x.\n",
	}, {
		file:  "testdata/bench.txt",
		limit: 20,
		want: "Median cpu time per replay (ms) and ratio to fifo on the same queue; ** above 20x.\n\n" +
			"| profile | philly | gangs |\n" +
			"|---|---:|---:|\n" +
			"| fifo | 20.0 (1.0x, n=3) | 15.0 (1.0x, n=2) |\n" +
			"| k8s-default | 60.0 (3.0x, n=1) | 45.0 (3.0x, n=1) |\n" +
			"| k8s-default+newcomer | 300.0 (15.0x, n=1) | - |\n" +
			"\nAbove 20x: none.\n",
	}, {
		file:    "testdata/nocpu.txt",
		wantErr: "testdata/nocpu.txt:1: philly/drover has no cpu-ns/op",
	}, {
		file:    "testdata/nofifo.txt",
		wantErr: "queue philly: no positive fifo result to divide by",
	}}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out strings.Builder
			tb, err := parse(f, tc.file)
			if err == nil {
				err = tb.write(&out, "fifo", tc.limit)
			}
			var gotErr string
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Fatalf("error = %q, want %q", gotErr, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}
