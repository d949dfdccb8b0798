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

// Scores are the errors of a forecast, every one averaged after dividing
// bucket b by its scale (see Scales).
type Scores struct {
	// MSE is the mean squared error over every step and bucket (§5.3).
	MSE float64 `json:"mse"`
	// PMSE is the mean squared error of the over-predictions only
	// (pred > actual: over-provisioned capacity, i.e. cost), divided by
	// the number of over-predictions (0 when there is none). This is the
	// reading Table 4 needs: several of its rows (Philly transformer and
	// ARIMA, Fuxi LSTM) have PMSE above MSE, which a sum over part of the
	// points divided by all of them could never give.
	PMSE float64 `json:"pmse"`
	// PMSEAll is the same sum divided by every step and bucket (the
	// formula's 1/n read literally, drover's earlier reading); it is
	// PMSE times Over and never exceeds MSE.
	PMSEAll float64 `json:"pmse_all"`
	// Over is the share of step-bucket points that are over-predicted.
	Over float64 `json:"over"`
}

// Score returns the errors of pred against actual (rows are steps,
// columns buckets), bucket b divided by scale[b]. It fails on a shape
// mismatch or an empty span.
func Score(actual, pred [][]float64, scale []float64) (Scores, error) {
	if len(actual) != len(pred) {
		return Scores{}, fmt.Errorf("errors: %d actual steps, %d predicted", len(actual), len(pred))
	}
	if len(actual) == 0 {
		return Scores{}, fmt.Errorf("errors: no steps")
	}
	var sum, over float64
	n, nOver := 0, 0
	for t := range actual {
		if len(actual[t]) != len(pred[t]) || len(actual[t]) != len(scale) {
			return Scores{}, fmt.Errorf("errors: step %d has %d actual, %d predicted values and %d scales", t, len(actual[t]), len(pred[t]), len(scale))
		}
		for b := range actual[t] {
			d := (pred[t][b] - actual[t][b]) / scale[b]
			sum += d * d
			if d > 0 {
				over += d * d
				nOver++
			}
			n++
		}
	}
	sc := Scores{MSE: sum / float64(n), PMSEAll: over / float64(n), Over: float64(nOver) / float64(n)}
	if nOver > 0 {
		sc.PMSE = over / float64(nOver)
	}
	return sc, nil
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

// MultiStep forecasts steps [from, s.Len()) of s from the end of step
// from-1 alone: the forecast of each step is the one-step forecast from
// the true history before from followed by the forecasts already made
// (predictions fed back, the recursive strategy). No value of s at or
// after from is read. For Holt-Winters and ARIMA this is their usual
// h-step forecast (a fed-back forecast has zero error, so the filter
// only projects its state); for the networks it is their own output
// rolled forward.
func MultiStep(m Forecaster, s Series, from int) ([][]float64, error) {
	if from <= 0 || from >= s.Len() {
		return nil, fmt.Errorf("multi-step: start %d outside (0, %d)", from, s.Len())
	}
	hist := s.Values[:from:from] // the first append copies: s is never written
	out := make([][]float64, 0, s.Len()-from)
	for t := from; t < s.Len(); t++ {
		h := Series{Start: s.Start, Step: s.Step, Buckets: s.Buckets, Values: hist}
		p, err := m.Predict(h)
		if err != nil {
			return nil, fmt.Errorf("%s: multi-step forecast of step %d (%d ahead): %w", m.Name(), t, t-from+1, err)
		}
		if len(p) != len(s.Buckets) {
			return nil, fmt.Errorf("%s: multi-step forecast of step %d has %d values for %d buckets", m.Name(), t, len(p), len(s.Buckets))
		}
		for b, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: multi-step forecast of step %d (%d ahead), bucket %s: %v", m.Name(), t, t-from+1, s.Buckets[b], v)
			}
		}
		out = append(out, p)
		hist = append(hist, p)
	}
	return out, nil
}

// Result is one model's score on a test span.
type Result struct {
	Model string `json:"model"`
	// MSE, PMSE, PMSEAll and Over score the one-step forecasts (see
	// Scores).
	MSE     float64 `json:"mse"`
	PMSE    float64 `json:"pmse"`
	PMSEAll float64 `json:"pmse_all"`
	Over    float64 `json:"over"`
	TrainS  float64 `json:"train_s"`
	// Multi scores the multi-step forecast of the whole test span from
	// the end of training (nil unless asked for); MultiS is its wall
	// time.
	Multi  *Scores `json:"multi_step,omitempty"`
	MultiS float64 `json:"multi_step_s,omitempty"`
	// Pred holds the one-step (walk-forward) forecasts of the test steps,
	// MultiPred the multi-step ones.
	Pred      [][]float64 `json:"-"`
	MultiPred [][]float64 `json:"-"`
}

// EvalOptions choose what Evaluate scores besides the one-step forecasts.
type EvalOptions struct {
	// MultiStep also forecasts the whole test span from the end of
	// training, feeding predictions back (see MultiStep).
	MultiStep bool
}

// Evaluate fits m on the first s.Len()-test steps, forecasts each of the
// last test steps from the steps before it, and scores the forecasts
// (normalised by the training maximum per bucket, see Scales); with
// o.MultiStep it also scores the multi-step forecast of the test span
// from the same fit. TrainS and MultiS are wall times, the only figures
// that are not deterministic.
func Evaluate(m Forecaster, s Series, test int, o EvalOptions) (Result, error) {
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
	scale := Scales(train)
	sc, err := Score(s.Values[from:], pred, scale)
	if err != nil {
		return Result{}, fmt.Errorf("evaluate %s: %w", m.Name(), err)
	}
	r.MSE, r.PMSE, r.PMSEAll, r.Over = sc.MSE, sc.PMSE, sc.PMSEAll, sc.Over
	if o.MultiStep {
		elapsed = trainTimer()
		if r.MultiPred, err = MultiStep(m, s, from); err != nil {
			return Result{}, err
		}
		r.MultiS = elapsed()
		ms, err := Score(s.Values[from:], r.MultiPred, scale)
		if err != nil {
			return Result{}, fmt.Errorf("evaluate %s: multi-step: %w", m.Name(), err)
		}
		r.Multi = &ms
	}
	return r, nil
}
