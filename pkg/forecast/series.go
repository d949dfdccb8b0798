package forecast

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/embed"
)

// Time constants for 5-minute series (the paper's tick: an AWS instance
// launches and initialises in about five minutes).
const (
	DefaultStep = 300.0 // seconds
	Day         = 86400.0
	Week        = 7 * Day
)

// BuildSeries computes bucket counts of a job list: at every snapshot
// t = k*step (k = 0 .. last submit / step) the demand of the jobs that
// are running or pending at t (Submit <= t < Submit + Work, the run time
// an elastic cloud with no queueing would give) is embedded into the
// catalogue's types by first fit increasing (embed.Assign) and counted per
// type, rounded up (Alg. 2). demand maps a job to its per-replica vectors
// (nil: embed.JobVectors; for Philly use embed.PhillyVectors). Buckets are
// the catalogue's type names, in catalogue order.
//
// A job's replicas are assigned to buckets once, so a snapshot costs
// O(buckets) instead of re-sorting every running job.
func BuildSeries(jobs []*cluster.Job, cat embed.Catalog, step float64, demand embed.DemandFunc) (Series, error) {
	if len(jobs) == 0 {
		return Series{}, errors.New("build series: no jobs")
	}
	if len(cat) == 0 {
		return Series{}, errors.New("build series: empty instance catalogue")
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return Series{}, fmt.Errorf("build series: step %v is not a positive number of seconds", step)
	}
	if demand == nil {
		demand = embed.JobVectors
	}
	caps := cat.Caps()
	type event struct {
		t     float64
		job   int
		start bool
	}
	// Per job: summed demand per bucket (sparse).
	type part struct {
		bucket int
		sum    embed.Vec
	}
	parts := make([][]part, len(jobs))
	events := make([]event, 0, 2*len(jobs))
	last := 0.0
	for i, j := range jobs {
		vs := demand(j)
		idx, err := embed.Assign(vs, caps)
		if err != nil {
			return Series{}, fmt.Errorf("build series: job %s: %w", j.ID, err)
		}
		for k, b := range idx {
			found := false
			for p := range parts[i] {
				if parts[i][p].bucket == b {
					parts[i][p].sum = parts[i][p].sum.Add(vs[k])
					found = true
				}
			}
			if !found {
				parts[i] = append(parts[i], part{b, vs[k]})
			}
		}
		if math.IsNaN(j.Submit) || math.IsNaN(j.Work) || j.Work <= 0 {
			return Series{}, fmt.Errorf("build series: job %s: submit %v / work %v is not a valid interval", j.ID, j.Submit, j.Work)
		}
		events = append(events, event{j.Submit, i, true}, event{j.Submit + j.Work, i, false})
		last = math.Max(last, j.Submit)
	}
	// Ends before starts at equal times: [Submit, Submit+Work) is half-open.
	sort.SliceStable(events, func(a, b int) bool {
		if events[a].t != events[b].t {
			return events[a].t < events[b].t
		}
		return !events[a].start && events[b].start
	})
	n := int(math.Floor(last/step)) + 1
	sums := make([]embed.Vec, len(cat))
	s := Series{Start: 0, Step: step, Buckets: cat.Names(), Values: make([][]float64, n)}
	e := 0
	for k := range n {
		t := float64(k) * step
		for e < len(events) && events[e].t <= t {
			sign := -1.0
			if events[e].start {
				sign = 1
			}
			for _, p := range parts[events[e].job] {
				sums[p.bucket] = sums[p.bucket].Add(p.sum.Scale(sign))
			}
			e++
		}
		row := make([]float64, len(cat))
		for b := range cat {
			row[b] = math.Max(0, embed.Count(sums[b], caps[b]))
		}
		s.Values[k] = row
	}
	return s, nil
}

// Columns returns a series holding only the given buckets, in that order.
func (s Series) Columns(idx []int) Series {
	out := Series{Start: s.Start, Step: s.Step, Values: make([][]float64, len(s.Values))}
	for _, i := range idx {
		out.Buckets = append(out.Buckets, s.Buckets[i])
	}
	for t, row := range s.Values {
		r := make([]float64, len(idx))
		for k, i := range idx {
			r[k] = row[i]
		}
		out.Values[t] = r
	}
	return out
}

// NonZero drops buckets that are zero at every step (types the demand
// never uses), which would only add constant columns to every model.
func (s Series) NonZero() Series {
	var keep []int
	for b := range s.Buckets {
		for _, row := range s.Values {
			if row[b] != 0 {
				keep = append(keep, b)
				break
			}
		}
	}
	return s.Columns(keep)
}

// Column returns bucket b as one slice.
func (s Series) Column(b int) []float64 {
	out := make([]float64, len(s.Values))
	for t, row := range s.Values {
		out[t] = row[b]
	}
	return out
}

// StepsIn converts a duration to a whole number of steps of s.
func (s Series) StepsIn(seconds float64) int { return int(math.Round(seconds / s.Step)) }

// Split cuts s by time: the last testSeconds form the test part (the paper
// tests on the last week). Both parts must be non-empty.
func Split(s Series, testSeconds float64) (train, test Series, err error) {
	n := s.StepsIn(testSeconds)
	if n <= 0 {
		return Series{}, Series{}, fmt.Errorf("split: test span %vs is shorter than one step of %vs", testSeconds, s.Step)
	}
	if n >= s.Len() {
		return Series{}, Series{}, fmt.Errorf("split: series of %d steps (%.1f days) is not longer than the %d-step test span", s.Len(), float64(s.Len())*s.Step/Day, n)
	}
	return s.Slice(0, s.Len()-n), s.Slice(s.Len()-n, s.Len()), nil
}

// Windows builds sliding windows for one-step-ahead training (Figure 4):
// X[i] = Values[i : i+w], Y[i] = Values[i+w]. It fails when the series
// is not longer than one window.
func Windows(s Series, w int) (x [][][]float64, y [][]float64, err error) {
	if w <= 0 {
		return nil, nil, fmt.Errorf("window %d must be positive", w)
	}
	if s.Len() <= w {
		return nil, nil, fmt.Errorf("series of %d steps is shorter than one window of %d steps plus a target", s.Len(), w)
	}
	for i := 0; i+w < s.Len(); i++ {
		x = append(x, s.Values[i:i+w])
		y = append(y, s.Values[i+w])
	}
	return x, y, nil
}

// PhillySeries is the paper's Philly series: the jobs mapped to g4dn
// types by GPU count (embed.PhillyVectors), 5-minute snapshots, buckets
// the trace never uses dropped.
func PhillySeries(jobs []*cluster.Job) (Series, error) {
	s, err := BuildSeries(jobs, embed.MustAWS("g4dn"), DefaultStep, embed.PhillyVectors)
	if err != nil {
		return Series{}, fmt.Errorf("philly series: %w", err)
	}
	return s.NonZero(), nil
}

// DemandSnapshots returns the demand vectors of the jobs running or
// pending at t = k*step for k = 0 .. last submit / step, for base-instance
// selection (embed.SelectBase), which must re-embed every snapshot per
// candidate catalogue. demand nil means embed.JobVectors.
func DemandSnapshots(jobs []*cluster.Job, step float64, demand embed.DemandFunc) ([][]embed.Vec, error) {
	if len(jobs) == 0 {
		return nil, errors.New("demand snapshots: no jobs")
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return nil, fmt.Errorf("demand snapshots: step %v is not a positive number of seconds", step)
	}
	if demand == nil {
		demand = embed.JobVectors
	}
	last := 0.0
	for _, j := range jobs {
		last = math.Max(last, j.Submit)
	}
	n := int(math.Floor(last/step)) + 1
	out := make([][]embed.Vec, n)
	for _, j := range jobs {
		vs := demand(j)
		first := int(math.Ceil(j.Submit / step))
		for k := first; k < n && float64(k)*step < j.Submit+j.Work; k++ {
			out[k] = append(out[k], vs...)
		}
	}
	return out, nil
}
