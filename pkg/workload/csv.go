// Package workload loads and generates the job lists that the simulator
// replays: drover's generic trace CSV, the Philly trace, and seeded
// synthetic generators.
package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/constraint"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/textio"
)

// The generic trace format is a CSV file with a header row. Columns may
// come in any order; unknown columns are an error so that a typo is not
// silently ignored. One row is one job.
//
// Required:
//
//	submit_s      submission time in seconds (>= 0)
//	duration_s    run time in seconds on an idle cluster at the requested replicas (> 0)
//	gpu | cpu | mem_gib   at least one of these: per-replica demand of the worker group
//
// Optional:
//
//	id            job id (default: "job-<line>")
//	class         TE or BE (default: empty, i.e. unknown; policies that need it say so)
//	priority      integer, higher first (default 0)
//	grace_s       grace period in seconds (default 0)
//	replicas      worker replicas (default 1); min_replicas, max_replicas (default: replicas)
//	ps_replicas, ps_cpu, ps_mem_gib, ps_gpu   a parameter-server group
//	tenant, model free text
//	utility       sigmoid:G1:G2:G3 (see cluster.Sigmoid)
//	usage_cpu     cores one worker uses when alone (contention model)
//	node_selector key=value;key=value: nodes the workers may use (their labels must match)
//	tolerations   key=value:Effect;key:Effect;key;* : taints the workers tolerate
//	ps_node_selector, ps_tolerations   the same for the parameter servers
//	epochs, chunks, mini_batches, mini_batch_s, gradient_mb, worker_bw_mbs, ps_bw_mbs, sensitivity
//	              OASiS's job model of a job with a parameter-server group (see psParams)
//
// Bounds: times (submit_s, duration_s, grace_s) are at most MaxSeconds,
// priority at most MaxPriority in magnitude, demands at most maxDemand,
// replica counts at most 100000, utility parameters at most MaxUtility in
// magnitude, so that no value overflows the simulator's clock or sums.
var columns = []string{"id", "submit_s", "duration_s", "class", "priority", "grace_s", "replicas", "min_replicas",
	"max_replicas", "cpu", "mem_gib", "gpu", "ps_replicas", "ps_cpu", "ps_mem_gib", "ps_gpu", "tenant", "model",
	"utility", "usage_cpu", "node_selector", "tolerations", "ps_node_selector", "ps_tolerations",
	"epochs", "chunks", "mini_batches", "mini_batch_s", "gradient_mb", "worker_bw_mbs", "ps_bw_mbs", "sensitivity"}

// psColumns are the columns of OASiS's job model.
var psColumns = []string{"epochs", "chunks", "mini_batches", "mini_batch_s", "gradient_mb", "worker_bw_mbs", "ps_bw_mbs", "sensitivity"}

// Bounds of trace values. MaxSeconds (about 31 years) keeps every time
// and the simulator's clock far below where float64 spacing reaches a
// second; beyond it a value such as 1e308 overflows sums into NaN metrics.
const (
	MaxSeconds  = 1e9
	MaxPriority = 1_000_000_000
	MaxUtility  = 1e12
)

// Format names a trace format.
type Format string

// The trace formats.
const (
	FormatGeneric Format = "generic"
	FormatPhilly  Format = "philly"
)

// phillyColumns are the columns ParsePhilly needs.
var phillyColumns = []string{"timestamp", "duration", "num_gpus", "gpu_time", "cluster"}

// SniffFormat tells the trace format from the file's header row: generic
// when it has submit_s, Philly when it has timestamp and num_gpus. A header
// that is neither is an error naming both formats' columns, so that the
// caller can ask for --trace-format. The file name plays no part.
func SniffFormat(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(textio.NewCSVReader(f, path))
	cr.FieldsPerRecord = -1
	hdr, err := cr.Read()
	if err == io.EOF {
		return "", &FieldError{File: path, Line: 1, Err: errors.New("empty file: no header row")}
	}
	if err != nil {
		return "", csvErr(path, err)
	}
	has := map[string]bool{}
	for _, h := range hdr {
		has[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = true
	}
	switch {
	case has["submit_s"]:
		return FormatGeneric, nil
	case has["timestamp"] && has["num_gpus"]:
		return FormatPhilly, nil
	}
	return "", &FieldError{File: path, Line: 1, Err: fmt.Errorf("header is neither the generic format (submit_s, duration_s, ...) nor Philly's (%s)", strings.Join(phillyColumns, ","))}
}

// FieldError locates a problem in an input file.
type FieldError struct {
	File   string
	Line   int
	Column int
	Field  string
	Err    error
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: field %s: %v", e.File, e.Line, e.Column, e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// LoadCSVFile reads a generic trace file.
func LoadCSVFile(path string) ([]*cluster.Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	return ParseCSV(f, path)
}

// ParseCSV reads the generic trace format from r; name is used in errors.
// It returns all jobs or an error: a bad row never yields a partial list.
func ParseCSV(r io.Reader, name string) ([]*cluster.Job, error) {
	cr := csv.NewReader(textio.NewCSVReader(r, name))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, &FieldError{File: name, Line: 1, Err: errors.New("empty file: no header row")}
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" {
			return nil, &FieldError{File: name, Line: 1, Column: i + 1, Field: fmt.Sprintf("(column %d)", i+1), Err: errors.New("empty column name")}
		}
		known := false
		for _, c := range columns {
			known = known || c == h
		}
		if !known {
			return nil, &FieldError{File: name, Line: 1, Column: i + 1, Field: h, Err: fmt.Errorf("unknown column (known: %s)", strings.Join(columns, ", "))}
		}
		if _, dup := col[h]; dup {
			return nil, &FieldError{File: name, Line: 1, Column: i + 1, Field: h, Err: errors.New("duplicate column")}
		}
		col[h] = i
	}
	for _, req := range []string{"submit_s", "duration_s"} {
		if _, ok := col[req]; !ok {
			return nil, &FieldError{File: name, Line: 1, Err: fmt.Errorf("missing required column %s", req)}
		}
	}
	_, g := col["gpu"]
	_, c := col["cpu"]
	_, m := col["mem_gib"]
	if !g && !c && !m {
		return nil, &FieldError{File: name, Line: 1, Err: errors.New("missing demand: need at least one of the columns gpu, cpu, mem_gib")}
	}
	var jobs []*cluster.Job
	ids := map[string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, &FieldError{File: name, Line: line, Err: fmt.Errorf("%d fields, header has %d", len(rec), len(header))}
		}
		p := rowParser{file: name, line: line, rec: rec, col: col}
		j := p.job()
		if p.err != nil {
			return nil, p.err
		}
		if prev, dup := ids[j.ID]; dup {
			return nil, &FieldError{File: name, Line: line, Column: col["id"] + 1, Field: "id", Err: fmt.Errorf("duplicate id %q (first on line %d)", j.ID, prev)}
		}
		ids[j.ID] = line
		if err := j.Validate(); err != nil {
			return nil, &FieldError{File: name, Line: line, Err: err}
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, &FieldError{File: name, Line: 2, Err: errors.New("no jobs: the trace has a header but no rows")}
	}
	return jobs, nil
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FieldError{File: name, Line: pe.Line, Column: pe.Column, Field: "(csv)", Err: pe.Err}
	}
	if textio.IsLimit(err) {
		return err // names the file and line already
	}
	return fmt.Errorf("%s: %w", name, err)
}

type rowParser struct {
	file string
	line int
	rec  []string
	col  map[string]int
	err  error
}

// fail records the first error of the row. The column is given only when
// the field is a column of the file, so an error never points at a column
// that is not there.
func (p *rowParser) fail(field string, err error) {
	if p.err == nil {
		col := 0
		if i, ok := p.col[field]; ok {
			col = i + 1
		}
		p.err = &FieldError{File: p.file, Line: p.line, Column: col, Field: field, Err: err}
	}
}

func (p *rowParser) str(field string) (string, bool) {
	i, ok := p.col[field]
	if !ok {
		return "", false
	}
	s := strings.TrimSpace(p.rec[i])
	return s, s != ""
}

// num parses a number in [min, max], or returns def when the field is
// absent or empty.
func (p *rowParser) num(field string, def, min, max float64) float64 {
	s, ok := p.str(field)
	if !ok {
		return def
	}
	v, err := textio.ParseDecimal(s)
	if err != nil {
		p.fail(field, err)
		return def
	}
	if v < min {
		p.fail(field, fmt.Errorf("%v is below %v", v, min))
	}
	if v > max {
		p.fail(field, fmt.Errorf("%v is above the limit %v", v, max))
	}
	return v
}

// integer parses an integer in [min, max], or returns def when the field
// is absent or empty.
func (p *rowParser) integer(field string, def, min, max int) int {
	s, ok := p.str(field)
	if !ok {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		p.fail(field, fmt.Errorf("%q is not an integer", s))
		return def
	}
	if v < min || v > max {
		p.fail(field, fmt.Errorf("%d is outside [%d, %d]", v, min, max))
	}
	return v
}

// maxDemand bounds each demand field (cores, GiB, GPUs) far above any real
// machine, so that no value overflows the int64 units of resource.Vector.
const maxDemand = 1e6

func (p *rowParser) demand(prefix string) resource.Vector {
	var v [3]float64
	for i, f := range []string{"cpu", "mem_gib", "gpu"} {
		v[i] = p.num(prefix+f, 0, 0, maxDemand)
	}
	if v[2] != math.Trunc(v[2]) {
		p.fail(prefix+"gpu", fmt.Errorf("%v is not a whole number of GPUs", v[2]))
	}
	d := resource.New(v[0], v[1], int64(v[2]))
	// A positive amount below the unit (a millicore, a byte) would vanish
	// silently: cpu=0.0001 beside a GPU asked for no CPU at all.
	if v[0] > 0 && d[resource.CPU] == 0 {
		p.fail(prefix+"cpu", fmt.Errorf("%v rounds to 0 (the smallest amount is 0.001)", v[0]))
	}
	if v[1] > 0 && d[resource.Memory] == 0 {
		p.fail(prefix+"mem_gib", fmt.Errorf("%v rounds to 0 (the smallest amount is one byte, %.3g GiB)", v[1], 1/float64(resource.GiB)))
	}
	return d
}

// count parses a replica count within [min, 100000].
func (p *rowParser) count(field string, def, min int) int {
	return p.integer(field, def, min, 100000)
}

func (p *rowParser) job() *cluster.Job {
	j := &cluster.Job{ID: "job-" + strconv.Itoa(p.line)}
	if s, ok := p.str("id"); ok {
		j.ID = s
	}
	j.Submit = p.num("submit_s", 0, 0, MaxSeconds)
	j.Work = p.num("duration_s", 0, 0, MaxSeconds)
	if j.Work <= 0 && p.err == nil {
		p.fail("duration_s", errors.New("must be positive"))
	}
	if s, ok := p.str("class"); ok {
		c, err := cluster.ParseClass(s)
		if err != nil {
			p.fail("class", err)
		}
		j.Class = c
	}
	j.Priority = p.integer("priority", 0, -MaxPriority, MaxPriority)
	j.GracePeriod = p.num("grace_s", 0, 0, MaxSeconds)
	n := p.count("replicas", 1, 1)
	w := cluster.ReplicaGroup{Name: "worker", Demand: p.demand(""), Replicas: n,
		Min: p.count("min_replicas", n, 0), Max: p.count("max_replicas", n, 1)}
	if w.Min > w.Max {
		p.fail("min_replicas", fmt.Errorf("%d is above max_replicas %d", w.Min, w.Max))
	}
	if n < w.Min || n > w.Max {
		p.fail("replicas", fmt.Errorf("%d is outside [min_replicas %d, max_replicas %d]", n, w.Min, w.Max))
	}
	if w.Demand.IsZero() && p.err == nil {
		p.fail(firstPresent(p.col, "gpu", "cpu", "mem_gib"), errors.New("worker demand is zero: set gpu, cpu or mem_gib"))
	}
	if u := p.num("usage_cpu", 0, 0, maxDemand); u > 0 {
		w.Usage = w.Demand
		w.Usage[resource.CPU] = int64(u*1000 + 0.5)
	}
	w.Constraint = p.constraint("")
	j.Groups = append(j.Groups, w)
	if ps := p.count("ps_replicas", 0, 0); ps > 0 {
		d := p.demand("ps_")
		if d.IsZero() && p.err == nil {
			p.fail("ps_replicas", errors.New("is set but the parameter-server demand is zero: set ps_cpu, ps_mem_gib or ps_gpu"))
		}
		j.Groups = append(j.Groups, cluster.ReplicaGroup{Name: "ps", Demand: d, Replicas: ps, Min: ps, Max: ps,
			Constraint: p.constraint("ps_")})
		j.PS = p.psParams(j)
	} else {
		for _, f := range append([]string{"ps_node_selector", "ps_tolerations"}, psColumns...) {
			if _, ok := p.str(f); ok {
				p.fail(f, errors.New("is set but ps_replicas is not"))
			}
		}
	}
	j.Tenant, _ = p.str("tenant")
	j.Model, _ = p.str("model")
	if s, ok := p.str("utility"); ok {
		u, err := ParseUtility(s)
		if err != nil {
			p.fail("utility", err)
		}
		j.Utility = u
	}
	j.Seed = uint64(p.line)
	return j
}

// psParams reads OASiS's job model of a job with a parameter-server group
// (issue 17 item 11: without it the OASiS policies had nothing to plan
// with). Every column is optional; the defaults make the model agree with
// the row: one epoch over chunks = max_replicas data chunks (at most that
// many workers at a time) of one mini-batch each, no gradient traffic,
// worker bandwidth 1 MB/s and parameter-server bandwidth replicas /
// ps_replicas MB/s (so the requested workers need exactly ps_replicas
// servers), and mini_batch_s such that the job needs duration_s x
// replicas worker-seconds. Given mini_batch_s, the worker-seconds
// epochs x chunks x mini_batches x (mini_batch_s + 2 gradient_mb /
// worker_bw_mbs) must be that product within 1%.
func (p *rowParser) psParams(j *cluster.Job) *cluster.PSParams {
	w, ps := j.Groups[0], j.Groups[1]
	pp := &cluster.PSParams{
		Epochs:      p.integer("epochs", 1, 1, 1_000_000),
		Chunks:      p.integer("chunks", w.Max, 1, 100000),
		MiniBatches: p.integer("mini_batches", 1, 1, 1_000_000),
		GradientMB:  p.num("gradient_mb", 0, 0, 1e9),
		WorkerBW:    p.num("worker_bw_mbs", 1, 1e-6, 1e9),
	}
	pp.PSBW = p.num("ps_bw_mbs", pp.WorkerBW*float64(w.Replicas)/float64(ps.Replicas), 1e-6, 1e12)
	if s, ok := p.str("sensitivity"); ok {
		switch s {
		case "insensitive", "sensitive", "critical":
			pp.Sensitivity = s
		default:
			p.fail("sensitivity", fmt.Errorf("%q: want insensitive, sensitive or critical", s))
		}
	}
	if p.err != nil {
		return nil
	}
	need := j.Work * float64(w.Replicas) // worker-seconds at the requested counts
	batches := float64(pp.Epochs) * float64(pp.Chunks) * float64(pp.MiniBatches)
	comm := 2 * pp.GradientMB / pp.WorkerBW
	if _, ok := p.str("mini_batch_s"); ok {
		pp.MiniBatchTime = p.num("mini_batch_s", 0, 0, MaxSeconds)
		if got := batches * (pp.MiniBatchTime + comm); p.err == nil && math.Abs(got-need) > 0.01*need {
			p.fail("mini_batch_s", fmt.Errorf("the model needs %.6g worker-seconds, duration_s x replicas is %.6g: they must agree within 1%%", got, need))
		}
	} else if pp.MiniBatchTime = need/batches - comm; pp.MiniBatchTime < 0 {
		p.fail("gradient_mb", fmt.Errorf("communication alone (%.6g s per mini-batch) exceeds duration_s x replicas / (epochs x chunks x mini_batches)", comm))
	}
	if p.err != nil {
		return nil
	}
	return pp
}

// constraint parses a group's node_selector and tolerations columns
// (with the given prefix); nil when both are empty.
func (p *rowParser) constraint(prefix string) cluster.NodeConstraint {
	var spec constraint.Spec
	if s, ok := p.str(prefix + "node_selector"); ok {
		m, err := constraint.ParseSelector(s)
		if err != nil {
			p.fail(prefix+"node_selector", err)
			return nil
		}
		spec.NodeSelector = m
	}
	if s, ok := p.str(prefix + "tolerations"); ok {
		t, err := constraint.ParseTolerations(s)
		if err != nil {
			p.fail(prefix+"tolerations", err)
			return nil
		}
		spec.Tolerations = t
	}
	c, err := constraint.New(spec)
	if err != nil {
		p.fail(prefix+"node_selector", err)
		return nil
	}
	return c
}

// firstPresent returns the first of fields that is a column, or the first
// field when none is.
func firstPresent(col map[string]int, fields ...string) string {
	for _, f := range fields {
		if _, ok := col[f]; ok {
			return f
		}
	}
	return fields[0]
}

// ParseUtility parses "sigmoid:G1:G2:G3".
func ParseUtility(s string) (cluster.Utility, error) {
	parts := strings.Split(s, ":")
	if parts[0] != "sigmoid" || len(parts) != 4 {
		return nil, fmt.Errorf("%q: want sigmoid:G1:G2:G3", s)
	}
	var g [3]float64
	for i := range g {
		v, err := strconv.ParseFloat(parts[i+1], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q: parameter %d is not a finite number", s, i+1)
		}
		if math.Abs(v) > MaxUtility {
			return nil, fmt.Errorf("%q: parameter %d is beyond +-%v", s, i+1, MaxUtility)
		}
		g[i] = v
	}
	return cluster.Sigmoid{G1: g[0], G2: g[1], G3: g[2]}, nil
}

// WriteCSV writes jobs in the generic format (worker and ps groups only),
// so that a generated workload can be saved, edited and replayed.
func WriteCSV(w io.Writer, jobs []*cluster.Job) error {
	cw := csv.NewWriter(w)
	hdr := []string{"id", "submit_s", "duration_s", "class", "priority", "grace_s", "replicas", "min_replicas", "max_replicas",
		"cpu", "mem_gib", "gpu", "ps_replicas", "ps_cpu", "ps_mem_gib", "ps_gpu", "tenant", "model"}
	withC := false
	for _, j := range jobs {
		for _, g := range j.Groups {
			withC = withC || g.Constraint != nil
		}
	}
	if withC { // only then, so that files written before stay the same
		hdr = append(hdr, "node_selector", "tolerations", "ps_node_selector", "ps_tolerations")
	}
	if err := cw.Write(hdr); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, j := range jobs {
		g := j.Groups[0]
		class := ""
		if j.Class != cluster.ClassUnknown {
			class = j.Class.String()
		}
		row := []string{j.ID, f(j.Submit), f(j.Work), class, strconv.Itoa(j.Priority), f(j.GracePeriod),
			strconv.Itoa(g.Replicas), strconv.Itoa(g.Min), strconv.Itoa(g.Max),
			f(float64(g.Demand[resource.CPU]) / 1000), f(float64(g.Demand[resource.Memory]) / float64(resource.GiB)), strconv.FormatInt(g.Demand[resource.GPU], 10),
			"", "", "", "", j.Tenant, j.Model}
		if len(j.Groups) > 1 {
			p := j.Groups[1]
			row[12], row[13] = strconv.Itoa(p.Replicas), f(float64(p.Demand[resource.CPU])/1000)
			row[14], row[15] = f(float64(p.Demand[resource.Memory])/float64(resource.GiB)), strconv.FormatInt(p.Demand[resource.GPU], 10)
		}
		if withC {
			for k := 0; k < 2; k++ {
				sel, tol := "", ""
				if k < len(j.Groups) {
					if c, ok := j.Groups[k].Constraint.(*constraint.Constraint); ok {
						sel, tol = constraint.FormatSelector(c.Spec().NodeSelector), constraint.FormatTolerations(c.Spec().Tolerations)
					}
				}
				row = append(row, sel, tol)
			}
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
