// Command benchratio reads Go benchmark output of BenchmarkLongQueues
// (sub-benchmarks QUEUE/PROFILE, run with -count N) and prints a Markdown
// table: for each profile (rows) and queue (columns), the median cpu-ns/op
// over the runs in milliseconds and its ratio to fifo's median on the same
// queue, marking ratios above -limit (default 10) with **; then the marked
// cells in a list. The median of an even count is the mean of the middle
// two, as benchstat's.
//
//	go run ./hack/benchratio [-limit 10] [-base fifo] FILE
//
// Lines that are not benchmark results (the headers hack/bench.sh writes,
// PASS, ok) are ignored. A result without cpu-ns/op, a queue without the
// base profile, or a file without results is an error.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	limit := flag.Float64("limit", 10, "ratio to the base profile above which a cell is marked")
	base := flag.String("base", "fifo", "the profile every ratio divides by")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/benchratio [-limit 10] [-base fifo] FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
	defer f.Close()
	t, err := parse(f, flag.Arg(0))
	if err == nil {
		err = t.write(os.Stdout, *base, *limit)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
}

// table holds the cpu-ns/op samples by queue and profile, and both in the
// order they first appear.
type table struct {
	queues, profiles []string
	ns               map[[2]string][]float64
}

// result is "BenchmarkLongQueues/QUEUE/PROFILE[-P] N ..."; PROFILE may hold
// '+' and '-' (k8s-default+newcomer), so only a numeric -P is cut.
var result = regexp.MustCompile(`^BenchmarkLongQueues/([^/\s]+)/(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

func parse(r io.Reader, name string) (*table, error) {
	t := &table{ns: map[[2]string][]float64{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		m := result.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		q, p := m[1], m[2]
		fields := strings.Fields(m[4])
		v, found := 0.0, false
		for i := 1; i < len(fields); i++ {
			if fields[i] == "cpu-ns/op" {
				x, err := strconv.ParseFloat(fields[i-1], 64)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: cpu-ns/op: %w", name, line, err)
				}
				v, found = x, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s:%d: %s/%s has no cpu-ns/op", name, line, q, p)
		}
		if !slices.Contains(t.queues, q) {
			t.queues = append(t.queues, q)
		}
		if !slices.Contains(t.profiles, p) {
			t.profiles = append(t.profiles, p)
		}
		k := [2]string{q, p}
		t.ns[k] = append(t.ns[k], v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.ns) == 0 {
		return nil, fmt.Errorf("%s: no BenchmarkLongQueues results", name)
	}
	return t, nil
}

// median of xs (not empty); xs is sorted in place.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func (t *table) write(w io.Writer, base string, limit float64) error {
	med := map[[2]string]float64{}
	for k, xs := range t.ns {
		med[k] = median(slices.Clone(xs))
	}
	var errs []error
	for _, q := range t.queues {
		if b, ok := med[[2]string{q, base}]; !ok || b <= 0 {
			errs = append(errs, fmt.Errorf("queue %s: no positive %s result to divide by", q, base))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	fmt.Fprintf(w, "Median cpu time per replay (ms) and ratio to %s on the same queue; ** above %gx.\n\n", base, limit)
	fmt.Fprintf(w, "| profile | %s |\n", strings.Join(t.queues, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(t.queues)))
	var marked []string
	for _, p := range t.profiles {
		cells := []string{p}
		for _, q := range t.queues {
			v, ok := med[[2]string{q, p}]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			r := v / med[[2]string{q, base}]
			c := fmt.Sprintf("%.1f (%.1fx, n=%d)", v/1e6, r, len(t.ns[[2]string{q, p}]))
			if r > limit {
				c = "**" + c + "**"
				marked = append(marked, fmt.Sprintf("%s/%s %.1fx", q, p, r))
			}
			cells = append(cells, c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	if len(marked) == 0 {
		fmt.Fprintf(w, "Above %gx: none.\n", limit)
	} else {
		fmt.Fprintf(w, "Above %gx (%d): %s.\n", limit, len(marked), strings.Join(marked, ", "))
	}
	return nil
}
