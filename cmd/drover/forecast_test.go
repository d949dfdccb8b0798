package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/forecast"
)

func writeSeriesCSV(t *testing.T, dir string, days int) string {
	t.Helper()
	s := forecast.Series{Step: 300, Buckets: []string{"g4dn.xlarge", "g4dn.metal"}}
	for k := range days * 288 {
		x := 2 * math.Pi * float64(k) / 288
		s.Values = append(s.Values, []float64{math.Round(20 + 10*math.Sin(x)), math.Round(3 + 2*math.Cos(x))})
	}
	path := filepath.Join(dir, "s.csv")
	var buf bytes.Buffer
	if err := forecast.WriteCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestForecastCommandJSON(t *testing.T) {
	dir := t.TempDir()
	path := writeSeriesCSV(t, dir, 4)
	var out bytes.Buffer
	f := forecastFlags{models: "static,holt-winters", series: path, format: "json", testDays: 1, seed: 1, out: filepath.Join(dir, "out"), multi: true}
	if err := runForecast(&out, f); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got.Results) != 2 {
		t.Fatalf("%d results, want 2", len(got.Results))
	}
	for _, k := range []string{"model", "mse", "pmse", "pmse_all", "over", "train_s", "multi_step"} {
		if _, ok := got.Results[0][k]; !ok {
			t.Errorf("result lacks key %q: %v", k, got.Results[0])
		}
	}
	if got.Results[1]["mse"].(float64) >= got.Results[0]["mse"].(float64) {
		t.Errorf("holt-winters MSE %v not below static %v on a clean daily cycle", got.Results[1]["mse"], got.Results[0]["mse"])
	}
	for _, file := range []string{"forecast.svg", "forecast-multi.svg", "series.csv"} {
		if _, err := os.Stat(filepath.Join(dir, "out", file)); err != nil {
			t.Errorf("--out: %v", err)
		}
	}
	// Table output is aligned and names every model.
	out.Reset()
	f.format, f.out = "table", ""
	if err := runForecast(&out, f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"holt-winters", "PMSE/n", "multi MSE", "0 days skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// --skip-days moves the test span earlier.
	out.Reset()
	f.skip = "1"
	if err := runForecast(&out, f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 days skipped") || !strings.Contains(out.String(), "test: last 288 steps (1.0 days) after 576 training steps") {
		t.Errorf("--skip-days 1:\n%s", out.String())
	}
}

func TestForecastCommandSpans(t *testing.T) {
	path := writeSeriesCSV(t, t.TempDir(), 4)
	var out bytes.Buffer
	if err := runForecast(&out, forecastFlags{models: "static", series: path, format: "json", testDays: 1, spans: true}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Auto  float64 `json:"auto_skip_days"`
		Spans []struct {
			Skip     int      `json:"skip_days"`
			Censored *float64 `json:"censored_share"`
		} `json:"spans"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// A 4-day series has 1-day test spans ending 0, 1 and 2 days before
	// its end; a CSV has no jobs, so no censored share and auto is 0.
	if len(got.Spans) != 3 || got.Spans[2].Skip != 2 || got.Spans[0].Censored != nil || got.Auto != 0 {
		t.Errorf("spans: %s", out.String())
	}
}

func TestForecastCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	nan := filepath.Join(dir, "nan.csv")
	if err := os.WriteFile(nan, []byte("time,a\n0,1\n300,NaN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	constant := filepath.Join(dir, "c.csv")
	if err := os.WriteFile(constant, []byte("time,a\n0,1\n300,1\n600,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := writeSeriesCSV(t, dir, 1)
	tests := []struct {
		f    forecastFlags
		want string
	}{
		{forecastFlags{models: "static", series: nan, format: "table", testDays: 1}, "NaN"},
		{forecastFlags{models: "static", series: constant, format: "table", testDays: 1}, "constant"},
		{forecastFlags{models: "static", series: short, format: "table", testDays: 1}, "do not fit"},
		{forecastFlags{models: "prophet", series: short, format: "table", testDays: 1}, "unknown forecaster"},
		{forecastFlags{models: "static", series: short, format: "xml", testDays: 1}, "--format"},
		{forecastFlags{models: "static", series: short, format: "table", testDays: 1, skip: "-1"}, "--skip-days \"-1\""},
		{forecastFlags{models: "static", series: short, format: "table", testDays: 1, skip: "week"}, "want a number of days in [0, 3650] or auto"},
		{forecastFlags{models: "lstm", series: short, format: "table", testDays: 1, net: "huge"}, `network size "huge"`},
	}
	for _, tc := range tests {
		err := runForecast(&bytes.Buffer{}, tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.f, err, tc.want)
		}
	}
}
