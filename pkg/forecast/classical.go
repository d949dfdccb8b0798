package forecast

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// checkHistory rejects a history a fitted model cannot forecast from.
func checkHistory(name string, h Series, buckets int) error {
	if buckets == 0 {
		return fmt.Errorf("%s: Predict before Fit", name)
	}
	if len(h.Buckets) != buckets {
		return fmt.Errorf("%s: history has %d buckets, trained on %d", name, len(h.Buckets), buckets)
	}
	if h.Len() == 0 {
		return fmt.Errorf("%s: empty history", name)
	}
	return nil
}

// Naive forecasts the last value (persistence): the reference every
// one-step forecaster of a slowly moving count has to beat.
type Naive struct{ buckets int }

// Name implements Forecaster.
func (*Naive) Name() string { return "naive" }

// Fit implements Forecaster.
func (m *Naive) Fit(train Series) error {
	if err := train.Validate(); err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	m.buckets = len(train.Buckets)
	return nil
}

// Predict implements Forecaster.
func (m *Naive) Predict(h Series) ([]float64, error) {
	if err := checkHistory("naive", h, m.buckets); err != nil {
		return nil, err
	}
	return append([]float64(nil), h.Values[h.Len()-1]...), nil
}

// SeasonalNaive forecasts the value one season ago: the longest of its
// periods (in steps) that the history covers, else the last value.
type SeasonalNaive struct {
	Periods []int
	buckets int
}

// Name implements Forecaster.
func (*SeasonalNaive) Name() string { return "seasonal-naive" }

// Fit implements Forecaster.
func (m *SeasonalNaive) Fit(train Series) error {
	if err := train.Validate(); err != nil {
		return fmt.Errorf("seasonal-naive: %w", err)
	}
	m.buckets = len(train.Buckets)
	return nil
}

// Predict implements Forecaster.
func (m *SeasonalNaive) Predict(h Series) ([]float64, error) {
	if err := checkHistory("seasonal-naive", h, m.buckets); err != nil {
		return nil, err
	}
	lag := 1
	for _, p := range m.Periods {
		if p <= h.Len() && p > lag {
			lag = p
		}
	}
	return append([]float64(nil), h.Values[h.Len()-lag]...), nil
}

// HoltWinters is additive exponential smoothing with a level, a trend and
// one seasonal component per period (Taylor's double-seasonal form for
// daily + weekly), one model per bucket. Its smoothing parameters are
// fitted by minimising the one-step-ahead squared error on the training
// data with Nelder-Mead (parameters kept in (0,1) by a logistic map).
//
// The paper's SES row used a multiplicative model with fixed α=0.5,
// β=0.001, γ=0.3; bucket counts are often zero, which multiplicative
// seasonality cannot divide by, so we fit the additive one as the issue
// asks.
type HoltWinters struct {
	Periods []int // in steps, e.g. {288, 2016}
	// Fixed, when set, skips fitting and uses these alpha, beta and
	// gammas (one per period kept) for every bucket: the paper's
	// "SES" row used fixed alpha=0.5, beta=0.001, gamma=0.3, m=2016.
	Fixed []float64
	// Label overrides Name (registry variants).
	Label string
	// fitted, per bucket
	params  [][]float64 // alpha, beta, gamma_1..gamma_k
	periods []int
	init    []hwState
}

type hwState struct {
	level, trend float64
	seasons      [][]float64 // per period, length period
}

// Name implements Forecaster.
func (m *HoltWinters) Name() string {
	if m.Label != "" {
		return m.Label
	}
	return "holt-winters"
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Fit implements Forecaster.
func (m *HoltWinters) Fit(train Series) error {
	if err := train.Validate(); err != nil {
		return fmt.Errorf("holt-winters: %w", err)
	}
	m.periods = nil
	for _, p := range m.Periods {
		// Two full seasons: one to initialise, one to learn from.
		if p > 1 && 2*p <= train.Len() {
			m.periods = append(m.periods, p)
		}
	}
	if train.Len() < 3 {
		return fmt.Errorf("holt-winters: %d training steps, need at least 3", train.Len())
	}
	nb := len(train.Buckets)
	m.params = make([][]float64, nb)
	m.init = make([]hwState, nb)
	if m.Fixed != nil && len(m.Fixed) != 2+len(m.periods) {
		return fmt.Errorf("holt-winters: %d fixed parameters for %d periods, want alpha, beta and one gamma per period", len(m.Fixed), len(m.periods))
	}
	for b := range nb {
		y := train.Column(b)
		m.init[b] = hwInit(y, m.periods)
		if m.Fixed != nil {
			m.params[b] = append([]float64(nil), m.Fixed...)
			continue
		}
		obj := func(x []float64) float64 {
			p := make([]float64, len(x))
			for i := range x {
				p[i] = logistic(x[i])
			}
			sse, _ := hwRun(y, p, m.periods, m.init[b], -1)
			if math.IsNaN(sse) || math.IsInf(sse, 0) {
				return math.MaxFloat64
			}
			return sse
		}
		// Start from the paper's setting: alpha 0.5, small trend, gamma 0.3.
		x0 := []float64{0, -6, -0.85}
		for range m.periods[min(1, len(m.periods)):] {
			x0 = append(x0, -0.85)
		}
		x0 = x0[:2+len(m.periods)]
		res, err := optimize.Minimize(optimize.Problem{Func: obj}, x0,
			&optimize.Settings{MajorIterations: 400, FuncEvaluations: 2000, Converger: &optimize.FunctionConverge{Absolute: 1e-9, Relative: 1e-7, Iterations: 50}},
			&optimize.NelderMead{})
		if err != nil && res == nil {
			return fmt.Errorf("holt-winters: bucket %s: %w", train.Buckets[b], err)
		}
		p := make([]float64, len(res.X))
		for i := range p {
			p[i] = logistic(res.X[i])
		}
		m.params[b] = p
	}
	return nil
}

// hwInit sets the level to the mean of the first season, no trend, the
// longest period's profile from its first season and shorter periods'
// from the average of their seasons in it (deviations from that mean).
func hwInit(y []float64, periods []int) hwState {
	n := len(y)
	first := n
	if len(periods) > 0 {
		first = periods[len(periods)-1]
	}
	first = min(first, n)
	var mean float64
	for _, v := range y[:first] {
		mean += v
	}
	mean /= float64(first)
	st := hwState{level: mean}
	rest := make([]float64, first)
	for i := range rest {
		rest[i] = y[i] - mean
	}
	for _, p := range periods {
		s := make([]float64, p)
		cnt := make([]float64, p)
		for i, v := range rest {
			s[i%p] += v
			cnt[i%p]++
		}
		for i := range s {
			if cnt[i] > 0 {
				s[i] /= cnt[i]
			}
		}
		for i := range rest {
			rest[i] -= s[i%p]
		}
		st.seasons = append(st.seasons, s)
	}
	return st
}

// hwRun filters y from the initial state (time 0 is season index 0) and
// returns the one-step SSE over y; with collect >= 0 it also returns the
// forecasts of steps collect..len(y) (the last one beyond y).
func hwRun(y, p []float64, periods []int, init hwState, collect int) (float64, []float64) {
	alpha, beta := p[0], p[1]
	gam := p[2:]
	level, trend := init.level, init.trend
	seasons := make([][]float64, len(init.seasons))
	for k := range seasons {
		seasons[k] = append([]float64(nil), init.seasons[k]...)
	}
	var sse float64
	var out []float64
	seasonal := func(t int) float64 {
		var s float64
		for k, per := range periods {
			s += seasons[k][t%per]
		}
		return s
	}
	for t, v := range y {
		f := level + trend + seasonal(t)
		if collect >= 0 && t >= collect {
			out = append(out, f)
		}
		e := v - f
		sse += e * e
		sum := seasonal(t)
		prev := level
		level = alpha*(v-sum) + (1-alpha)*(level+trend)
		trend = beta*(level-prev) + (1-beta)*trend
		for k, per := range periods {
			others := sum - seasons[k][t%per]
			seasons[k][t%per] = gam[k]*(v-level-others) + (1-gam[k])*seasons[k][t%per]
		}
	}
	if collect >= 0 {
		out = append(out, level+trend+seasonal(len(y)))
	}
	return sse, out
}

// Predict implements Forecaster: it filters the whole history with the
// fitted parameters (from the training start) and forecasts one step.
func (m *HoltWinters) Predict(h Series) ([]float64, error) {
	if err := checkHistory("holt-winters", h, len(m.params)); err != nil {
		return nil, err
	}
	out := make([]float64, len(m.params))
	for b := range m.params {
		_, f := hwRun(h.Column(b), m.params[b], m.periods, m.init[b], h.Len())
		out[b] = f[0]
	}
	return out, nil
}

// PredictFrom implements BatchPredictor in one filtering pass.
func (m *HoltWinters) PredictFrom(s Series, from int) ([][]float64, error) {
	if err := checkHistory("holt-winters", s, len(m.params)); err != nil {
		return nil, err
	}
	out := make([][]float64, s.Len()-from)
	for t := range out {
		out[t] = make([]float64, len(m.params))
	}
	for b := range m.params {
		_, f := hwRun(s.Column(b), m.params[b], m.periods, m.init[b], from)
		for t := range out {
			out[t][b] = f[t]
		}
	}
	return out, nil
}

// Params returns the fitted alpha, beta and gammas of bucket b.
func (m *HoltWinters) Params(b int) []float64 { return append([]float64(nil), m.params[b]...) }

// ARIMA is ARIMA(p,1,q) with a constant, one model per bucket, fitted by
// conditional sum of squares: residuals before the start are taken as
// zero and the sum of squared one-step residuals of the differenced
// series is minimised (BFGS on a finite-difference gradient, started from
// a Hannan-Rissanen regression). The paper uses ARIMA(7,1,7).
type ARIMA struct {
	P, Q   int
	coef   [][]float64 // per bucket: c, phi_1..p, theta_1..q
	nb     int
	Fitted []float64 // CSS per bucket after fitting (for tests and docs)
}

// Name implements Forecaster.
func (*ARIMA) Name() string { return "arima" }

// cssRun computes the residuals of z (the differenced series) under coef
// and returns their sum of squares from index start; with pred != nil it
// writes the one-step forecast of z[t] into pred[t] (len(z)+1 slots).
func cssRun(z, coef []float64, p, q, start int, pred []float64) float64 {
	c, phi, theta := coef[0], coef[1:1+p], coef[1+p:1+p+q]
	e := make([]float64, len(z))
	var sse float64
	for t := 0; t <= len(z); t++ {
		f := c
		for i := 1; i <= p; i++ {
			if t-i >= 0 {
				f += phi[i-1] * z[t-i]
			}
		}
		for j := 1; j <= q; j++ {
			if t-j >= 0 {
				f += theta[j-1] * e[t-j]
			}
		}
		if pred != nil {
			pred[t] = f
		}
		if t == len(z) {
			break
		}
		e[t] = z[t] - f
		if t >= start {
			sse += e[t] * e[t]
		}
		if math.Abs(e[t]) > 1e12 { // explosive MA: give up, signal with Inf
			return math.Inf(1)
		}
	}
	return sse
}

func diff(y []float64) []float64 {
	z := make([]float64, len(y)-1)
	for t := range z {
		z[t] = y[t+1] - y[t]
	}
	return z
}

// Fit implements Forecaster.
func (m *ARIMA) Fit(train Series) error {
	if err := train.Validate(); err != nil {
		return fmt.Errorf("arima: %w", err)
	}
	if m.P < 0 || m.Q < 0 {
		return fmt.Errorf("arima: orders p=%d q=%d must be >= 0", m.P, m.Q)
	}
	need := 3 * (m.P + m.Q + 1)
	if train.Len() < need+2 {
		return fmt.Errorf("arima: %d training steps, need at least %d for ARIMA(%d,1,%d)", train.Len(), need+2, m.P, m.Q)
	}
	m.nb = len(train.Buckets)
	m.coef = make([][]float64, m.nb)
	m.Fitted = make([]float64, m.nb)
	for b := range m.nb {
		z := diff(train.Column(b))
		x0 := hannanRissanen(z, m.P, m.Q)
		start := m.P
		obj := func(x []float64) float64 {
			v := cssRun(z, x, m.P, m.Q, start, nil)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return math.MaxFloat64 / 4
			}
			return v
		}
		grad := func(g, x []float64) { fd.Gradient(g, obj, x, &fd.Settings{Formula: fd.Central, Step: 1e-5}) }
		best := append([]float64(nil), x0...)
		bestV := obj(best)
		res, err := optimize.Minimize(optimize.Problem{Func: obj, Grad: grad}, x0,
			&optimize.Settings{MajorIterations: 60, GradientThreshold: 1e-6}, &optimize.BFGS{})
		if res != nil && res.F < bestV && !math.IsNaN(res.F) {
			best, bestV = res.X, res.F
		} else if err != nil && res == nil {
			return fmt.Errorf("arima: bucket %s: %w", train.Buckets[b], err)
		}
		m.coef[b] = best
		m.Fitted[b] = bestV
	}
	return nil
}

// hannanRissanen estimates starting coefficients: a long AR by least
// squares gives residual estimates, then z_t is regressed on a constant,
// p lags of z and q lags of those residuals. A zero vector is returned
// when the regressions are singular (e.g. a bucket that rarely moves).
func hannanRissanen(z []float64, p, q int) []float64 {
	k := 1 + p + q
	zero := make([]float64, k)
	long := max(20, p+q+1)
	if len(z) < 3*long+k {
		return zero
	}
	e := make([]float64, len(z))
	ar, ok := ols(z, long, func(t, i int) float64 { return z[t-i] })
	if !ok {
		return zero
	}
	for t := long; t < len(z); t++ {
		f := ar[0]
		for i := 1; i <= long; i++ {
			f += ar[i] * z[t-i]
		}
		e[t] = z[t] - f
	}
	start := long + q
	coef, ok := olsFrom(z, start, k, func(t, i int) float64 {
		if i <= p {
			return z[t-i]
		}
		return e[t-(i-p)]
	})
	if !ok {
		return zero
	}
	return coef
}

func ols(z []float64, lags int, reg func(t, i int) float64) ([]float64, bool) {
	return olsFrom(z, lags, lags+1, reg)
}

// olsFrom regresses z[t] for t >= start on a constant and regressors
// reg(t, 1..k-1).
func olsFrom(z []float64, start, k int, reg func(t, i int) float64) ([]float64, bool) {
	n := len(z) - start
	if n <= k {
		return nil, false
	}
	x := mat.NewDense(n, k, nil)
	y := mat.NewVecDense(n, nil)
	for r := range n {
		t := start + r
		x.Set(r, 0, 1)
		for i := 1; i < k; i++ {
			x.Set(r, i, reg(t, i))
		}
		y.SetVec(r, z[t])
	}
	var beta mat.VecDense
	if err := beta.SolveVec(x, y); err != nil {
		return nil, false
	}
	out := make([]float64, k)
	for i := range out {
		out[i] = beta.AtVec(i)
		if math.IsNaN(out[i]) || math.IsInf(out[i], 0) {
			return nil, false
		}
	}
	return out, true
}

// Coef returns the fitted constant, AR and MA coefficients of bucket b.
func (m *ARIMA) Coef(b int) (c float64, phi, theta []float64) {
	x := m.coef[b]
	return x[0], append([]float64(nil), x[1:1+m.P]...), append([]float64(nil), x[1+m.P:]...)
}

// Predict implements Forecaster.
func (m *ARIMA) Predict(h Series) ([]float64, error) {
	if err := checkHistory("arima", h, m.nb); err != nil {
		return nil, err
	}
	out, err := m.PredictFrom(h, h.Len())
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PredictFrom implements BatchPredictor (from may equal s.Len(): the one
// forecast past the end).
func (m *ARIMA) PredictFrom(s Series, from int) ([][]float64, error) {
	if err := checkHistory("arima", s, m.nb); err != nil {
		return nil, err
	}
	if from < 1 {
		return nil, errors.New("arima: need one step of history")
	}
	out := make([][]float64, s.Len()-from+1)
	for t := range out {
		out[t] = make([]float64, m.nb)
	}
	for b := range m.nb {
		y := s.Column(b)
		z := diff(y)
		pred := make([]float64, len(z)+1)
		cssRun(z, m.coef[b], m.P, m.Q, 0, pred)
		// y[t] forecast = y[t-1] + forecast of z[t-1].
		for t := from; t <= s.Len(); t++ {
			out[t-from][b] = y[t-1] + pred[t-1]
		}
	}
	if from < s.Len() {
		out = out[:len(out)-1]
	}
	return out, nil
}
