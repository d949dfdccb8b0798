package forecast

import (
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	gr "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/layers/attention"
	"github.com/gomlx/gomlx/ml/layers/lstm"
	"github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Net is a neural forecaster (LSTM or transformer) trained with GoMLX on
// its pure-Go backend. Both read a window of the last Window steps,
// normalised per bucket by the training maximum, and predict the change
// from the last value (output = last value + network output): on
// 5-minute counts that move a little per step this residual form trains
// far faster than predicting the level, and it is applied to both
// networks alike. Training draws Batch windows uniformly from the
// training series with a seeded PCG for TrainSteps steps, so a seed gives
// the same weights (the pure-Go backend is deterministic on one machine).
type Net struct {
	Kind string // "lstm" or "transformer"
	Opt  Options
	// Hyperparameters (the constructors set the defaults).
	Hidden, Layers        int     // LSTM: units per layer, stacked layers
	DModel, Heads, DecLen int     // transformer: width, heads, decoder length
	EncLayers, DecLayers  int     // transformer depth
	Dropout               float64 // transformer
	LR                    float64 // LSTM: Adam learning rate
	Warmup                int     // transformer: warm-up steps of the LR schedule
	Batch                 int
	TrainSteps            int
	// Fitted state.
	Buckets   []string
	Scale     []float64
	Step      float64 // series step in seconds (time features)
	FinalLoss float64 // mean training loss over the last 10% of steps

	backend compute.Backend
	store   *model.Store
	execs   map[int]*model.Exec
}

// NewLSTM is the paper's LSTM (§5.2): two stacked LSTM layers of 51
// units and a linear output, Huber loss, Adam with learning rate 0.02.
// NetSmall reads a 2-hour window (24 steps) and trains 400 steps of 32
// windows. NetPaper reads the paper's 2-day window (576 steps; the paper
// states it for the transformer's attention map, Figure 9, and builds
// both networks' windows the same way, §4.2) and trains PaperLSTMSteps
// steps of PaperLSTMBatch windows (the budget below).
func NewLSTM(o Options) *Net {
	o = o.withDefaults()
	n := &Net{Kind: "lstm", Opt: o, Hidden: 51, Layers: 2, LR: 0.02, Batch: 32, TrainSteps: 400}
	if o.Net == NetPaper {
		n.Batch, n.TrainSteps = PaperLSTMBatch, PaperLSTMSteps
	}
	return n.applySteps()
}

// NewTransformer is the paper's network (§4.2, Figure 3): an input
// linear layer, the periodic positional encoding, EncLayers encoder
// layers (self-attention and feed-forward, each followed by layer
// normalisation), DecLayers decoder layers (masked self-attention over
// the last DecLen inputs, attention over the encoder output,
// feed-forward) and a linear output; Adam(0.9, 0.98, 1e-9) with the
// warm-up schedule lr = d^-0.5 min(step^-0.5, step warmup^-1.5) and
// dropout 0.2.
//
// NetSmall (the autoscaler's default) trains in about two minutes on two
// cores: 2 encoder and 1 decoder layers, a 24-step window, 800 steps of
// 32 windows, warm-up 10% of the steps. NetPaper has the paper's 6 + 6
// layers, 576-step window and 5000 warm-up steps, and trains
// PaperTransformerSteps steps of PaperTransformerBatch windows (the budget
// below): the training ends inside the warm-up. Width (d_model 32, 4
// heads, feed-forward 64), decoder length (8) and batch are not in the
// paper and are kept small to fit that budget.
func NewTransformer(o Options) *Net {
	o = o.withDefaults()
	n := &Net{Kind: "transformer", Opt: o, DModel: 32, Heads: 4, DecLen: 8, EncLayers: 2, DecLayers: 1,
		Dropout: 0.2, Batch: 32, TrainSteps: 800}
	if o.Net == NetPaper {
		n.EncLayers, n.DecLayers, n.Batch, n.TrainSteps, n.Warmup = 6, 6, PaperTransformerBatch, PaperTransformerSteps, PaperWarmup
	}
	return n.applySteps()
}

// The paper-sized networks' training budget (NetPaper); see NewLSTM and
// NewTransformer. The paper gives neither steps nor batch size.
//
// The budget is about 2,000 training windows per network: on this
// project's 2-core CI machine, with the pure-Go backend, a 576-step window
// costs 0.7-0.9 CPU-seconds forward and backward (0.69 measured for the
// transformer, docs/forecast.md), so each network trains in 23-30
// CPU-minutes, the order of the paper's 31-38 minutes per network on
// Philly (Table 4, on a GPU); forecasting a test week one step ahead and
// multi-step adds about 12 CPU-minutes for the transformer. The
// transformer takes them one per step (the warm-up schedule advances per
// step, so this takes it furthest: 2,000 of its 5,000 warm-up steps, a
// learning rate rising to 1.0e-3 against the schedule's peak of 2.5e-3);
// the LSTM, whose learning rate is constant, eight per step.
const (
	// PaperWarmup is the paper's warmup_steps.
	PaperWarmup = 5000
	// PaperTransformerSteps and PaperTransformerBatch: 2,000 steps of
	// one window.
	PaperTransformerSteps = 2000
	PaperTransformerBatch = 1
	// PaperLSTMSteps and PaperLSTMBatch: 250 steps of 8 windows.
	PaperLSTMSteps = 250
	PaperLSTMBatch = 8
)

// applySteps applies the TrainSteps and Quick options. A warm-up left at
// 0 (NetSmall) is 10% of the steps; Quick (a smoke run) divides the steps,
// the model's or TrainSteps, by 10 (NetPaper: by 1000, so that a smoke
// run of the paper-sized networks also takes seconds, not minutes: one or
// two steps, a check that they run, not a result), at least 1, and keeps
// the warm-up at 10% of them.
func (n *Net) applySteps() *Net {
	if n.Opt.TrainSteps > 0 {
		n.TrainSteps = n.Opt.TrainSteps
	}
	if n.Opt.Quick {
		div := 10
		if n.Opt.Net == NetPaper {
			div = 1000
		}
		n.TrainSteps = max(1, n.TrainSteps/div)
		n.Warmup = 0
	}
	if n.Warmup == 0 {
		n.Warmup = max(1, n.TrainSteps/10)
	}
	return n
}

// Name implements Forecaster.
func (n *Net) Name() string { return n.Kind }

var (
	backendOnce sync.Once
	backendVal  compute.Backend
	backendErr  error
)

// goBackend returns the shared pure-Go backend (one per process: it owns
// a worker pool). Ops run one at a time, each parallel inside: with
// 576-step windows the backend's parallel op scheduler and its large
// matrix products, which both wait on the worker pool, deadlocked
// (compute v0.1.2). The results do not depend on the mode.
func goBackend() (compute.Backend, error) {
	backendOnce.Do(func() { backendVal, backendErr = gobackend.New("ops_sequential") })
	return backendVal, backendErr
}

// features is the input width: the buckets, plus sin and cos of every
// period for the transformer's periodic encoding.
func (n *Net) features() int {
	f := len(n.Buckets)
	if n.Kind == "transformer" {
		f += 2 * len(n.Opt.Periods)
	}
	return f
}

// targets is how many next values a window is trained to predict.
func (n *Net) targets() int {
	if n.Kind == "transformer" {
		return n.DecLen
	}
	return 1
}

// window writes the input of the window ending before step end of values
// (steps end-W .. end-1) into dst, normalised, with time features.
// t0 is the absolute step index of values[0] (for the encoding).
func (n *Net) window(dst []float32, values [][]float64, end int, t0 float64) {
	w, f, nb := n.Opt.Window, n.features(), len(n.Buckets)
	for i := range w {
		t := end - w + i
		row := dst[i*f : (i+1)*f]
		for b := range nb {
			row[b] = float32(values[t][b] / n.Scale[b])
		}
		if n.Kind == "transformer" {
			// Periodic positional encoding (§4.2): the position is the
			// absolute step, so the phase says the time of day and week.
			for k, p := range n.Opt.Periods {
				a := 2 * math.Pi * (t0 + float64(t)) / float64(p)
				row[nb+2*k] = float32(math.Sin(a))
				row[nb+2*k+1] = float32(math.Cos(a))
			}
		}
	}
}

// graphFn builds the network: x [B, W, F] -> [B, targets, buckets].
func (n *Net) graphFn(scope *model.Scope, x *gr.Node) *gr.Node {
	scope = scope.In("model")
	nb := len(n.Buckets)
	bsz, w := x.Shape().Dim(0), x.Shape().Dim(1)
	values := gr.Slice(x, gr.AxisRange(), gr.AxisRange(), gr.AxisRange(0, nb)) // [B, W, nb]
	if n.Kind == "lstm" {
		h := x
		for l := range n.Layers {
			all, _, _ := lstm.New(scope.In("lstm%d", l), h, n.Hidden).Done()    // [W, 1, B, H]
			h = gr.TransposeAllDims(gr.Reshape(all, w, bsz, n.Hidden), 1, 0, 2) // [B, W, H]
		}
		last := gr.Reshape(gr.Slice(h, gr.AxisRange(), gr.AxisElem(w-1), gr.AxisRange()), bsz, n.Hidden)
		out := layers.DenseWithBias(zeroInit(scope.In("out")), last, nb)
		lastVal := gr.Reshape(gr.Slice(values, gr.AxisRange(), gr.AxisElem(w-1), gr.AxisRange()), bsz, nb)
		return gr.Reshape(gr.Add(lastVal, out), bsz, 1, nb)
	}
	d := n.DModel
	headDim := d / n.Heads
	drop := func(s *model.Scope, v *gr.Node) *gr.Node { return layers.DropoutStatic(s, v, n.Dropout) }
	ln := func(s *model.Scope, v *gr.Node) *gr.Node { return norm.LayerNorm(s, v, 2).Done() }
	ffn := func(s *model.Scope, v *gr.Node) *gr.Node {
		h := activation.Relu(layers.DenseWithBias(s.In("ff1"), v, 2*d))
		return layers.DenseWithBias(s.In("ff2"), h, d)
	}
	// Input layer: the window and its periodic encoding to d_model.
	enc := layers.DenseWithBias(scope.In("enc_in"), x, d)
	for l := range n.EncLayers {
		s := scope.In("enc%d", l)
		a := attention.SelfAttention(s.In("attn"), enc, n.Heads, headDim).Done()
		enc = ln(s.In("ln1"), gr.Add(enc, drop(s, a)))
		enc = ln(s.In("ln2"), gr.Add(enc, drop(s, ffn(s, enc))))
	}
	// Decoder: its input starts at the last DecLen points of the encoder
	// input; with the causal mask, output i only sees inputs <= i and is
	// trained to predict the point after input i (one-position offset).
	dl := n.DecLen
	decX := gr.Slice(x, gr.AxisRange(), gr.AxisRange(w-dl, w), gr.AxisRange())
	dec := layers.DenseWithBias(scope.In("dec_in"), decX, d)
	for l := range n.DecLayers {
		s := scope.In("dec%d", l)
		a := attention.SelfAttention(s.In("self"), dec, n.Heads, headDim).WithCausalMask(true).Done()
		dec = ln(s.In("ln1"), gr.Add(dec, drop(s, a)))
		c := attention.MultiHeadAttention(s.In("cross"), dec, enc, enc, n.Heads, headDim).Done()
		dec = ln(s.In("ln2"), gr.Add(dec, drop(s, c)))
		dec = ln(s.In("ln3"), gr.Add(dec, drop(s, ffn(s, dec))))
	}
	out := layers.DenseWithBias(zeroInit(scope.In("out")), dec, nb) // [B, dl, nb]
	lastVals := gr.Slice(values, gr.AxisRange(), gr.AxisRange(w-dl, w), gr.AxisRange())
	return gr.Add(lastVals, out)
}

// zeroInit makes the output layer start at zero, so an untrained network
// forecasts the last value (persistence) and training learns corrections
// to it instead of first unlearning random output noise.
func zeroInit(s *model.Scope) *model.Scope { return s.WithInitializer(initializer.Zero) }

// Fit implements Forecaster.
func (n *Net) Fit(ts Series) error {
	if err := ts.Validate(); err != nil {
		return fmt.Errorf("%s: %w", n.Kind, err)
	}
	if n.Kind == "transformer" && (n.DecLen < 1 || n.DecLen > n.Opt.Window || n.DModel%n.Heads != 0) {
		return fmt.Errorf("transformer: decoder length %d must be in [1, window %d] and d_model %d divisible by %d heads", n.DecLen, n.Opt.Window, n.DModel, n.Heads)
	}
	w := n.Opt.Window
	if ts.Len() <= w {
		return fmt.Errorf("%s: series of %d steps is shorter than one window of %d steps plus a target", n.Kind, ts.Len(), w)
	}
	be, err := goBackend()
	if err != nil {
		return fmt.Errorf("%s: GoMLX backend: %w", n.Kind, err)
	}
	n.backend = be
	n.Buckets = append([]string(nil), ts.Buckets...)
	n.Scale = Scales(ts)
	n.Step = ts.Step
	n.store = model.NewStore()
	n.store.SetParam(model.ParamInitialSeed, int64(n.Opt.Seed))
	n.execs = map[int]*model.Exec{}

	var opt optimizer.Interface
	lossFn := loss.MeanSquaredError
	if n.Kind == "lstm" {
		opt = optimizer.Adam().LearningRate(n.LR).Done()
		lossFn = loss.MakeHuberLoss(1.0)
	} else {
		opt = optimizer.Adam().LearningRate(1e-3).Betas(0.9, 0.98).Epsilon(1e-9).Done()
	}
	trainFn := func(scope *model.Scope, x *gr.Node) *gr.Node {
		if n.Kind == "transformer" {
			n.warmupSchedule(scope, x.Graph())
		}
		return n.graphFn(scope, x)
	}
	tr := train.NewTrainer(be, n.store, trainFn, lossFn, opt, nil, nil)

	t0 := ts.Start / ts.Step
	nb, f, k, bs := len(n.Buckets), n.features(), n.targets(), n.Batch
	last := ts.Len() - 1 // last usable target index
	rng := rand.New(rand.NewPCG(n.Opt.Seed, 0x5eed))
	xs := make([]float32, bs*w*f)
	ys := make([]float32, bs*k*nb)
	var tail []float64
	for step := range n.TrainSteps {
		for i := range bs {
			end := w + rng.IntN(last-w+1) // inputs end-w..end-1, target end
			n.window(xs[i*w*f:(i+1)*w*f], ts.Values, end, t0)
			for j := range k {
				t := end - k + 1 + j
				for b := range nb {
					ys[(i*k+j)*nb+b] = float32(ts.Values[t][b] / n.Scale[b])
				}
			}
		}
		xt := tensors.FromFlatDataAndDimensions(append([]float32(nil), xs...), bs, w, f)
		yt := tensors.FromFlatDataAndDimensions(append([]float32(nil), ys...), bs, k, nb)
		m, err := tr.TrainStep(train.Batch{Inputs: []*tensors.Tensor{xt}, Labels: []*tensors.Tensor{yt}})
		if err != nil {
			return fmt.Errorf("%s: training step %d: %w", n.Kind, step, err)
		}
		if step >= n.TrainSteps*9/10 {
			v, _ := tensors.CopyFlatData[float32](m[0])
			if len(v) > 0 {
				tail = append(tail, float64(v[0]))
			}
		}
	}
	n.FinalLoss = mean(tail)
	if math.IsNaN(n.FinalLoss) {
		return fmt.Errorf("%s: training diverged (loss NaN)", n.Kind)
	}
	return nil
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// warmupSchedule sets Adam's learning rate for this step to the paper's
// d^-0.5 * min(step^-0.5, step * warmup^-1.5) (Vaswani et al.; the text
// copy lost the minus signs).
func (n *Net) warmupSchedule(scope *model.Scope, g *gr.Graph) {
	if !scope.IsTraining(g) {
		return
	}
	s := optimizer.IncrementCounter(n.store.Scope("/optimizers/warmup"), g, "step", dtypes.Float32)
	lr := gr.MulScalar(gr.Min(gr.Rsqrt(s), gr.MulScalar(s, math.Pow(float64(n.Warmup), -1.5))), math.Pow(float64(n.DModel), -0.5))
	optimizer.LearningRateVarWithValue(scope, dtypes.Float32, 1e-3).SetNodeValue(lr)
}

// run evaluates the network on windows ending before the given steps of
// values, in batches of a fixed size so the graph compiles once per size.
func (n *Net) run(values [][]float64, ends []int, t0 float64) ([][]float64, error) {
	if n.store == nil {
		return nil, fmt.Errorf("%s: Predict before Fit or Load", n.Kind)
	}
	w, f, nb, k := n.Opt.Window, n.features(), len(n.Buckets), n.targets()
	// Batches of 256 windows of 24 steps; longer windows in batches of the
	// same number of steps (the attention scores grow with the square of
	// the window: 10 windows of 576 steps hold 53 MB of them per layer).
	bs := max(1, min(256, 256*24/w))
	if len(ends) == 1 {
		bs = 1
	}
	ex := n.execs[bs]
	if ex == nil {
		var err error
		ex, err = model.NewExec(n.backend, n.store, n.graphFn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Kind, err)
		}
		n.execs[bs] = ex
	}
	out := make([][]float64, 0, len(ends))
	for lo := 0; lo < len(ends); lo += bs {
		xs := make([]float32, bs*w*f)
		for i := range bs {
			e := ends[min(lo+i, len(ends)-1)] // pad with the last window
			n.window(xs[i*w*f:(i+1)*w*f], values, e, t0)
		}
		res, err := ex.Call(tensors.FromFlatDataAndDimensions(xs, bs, w, f))
		if err != nil {
			return nil, fmt.Errorf("%s: predict: %w", n.Kind, err)
		}
		flat, err := tensors.CopyFlatData[float32](res[0])
		if err != nil {
			return nil, fmt.Errorf("%s: predict: %w", n.Kind, err)
		}
		for i := 0; i < bs && lo+i < len(ends); i++ {
			row := make([]float64, nb)
			for b := range nb {
				row[b] = float64(flat[(i*k+k-1)*nb+b]) * n.Scale[b]
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// Predict implements Forecaster.
func (n *Net) Predict(h Series) ([]float64, error) {
	if err := checkHistory(n.Kind, h, len(n.Buckets)); err != nil {
		return nil, err
	}
	if h.Len() < n.Opt.Window {
		return nil, fmt.Errorf("%s: history of %d steps is shorter than one window of %d", n.Kind, h.Len(), n.Opt.Window)
	}
	out, err := n.run(h.Values, []int{h.Len()}, h.Start/h.Step)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PredictFrom implements BatchPredictor.
func (n *Net) PredictFrom(s Series, from int) ([][]float64, error) {
	if err := checkHistory(n.Kind, s, len(n.Buckets)); err != nil {
		return nil, err
	}
	if from < n.Opt.Window {
		return nil, fmt.Errorf("%s: first forecast at step %d needs a full window of %d before it", n.Kind, from, n.Opt.Window)
	}
	ends := make([]int, 0, s.Len()-from)
	for t := from; t < s.Len(); t++ {
		ends = append(ends, t)
	}
	return n.run(s.Values, ends, s.Start/s.Step)
}

// savedNet is the file format: the configuration and the network's
// weights (optimiser state is not kept: a loaded model forecasts, it is
// refitted to train further).
type savedNet struct {
	Version int
	Net     Net
	Vars    []savedVar
}

type savedVar struct {
	Path string
	Dims []int
	Data []float32
}

// Save writes the fitted model to path (gob).
func (n *Net) Save(path string) error {
	if n.store == nil {
		return fmt.Errorf("%s: save before Fit", n.Kind)
	}
	sv := savedNet{Version: 1, Net: *n}
	for v := range n.store.IterVariables() {
		if !strings.HasPrefix(v.Path(), "/model/") {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("%s: save %s: %w", n.Kind, v.Path(), err)
		}
		data, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return fmt.Errorf("%s: save %s: %w", n.Kind, v.Path(), err)
		}
		sv.Vars = append(sv.Vars, savedVar{Path: v.Path(), Dims: t.Shape().Dimensions, Data: data})
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: save: %w", n.Kind, err)
	}
	if err := gob.NewEncoder(f).Encode(sv); err != nil {
		f.Close()
		return fmt.Errorf("%s: save %s: %w", n.Kind, path, err)
	}
	return f.Close()
}

// LoadNet reads a model written by Save.
func LoadNet(path string) (*Net, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	defer f.Close()
	var sv savedNet
	if err := gob.NewDecoder(f).Decode(&sv); err != nil {
		return nil, fmt.Errorf("load model %s: not a saved forecaster: %w", path, err)
	}
	if sv.Version != 1 || (sv.Net.Kind != "lstm" && sv.Net.Kind != "transformer") || len(sv.Vars) == 0 {
		return nil, fmt.Errorf("load model %s: unsupported version %d / kind %q", path, sv.Version, sv.Net.Kind)
	}
	n := sv.Net
	be, err := goBackend()
	if err != nil {
		return nil, fmt.Errorf("load model: GoMLX backend: %w", err)
	}
	n.backend = be
	n.store = model.NewStore()
	n.execs = map[int]*model.Exec{}
	for _, v := range sv.Vars {
		size := 1
		for _, d := range v.Dims {
			size *= d
		}
		if size != len(v.Data) {
			return nil, fmt.Errorf("load model %s: variable %s has %d values for shape %v", path, v.Path, len(v.Data), v.Dims)
		}
		if _, err := n.store.CreateVariable(v.Path, tensors.FromFlatDataAndDimensions(v.Data, v.Dims...)); err != nil {
			return nil, fmt.Errorf("load model %s: %w", path, err)
		}
	}
	return &n, nil
}

// trainTimer measures wall time of a fit (the CLI reports it).
func trainTimer() func() float64 {
	t := time.Now()
	return func() float64 { return time.Since(t).Seconds() }
}

var _ = errors.New
