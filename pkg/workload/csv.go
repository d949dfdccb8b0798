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
var columns = []string{"id", "submit_s", "duration_s", "class", "priority", "grace_s", "replicas", "min_replicas",
	"max_replicas", "cpu", "mem_gib", "gpu", "ps_replicas", "ps_cpu", "ps_mem_gib", "ps_gpu", "tenant", "model",
	"utility", "usage_cpu", "node_selector", "tolerations", "ps_node_selector", "ps_tolerations"}

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
	cr := csv.NewReader(r)
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
	return jobs, nil
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FieldError{File: name, Line: pe.Line, Column: pe.Column, Field: "(csv)", Err: pe.Err}
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

func (p *rowParser) num(field string, def float64, min float64) float64 {
	s, ok := p.str(field)
	if !ok {
		return def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.fail(field, fmt.Errorf("%q is not a finite number", s))
		return def
	}
	if v < min {
		p.fail(field, fmt.Errorf("%v is below %v", v, min))
	}
	return v
}

func (p *rowParser) integer(field string, def int) int {
	s, ok := p.str(field)
	if !ok {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		p.fail(field, fmt.Errorf("%q is not an integer", s))
		return def
	}
	return v
}

// maxDemand bounds each demand field (cores, GiB, GPUs) far above any real
// machine, so that no value overflows the int64 units of resource.Vector.
const maxDemand = 1e6

func (p *rowParser) demand(prefix string) resource.Vector {
	var v [3]float64
	for i, f := range []string{"cpu", "mem_gib", "gpu"} {
		v[i] = p.num(prefix+f, 0, 0)
		if v[i] > maxDemand {
			p.fail(prefix+f, fmt.Errorf("%v is above the limit %v", v[i], maxDemand))
		}
	}
	if v[2] != math.Trunc(v[2]) {
		p.fail(prefix+"gpu", fmt.Errorf("%v is not a whole number of GPUs", v[2]))
	}
	return resource.New(v[0], v[1], int64(v[2]))
}

// count parses a replica count within [min, 100000].
func (p *rowParser) count(field string, def, min int) int {
	n := p.integer(field, def)
	if n < min || n > 100000 {
		p.fail(field, fmt.Errorf("%d is outside [%d, 100000]", n, min))
	}
	return n
}

func (p *rowParser) job() *cluster.Job {
	j := &cluster.Job{ID: "job-" + strconv.Itoa(p.line)}
	if s, ok := p.str("id"); ok {
		j.ID = s
	}
	j.Submit = p.num("submit_s", 0, 0)
	j.Work = p.num("duration_s", 0, 0)
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
	j.Priority = p.integer("priority", 0)
	j.GracePeriod = p.num("grace_s", 0, 0)
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
	if u := p.num("usage_cpu", 0, 0); u > maxDemand {
		p.fail("usage_cpu", fmt.Errorf("%v is above the limit %v", u, maxDemand))
	} else if u > 0 {
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
	} else {
		for _, f := range []string{"ps_node_selector", "ps_tolerations"} {
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
