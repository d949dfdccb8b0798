package workload

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/textio"
)

// phillyGz is the Philly job list (shared/traces/philly.csv, 82,247 jobs),
// gzipped and embedded so that `drover sim --experiment philly` runs on a
// fresh machine. Microsoft Philly cluster trace, Jeon et al., USENIX ATC
// 2019, CC BY 4.0; the job list is the Pollux artifact's.
//
//go:embed philly.csv.gz
var phillyGz []byte

// PhillyOptions say how the loader derives what the trace lacks. The trace
// has only GPU counts and durations: CPU and memory are set in proportion
// to GPUs (so GPUs stay the bottleneck, as in the real cluster), and the
// class is derived from the duration.
type PhillyOptions struct {
	// GPUsPerNode bounds one replica: a job of g GPUs is split into
	// replicas of the largest divisor of g that is at most GPUsPerNode.
	GPUsPerNode int
	// CoresPerGPU and MemGiBPerGPU give each replica's CPU and memory.
	CoresPerGPU, MemGiBPerGPU float64
	// TEMaxDuration: jobs that ran at most this long are trial-and-error
	// (TE), the rest best-effort (BE). 300 s makes 32.7% of jobs TE, close
	// to FitGpp's 30%.
	TEMaxDuration float64
	// GracePeriod given to every BE job (the trace has none).
	GracePeriod float64
	// Limit keeps only the first Limit jobs by submit time (0: all); Skip
	// drops the first Skip jobs first. Submit times are rebased to 0.
	Limit, Skip int
}

// DefaultPhillyOptions are the documented defaults: replicas of up to 8
// GPUs, 6 cores and 48 GiB per GPU (a node of 8 GPUs, 48 cores and 384 GiB
// holds exactly 8 one-GPU jobs), TE at most 300 s, 60 s grace.
func DefaultPhillyOptions() PhillyOptions {
	return PhillyOptions{GPUsPerNode: 8, CoresPerGPU: 6, MemGiBPerGPU: 48, TEMaxDuration: 300, GracePeriod: 60}
}

// PhillyNode is the node shape the Philly experiments use.
func PhillyNode(o PhillyOptions) resource.Vector {
	return resource.New(o.CoresPerGPU*float64(o.GPUsPerNode), o.MemGiBPerGPU*float64(o.GPUsPerNode), int64(o.GPUsPerNode))
}

// LoadPhilly reads the Philly trace from path, or from the embedded copy
// when path is empty.
func LoadPhilly(path string, o PhillyOptions) ([]*cluster.Job, error) {
	var r io.Reader
	name := path
	if path == "" {
		zr, err := gzip.NewReader(bytes.NewReader(phillyGz))
		if err != nil {
			return nil, fmt.Errorf("embedded philly trace: %w", err)
		}
		r, name = zr, "philly.csv (embedded)"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open philly trace: %w", err)
		}
		defer f.Close()
		r = f
	}
	return ParsePhilly(r, name, o)
}

// ParsePhilly parses the Philly CSV (timestamp,duration,num_gpus,gpu_time,
// cluster) and derives jobs as PhillyOptions describes. Jobs are returned
// sorted by submit time, ids are "philly-<line>".
func ParsePhilly(r io.Reader, name string, o PhillyOptions) ([]*cluster.Job, error) {
	if o.GPUsPerNode <= 0 {
		return nil, errors.New("philly options: GPUsPerNode must be positive")
	}
	cr := csv.NewReader(textio.NewCSVReader(r, name))
	cr.ReuseRecord = true
	hdr, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, &FieldError{File: name, Line: 1, Err: errors.New("empty file: no header row")}
		}
		return nil, csvErr(name, err)
	}
	want := phillyColumns
	col := map[string]int{}
	for i, h := range hdr {
		col[strings.TrimSpace(h)] = i
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, &FieldError{File: name, Line: 1, Err: fmt.Errorf("missing column %s (want %s)", w, strings.Join(want, ","))}
		}
	}
	type row struct {
		t    int64
		line int
		j    *cluster.Job
	}
	var rows []row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		fe := func(field string, err error) error {
			return &FieldError{File: name, Line: line, Column: col[field] + 1, Field: field, Err: err}
		}
		ts, err := time.Parse("2006-01-02 15:04:05", strings.TrimSpace(rec[col["timestamp"]]))
		if err != nil {
			return nil, fe("timestamp", fmt.Errorf("%q is not YYYY-MM-DD HH:MM:SS", rec[col["timestamp"]]))
		}
		dur, err := textio.ParseDecimal(strings.TrimSpace(rec[col["duration"]]))
		if err != nil || dur <= 0 || dur > MaxSeconds {
			return nil, fe("duration", fmt.Errorf("%q is not a number of seconds in (0, %v]", rec[col["duration"]], MaxSeconds))
		}
		g, err := strconv.Atoi(strings.TrimSpace(rec[col["num_gpus"]]))
		if err != nil || g <= 0 || g > 1<<20 {
			return nil, fe("num_gpus", fmt.Errorf("%q is not a positive GPU count", rec[col["num_gpus"]]))
		}
		per := 1
		for d := min(g, o.GPUsPerNode); d >= 1; d-- {
			if g%d == 0 {
				per = d
				break
			}
		}
		n := g / per
		class := cluster.ClassBE
		grace := o.GracePeriod
		if dur <= o.TEMaxDuration {
			class, grace = cluster.ClassTE, 0
		}
		j := &cluster.Job{ID: "philly-" + strconv.Itoa(line), Class: class, Tenant: strings.TrimSpace(rec[col["cluster"]]),
			Work: dur, GracePeriod: grace, Seed: uint64(line),
			Groups: []cluster.ReplicaGroup{{Name: "worker", Replicas: n, Min: n, Max: n,
				Demand: resource.New(o.CoresPerGPU*float64(per), o.MemGiBPerGPU*float64(per), int64(per))}}}
		rows = append(rows, row{t: ts.Unix(), line: line, j: j})
	}
	if len(rows) == 0 {
		return nil, &FieldError{File: name, Line: 2, Err: errors.New("no jobs")}
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].t < rows[b].t })
	if o.Skip > 0 {
		rows = rows[min(o.Skip, len(rows)):]
	}
	if o.Limit > 0 && len(rows) > o.Limit {
		rows = rows[:o.Limit]
	}
	jobs := make([]*cluster.Job, len(rows))
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no jobs left after skip=%d", name, o.Skip)
	}
	t0 := rows[0].t
	for i, r := range rows {
		if d := r.t - t0; d > MaxSeconds {
			return nil, &FieldError{File: name, Line: r.line, Column: col["timestamp"] + 1, Field: "timestamp",
				Err: fmt.Errorf("%d s after the first job, beyond the limit %v", d, MaxSeconds)}
		}
		r.j.Submit = float64(r.t - t0)
		jobs[i] = r.j
	}
	return jobs, nil
}
