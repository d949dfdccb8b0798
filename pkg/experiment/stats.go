package experiment

import "math"

// tQuantile975 holds the 0.975 quantile of Student's t distribution for 1
// to 30 degrees of freedom; above 30 TCrit uses the normal 1.96.
var tQuantile975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// TCrit returns the two-sided 95% critical value of Student's t with df
// degrees of freedom (NaN for df < 1).
func TCrit(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df <= len(tQuantile975):
		return tQuantile975[df-1]
	default:
		return 1.96
	}
}

// MeanCI95 returns the mean of xs and the half-width of its 95% confidence
// interval (Student's t on the sample standard deviation; NaN with fewer
// than two values).
func MeanCI95(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, TCrit(n-1) * math.Sqrt(ss/float64(n-1)/float64(n))
}

// ChangeCI95 returns Change(mean(a), mean(b)), the relative change of the
// mean of paired samples (a[i] and b[i] from one seed), and the half-width
// of its 95% confidence interval by the delta method for a ratio of means:
// the change is r-1 with r = mean(b)/mean(a), whose standard error is the
// standard error of the mean of b[i] - r*a[i], divided by mean(a). It
// panics if the lengths differ.
func ChangeCI95(a, b []float64) (change, half float64) {
	if len(a) != len(b) {
		panic("experiment.ChangeCI95: samples of different lengths")
	}
	ma, _ := MeanCI95(a)
	mb, _ := MeanCI95(b)
	change = Change(ma, mb)
	if len(a) < 2 || ma == 0 {
		return change, math.NaN()
	}
	r := mb / ma
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - r*a[i]
	}
	_, h := MeanCI95(d)
	return change, h / math.Abs(ma)
}

// PutCI95 stores the half-width h of a 95% interval under key in m, unless
// it is NaN (fewer than two seeds), which a report may not hold: the key
// is then left out.
func PutCI95(m map[string]float64, key string, h float64) {
	if !math.IsNaN(h) {
		m[key] = h
	}
}
