package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEndlessInput: every text input of the CLI, given /dev/zero (a line
// that never ends), fails with the line-limit error naming the file and
// line instead of buffering until the process runs out of memory (issue
// 28 item 5: 1.5-1.8 GB, then "fatal error: out of memory"). The bytes
// allocated while running stay under a bound far below that.
func TestEndlessInput(t *testing.T) {
	const zero = "/dev/zero"
	if _, err := os.Stat(zero); err != nil {
		t.Skipf("no %s: %v", zero, err)
	}
	const bound = 64 << 20 // bytes allocated per run; the line limit is 1 MiB
	cl := "1:gpu=8,cpu=48,mem_gib=384"
	good := filepath.Join(t.TempDir(), "good.csv")
	if err := os.WriteFile(good, []byte("submit_s,duration_s,gpu\n0,100,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := [][]string{
		{"sim", "--trace", zero, "--trace-format", "generic", "--cluster", cl},
		{"sim", "--trace", zero, "--trace-format", "philly", "--cluster", cl},
		{"sim", "--trace", zero, "--cluster", cl}, // the format sniffer reads the header
		{"sim", "--trace", good, "--cluster", cl, "--profile", zero},
		{"forecast", "--philly", zero, "--quick"},
		{"forecast", "--series", zero, "--quick"},
		{"scheduler", "--config", zero}, // the config is read before any connection
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := drover(t, args...)
			runtime.ReadMemStats(&after)
			want := zero + ":1: line longer than 1048576 bytes"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v\nwant  %q", err, want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > bound {
				t.Errorf("allocated %d MiB, want at most %d MiB", got>>20, bound>>20)
			}
		})
	}
}
