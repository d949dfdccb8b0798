package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/drover-sched/drover/pkg/metrics"
)

// WriteJSON writes the report as one JSON object. Map keys are sorted by
// encoding/json, so the same report gives the same bytes. JSON cannot hold
// NaN or Inf, and writing 0 or null instead would hide a broken metric, so
// a report holding one is an error naming the policy and key.
func (r *Report) WriteJSON(w io.Writer) error {
	for _, row := range r.Results {
		for k, v := range row.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("experiment %s: policy %s: metric %s is %v", r.Experiment, row.Policy, k, v)
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes an aligned table of the report's columns.
func (r *Report) WriteTable(w io.Writer) error {
	cols := r.Columns
	if len(cols) == 0 {
		cols = DefaultColumns
	}
	var params []string
	seen := map[string]bool{}
	for _, row := range r.Results {
		for k := range row.Params {
			if !seen[k] {
				seen[k] = true
				params = append(params, k)
			}
		}
	}
	sort.Strings(params)
	fmt.Fprintf(w, "experiment %s, seed %d", r.Experiment, r.Seed)
	if r.Seeds > 1 {
		fmt.Fprintf(w, " (mean over %d seeds)", r.Seeds)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := append(append([]string{"policy"}, params...), cols...)
	fmt.Fprintln(tw, strings.Join(hdr, "\t")+"\t")
	for _, row := range r.Results {
		cells := []string{row.Policy}
		for _, p := range params {
			cells = append(cells, row.Params[p])
		}
		for _, c := range cols {
			v, ok := row.Metrics[c]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, FormatValue(v))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeReasons(w, r.Results)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// FormatValue prints a metric compactly: integers as integers, small
// values with three significant digits.
func FormatValue(v float64) string {
	if v == 0 {
		v = 0 // print -0 as 0
	}
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// WriteOut writes per-job CSVs, charts and report.json into dir.
func (r *Report) WriteOut(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output dir: %w", err)
	}
	var files []string
	write := func(name string, fn func(io.Writer) error) error {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", p, err)
		}
		files = append(files, p)
		return f.Close()
	}
	if err := write("report.json", r.WriteJSON); err != nil {
		return files, err
	}
	for _, t := range r.Jobs {
		if err := write(t.Name+".csv", func(w io.Writer) error { return WriteJobsCSV(w, t.Records) }); err != nil {
			return files, err
		}
	}
	for _, c := range r.Charts {
		c := c
		if err := write(c.File, func(w io.Writer) error {
			if c.Line != nil {
				return c.Line.WriteSVG(w)
			}
			return c.Gantt.WriteSVG(w)
		}); err != nil {
			return files, err
		}
	}
	return files, nil
}

// WriteJobsCSV writes per-job records.
func WriteJobsCSV(w io.Writer, recs []metrics.JobRecord) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "class", "tenant", "model", "gpus", "submit_s", "first_start_s", "finish_s", "work_s", "jct_s",
		"queue_delay_s", "slowdown", "preemptions", "migrations", "resizes", "rejected", "utility", "reason"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	for i := range recs {
		r := &recs[i]
		jct, slow, qd := "", "", ""
		if r.Finished() {
			jct, slow = f(r.JCT()), f(r.Slowdown())
		}
		if r.FirstStart >= 0 {
			qd = f(r.QueueDelay())
		}
		cw.Write([]string{r.ID, r.Class.String(), r.Tenant, r.Model, strconv.FormatInt(r.GPUs, 10), f(r.Submit), f(r.FirstStart),
			f(r.Finish), f(r.Work), jct, qd, slow, strconv.Itoa(r.Preemptions), strconv.Itoa(r.Migrations),
			strconv.Itoa(r.Resizes), strconv.FormatBool(r.Rejected), f(r.Utility), r.Reason})
	}
	cw.Flush()
	return cw.Error()
}
