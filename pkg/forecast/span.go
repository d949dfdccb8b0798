package forecast

import (
	"errors"
	"fmt"
	"math"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/embed"
)

// CensorLimit is the largest estimated share of running demand a test span
// may lack at its end because of the trace's cut (see CensoredShare and
// AutoSkipDays).
const CensorLimit = 0.05

// CensoredShare estimates the share of the running demand, gap seconds
// before the end of a trace's collection, that the trace cannot hold: a
// job-list trace such as Philly's keeps only jobs that finished inside
// the collection window, so a job that was running gap seconds before the
// end and ran on past it is missing. With arrivals at a steady rate, the
// demand running at that time that ends more than gap later is
// E[w (D - gap)^+] / E[w D] of the whole, D a job's duration and w its
// weight (its GPUs, or its cores when it has none; demand nil means
// embed.JobVectors). The same expression bounds the ramp-up at the
// trace's start (jobs submitted before it are missing). It is an
// underestimate: the durations come from the trace itself, which lacks
// the longest jobs for the same reason.
func CensoredShare(jobs []*cluster.Job, gap float64, demand embed.DemandFunc) (float64, error) {
	if len(jobs) == 0 {
		return 0, errors.New("censored share: no jobs")
	}
	if math.IsNaN(gap) || gap < 0 {
		return 0, fmt.Errorf("censored share: gap %v: want seconds >= 0", gap)
	}
	if demand == nil {
		demand = embed.JobVectors
	}
	var all, missing float64
	for _, j := range jobs {
		var gpu, cpu float64
		for _, v := range demand(j) {
			gpu += v[embed.GPU]
			cpu += v[embed.CPU]
		}
		w := gpu
		if w == 0 {
			w = cpu
		}
		all += w * j.Work
		missing += w * math.Max(0, j.Work-gap)
	}
	if all == 0 {
		return 0, errors.New("censored share: the jobs have no demand")
	}
	return missing / all, nil
}

// AutoSkipDays returns the fewest whole days to drop from the end of a
// trace's series so that the test span ends where CensoredShare is below
// CensorLimit: the latest span the trace's cut leaves essentially whole.
// For the embedded Philly trace it is 15 days (an estimated 4.9% missing
// there, against 13% a week before the end and 60% a day before it).
func AutoSkipDays(jobs []*cluster.Job, demand embed.DemandFunc) (int, error) {
	for d := 0; d <= 366; d++ {
		sh, err := CensoredShare(jobs, float64(d)*Day, demand)
		if err != nil {
			return 0, err
		}
		if sh < CensorLimit {
			return d, nil
		}
	}
	return 0, fmt.Errorf("auto skip: the censored share stays above %v for a year", CensorLimit)
}

// SpanStats describe a candidate test span of a series.
type SpanStats struct {
	// Mean count per bucket in the span and in the training part before
	// it.
	Mean, TrainMean []float64
	// Trend is the least-squares slope of the span's total count (all
	// buckets), in instances per day; Rise is its last day's mean total
	// minus its first day's.
	Trend, Rise float64
}

// DescribeSpan returns the statistics of steps [from, to) of s and of the
// training steps [0, from).
func DescribeSpan(s Series, from, to int) (SpanStats, error) {
	if from <= 0 || to > s.Len() || to-from < 2 {
		return SpanStats{}, fmt.Errorf("describe span: [%d, %d) is not a span of at least 2 steps after a training part in a series of %d", from, to, s.Len())
	}
	nb := len(s.Buckets)
	st := SpanStats{Mean: make([]float64, nb), TrainMean: make([]float64, nb)}
	tot := make([]float64, 0, to-from)
	for t := 0; t < to; t++ {
		sum := 0.0
		for b, v := range s.Values[t] {
			if t < from {
				st.TrainMean[b] += v / float64(from)
			} else {
				st.Mean[b] += v / float64(to-from)
			}
			sum += v
		}
		if t >= from {
			tot = append(tot, sum)
		}
	}
	n := float64(len(tot))
	var mx, my, sxy, sxx float64
	for i, y := range tot {
		mx += float64(i) / n
		my += y / n
	}
	for i, y := range tot {
		dx := float64(i) - mx
		sxy += dx * (y - my)
		sxx += dx * dx
	}
	day := s.StepsIn(Day)
	st.Trend = sxy / sxx * float64(day)
	if k := min(day, len(tot)); k > 0 {
		var first, last float64
		for i := range k {
			first += tot[i] / float64(k)
			last += tot[len(tot)-k+i] / float64(k)
		}
		st.Rise = last - first
	}
	return st, nil
}
