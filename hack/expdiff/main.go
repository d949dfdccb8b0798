// Command expdiff compares two directories of `drover sim --format json`
// reports, as hack/experiments.sh writes them, and prints a Markdown table
// of every figure: each file (experiment, full or -quick) x row (policy and
// its params) x metric, with the value before, after and the relative
// change, marking those beyond a tolerance, then a summary count.
//
//	go run ./hack/expdiff [-tol 0.01] [-changed] BEFORE AFTER
//
// A row is named by its policy and its params (k=v, sorted); a second row
// with the same name in one file gets "#2" appended, and so on. The
// rejected and unfinished counts by reason are figures too, as
// "rejected:REASON" and "unfinished:REASON". The relative change is
// (after - before) / |before|; a figure is marked when that exceeds -tol in
// size, or when before is 0 and after is not. Files, rows and figures
// present on one side only are listed and counted, never dropped. A file
// that is not a report (a failed run's empty output) is an error naming it.
// -changed prints only the marked and one-sided figures; the summary
// counts all of them either way.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	tol := flag.Float64("tol", 0.01, "relative change beyond which a figure is marked")
	changed := flag.Bool("changed", false, "print only marked and one-sided figures")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./hack/expdiff [-tol 0.01] [-changed] BEFORE AFTER")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if *tol < 0 || math.IsNaN(*tol) {
		fmt.Fprintf(os.Stderr, "expdiff: -tol %v: want a number >= 0\n", *tol)
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), flag.Arg(1), *tol, *changed); err != nil {
		fmt.Fprintln(os.Stderr, "expdiff:", err)
		os.Exit(1)
	}
}

// report is the part of experiment.Report that JSON output holds.
type report struct {
	Experiment string `json:"experiment"`
	Results    []struct {
		Policy     string             `json:"policy"`
		Params     map[string]string  `json:"params"`
		Metrics    map[string]float64 `json:"metrics"`
		Rejected   map[string]float64 `json:"rejected"`
		Unfinished map[string]float64 `json:"unfinished"`
	} `json:"results"`
}

// key names one figure: the file's stem, the row and the metric.
type key struct{ file, row, metric string }

// figures reads every *.json file in dir into figures by key, and returns
// the file stems.
func figures(dir string) (map[key]float64, []string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%s: no *.json files", dir)
	}
	out := map[key]float64{}
	var files []string
	for _, p := range paths {
		stem := strings.TrimSuffix(filepath.Base(p), ".json")
		files = append(files, stem)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, nil, fmt.Errorf("%s: not a drover report: %w", p, err)
		}
		if r.Experiment == "" {
			return nil, nil, fmt.Errorf("%s: not a drover report: no field experiment", p)
		}
		seen := map[string]int{}
		for i, row := range r.Results {
			if row.Policy == "" {
				return nil, nil, fmt.Errorf("%s: results[%d]: no field policy", p, i)
			}
			name := rowName(row.Policy, row.Params)
			seen[name]++
			if n := seen[name]; n > 1 {
				name += "#" + strconv.Itoa(n)
			}
			for m, v := range row.Metrics {
				out[key{stem, name, m}] = v
			}
			for reason, v := range row.Rejected {
				out[key{stem, name, "rejected:" + reason}] = v
			}
			for reason, v := range row.Unfinished {
				out[key{stem, name, "unfinished:" + reason}] = v
			}
		}
	}
	return out, files, nil
}

// rowName is the policy followed by its params, sorted, in parentheses.
func rowName(policy string, params map[string]string) string {
	if len(params) == 0 {
		return policy
	}
	ks := make([]string, 0, len(params))
	for k := range params {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for i, k := range ks {
		ks[i] = k + "=" + params[k]
	}
	return policy + " (" + strings.Join(ks, ", ") + ")"
}

// summary counts the figures by outcome.
type summary struct {
	same, within, marked, onlyBefore, onlyAfter int
}

// run writes the table and the summary for the reports in dirs before
// and after.
func run(w io.Writer, before, after string, tol float64, changedOnly bool) error {
	b, bf, err := figures(before)
	if err != nil {
		return fmt.Errorf("before: %w", err)
	}
	a, af, err := figures(after)
	if err != nil {
		return fmt.Errorf("after: %w", err)
	}
	keys := make([]key, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if x.file != y.file {
			return x.file < y.file
		}
		if x.row != y.row {
			return x.row < y.row
		}
		return x.metric < y.metric
	})
	var s summary
	var lines []string
	for _, k := range keys {
		bv, inB := b[k]
		av, inA := a[k]
		var change, mark string
		switch {
		case !inA:
			s.onlyBefore++
			change, mark = "only before", "**!**"
		case !inB:
			s.onlyAfter++
			change, mark = "only after", "**!**"
		case av == bv:
			s.same++
			change = "0"
		default:
			rel, marked := relChange(bv, av, tol)
			change = rel
			if marked {
				s.marked++
				mark = "**!**"
			} else {
				s.within++
			}
		}
		if changedOnly && mark == "" {
			continue
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |",
			k.file, k.row, k.metric, value(bv, inB), value(av, inA), change, mark))
	}
	fmt.Fprintf(w, "Figures of %s (before) and %s (after); marked (**!**): a relative change beyond %g, or a figure on one side only.\n\n", before, after, tol)
	fmt.Fprintln(w, "| report | policy | metric | before | after | change | |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---|")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Summary: %d figures: %d equal, %d changed within %g, %d changed beyond it, %d only before, %d only after.\n",
		len(keys), s.same, s.within, tol, s.marked, s.onlyBefore, s.onlyAfter)
	if miss := missing(bf, af); len(miss) > 0 {
		fmt.Fprintf(w, "Reports only before: %s.\n", strings.Join(miss, ", "))
	}
	if miss := missing(af, bf); len(miss) > 0 {
		fmt.Fprintf(w, "Reports only after: %s.\n", strings.Join(miss, ", "))
	}
	return nil
}

// relChange formats (after - before) / |before| as a signed percentage and
// says whether it is beyond tol; from 0 to anything else is "new" and
// always beyond.
func relChange(before, after, tol float64) (string, bool) {
	if before == 0 {
		return "from 0", true
	}
	r := (after - before) / math.Abs(before)
	return strconv.FormatFloat(100*r, 'f', 2, 64) + "%", math.Abs(r) > tol
}

// value prints v, or "-" when the side has no such figure.
func value(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// missing returns the names in xs that are not in ys.
func missing(xs, ys []string) []string {
	in := map[string]bool{}
	for _, y := range ys {
		in[y] = true
	}
	var out []string
	for _, x := range xs {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
