// Package forecast predicts the next value of multivariate count series
// (demand per instance-type bucket, one column per bucket) with
// interchangeable models, so the autoscaler can pick any of them and
// `drover forecast` can compare them on the same split.
package forecast

import (
	"errors"
	"fmt"
	"math"
)

// Series is a regular time series of bucket counts: Values[t][b] is the
// count of bucket b at time Start + t*Step.
type Series struct {
	Start, Step float64 // seconds
	Buckets     []string
	Values      [][]float64
}

// Len returns the number of time steps.
func (s Series) Len() int { return len(s.Values) }

// Slice returns steps [from, to) sharing the underlying values.
func (s Series) Slice(from, to int) Series {
	return Series{Start: s.Start + float64(from)*s.Step, Step: s.Step, Buckets: s.Buckets, Values: s.Values[from:to]}
}

// Validate rejects series a model cannot learn from: empty, ragged, with
// NaN or Inf, or constant in every bucket.
func (s Series) Validate() error {
	if len(s.Values) == 0 {
		return errors.New("series is empty")
	}
	if len(s.Buckets) == 0 {
		return errors.New("series has no buckets")
	}
	constant := true
	for t, row := range s.Values {
		if len(row) != len(s.Buckets) {
			return fmt.Errorf("series step %d has %d values, want %d (one per bucket)", t, len(row), len(s.Buckets))
		}
		for b, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("series step %d bucket %s is %v", t, s.Buckets[b], v)
			}
			if v != s.Values[0][b] {
				constant = false
			}
		}
	}
	if constant {
		return errors.New("series is constant: nothing to learn")
	}
	return nil
}

// Forecaster predicts one step ahead.
type Forecaster interface {
	// Name is the model name used on the command line, e.g. "holt-winters".
	Name() string
	// Fit trains on a series. It must be deterministic for a fixed seed.
	Fit(train Series) error
	// Predict returns the forecast for the step after the last one of
	// history, one value per bucket. History may extend past the training
	// data (walk-forward evaluation) and is never modified.
	Predict(history Series) ([]float64, error)
}

// Static forecasts the maximum seen in training for every bucket: the
// capacity a statically sized cluster would hold.
type Static struct{ max []float64 }

var _ Forecaster = (*Static)(nil)

// Name implements Forecaster.
func (*Static) Name() string { return "static" }

// Fit implements Forecaster.
func (m *Static) Fit(train Series) error {
	if err := train.Validate(); err != nil {
		return fmt.Errorf("static: %w", err)
	}
	m.max = make([]float64, len(train.Buckets))
	for _, row := range train.Values {
		for b, v := range row {
			m.max[b] = math.Max(m.max[b], v)
		}
	}
	return nil
}

// Predict implements Forecaster.
func (m *Static) Predict(history Series) ([]float64, error) {
	if m.max == nil {
		return nil, errors.New("static: Predict before Fit")
	}
	if len(history.Buckets) != len(m.max) {
		return nil, fmt.Errorf("static: history has %d buckets, trained on %d", len(history.Buckets), len(m.max))
	}
	return append([]float64(nil), m.max...), nil
}
