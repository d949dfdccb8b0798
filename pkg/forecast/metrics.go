package forecast

import (
	"fmt"
	"math"
)

// Scales returns the per-bucket normaliser the metrics use: the maximum
// of each bucket in s (1 for an all-zero bucket). The paper reports MSE on
// normalised counts (a static allocation at the peak scores about 0.7);
// dividing by the training maximum keeps buckets of 3 and of 300
// instances comparable.
func Scales(s Series) []float64 {
	out := make([]float64, len(s.Buckets))
	for b := range out {
		for _, row := range s.Values {
			out[b] = math.Max(out[b], row[b])
		}
		if out[b] == 0 {
			out[b] = 1
		}
	}
	return out
}

// Errors returns MSE and PMSE of pred against actual, both averaged over
// every step and bucket after dividing bucket b by scale[b]. PMSE counts
// only over-predictions (pred > actual, the over-provisioned part, i.e.
// cost) but divides by the full count, as in §5.3.
func Errors(actual, pred [][]float64, scale []float64) (mse, pmse float64, err error) {
	if len(actual) != len(pred) {
		return 0, 0, fmt.Errorf("errors: %d actual steps, %d predicted", len(actual), len(pred))
	}
	if len(actual) == 0 {
		return 0, 0, fmt.Errorf("errors: no steps")
	}
	n := 0
	for t := range actual {
		if len(actual[t]) != len(pred[t]) || len(actual[t]) != len(scale) {
			return 0, 0, fmt.Errorf("errors: step %d has %d actual, %d predicted values and %d scales", t, len(actual[t]), len(pred[t]), len(scale))
		}
		for b := range actual[t] {
			d := (pred[t][b] - actual[t][b]) / scale[b]
			mse += d * d
			if d > 0 {
				pmse += d * d
			}
			n++
		}
	}
	return mse / float64(n), pmse / float64(n), nil
}

// BatchPredictor is implemented by models that produce every one-step
// forecast of a range in one pass (filters such as Holt-Winters and
// ARIMA, batched networks). PredictFrom returns, for every t in
// [from, s.Len()), the forecast of step t from steps [0, t), exactly what
// Predict(s.Slice(0, t)) would return.
type BatchPredictor interface {
	PredictFrom(s Series, from int) ([][]float64, error)
}

// WalkForward returns the one-step-ahead forecasts of steps [from, s.Len())
// of s, each from the steps before it (walk-forward evaluation on the
// test part, the model fitted on the training part only).
func WalkForward(m Forecaster, s Series, from int) ([][]float64, error) {
	if from <= 0 || from >= s.Len() {
		return nil, fmt.Errorf("walk forward: start %d outside (0, %d)", from, s.Len())
	}
	if bp, ok := m.(BatchPredictor); ok {
		return bp.PredictFrom(s, from)
	}
	out := make([][]float64, 0, s.Len()-from)
	for t := from; t < s.Len(); t++ {
		p, err := m.Predict(s.Slice(0, t))
		if err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", m.Name(), t, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Result is one model's score on a test span.
type Result struct {
	Model  string  `json:"model"`
	MSE    float64 `json:"mse"`
	PMSE   float64 `json:"pmse"`
	TrainS float64 `json:"train_s"`
	// Pred holds the walk-forward forecasts of the test steps.
	Pred [][]float64 `json:"-"`
}

// Evaluate fits m on the first s.Len()-test steps, forecasts each of the
// last test steps from the steps before it, and scores the forecasts
// (normalised by the training maximum per bucket, see Scales). TrainS is
// the wall time of Fit, the one figure that is not deterministic.
func Evaluate(m Forecaster, s Series, test int) (Result, error) {
	if test <= 0 || test >= s.Len() {
		return Result{}, fmt.Errorf("evaluate %s: test span of %d steps does not fit a series of %d", m.Name(), test, s.Len())
	}
	from := s.Len() - test
	train := s.Slice(0, from)
	elapsed := trainTimer()
	if err := m.Fit(train); err != nil {
		return Result{}, err
	}
	r := Result{Model: m.Name(), TrainS: elapsed()}
	pred, err := WalkForward(m, s, from)
	if err != nil {
		return Result{}, err
	}
	r.Pred = pred
	r.MSE, r.PMSE, err = Errors(s.Values[from:], pred, Scales(train))
	if err != nil {
		return Result{}, fmt.Errorf("evaluate %s: %w", m.Name(), err)
	}
	return r, nil
}
