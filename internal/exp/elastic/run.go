package elasticexp

import (
	"context"
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// Setup is one scenario: nodes, jobs per seed, simulator settings.
type Setup struct {
	Nodes  func() []cluster.Node
	Jobs   func(seed uint64) ([]*cluster.Job, error)
	Config sim.Config
}

// Run is one policy on one seed, with what the observer recorded.
type Run struct {
	Policy string
	// Label names the variant: the policy spec, and the scenario's
	// parameters if any (e.g. "elastic:scaleup=local arrivals=together").
	Label  string
	Seed   uint64
	Result *sim.Result
	// Workers is each job's worker count over time (0 once it ends).
	Workers map[string][]metrics.Point
	// Total is the workers of all jobs over time.
	Total []metrics.Point
	// Extra are this package's metrics (see Recorder.Metrics).
	Extra map[string]float64
	// Starts is each job's first start: when, with how many workers, on
	// how many nodes.
	Starts map[string]Start
}

// Start is a job's first start as the Recorder saw it.
type Start struct {
	T              float64
	Workers, Nodes int
}

// Recorder watches a run through sim.Config.Observe and derives the
// elastic metrics:
//   - scale_ups / scale_downs: resizes that raised / lowered a job's worker
//     count (for tf-operator a scale-up is the binding of pods that were
//     pending after a partial start);
//   - gang_placed_frac: of the jobs that started, the fraction whose
//     replicas were all on one node at their first start;
//   - partial_start_frac: the fraction that first started with some group
//     below its minimum, holding resources without progress (tf-operator's
//     partial start);
//   - reduced_start_frac: the fraction that first started below their
//     requested worker count but at or above the minimum (elastic and
//     DRAGON start a job smaller when that is all that fits);
//   - train_time_mean_s / train_time_total_s: finish minus first start of
//     finished jobs, and jct_total_s the summed JCT;
//   - cpu_alloc_frac, gpu_alloc_frac: allocated CPU (GPU) over the
//     cluster's, averaged from the first submit to the last finish. (The
//     simulator's cpu_util and gpu_util now cover the same span and agree;
//     these keys were added when they did not, and are kept for the JSON
//     contract.)
type Recorder struct {
	capacity   resource.Vector
	alloc      map[string]resource.Vector
	allocSum   resource.Vector
	area       [resource.NumKinds]float64
	lastT      float64
	workers    map[string][]metrics.Point
	last       map[string]int
	total      []metrics.Point
	sum        int
	ups, downs int
	starts     int
	gang       int
	partial    int
	reduced    int
	first      map[string]Start
}

// NewRecorder returns an empty recorder for a cluster of the given total
// capacity.
func NewRecorder(capacity resource.Vector) *Recorder {
	return &Recorder{capacity: capacity, alloc: map[string]resource.Vector{}, workers: map[string][]metrics.Point{}, last: map[string]int{},
		first: map[string]Start{}}
}

// Observe is the sim.Config.Observe hook.
func (r *Recorder) Observe(t float64, kind sim.Observed, js *cluster.JobState, _ string) {
	id := js.Job.ID
	w := -1
	switch kind {
	case "start":
		c := js.Counts()
		r.starts++
		if _, ok := r.first[id]; !ok {
			r.first[id] = Start{T: t, Workers: c[0], Nodes: len(js.Placement.Nodes())}
		}
		if len(js.Placement.Nodes()) == 1 {
			r.gang++
		}
		below, reduced := false, false
		for g := range js.Job.Groups {
			if c[g] < js.Job.Groups[g].Min {
				below = true
			} else if c[g] < js.Job.Groups[g].Replicas {
				reduced = true
			}
		}
		if below {
			r.partial++
		} else if reduced {
			r.reduced++
		}
		w = c[0]
	case "resize":
		w = js.Counts()[0]
		if w > r.last[id] {
			r.ups++
		} else if w < r.last[id] {
			r.downs++
		}
	case "complete", "suspend":
		w = 0
	}
	if w < 0 {
		return
	}
	for k := range r.area {
		r.area[k] += float64(r.allocSum[k]) * (t - r.lastT)
	}
	r.lastT = t
	d := js.Job.Demand(js.Counts())
	r.allocSum = r.allocSum.Add(d).Sub(r.alloc[id])
	r.alloc[id] = d
	r.sum += w - r.last[id]
	r.last[id] = w
	r.workers[id] = append(r.workers[id], metrics.Point{T: t, Value: float64(w)})
	if n := len(r.total); n > 0 && r.total[n-1].T == t {
		r.total[n-1].Value = float64(r.sum)
	} else {
		r.total = append(r.total, metrics.Point{T: t, Value: float64(r.sum)})
	}
}

// Metrics returns the recorder's metrics for a finished run.
func (r *Recorder) Metrics(res *sim.Result) map[string]float64 {
	frac := func(n int) float64 {
		if r.starts == 0 {
			return 0
		}
		return float64(n) / float64(r.starts)
	}
	var train, jct []float64
	first, last := math.Inf(1), math.Inf(-1)
	for _, rec := range res.Records {
		first = math.Min(first, rec.Submit)
		if rec.Finished() {
			train = append(train, rec.Finish-rec.FirstStart)
			jct = append(jct, rec.JCT())
			last = math.Max(last, rec.Finish)
		}
	}
	alloc := func(k resource.Kind) float64 {
		if last > first && r.capacity[k] > 0 {
			return r.area[k] / (float64(r.capacity[k]) * (last - first))
		}
		return 0
	}
	sum := func(xs []float64) float64 { return metrics.Mean(xs) * float64(len(xs)) }
	return map[string]float64{
		"scale_ups": float64(r.ups), "scale_downs": float64(r.downs),
		"gang_placed_frac": frac(r.gang), "partial_start_frac": frac(r.partial), "reduced_start_frac": frac(r.reduced),
		"train_time_mean_s": metrics.Mean(train), "train_time_total_s": sum(train), "jct_total_s": sum(jct),
		"cpu_alloc_frac": alloc(resource.CPU), "gpu_alloc_frac": alloc(resource.GPU),
	}
}

// RunAll runs every policy spec on every seed through
// experiment.RunPolicies, with a Recorder on each run whose metrics join
// the standard ones.
//
// Params are the scenario's parameters (nil for none): they are added to
// every row, beside the parameters of the policy spec.
func RunAll(ctx context.Context, env *experiment.Env, label string, setup Setup, specs []string, seeds int, params map[string]string) ([]experiment.Row, []Run, error) {
	es := experiment.Setup{
		Nodes:  func(uint64) []cluster.Node { return setup.Nodes() },
		Jobs:   setup.Jobs,
		Config: setup.Config,
		Params: params,
		Recorder: func(_ uint64, nodes []cluster.Node) experiment.Recorder {
			var capacity resource.Vector
			for _, n := range nodes {
				capacity = capacity.Add(n.Capacity)
			}
			return NewRecorder(capacity)
		},
	}
	rows, eruns, err := experiment.RunPolicies(ctx, env, label, es, specs, seeds)
	if err != nil {
		return nil, nil, err
	}
	runs := make([]Run, len(eruns))
	for i, r := range eruns {
		rec := r.Recorder.(*Recorder)
		runs[i] = Run{Policy: r.Policy, Label: r.Label, Seed: r.Seed, Result: r.Result, Workers: rec.workers, Total: rec.total,
			Extra: rec.Metrics(r.Result), Starts: rec.first}
	}
	addCI(rows, runs, seeds)
	return rows, runs, nil
}

// ciKeys are the means whose spread over seeds every row reports.
var ciKeys = []string{"jct_mean_s", "makespan_s", "train_time_mean_s"}

// addCI adds to each row <key>_ci95, the half-width of the 95% confidence
// interval of the key's mean over the row's seeds (runs[i*seeds:], as
// RunPolicies orders them), for the keys in ciKeys that the runs report,
// and, when the rows include tf-operator, <key>_vs_tf_operator and its
// _ci95: the change of the row's mean against tf-operator's on the same
// seeds (experiment.ChangeCI95). With one seed there is no interval and
// no _ci95 key.
func addCI(rows []experiment.Row, runs []Run, seeds int) {
	perSeed := func(i int, k string) []float64 {
		var xs []float64
		for _, r := range runs[i*seeds : (i+1)*seeds] {
			m := r.Result.Metrics()
			for ek, v := range r.Extra {
				m[ek] = v
			}
			if v, ok := m[k]; ok {
				xs = append(xs, v)
			}
		}
		return xs
	}
	tf := -1
	for i, r := range rows {
		if r.Policy == "tf-operator" {
			tf = i
		}
	}
	for i := range rows {
		for _, k := range ciKeys {
			xs := perSeed(i, k)
			if len(xs) != seeds {
				continue
			}
			_, h := experiment.MeanCI95(xs)
			experiment.PutCI95(rows[i].Metrics, k+"_ci95", h)
			if tf >= 0 && i != tf {
				if base := perSeed(tf, k); len(base) == seeds {
					c, h := experiment.ChangeCI95(base, xs)
					rows[i].Metrics[k+"_vs_tf_operator"] = c
					experiment.PutCI95(rows[i].Metrics, k+"_vs_tf_operator_ci95", h)
				}
			}
		}
	}
}
