// Package metrics turns per-job records and run statistics into the
// numbers drover reports. Keys are snake_case with units in the name and
// are part of drover's JSON contract: add keys, never rename them.
package metrics

import (
	"math"
	"sort"

	"github.com/drover-sched/drover/pkg/cluster"
)

// JobRecord is what happened to one job in a run.
type JobRecord struct {
	ID          string
	Class       cluster.Class
	Tenant      string
	Model       string
	GPUs        int64 // at the requested counts
	Submit      float64
	FirstStart  float64 // -1 if it never started
	Finish      float64 // -1 if it did not finish
	Work        float64 // run time on an idle cluster
	Preemptions int
	Migrations  int
	Resizes     int
	Rejected    bool
	Reason      string // why it was rejected or never started
	Utility     float64
	// RescheduleDelays are the seconds from each suspension to the next
	// restart.
	RescheduleDelays []float64
}

// Finished reports whether the job completed.
func (r *JobRecord) Finished() bool { return r.Finish >= 0 }

// JCT is finish minus submit.
func (r *JobRecord) JCT() float64 { return r.Finish - r.Submit }

// QueueDelay is first start minus submit.
func (r *JobRecord) QueueDelay() float64 { return r.FirstStart - r.Submit }

// Slowdown is JCT divided by the run time on an idle cluster (FitGpp's
// Eq. 5: waiting plus execution time over execution time).
func (r *JobRecord) Slowdown() float64 { return r.JCT() / r.Work }

// Point is one sample of a time series.
type Point struct {
	T     float64
	Value float64
}

// RunStats are run-wide figures the executor measures.
type RunStats struct {
	Makespan float64 // last finish minus first submit
	// CPU and GPU utilisation: allocated over ready capacity, integrated
	// over time.
	CPUUtil, GPUUtil float64
	Cost             float64 // node price x hours alive
	Refused          int     // actions the executor refused
	GPUUtilSeries    []Point
	ExtraMetrics     map[string]float64 // executor- or policy-specific
}

// Summary computes the standard metric set.
func Summary(recs []JobRecord, st RunStats) map[string]float64 {
	m := map[string]float64{}
	var jct, slow, qd, te, be, teJCT, beJCT []float64
	var preempts, migr, resizes, preemptedJobs, rejected, util float64
	for i := range recs {
		r := &recs[i]
		preempts += float64(r.Preemptions)
		migr += float64(r.Migrations)
		resizes += float64(r.Resizes)
		if r.Preemptions > 0 {
			preemptedJobs++
		}
		if r.Rejected {
			rejected++
		}
		if r.FirstStart >= 0 {
			qd = append(qd, r.QueueDelay())
		}
		if !r.Finished() {
			continue
		}
		util += r.Utility
		jct = append(jct, r.JCT())
		s := r.Slowdown()
		slow = append(slow, s)
		switch r.Class {
		case cluster.ClassTE:
			te = append(te, s)
			teJCT = append(teJCT, r.JCT())
		case cluster.ClassBE:
			be = append(be, s)
			beJCT = append(beJCT, r.JCT())
		}
	}
	m["jobs"] = float64(len(recs))
	m["completed"] = float64(len(jct))
	m["rejected"] = rejected
	m["makespan_s"] = st.Makespan
	m["jct_mean_s"] = Mean(jct)
	putPercentiles(m, "jct", "_s", jct)
	putPercentiles(m, "slowdown", "", slow)
	m["slowdown_mean"] = Mean(slow)
	putPercentiles(m, "te_slowdown", "", te)
	putPercentiles(m, "be_slowdown", "", be)
	m["te_slowdown_mean"], m["be_slowdown_mean"] = Mean(te), Mean(be)
	m["te_jct_mean_s"], m["be_jct_mean_s"] = Mean(teJCT), Mean(beJCT)
	putPercentiles(m, "te_jct", "_s", teJCT)
	putPercentiles(m, "be_jct", "_s", beJCT)
	m["queue_delay_mean_s"] = Mean(qd)
	m["preemptions"] = preempts
	m["preempted_jobs"] = preemptedJobs
	m["migrations"] = migr
	m["resizes"] = resizes
	m["utility_total"] = util
	m["cost"] = st.Cost
	m["cpu_util"] = st.CPUUtil
	m["gpu_util"] = st.GPUUtil
	m["refused_actions"] = float64(st.Refused)
	for k, v := range st.ExtraMetrics {
		m[k] = v
	}
	return m
}

func putPercentiles(m map[string]float64, prefix, unit string, xs []float64) {
	s := Sorted(xs)
	for _, p := range []int{50, 95, 99} {
		m[prefix+"_p"+itoa(p)+unit] = PercentileSorted(s, float64(p))
	}
}

func itoa(p int) string {
	return string(rune('0'+p/10)) + string(rune('0'+p%10))
}

// Mean returns the arithmetic mean, 0 for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Sorted returns a sorted copy.
func Sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

// Percentile returns the p-th percentile (0..100) by linear interpolation
// between closest ranks; 0 for no values.
func Percentile(xs []float64, p float64) float64 { return PercentileSorted(Sorted(xs), p) }

// PercentileSorted is Percentile on already sorted values.
func PercentileSorted(s []float64, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	if len(s) == 1 {
		return s[0]
	}
	p = math.Max(0, math.Min(100, p))
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	hi := int(math.Ceil(r))
	f := r - float64(lo)
	return s[lo]*(1-f) + s[hi]*f
}
