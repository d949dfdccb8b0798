package apply

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are the scheduler's Prometheus metrics, served by the manager on
// /metrics together with controller-runtime's own.
type Metrics struct {
	CycleSeconds prometheus.Histogram
	QueueLength  *prometheus.GaugeVec
	Running      prometheus.Gauge
	Actions      *prometheus.CounterVec // by kind: start, preempt, migrate, resize, reject
	Refused      *prometheus.CounterVec // by kind
	Bindings     prometheus.Counter
	Conflicts    prometheus.Counter
	StuckPods    prometheus.Gauge
	// PolicyPanics counts panics of the policy's code contained by the
	// executor, by stage (job, rebalance, provision, cycle).
	PolicyPanics *prometheus.CounterVec
	// FencedWrites counts API writes refused because the process could
	// not show it still held the leader Lease (fence.go).
	FencedWrites prometheus.Counter
	// LeaseLosses counts terms of leadership that ended with the lease
	// lost, after which the process campaigned again (Campaign).
	LeaseLosses prometheus.Counter

	// Job-phase metrics (jobmetrics.go): TrainingJobs by phase and class,
	// and what happened to them, counted at the status write that did it.
	Jobs         *prometheus.GaugeVec     // by phase, class
	Completions  *prometheus.CounterVec   // by class
	Failures     *prometheus.CounterVec   // by class
	Preemptions  *prometheus.CounterVec   // by class, reason (make-room, policy, node-lost)
	Migrations   *prometheus.CounterVec   // by class
	Resizes      *prometheus.CounterVec   // by class, direction (up, down, same)
	WaitSeconds  *prometheus.HistogramVec // by class: queue time until a start
	Placeholders prometheus.Gauge
}

var (
	metricsOnce sync.Once
	metricsInst *Metrics
)

// DefaultMetrics returns the process-wide metrics, registered with
// controller-runtime's registry on first use (several executors in one
// process, as in tests, share them).
func DefaultMetrics() *Metrics {
	metricsOnce.Do(func() {
		metricsInst = NewMetrics(crmetrics.Registry)
	})
	return metricsInst
}

func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{
		CycleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drover_cycle_duration_seconds", Help: "Duration of one scheduling cycle (snapshot, policy, API calls).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		QueueLength: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drover_queue_length", Help: "Pending TrainingJobs by class.",
		}, []string{"class"}),
		Running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_running_jobs", Help: "TrainingJobs holding resources.",
		}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_actions_total", Help: "Policy actions carried out, by kind (start, preempt, migrate, resize, reject, ...).",
		}, []string{"kind"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_refused_actions_total", Help: "Policy actions the executor refused, by kind.",
		}, []string{"kind"}),
		Bindings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_bindings_total", Help: "Pods bound through the Binding subresource.",
		}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_conflicts_total", Help: "resourceVersion conflicts retried.",
		}),
		StuckPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_stuck_terminating_pods", Help: "Replica pods terminating past their grace period.",
		}),
		PolicyPanics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_policy_panics_total", Help: "Panics of the policy's plugins contained by the executor, by stage (job, rebalance, provision, cycle).",
		}, []string{"stage"}),
		FencedWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_fenced_writes_total", Help: "API writes refused because leadership could not be confirmed (lease lost or not renewed in time).",
		}),
		LeaseLosses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_lease_losses_total", Help: "Terms of leadership that ended with the lease lost; the process stopped scheduling and campaigned again.",
		}),
	}
	m.addJobMetrics()
	m.initLabels()
	for _, c := range []prometheus.Collector{m.CycleSeconds, m.QueueLength, m.Running, m.Actions, m.Refused, m.Bindings, m.Conflicts, m.StuckPods, m.PolicyPanics, m.FencedWrites, m.LeaseLosses,
		m.Jobs, m.Completions, m.Failures, m.Preemptions, m.Migrations, m.Resizes, m.WaitSeconds, m.Placeholders} {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
	return m
}

// Known label values of the labelled counters and histograms. Each series
// is created at zero when the metrics are, so that a dashboard panel or a
// rate() over it shows 0 rather than "No data" until the first event.
var (
	actionKinds    = []string{"start", "preempt", "migrate", "resize", "reject", "placeholders"}
	refusedKinds   = []string{"start", "preempt", "migrate", "resize", "reject", "wait", "label", "provision", "release", "placeholders"}
	panicStages    = []string{"job", "rebalance", "provision", "cycle"}
	jobClasses     = []string{"TE", "BE"}
	preemptReasons = []string{PreemptMakeRoom, PreemptPolicy, PreemptNodeLost, PreemptInvalidStatus}
	resizeDirs     = []string{"up", "down", "same"}
)

// initLabels creates every labelled series of a known label value at
// zero.
func (m *Metrics) initLabels() {
	for _, k := range actionKinds {
		m.Actions.WithLabelValues(k)
	}
	for _, k := range refusedKinds {
		m.Refused.WithLabelValues(k)
	}
	for _, s := range panicStages {
		m.PolicyPanics.WithLabelValues(s)
	}
	for _, c := range jobClasses {
		m.QueueLength.WithLabelValues(c)
		m.Completions.WithLabelValues(c)
		m.Failures.WithLabelValues(c)
		m.Migrations.WithLabelValues(c)
		m.WaitSeconds.WithLabelValues(c)
		for _, r := range preemptReasons {
			m.Preemptions.WithLabelValues(c, r)
		}
		for _, d := range resizeDirs {
			m.Resizes.WithLabelValues(c, d)
		}
	}
}
