package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/drover-sched/drover/pkg/chart"
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
	skipDays float64
	window   int
	steps    int
	quick    bool
	base     bool
	multi    bool
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
  drover forecast                                  # all models, embedded Philly trace
  drover forecast --models holt-winters,arima --format json
  drover forecast --multi-step                     # one-step and multi-step errors
  drover forecast --series counts.csv --out results/   # chart of predicted vs actual
  drover forecast --quick                          # smoke run`,
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
	fl.Float64Var(&f.skipDays, "skip-days", 0, "drop this many days from the end of the series first (test on an earlier week)")
	fl.IntVar(&f.window, "window", 0, "networks' input window in steps (default 24)")
	fl.IntVar(&f.steps, "train-steps", 0, "networks' optimiser steps (default: the model's)")
	fl.BoolVar(&f.multi, "multi-step", false, "also forecast the whole test span from the end of training (predictions fed back) and report its errors beside the one-step ones")
	fl.BoolVar(&f.base, "base", false, "only select the base instance type for the Philly trace (Figure 7: scale per dropped smallest type) and exit")
	fl.BoolVar(&f.quick, "quick", false, "smoke run: the last 3 weeks of the series, a 1-day test, 1/10 of the network training")
	return cmd
}

func runForecast(w io.Writer, f forecastFlags) error {
	if f.format != "table" && f.format != "json" {
		return fmt.Errorf("--format %q: want table or json", f.format)
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
	opt := forecast.Options{Seed: f.seed, Window: f.window, TrainSteps: f.steps, Quick: f.quick}
	models := make([]forecast.Forecaster, len(names))
	for i, n := range names {
		m, err := forecast.New(n, opt)
		if err != nil {
			return fmt.Errorf("--models: %w", err)
		}
		models[i] = m
	}
	s, err := loadForecastSeries(f)
	if err != nil {
		return err
	}
	if f.skipDays < 0 {
		return fmt.Errorf("--skip-days %v: want >= 0", f.skipDays)
	}
	if k := s.StepsIn(f.skipDays * forecast.Day); k > 0 {
		if k >= s.Len() {
			return fmt.Errorf("--skip-days %v: the series has only %.1f days", f.skipDays, float64(s.Len())*s.Step/forecast.Day)
		}
		s = s.Slice(0, s.Len()-k)
	}
	testDays := f.testDays
	if f.quick {
		s = s.Slice(max(0, s.Len()-s.StepsIn(3*forecast.Week)), s.Len())
		testDays = 1
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
	fmt.Fprintf(w, "series: %d steps of %gs, buckets %s; test: last %d steps (%.1f days)\n",
		s.Len(), s.Step, strings.Join(s.Buckets, ","), test, float64(test)*s.Step/forecast.Day)
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

func loadForecastSeries(f forecastFlags) (forecast.Series, error) {
	if f.series != "" {
		fh, err := os.Open(f.series)
		if err != nil {
			return forecast.Series{}, fmt.Errorf("--series: %w", err)
		}
		defer fh.Close()
		s, err := forecast.ParseSeriesCSV(fh, f.series)
		if err != nil {
			return forecast.Series{}, fmt.Errorf("--series: %w", err)
		}
		if err := s.Validate(); err != nil {
			return forecast.Series{}, fmt.Errorf("--series %s: %w", f.series, err)
		}
		return s, nil
	}
	jobs, err := workload.LoadPhilly(f.philly, workload.DefaultPhillyOptions())
	if err != nil {
		return forecast.Series{}, err
	}
	return forecast.PhillySeries(jobs)
}

// writeForecastOut writes series.csv, forecast.svg (the test span, summed
// over buckets: actual and every model's forecast but static's) and each network's
// weights (<model>.gob, loadable with forecast.LoadNet).
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
	c := chart.Line{Title: "Forecast of the test span (instances, all buckets)", XLabel: "hours into the test span", YLabel: "instances"}
	actual := chart.Series{Name: "actual"}
	for t := from; t < s.Len(); t++ {
		actual.X = append(actual.X, hours(t))
		actual.Y = append(actual.Y, sum(s.Values[t]))
	}
	c.Series = append(c.Series, actual)
	for _, r := range results {
		if r.Model == "static" {
			continue // a flat line at the training peak would squash the others
		}
		ps := chart.Series{Name: r.Model, Dashed: true}
		for k, row := range r.Pred {
			ps.X = append(ps.X, hours(from+k))
			ps.Y = append(ps.Y, sum(row))
		}
		c.Series = append(c.Series, ps)
	}
	fh, err = os.Create(filepath.Join(dir, "forecast.svg"))
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := c.WriteSVG(fh); err != nil {
		fh.Close()
		return fmt.Errorf("--out: forecast.svg: %w", err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("--out: %w", err)
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
