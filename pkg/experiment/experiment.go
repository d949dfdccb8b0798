// Package experiment defines named, reproducible simulator experiments and
// the report they produce (a table, the JSON contract, per-job CSVs and
// charts). Each policy package contributes its experiments; package
// registry lists them all.
package experiment

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/policy"
)

// Env is what an experiment may use besides its own definition.
type Env struct {
	// Seed is the first seed; multi-seed experiments use Seed..Seed+Seeds-1.
	Seed uint64
	// Seeds overrides an experiment's number of seeds when positive.
	Seeds int
	// Policies builds policies by name.
	Policies *policy.Registry
	// PhillyPath is the Philly trace file, or "" for the embedded copy.
	PhillyPath string
	// Quick asks for a reduced scale (tests and smoke runs); experiments
	// say in their notes what they shrank.
	Quick bool
	// Progress, when set, receives progress of long runs. Calls are
	// serialised (see Parallel).
	Progress func(label string, done, total int)
	// Workers is how many simulations run at once (see Parallel); 0 means
	// GOMAXPROCS. The output does not depend on it.
	Workers int
}

// SeedCount returns Seeds if set, else def.
func (e *Env) SeedCount(def int) int {
	if e.Seeds > 0 {
		return e.Seeds
	}
	return def
}

// Row is one line of results: a policy, optionally with the parameters of a
// sweep point, and its metrics.
type Row struct {
	Policy  string             `json:"policy"`
	Params  map[string]string  `json:"params,omitempty"`
	Metrics map[string]float64 `json:"metrics"`
	// Rejected and Unfinished count the jobs the policy rejected, and
	// those still pending or running when the run ended, by reason (see
	// ReasonKey), as a mean over seeds; absent when there are none. Rows
	// of RunPolicies fill them.
	Rejected   map[string]float64 `json:"rejected,omitempty"`
	Unfinished map[string]float64 `json:"unfinished,omitempty"`
}

// JobTable is the per-job records of one run, written as CSV with --out.
type JobTable struct {
	Name    string // file stem, e.g. "jobs-fifo"
	Records []metrics.JobRecord
}

// Report is what an experiment returns. Its JSON form is drover's stable
// contract: {"experiment", "seed", "results": [{"policy", "metrics"}]}.
type Report struct {
	Experiment string   `json:"experiment"`
	Seed       uint64   `json:"seed"`
	Seeds      int      `json:"seeds,omitempty"`
	Results    []Row    `json:"results"`
	Notes      []string `json:"notes,omitempty"`
	// Columns are the metrics the table shows, in order; params of sweep
	// rows are shown before them.
	Columns []string `json:"-"`
	// Jobs and Charts are written to --out.
	Jobs   []JobTable  `json:"-"`
	Charts []ChartFile `json:"-"`
}

// ChartFile is a chart and the file it goes to.
type ChartFile struct {
	File  string
	Line  *chart.Line
	Gantt *chart.Timeline
}

// Experiment is a named experiment.
type Experiment struct {
	Name        string
	Description string
	Run         func(ctx context.Context, env *Env) (*Report, error)
}

// Registry holds experiments by name; filled explicitly by package
// registry.
type Registry struct {
	m map[string]Experiment
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Experiment{}} }

// Add registers experiments; a duplicate name is an error.
func (r *Registry) Add(es ...Experiment) error {
	for _, e := range es {
		if _, dup := r.m[e.Name]; dup {
			return fmt.Errorf("experiment %q registered twice", e.Name)
		}
		r.m[e.Name] = e
	}
	return nil
}

// Get finds an experiment by name.
func (r *Registry) Get(name string) (Experiment, error) {
	e, ok := r.m[name]
	if !ok {
		return Experiment{}, fmt.Errorf("unknown experiment %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return e, nil
}

// Names lists experiment names sorted.
func (r *Registry) Names() []string {
	var n []string
	for k := range r.m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// All lists experiments sorted by name.
func (r *Registry) All() []Experiment {
	var out []Experiment
	for _, n := range r.Names() {
		out = append(out, r.m[n])
	}
	return out
}

// MeanMetrics averages metric maps key by key (over seeds).
func MeanMetrics(ms []map[string]float64) map[string]float64 {
	out := map[string]float64{}
	if len(ms) == 0 {
		return out
	}
	n := map[string]int{}
	for _, m := range ms {
		for k, v := range m {
			out[k] += v
			n[k]++
		}
	}
	for k := range out {
		out[k] /= float64(n[k]) // a key some seeds lack is the mean of those that have it
	}
	return out
}

// Change returns (b - a) / a, the relative change from a to b; 0 when a is
// 0.
func Change(a, b float64) float64 {
	if a == 0 || math.IsNaN(a) {
		return 0
	}
	return (b - a) / a
}

// DefaultColumns are the table columns when an experiment sets none.
var DefaultColumns = []string{"jobs", "completed", "jct_mean_s", "jct_p50_s", "jct_p95_s", "slowdown_p50", "slowdown_p95",
	"queue_delay_mean_s", "preemptions", "makespan_s", "gpu_util"}
