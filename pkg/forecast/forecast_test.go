package forecast

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/embed"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/textio"
)

// seasonal builds a two-bucket series with a period-p sine, a weekly-ish
// slower cycle, a small trend and noise.
func seasonal(n, p int, noise float64, seed uint64) Series {
	r := rand.New(rand.NewPCG(seed, 1))
	s := Series{Step: 300, Buckets: []string{"a", "b"}}
	for t := range n {
		x := 2 * math.Pi * float64(t) / float64(p)
		s.Values = append(s.Values, []float64{
			20 + 10*math.Sin(x) + 0.01*float64(t) + noise*r.NormFloat64(),
			5 + 3*math.Cos(x) + noise*r.NormFloat64(),
		})
	}
	return s
}

func evalModel(t *testing.T, m Forecaster, s Series, test int) (mse, pmse float64) {
	t.Helper()
	from := s.Len() - test
	if err := m.Fit(s.Slice(0, from)); err != nil {
		t.Fatalf("%s: fit: %v", m.Name(), err)
	}
	pred, err := WalkForward(m, s, from)
	if err != nil {
		t.Fatalf("%s: walk forward: %v", m.Name(), err)
	}
	sc, err := Score(s.Values[from:], pred, Scales(s.Slice(0, from)))
	if err != nil {
		t.Fatal(err)
	}
	if sc.PMSEAll > sc.MSE || sc.PMSE < 0 || math.Abs(sc.PMSEAll-sc.PMSE*sc.Over) > 1e-12 {
		t.Errorf("%s: %+v: want 0 <= PMSEAll = PMSE*Over <= MSE", m.Name(), sc)
	}
	return sc.MSE, sc.PMSE
}

func TestClassicalBeatStaticOnSeasonal(t *testing.T) {
	s := seasonal(24*30, 24, 0.3, 1)
	o := Options{Periods: []int{24}}
	static, _ := evalModel(t, &Static{}, s, 24*5)
	results := map[string]float64{}
	for _, name := range []string{"seasonal-naive", "holt-winters", "arima"} {
		m, err := New(name, o)
		if err != nil {
			t.Fatal(err)
		}
		mse, _ := evalModel(t, m, s, 24*5)
		results[name] = mse
		if !(mse < static/5) {
			t.Errorf("%s MSE %.5f, want well below static's %.5f", name, mse, static)
		}
	}
	// On a clean seasonal signal smoothing beats copying last season's
	// noise.
	if results["holt-winters"] >= results["seasonal-naive"] {
		t.Errorf("holt-winters %.5f >= seasonal-naive %.5f", results["holt-winters"], results["seasonal-naive"])
	}
}

func TestHoltWintersPredictMatchesBatch(t *testing.T) {
	s := seasonal(24*12, 24, 0.2, 2)
	m := &HoltWinters{Periods: []int{24, 72}}
	if err := m.Fit(s.Slice(0, 24*10)); err != nil {
		t.Fatal(err)
	}
	batch, err := m.PredictFrom(s, 24*10)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, 7, len(batch) - 1} {
		one, err := m.Predict(s.Slice(0, 24*10+k))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(batch[k], one); d != "" {
			t.Errorf("step %d: batch vs single (-batch +single):\n%s", k, d)
		}
	}
	for _, p := range m.Params(0) {
		if p <= 0 || p >= 1 {
			t.Errorf("smoothing parameter %v outside (0,1)", p)
		}
	}
}

func TestARIMARecoversAR(t *testing.T) {
	// y is an integrated AR(2): z_t = 0.6 z_{t-1} - 0.3 z_{t-2} + e_t.
	r := rand.New(rand.NewPCG(3, 3))
	n := 3000
	z := make([]float64, n)
	for t := 2; t < n; t++ {
		z[t] = 0.6*z[t-1] - 0.3*z[t-2] + r.NormFloat64()
	}
	s := Series{Step: 300, Buckets: []string{"x"}}
	y := 100.0
	for t := range n {
		y += z[t]
		s.Values = append(s.Values, []float64{y})
	}
	m := &ARIMA{P: 2, Q: 1}
	if err := m.Fit(s); err != nil {
		t.Fatal(err)
	}
	c, phi, theta := m.Coef(0)
	if math.Abs(phi[0]-0.6) > 0.1 || math.Abs(phi[1]+0.3) > 0.1 || math.Abs(theta[0]) > 0.15 || math.Abs(c) > 0.1 {
		t.Errorf("fitted c=%.3f phi=%.3f theta=%.3f, want about 0, [0.6 -0.3], [0]", c, phi, theta)
	}
	// The batch and single-step forecasts agree.
	batch, err := m.PredictFrom(s, n-5)
	if err != nil {
		t.Fatal(err)
	}
	one, err := m.Predict(s.Slice(0, n-1))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(batch[4][0]-one[0]) > 1e-9 {
		t.Errorf("batch %v vs single %v", batch[4][0], one[0])
	}
	// (7,1,7) fits too (the paper's order).
	if err := (&ARIMA{P: 7, Q: 7}).Fit(s.Slice(0, 1500)); err != nil {
		t.Fatal(err)
	}
}

func TestBadSeries(t *testing.T) {
	constant := Series{Step: 300, Buckets: []string{"a"}, Values: [][]float64{{1}, {1}, {1}}}
	empty := Series{Step: 300, Buckets: []string{"a"}}
	short := seasonal(20, 24, 0, 1)
	for _, name := range Names() {
		m, err := New(name, Options{Quick: true, Window: 24})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Fit(empty); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("%s: empty series: err = %v", name, err)
		}
		if err := m.Fit(constant); err == nil || !strings.Contains(err.Error(), "constant") {
			t.Errorf("%s: constant series: err = %v", name, err)
		}
		if _, err := m.Predict(short); err == nil {
			t.Errorf("%s: Predict before Fit: want error", name)
		}
	}
	for _, m := range []Forecaster{NewLSTM(Options{Window: 24}), NewTransformer(Options{Window: 24})} {
		if err := m.Fit(short); err == nil || !strings.Contains(err.Error(), "shorter than one window") {
			t.Errorf("%s: short series: err = %v", m.Name(), err)
		}
	}
	if _, _, err := Windows(short, 24); err == nil || !strings.Contains(err.Error(), "shorter than one window") {
		t.Errorf("Windows: err = %v", err)
	}
	if _, err := New("prophet", Options{}); err == nil || !strings.Contains(err.Error(), "holt-winters") {
		t.Errorf("unknown model: err = %v", err)
	}
}

func TestWindowsAndSplit(t *testing.T) {
	s := seasonal(2016+100, 288, 0, 1)
	train, test, err := Split(s, Week)
	if err != nil {
		t.Fatal(err)
	}
	if test.Len() != 2016 || train.Len() != 100 || test.Start != 100*300 {
		t.Errorf("split: train %d test %d start %v", train.Len(), test.Len(), test.Start)
	}
	if _, _, err := Split(train, Week); err == nil {
		t.Error("split of a series shorter than a week: want error")
	}
	x, y, err := Windows(train, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != 90 || len(x[0]) != 10 || &y[0][0] != &train.Values[10][0] {
		t.Errorf("windows: %d windows of %d, first target misplaced", len(x), len(x[0]))
	}
}

func TestBuildSeries(t *testing.T) {
	g := embed.MustAWS("g4dn")
	job := func(id string, submit, work float64, gpus, replicas int) *cluster.Job {
		return &cluster.Job{ID: id, Submit: submit, Work: work, Groups: []cluster.ReplicaGroup{{Name: "w", Replicas: replicas, Min: replicas, Max: replicas,
			Demand: resource.New(6*float64(gpus), 48*float64(gpus), int64(gpus))}}}
	}
	jobs := []*cluster.Job{
		job("a", 0, 900, 1, 1),    // steps 0..2
		job("b", 100, 500, 1, 1),  // active at 300 only (submit 100 < 300 < 600)
		job("c", 300, 600, 2, 1),  // steps 1..2 (300 <= t < 900)
		job("d", 300, 300, 8, 2),  // step 1 only
		job("e", 1200, 60, 1, 1),  // step 4 (last submit defines the end)
		job("f", 600, 1e-3, 4, 1), // [600, 600.001): step 2
	}
	s, err := BuildSeries(jobs, g, 300, embed.PhillyVectors)
	if err != nil {
		t.Fatal(err)
	}
	s = s.NonZero()
	if d := cmp.Diff([]string{"g4dn.xlarge", "g4dn.12xlarge", "g4dn.metal"}, s.Buckets); d != "" {
		t.Fatalf("buckets (-want +got):\n%s", d)
	}
	want := [][]float64{
		{1, 0, 0},
		{2, 1, 2}, // a+b on xlarge; c (2 of 4 GPUs) rounds up to 1; d two 8-GPU replicas
		{1, 2, 0}, // a; c + f = 6 GPUs -> 2 x 12xlarge
		{0, 0, 0},
		{1, 0, 0},
	}
	if d := cmp.Diff(want, s.Values); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	// With the loader's declared demand (6 cores, 48 GiB per GPU) a 1-GPU
	// job no longer fits g4dn.xlarge and moves up to g4dn.4xlarge.
	s2, err := BuildSeries(jobs[:1], g, 300, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Values[0][g.Index("g4dn.4xlarge")] != 1 {
		t.Errorf("declared demand: counts %v, want one g4dn.4xlarge", s2.Values[0])
	}
	// A job no type holds is a clear error.
	_, err = BuildSeries([]*cluster.Job{job("big", 0, 10, 16, 1)}, g, 300, embed.PhillyVectors)
	if !errors.Is(err, embed.ErrNoFit) || !strings.Contains(err.Error(), "job big") {
		t.Errorf("no-fit: err = %v", err)
	}
	if _, err := BuildSeries(nil, g, 300, nil); err == nil {
		t.Error("no jobs: want error")
	}
}

func TestCSVRoundTripAndErrors(t *testing.T) {
	s := seasonal(50, 24, 0.1, 4)
	s.Start = 600
	var buf bytes.Buffer
	if err := WriteCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := ParseSeriesCSV(&buf, "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty file"},
		{"header", "t,a\n0,1\n", "header"},
		{"nan", "time,a,b\n0,1,2\n300,NaN,2\n", `s.csv:3:2 (bucket a): "NaN" is not a decimal number`},
		{"inf", "time,a\n0,+Inf\n", `"+Inf" is not a decimal number`},
		{"overflow", "time,a\n0,1e400\n", `s.csv:2:2 (bucket a): "1e400" is not a finite number`},
		{"text", "time,a\n0,x\n", `"x" is not a decimal number`},
		{"hex", "time,a\n0,0x1p6\n", `s.csv:2:2 (bucket a): "0x1p6" is not a decimal number`},
		{"huge count (MSE NaN)", "time,a\n0,1e308\n", "s.csv:2:2 (bucket a): count 1e+308 is above the limit 1e+09"},
		{"huge time", "time,a\n1e300,1\n", "s.csv:2:1 (time): 1e+300 is outside [-1e+12, 1e+12] seconds"},
		{"tiny step (-9223372036854775808 test steps)", "time,a\n0,1\n1e-300,2\n", "s.csv:3: time 1e-300 is 1e-300 s after the first row's: the step must be at least 1 s"},
		{"endless line", "time,a\n0," + strings.Repeat("1", textio.MaxLine) + "\n", "s.csv:2: line longer than 1048576 bytes"},
		{"negative", "time,a\n0,-1\n", "negative"},
		{"irregular", "time,a\n0,1\n300,1\n700,1\n", "regular step"},
		{"decreasing", "time,a\n300,1\n0,1\n", "does not increase"},
		{"fields", "time,a,b\n0,1\n", "fields"},
		{"no rows", "time,a\n", "empty"},
		{"dup bucket", "time,a,a\n0,1,1\n", "repeated"},
	}
	for _, tc := range tests {
		_, err := ParseSeriesCSV(strings.NewReader(tc.in), "s.csv")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// A byte-order mark (as spreadsheets write) is skipped, not refused.
	bom, err := ParseSeriesCSV(strings.NewReader("\ufefftime,a\n0,1\n300,2\n"), "bom.csv")
	if err != nil {
		t.Fatalf("BOM: %v", err)
	}
	if diff := cmp.Diff(Series{Buckets: []string{"a"}, Start: 0, Step: 300, Values: [][]float64{{1}, {2}}}, bom); diff != "" {
		t.Errorf("BOM series (-want +got):\n%s", diff)
	}
}

func FuzzParseSeriesCSV(f *testing.F) {
	f.Add("time,a,b\n0,1,2\n300,3,4\n")
	f.Add("time,a\n0,NaN\n")
	f.Add("time,a\n0,1\n300,1\n700,1\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSeriesCSV(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		if s.Len() == 0 || len(s.Buckets) == 0 || !(s.Step > 0) {
			t.Fatalf("accepted a degenerate series: %d steps, %d buckets, step %v", s.Len(), len(s.Buckets), s.Step)
		}
		for _, row := range s.Values {
			for _, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("accepted value %v", v)
				}
			}
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, s); err != nil {
			t.Fatal(err)
		}
		s2, err := ParseSeriesCSV(&buf, "again.csv")
		if err != nil {
			t.Fatalf("re-parse of written series: %v", err)
		}
		if len(s2.Values) != len(s.Values) || len(s2.Buckets) != len(s.Buckets) {
			t.Fatalf("round trip changed the shape")
		}
	})
}

// TestScore checks MSE and PMSE (§5.3) on hand-computed cases. PMSE is
// the mean over the over-predicted points only, so it can exceed MSE, as
// it does in several rows of the paper's Table 4.
func TestScore(t *testing.T) {
	tests := []struct {
		name         string
		actual, pred [][]float64
		scale        []float64
		want         Scores
	}{
		{
			// Scaled errors +1 (over), 0, -1 (under), +1 (over).
			name:   "mixed",
			actual: [][]float64{{1, 10}, {2, 20}},
			pred:   [][]float64{{2, 10}, {1, 30}},
			scale:  []float64{1, 10},
			want:   Scores{MSE: 0.75, PMSE: 1, PMSEAll: 0.5, Over: 0.5},
		},
		{
			// One large over-prediction among small under-predictions:
			// PMSE (16) above MSE (4.75), as in Table 4's Philly ARIMA row.
			name:   "pmse above mse",
			actual: [][]float64{{5}, {5}, {5}, {5}},
			pred:   [][]float64{{9}, {4}, {4}, {4}},
			scale:  []float64{1},
			want:   Scores{MSE: 4.75, PMSE: 16, PMSEAll: 4, Over: 0.25},
		},
		{
			// Every point over-predicted (a static allocation at the
			// peak): PMSE equals MSE under both readings.
			name:   "all over",
			actual: [][]float64{{0}, {1}},
			pred:   [][]float64{{2}, {2}},
			scale:  []float64{2},
			want:   Scores{MSE: 0.625, PMSE: 0.625, PMSEAll: 0.625, Over: 1},
		},
		{
			// No over-prediction: PMSE is 0, not NaN.
			name:   "none over",
			actual: [][]float64{{3}, {3}},
			pred:   [][]float64{{1}, {3}},
			scale:  []float64{1},
			want:   Scores{MSE: 2, PMSE: 0, PMSEAll: 0, Over: 0},
		},
	}
	for _, tc := range tests {
		got, err := Score(tc.actual, tc.pred, tc.scale)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	bad := []struct {
		name         string
		actual, pred [][]float64
		scale        []float64
		want         string
	}{
		{"length", [][]float64{{1}, {2}}, [][]float64{{1}}, []float64{1}, "2 actual steps, 1 predicted"},
		{"empty", nil, nil, []float64{1}, "no steps"},
		{"width", [][]float64{{1, 2}}, [][]float64{{1}}, []float64{1, 1}, "step 0"},
	}
	for _, tc := range bad {
		if _, err := Score(tc.actual, tc.pred, tc.scale); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestNetsTrainDeterministicallyAndRoundTrip trains tiny networks for a
// few steps: the same seed gives the same forecasts, training lowers the
// loss below an untrained copy, and Save/LoadNet restores the forecasts.
func TestNetsTrainDeterministicallyAndRoundTrip(t *testing.T) {
	s := seasonal(24*8, 24, 0.1, 5)
	train := s.Slice(0, 24*7)
	for _, mk := range []func(Options) *Net{NewLSTM, NewTransformer} {
		o := Options{Window: 12, TrainSteps: 30, Periods: []int{24}, Seed: 7}
		small := func() *Net {
			n := mk(o)
			n.Hidden, n.DModel, n.Heads, n.DecLen, n.Batch = 8, 8, 2, 4, 8
			return n
		}
		a, b := small(), small()
		if err := a.Fit(train); err != nil {
			t.Fatalf("%s: %v", a.Kind, err)
		}
		if err := b.Fit(train); err != nil {
			t.Fatal(err)
		}
		pa, err := a.PredictFrom(s, 24*7)
		if err != nil {
			t.Fatal(err)
		}
		pb, _ := b.PredictFrom(s, 24*7)
		if d := cmp.Diff(pa, pb); d != "" {
			t.Errorf("%s: same seed, different forecasts:\n%s", a.Kind, d)
		}
		one, err := a.Predict(s.Slice(0, 24*7+3))
		if err != nil {
			t.Fatal(err)
		}
		for k := range one {
			if math.Abs(one[k]-pa[3][k]) > 1e-4*math.Max(1, math.Abs(one[k])) {
				t.Errorf("%s: Predict %v vs PredictFrom %v", a.Kind, one, pa[3])
			}
		}
		if !(a.FinalLoss > 0) || math.IsInf(a.FinalLoss, 0) {
			t.Errorf("%s: final loss %v", a.Kind, a.FinalLoss)
		}
		path := filepath.Join(t.TempDir(), a.Kind+".gob")
		if err := a.Save(path); err != nil {
			t.Fatal(err)
		}
		l, err := LoadNet(path)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := l.PredictFrom(s, 24*7)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(pa, pl); d != "" {
			t.Errorf("%s: loaded model forecasts differ:\n%s", a.Kind, d)
		}
		if _, err := LoadNet(filepath.Join(t.TempDir(), "missing")); err == nil {
			t.Error("load of a missing file: want error")
		}
	}
}

// TestDemandSnapshotsMatchSeries checks the two views of a trace agree:
// embedding each demand snapshot gives BuildSeries' row.
func TestDemandSnapshotsMatchSeries(t *testing.T) {
	g := embed.MustAWS("g4dn")
	r := rand.New(rand.NewPCG(9, 9))
	var jobs []*cluster.Job
	for i := range 200 {
		gpus := []int{1, 1, 1, 2, 4, 8}[r.IntN(6)]
		reps := 1 + r.IntN(2)
		jobs = append(jobs, &cluster.Job{ID: "j" + string(rune('a'+i%26)), Submit: float64(r.IntN(20000)), Work: float64(1 + r.IntN(5000)),
			Groups: []cluster.ReplicaGroup{{Name: "w", Replicas: reps, Min: reps, Max: reps, Demand: resource.New(6*float64(gpus), 48*float64(gpus), int64(gpus))}}})
	}
	s, err := BuildSeries(jobs, g, 300, embed.PhillyVectors)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := DemandSnapshots(jobs, 300, embed.PhillyVectors)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != s.Len() {
		t.Fatalf("%d snapshots, %d series steps", len(snaps), s.Len())
	}
	for k, d := range snaps {
		counts, err := g.Embed(d)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.Values[k], counts); diff != "" {
			t.Fatalf("step %d (-series +snapshot):\n%s", k, diff)
		}
	}
	b, err := embed.SelectBase(g, snaps)
	if err != nil {
		t.Fatal(err)
	}
	if b.Catalog[0].Name != "g4dn.xlarge" {
		t.Errorf("base %s, want g4dn.xlarge (1-GPU jobs fit it)", b.Catalog[0].Name)
	}
}

// nanModel forecasts NaN: MultiStep must refuse it rather than feed it
// back.
type nanModel struct{ Naive }

func (*nanModel) Predict(Series) ([]float64, error) { return []float64{math.NaN()}, nil }

// TestMultiStep checks the multi-step forecast of a test span from the
// end of training on hand-computed cases. The test span of every series
// holds 1000s: a forecast that read it (walk-forward) would differ.
func TestMultiStep(t *testing.T) {
	series := func(train []float64, test int) Series {
		s := Series{Step: 300, Buckets: []string{"a"}}
		for _, v := range train {
			s.Values = append(s.Values, []float64{v})
		}
		for range test {
			s.Values = append(s.Values, []float64{1000})
		}
		return s
	}
	arima := &ARIMA{P: 1, Q: 0, nb: 1, coef: [][]float64{{0, 0.5}}} // z_t = 0.5 z_{t-1}
	tests := []struct {
		name  string
		m     Forecaster
		train []float64
		test  int
		fit   bool
		want  [][]float64
	}{
		{"naive repeats the last training value", &Naive{}, []float64{1, 3, 5}, 3, true, [][]float64{{5}, {5}, {5}}},
		{"static holds the training peak", &Static{}, []float64{1, 7, 5}, 2, true, [][]float64{{7}, {7}}},
		{"seasonal-naive feeds its own forecasts back", &SeasonalNaive{Periods: []int{3}}, []float64{1, 2, 3, 4, 5, 6}, 5, true,
			[][]float64{{4}, {5}, {6}, {4}, {5}}},
		// alpha = beta = 1: level = last value, trend = last difference,
		// so the h-step forecast continues a straight line.
		{"holt-winters projects level and trend", &HoltWinters{Fixed: []float64{1, 1}}, []float64{0, 2, 4, 6, 8, 10}, 3, true,
			[][]float64{{12}, {14}, {16}}},
		// ARIMA(1,1,0): y2 = 8 + 0.5*8, y3 = 12 + 0.5*4, y4 = 14 + 0.5*2.
		{"arima decays the last difference", arima, []float64{0, 8}, 3, false, [][]float64{{12}, {14}, {15}}},
	}
	for _, tc := range tests {
		s := series(tc.train, tc.test)
		from := len(tc.train)
		if tc.fit {
			if err := tc.m.Fit(s.Slice(0, from)); err != nil {
				t.Fatalf("%s: fit: %v", tc.name, err)
			}
		}
		got, err := MultiStep(tc.m, s, from)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
		if s.Values[from][0] != 1000 || len(s.Values) != from+tc.test {
			t.Errorf("%s: MultiStep wrote into the series", tc.name)
		}
	}

	// The one-step forecasts of the same span read it; the multi-step
	// ones do not.
	s := series([]float64{1, 3, 5}, 3)
	n := &Naive{}
	if err := n.Fit(s.Slice(0, 3)); err != nil {
		t.Fatal(err)
	}
	walk, err := WalkForward(n, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([][]float64{{5}, {1000}, {1000}}, walk); d != "" {
		t.Errorf("walk-forward (-want +got):\n%s", d)
	}

	errs := []struct {
		name string
		m    Forecaster
		from int
		want string
	}{
		{"start at 0", n, 0, "start 0 outside (0, 6)"},
		{"start at the end", n, 6, "start 6 outside (0, 6)"},
		{"unfitted model", &Naive{}, 3, "naive: multi-step forecast of step 3 (1 ahead): naive: Predict before Fit"},
		{"NaN forecast", &nanModel{}, 3, "multi-step forecast of step 3 (1 ahead), bucket a: NaN"},
	}
	for _, tc := range errs {
		_, err := MultiStep(tc.m, s, tc.from)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestEvaluateMultiStep checks that Evaluate scores the one-step and the
// multi-step forecasts of one fit, each against the test span.
func TestEvaluateMultiStep(t *testing.T) {
	s := seasonal(24*10, 24, 0.3, 6)
	test := 24 * 2
	r, err := Evaluate(&SeasonalNaive{Periods: []int{24}}, s, test, EvalOptions{MultiStep: true})
	if err != nil {
		t.Fatal(err)
	}
	from := s.Len() - test
	// Seasonal-naive's multi-step forecast repeats the last training day.
	var want [][]float64
	for k := range test {
		want = append(want, s.Values[from-24+k%24])
	}
	if d := cmp.Diff(want, r.MultiPred); d != "" {
		t.Errorf("multi-step forecasts (-want +got):\n%s", d)
	}
	ms, err := Score(s.Values[from:], want, Scales(s.Slice(0, from)))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&ms, r.Multi); d != "" {
		t.Errorf("multi-step scores (-want +got):\n%s", d)
	}
	one, err := Evaluate(&SeasonalNaive{Periods: []int{24}}, s, test, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if one.Multi != nil || one.MSE != r.MSE || one.PMSE != r.PMSE {
		t.Errorf("without MultiStep: %+v, want the same one-step scores and no multi-step", one)
	}
	if _, err := Evaluate(&Naive{}, s, s.Len(), EvalOptions{MultiStep: true}); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("test span as long as the series: err = %v", err)
	}
}

// TestNetSizes checks the two network sizes' configurations (no
// training): NetPaper has the paper's window, layer counts and warm-up.
func TestNetSizes(t *testing.T) {
	type cfg struct {
		Window, Enc, Dec, Warmup, Steps, Batch, Hidden, Layers int
	}
	of := func(n *Net) cfg {
		return cfg{n.Opt.Window, n.EncLayers, n.DecLayers, n.Warmup, n.TrainSteps, n.Batch, n.Hidden, n.Layers}
	}
	tests := []struct {
		name string
		n    *Net
		want cfg
	}{
		{"transformer small", NewTransformer(Options{}), cfg{24, 2, 1, 80, 800, 32, 0, 0}},
		{"transformer paper", NewTransformer(Options{Net: NetPaper}), cfg{576, 6, 6, 5000, 2000, 1, 0, 0}},
		{"transformer paper, more steps", NewTransformer(Options{Net: NetPaper, TrainSteps: 9000}), cfg{576, 6, 6, 5000, 9000, 1, 0, 0}},
		{"transformer paper quick", NewTransformer(Options{Net: NetPaper, Quick: true}), cfg{576, 6, 6, 1, 2, 1, 0, 0}},
		{"transformer paper quick, 20000 steps", NewTransformer(Options{Net: NetPaper, Quick: true, TrainSteps: 20000}), cfg{576, 6, 6, 2, 20, 1, 0, 0}},
		{"transformer small quick", NewTransformer(Options{Quick: true}), cfg{24, 2, 1, 8, 80, 32, 0, 0}},
		{"lstm paper quick", NewLSTM(Options{Net: NetPaper, Quick: true}), cfg{576, 0, 0, 1, 1, 8, 51, 2}},
		{"lstm small", NewLSTM(Options{}), cfg{24, 0, 0, 40, 400, 32, 51, 2}},
		{"lstm paper", NewLSTM(Options{Net: NetPaper}), cfg{576, 0, 0, 25, 250, 8, 51, 2}},
		{"lstm paper, window 48", NewLSTM(Options{Net: NetPaper, Window: 48}), cfg{48, 0, 0, 25, 250, 8, 51, 2}},
	}
	for _, tc := range tests {
		if d := cmp.Diff(tc.want, of(tc.n)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	if _, err := New("lstm", Options{Net: "huge"}); err == nil || !strings.Contains(err.Error(), `network size "huge"`) {
		t.Errorf("unknown size: err = %v", err)
	}
}

// TestSpans checks the censored-share estimate and the span statistics on
// hand-computed cases.
func TestSpans(t *testing.T) {
	job := func(work float64, gpus int64) *cluster.Job {
		return &cluster.Job{ID: "j", Work: work, Groups: []cluster.ReplicaGroup{{Name: "w", Replicas: 1, Min: 1, Max: 1,
			Demand: resource.New(1, 1, gpus)}}}
	}
	// GPU-weighted work: 1 x 10 days + 3 x 2 days = 16 GPU-days.
	jobs := []*cluster.Job{job(10*Day, 1), job(2*Day, 3)}
	shares := map[float64]float64{}
	for _, gap := range []float64{0, 1, 2, 5, 10, 12} {
		sh, err := CensoredShare(jobs, gap*Day, embed.PhillyVectors)
		if err != nil {
			t.Fatal(err)
		}
		shares[gap] = sh
	}
	want := map[float64]float64{0: 1, 1: (9 + 3) / 16.0, 2: 8 / 16.0, 5: 5 / 16.0, 10: 0, 12: 0}
	if d := cmp.Diff(want, shares); d != "" {
		t.Errorf("censored shares (-want +got):\n%s", d)
	}
	// Below 5% from 10 days on: 9 days leaves 1/16.
	if d, err := AutoSkipDays(jobs, embed.PhillyVectors); err != nil || d != 10 {
		t.Errorf("auto skip = %d, %v; want 10", d, err)
	}
	// CPU-only jobs are weighted by cores.
	if sh, err := CensoredShare([]*cluster.Job{job(4*Day, 0)}, Day, nil); err != nil || sh != 0.75 {
		t.Errorf("cpu job: share %v, %v; want 0.75", sh, err)
	}
	for _, tc := range []struct {
		jobs []*cluster.Job
		gap  float64
		want string
	}{
		{nil, 0, "no jobs"},
		{jobs, -1, "gap -1"},
		{jobs, math.NaN(), "gap NaN"},
	} {
		if _, err := CensoredShare(tc.jobs, tc.gap, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("censored share(%v, %v): err = %v, want %q", len(tc.jobs), tc.gap, err, tc.want)
		}
	}

	// A series of 4 steps a day: training [2 2 2 2], then a span rising
	// 0 1 2 3 | 4 5 6 7 in bucket a, bucket b 1 throughout.
	s := Series{Step: Day / 4, Buckets: []string{"a", "b"}}
	for _, v := range []float64{2, 2, 2, 2, 0, 1, 2, 3, 4, 5, 6, 7} {
		s.Values = append(s.Values, []float64{v, 1})
	}
	st, err := DescribeSpan(s, 4, 12)
	if err != nil {
		t.Fatal(err)
	}
	// Slope 1 instance per step = 4 per day; the last day's mean total is
	// 6.5, the first's 2.5.
	if d := cmp.Diff(SpanStats{Mean: []float64{3.5, 1}, TrainMean: []float64{2, 1}, Trend: 4, Rise: 4}, st); d != "" {
		t.Errorf("span (-want +got):\n%s", d)
	}
	if _, err := DescribeSpan(s, 0, 12); err == nil {
		t.Error("span without a training part: want error")
	}
}
