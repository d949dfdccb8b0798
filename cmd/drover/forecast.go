package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/embed"
	"github.com/drover-sched/drover/pkg/forecast"
	"github.com/drover-sched/drover/pkg/workload"
)

type forecastFlags struct {
	models   string
	series   string
	philly   string
	format   string
	out      string
	seed     uint64
	testDays float64
	skip     string // days, or "auto" (also when empty)
	window   int
	steps    int
	quick    bool
	base     bool
	multi    bool
	net      string
	spans    bool
}

func newForecastCmd() *cobra.Command {
	var f forecastFlags
	cmd := &cobra.Command{
		Use:   "forecast",
		Short: "Train and compare bucket-count forecasters (predictive autoscaling)",
		Long: `Train the chosen forecasters on a series of instance-type bucket counts and
report their test error: MSE, PMSE (the mean squared over-prediction, the
over-provisioning cost, over the over-predicted points; PMSE/n divides the
same sum by every point), the share of over-predicted points and the
training time. Every test step is forecast one step ahead from the true
history before it; --multi-step also forecasts the whole test span from the
end of training, feeding the forecasts back, and reports both. The series is the Philly trace
(jobs mapped to AWS g4dn types by GPU count, 5-minute snapshots) unless
--series gives a CSV (header time,<bucket>,...). The last --test-days form
the test span; models are fitted on the rest.

Examples:
  drover forecast                                  # all models (small networks), embedded Philly trace
  drover forecast --models holt-winters,arima --format json
  drover forecast --multi-step                     # one-step and multi-step errors
  drover forecast --series counts.csv --out results/   # chart of predicted vs actual
  drover forecast --quick                          # smoke run
  drover forecast --net paper --models transformer # paper-sized network: about an hour on 2 cores`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runForecast(cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.models, "models", strings.Join(forecast.Names(), ","), "comma-separated models: "+strings.Join(forecast.Names(), ", "))
	fl.StringVar(&f.series, "series", "", "CSV of bucket counts (time,<bucket>,...) instead of the Philly trace")
	fl.StringVar(&f.philly, "philly", "", "Philly trace file (default: the embedded copy)")
	fl.StringVarP(&f.format, "format", "o", "table", "output format: table or json")
	fl.StringVar(&f.out, "out", "", "directory for the series CSV, predicted-vs-actual SVG and the saved networks")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the networks' initialisation and batches")
	fl.Float64Var(&f.testDays, "test-days", 7, "days at the end of the series held out for testing")
	fl.StringVar(&f.skip, "skip-days", "auto", "drop this many days from the end of the series first (test on an earlier span); auto: for the Philly trace, the fewest whole days that leave the test span's end with under 5% of its running demand lost to the trace's cut (15 days on the embedded trace), for --series 0")
	fl.BoolVar(&f.spans, "spans", false, "only describe candidate test weeks (skip 0-28 days): mean counts, trend and, for the Philly trace, the estimated demand lost to the trace's cut, and exit")
	fl.StringVar(&f.net, "net", forecast.NetSmall, "networks' size: small (the autoscaler's; a run of every model takes about 2 minutes on 2 cores) or paper (the paper's window, layers and warm-up, within drover's training budget: about an hour per network on 2 cores, see docs/forecast.md)")
	fl.IntVar(&f.window, "window", 0, fmt.Sprintf("networks' input window in steps, up to %d (default: 576 with --net paper, 24 with --net small)", maxForecastWindow))
	fl.IntVar(&f.steps, "train-steps", 0, fmt.Sprintf("networks' optimiser steps, up to %d (default: the model's)", maxTrainSteps))
	fl.BoolVar(&f.multi, "multi-step", false, "also forecast the whole test span from the end of training (predictions fed back) and report its errors beside the one-step ones")
	fl.BoolVar(&f.base, "base", false, "only select the base instance type for the Philly trace (Figure 7: scale per dropped smallest type) and exit")
	fl.BoolVar(&f.quick, "quick", false, "smoke run, seconds for every model: the last 3 weeks of the series, a 1-day test and 1/10 of the network training steps, the default or --train-steps (with --net paper: a 2-hour test and 1/1000 of them: one or two steps)")
	return cmd
}

// Bounds of drover forecast's numeric flags (issue 17 item 10): a window
// or a step count beyond these only exhausts memory or time, and days
// beyond ten years are longer than any series drover reads.
const (
	maxForecastDays   = 3650
	maxForecastWindow = 100_000
	maxTrainSteps     = 10_000_000
)

// checkForecastFlags validates the numeric flags before anything is read,
// naming the flag in every error.
func checkForecastFlags(f forecastFlags) error {
	if !(f.testDays > 0 && f.testDays <= maxForecastDays) {
		return fmt.Errorf("--test-days %v: want days in (0, %d]", f.testDays, maxForecastDays)
	}
	if f.window < 0 || f.window > maxForecastWindow {
		return fmt.Errorf("--window %d: want 0 (the network's default) to %d steps", f.window, maxForecastWindow)
	}
	if f.steps < 0 || f.steps > maxTrainSteps {
		return fmt.Errorf("--train-steps %d: want 0 (the model's default) to %d", f.steps, maxTrainSteps)
	}
	if f.skip != "" && f.skip != "auto" {
		if _, err := skipDays(f.skip, nil); err != nil {
			return err
		}
	}
	return nil
}

func runForecast(w io.Writer, f forecastFlags) error {
	if f.format != "table" && f.format != "json" {
		return fmt.Errorf("--format %q: want table or json", f.format)
	}
	if err := checkForecastFlags(f); err != nil {
		return err
	}
	var names []string
	for _, n := range strings.Split(f.models, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("--models is empty (want some of %s)", strings.Join(forecast.Names(), ", "))
	}
	if f.base {
		return runBase(w, f)
	}
	opt := forecast.Options{Seed: f.seed, Net: f.net, Window: f.window, TrainSteps: f.steps, Quick: f.quick}
	models := make([]forecast.Forecaster, len(names))
	for i, n := range names {
		m, err := forecast.New(n, opt)
		if err != nil {
			return fmt.Errorf("--models: %w", err)
		}
		models[i] = m
	}
	s, jobs, err := loadForecastSeries(f)
	if err != nil {
		return err
	}
	if f.spans {
		return runSpans(w, f, s, jobs)
	}
	skip, err := skipDays(f.skip, jobs)
	if err != nil {
		return err
	}
	if k := s.StepsIn(skip * forecast.Day); k > 0 {
		if k >= s.Len() {
			return fmt.Errorf("--skip-days %v: the series has only %.1f days", skip, float64(s.Len())*s.Step/forecast.Day)
		}
		s = s.Slice(0, s.Len()-k)
	}
	testDays := f.testDays
	if f.quick {
		s = s.Slice(max(0, s.Len()-s.StepsIn(3*forecast.Week)), s.Len())
		testDays = 1
		if f.net == forecast.NetPaper {
			// A one-step forecast of a 576-step window costs about 0.2
			// CPU-s: a day of them is a minute.
			testDays = 2.0 / 24
		}
	}
	test := s.StepsIn(testDays * forecast.Day)
	if test <= 0 || test >= s.Len() {
		return fmt.Errorf("--test-days %v: %d test steps do not fit a series of %d steps (%.1f days)", testDays, test, s.Len(), float64(s.Len())*s.Step/forecast.Day)
	}
	if err := s.Slice(0, s.Len()-test).Validate(); err != nil {
		return fmt.Errorf("training part of the series: %w", err)
	}
	var results []forecast.Result
	for _, m := range models {
		r, err := forecast.Evaluate(m, s, test, forecast.EvalOptions{MultiStep: f.multi})
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if f.out != "" {
		if err := writeForecastOut(f.out, s, test, models, results); err != nil {
			return err
		}
	}
	if f.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Results []forecast.Result `json:"results"`
		}{results})
	}
	fmt.Fprintf(w, "series: %d steps of %gs, buckets %s; %.0f days skipped at the end; test: last %d steps (%.1f days) after %d training steps (%.1f days)\n",
		s.Len(), s.Step, strings.Join(s.Buckets, ","), skip, test, float64(test)*s.Step/forecast.Day, s.Len()-test, float64(s.Len()-test)*s.Step/forecast.Day)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "model\tMSE\tPMSE\tPMSE/n\tover\ttrain s\t"
	if f.multi {
		head += "multi MSE\tmulti PMSE\tmulti PMSE/n\tmulti over\tmulti s\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.4g\t%.2f\t%.1f\t", r.Model, r.MSE, r.PMSE, r.PMSEAll, r.Over, r.TrainS)
		if m := r.Multi; m != nil {
			fmt.Fprintf(tw, "%.4g\t%.4g\t%.4g\t%.2f\t%.1f\t", m.MSE, m.PMSE, m.PMSEAll, m.Over, r.MultiS)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// loadForecastSeries returns the series and, for the Philly trace, its
// jobs (nil for --series).
func loadForecastSeries(f forecastFlags) (forecast.Series, []*cluster.Job, error) {
	if f.series != "" {
		fh, err := os.Open(f.series)
		if err != nil {
			return forecast.Series{}, nil, fmt.Errorf("--series: %w", err)
		}
		defer fh.Close()
		s, err := forecast.ParseSeriesCSV(fh, f.series)
		if err != nil {
			return forecast.Series{}, nil, fmt.Errorf("--series: %w", err)
		}
		if err := s.Validate(); err != nil {
			return forecast.Series{}, nil, fmt.Errorf("--series %s: %w", f.series, err)
		}
		return s, nil, nil
	}
	jobs, err := workload.LoadPhilly(f.philly, workload.DefaultPhillyOptions())
	if err != nil {
		return forecast.Series{}, nil, err
	}
	s, err := forecast.PhillySeries(jobs)
	return s, jobs, err
}

// skipDays parses --skip-days: a number of days >= 0, or auto (or empty):
// forecast.AutoSkipDays for a trace's jobs, 0 for a CSV series.
func skipDays(v string, jobs []*cluster.Job) (float64, error) {
	if v == "" || v == "auto" {
		if jobs == nil {
			return 0, nil
		}
		d, err := forecast.AutoSkipDays(jobs, embed.PhillyVectors)
		if err != nil {
			return 0, fmt.Errorf("--skip-days auto: %w", err)
		}
		return float64(d), nil
	}
	d, err := strconv.ParseFloat(v, 64)
	if err != nil || !(d >= 0 && d <= maxForecastDays) {
		return 0, fmt.Errorf("--skip-days %q: want a number of days in [0, %d] or auto", v, maxForecastDays)
	}
	return d, nil
}

// runSpans describes the candidate test spans of --test-days ending 0 to
// 28 days before the end of the series: the test and training means, the
// test span's trend and, for a trace, the estimated share of running
// demand its cut removes at the span's end.
func runSpans(w io.Writer, f forecastFlags, s forecast.Series, jobs []*cluster.Job) error {
	test := s.StepsIn(f.testDays * forecast.Day)
	auto, err := skipDays("auto", jobs)
	if err != nil {
		return err
	}
	type row struct {
		Skip      int       `json:"skip_days"`
		StartDay  float64   `json:"start_day"`
		Mean      []float64 `json:"mean"`
		TrainMean []float64 `json:"train_mean"`
		Trend     float64   `json:"trend_per_day"`
		Rise      float64   `json:"rise"`
		Censored  *float64  `json:"censored_share,omitempty"`
	}
	var rows []row
	for d := 0; d <= 28; d++ {
		end := s.Len() - s.StepsIn(float64(d)*forecast.Day)
		from := end - test
		if from <= 0 {
			break
		}
		st, err := forecast.DescribeSpan(s, from, end)
		if err != nil {
			return err
		}
		r := row{Skip: d, StartDay: float64(from) * s.Step / forecast.Day, Mean: st.Mean, TrainMean: st.TrainMean, Trend: st.Trend, Rise: st.Rise}
		if jobs != nil {
			c, err := forecast.CensoredShare(jobs, float64(d)*forecast.Day, embed.PhillyVectors)
			if err != nil {
				return err
			}
			r.Censored = &c
		}
		rows = append(rows, r)
	}
	if f.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Buckets []string `json:"buckets"`
			Auto    float64  `json:"auto_skip_days"`
			Spans   []row    `json:"spans"`
		}{s.Buckets, auto, rows})
	}
	fmt.Fprintf(w, "series: %d steps of %gs (%.1f days), buckets %s; candidate test spans of %g days\n",
		s.Len(), s.Step, float64(s.Len())*s.Step/forecast.Day, strings.Join(s.Buckets, ","), f.testDays)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "skip days\tstarts on day\ttest mean per bucket\ttraining mean per bucket\ttrend (total/day)\tlast-first day\tcensored at end\t")
	fmts := func(v []float64) string {
		var p []string
		for _, x := range v {
			p = append(p, fmt.Sprintf("%.1f", x))
		}
		return strings.Join(p, " / ")
	}
	for _, r := range rows {
		c := "-"
		if r.Censored != nil {
			c = fmt.Sprintf("%.1f%%", 100**r.Censored)
		}
		mark := ""
		if jobs != nil && float64(r.Skip) == auto {
			mark = " (auto)"
		}
		fmt.Fprintf(tw, "%d%s\t%.1f\t%s\t%s\t%+.1f\t%+.1f\t%s\t\n", r.Skip, mark, r.StartDay, fmts(r.Mean), fmts(r.TrainMean), r.Trend, r.Rise, c)
	}
	return tw.Flush()
}

// writeForecastOut writes series.csv, forecast.svg (the test span, summed
// over buckets: actual and every model's one-step forecast but static's),
// with --multi-step forecast-multi.svg (the same for the multi-step
// forecasts) and each network's weights (<model>.gob, loadable with
// forecast.LoadNet).
func writeForecastOut(dir string, s forecast.Series, test int, models []forecast.Forecaster, results []forecast.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fh, err := os.Create(filepath.Join(dir, "series.csv"))
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := forecast.WriteCSV(fh, s); err != nil {
		fh.Close()
		return fmt.Errorf("--out: series.csv: %w", err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	from := s.Len() - test
	hours := func(t int) float64 { return float64(t-from) * s.Step / 3600 }
	sum := func(row []float64) float64 {
		var v float64
		for _, x := range row {
			v += x
		}
		return v
	}
	chartOf := func(file, title string, pred func(forecast.Result) [][]float64) error {
		c := chart.Line{Title: title, XLabel: "hours into the test span", YLabel: "instances"}
		actual := chart.Series{Name: "actual"}
		for t := from; t < s.Len(); t++ {
			actual.X = append(actual.X, hours(t))
			actual.Y = append(actual.Y, sum(s.Values[t]))
		}
		c.Series = append(c.Series, actual)
		for _, r := range results {
			if r.Model == "static" || pred(r) == nil {
				continue // a flat line at the training peak would squash the others
			}
			ps := chart.Series{Name: r.Model, Dashed: true}
			for k, row := range pred(r) {
				ps.X = append(ps.X, hours(from+k))
				ps.Y = append(ps.Y, sum(row))
			}
			c.Series = append(c.Series, ps)
		}
		if len(c.Series) == 1 {
			return nil
		}
		fh, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		if err := c.WriteSVG(fh); err != nil {
			fh.Close()
			return fmt.Errorf("--out: %s: %w", file, err)
		}
		if err := fh.Close(); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		return nil
	}
	if err := chartOf("forecast.svg", "One-step forecast of the test span (instances, all buckets)",
		func(r forecast.Result) [][]float64 { return r.Pred }); err != nil {
		return err
	}
	if err := chartOf("forecast-multi.svg", "Multi-step forecast of the test span from the end of training (instances, all buckets)",
		func(r forecast.Result) [][]float64 { return r.MultiPred }); err != nil {
		return err
	}
	for _, m := range models {
		if n, ok := m.(*forecast.Net); ok {
			if err := n.Save(filepath.Join(dir, n.Kind+".gob")); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
		}
	}
	return nil
}

// runBase reproduces Figure 7 on the Philly trace: the scale (summed
// hourly price of the rounded-up bucket counts, hourly snapshots) as the
// smallest g4dn types are removed, and the base type SelectBase keeps.
func runBase(w io.Writer, f forecastFlags) error {
	jobs, err := workload.LoadPhilly(f.philly, workload.DefaultPhillyOptions())
	if err != nil {
		return err
	}
	snaps, err := forecast.DemandSnapshots(jobs, 3600, embed.PhillyVectors)
	if err != nil {
		return err
	}
	cat := embed.MustAWS("g4dn")
	b, err := embed.SelectBase(cat, snaps)
	if err != nil {
		return err
	}
	type row struct {
		Smallest string  `json:"smallest_type"`
		Scale    float64 `json:"scale_usd"`
	}
	var rows []row
	for k, sc := range b.Scales {
		rows = append(rows, row{cat[k].Name, sc})
	}
	if f.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Base   string `json:"base"`
			Scales []row  `json:"scales"`
		}{b.Catalog[0].Name, rows})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "smallest type\tscale (USD, hourly snapshots)\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t\n", r.Smallest, r.Scale)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "base instance type: %s\n", b.Catalog[0].Name)
	return err
}
