package apply

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// Job-phase metrics. The counters are driven by the executor's status
// writes (Writer.UpdateStatus calls transition with the status it replaced and
// the one it wrote), so every path that changes a job's phase or counters
// (the policy's actions, reconciling completions and failures, a node that
// disappeared) is counted exactly once, by the scheduler that wrote it.

// Preemption reasons, the reason label of drover_preemptions_total.
const (
	// PreemptMakeRoom: a Preempt action on behalf of another job (its By
	// is set), such as FitGpp's TE jobs preempting BE jobs.
	PreemptMakeRoom = "make-room"
	// PreemptPolicy: a Preempt action without a beneficiary, the policy's
	// own plan (an OASiS slot that gives the job no replicas, say).
	PreemptPolicy = "policy"
	// PreemptNodeLost: the job was requeued because a node of its
	// placement is gone.
	PreemptNodeLost = "node-lost"
	// PreemptInvalidStatus: the job was requeued because its stored
	// placement failed the executor's checks (an edited status).
	PreemptInvalidStatus = "invalid-status"
)

func (m *Metrics) addJobMetrics() {
	m.Jobs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "drover_jobs", Help: "TrainingJobs by phase and class (set by the leader every cycle).",
	}, []string{"phase", "class"})
	m.Completions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_job_completions_total", Help: "TrainingJobs that Succeeded, by class.",
	}, []string{"class"})
	m.Failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_job_failures_total", Help: "TrainingJobs that Failed (a replica failed or its pod template was refused), by class.",
	}, []string{"class"})
	m.Preemptions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_preemptions_total", Help: "TrainingJobs preempted or requeued, by class and reason (make-room, policy, node-lost, invalid-status).",
	}, []string{"class", "reason"})
	m.Migrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_migrations_total", Help: "TrainingJob migrations (checkpoint and restore elsewhere), by class.",
	}, []string{"class"})
	m.Resizes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drover_resizes_total", Help: "TrainingJob resizes, by class and direction (up, down, same: moved with the same count).",
	}, []string{"class", "direction"})
	m.WaitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "drover_job_wait_seconds", Help: "Time a TrainingJob waited in the queue (since creation, or since its last preemption) before a start, by class.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400},
	}, []string{"class"})
	m.Placeholders = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_placeholder_pods", Help: "Placeholder pods asked for (replicas of the placeholder Deployments).",
	})
}

// JobClass is the class label of a TrainingJob (the CRD defaults it to BE).
func JobClass(tj *v1alpha1.TrainingJob) string {
	if tj.Spec.Class == "" {
		return string(v1alpha1.ClassBE)
	}
	return string(tj.Spec.Class)
}

// queued reports whether a job in this phase waits in the queue.
func queued(p v1alpha1.TrainingJobPhase) bool {
	return p == "" || p == v1alpha1.PhasePending || p == v1alpha1.PhaseSuspended
}

// statusMark is what transition compares of the status a write replaced.
type statusMark struct {
	phase                            v1alpha1.TrainingJobPhase
	preemptions, migrations, resizes int32
	since                            time.Time // when the job entered the queue
	replicas                         int32     // in the placement
}

func markOf(tj *v1alpha1.TrainingJob) statusMark {
	s := &tj.Status
	m := statusMark{phase: s.Phase, preemptions: s.Preemptions, migrations: s.Migrations, resizes: s.Resizes,
		since: tj.CreationTimestamp.Time, replicas: placed(s.Placement)}
	if s.RequeuedAt != nil {
		m.since = s.RequeuedAt.Time
	}
	return m
}

func placed(p []v1alpha1.Assignment) int32 {
	var n int32
	for _, a := range p {
		n += a.Count
	}
	return n
}

// transition counts what one status write did: before is the status it
// replaced, tj the job as written.
func (m *Metrics) transition(before statusMark, tj *v1alpha1.TrainingJob, now time.Time) {
	s := &tj.Status
	class := JobClass(tj)
	switch {
	case s.Phase == before.phase:
	case s.Phase == v1alpha1.PhaseSucceeded:
		m.Completions.WithLabelValues(class).Inc()
	case s.Phase == v1alpha1.PhaseFailed:
		m.Failures.WithLabelValues(class).Inc()
	case s.Phase == v1alpha1.PhaseAdmitted && queued(before.phase):
		m.WaitSeconds.WithLabelValues(class).Observe(max(0, now.Sub(before.since).Seconds()))
	case s.Phase == v1alpha1.PhaseSuspended && s.Preemptions == before.preemptions && !queued(before.phase):
		why := PreemptNodeLost
		if strings.HasPrefix(s.Reason, view.ReasonPlacementRefused) {
			why = PreemptInvalidStatus
		}
		m.Preemptions.WithLabelValues(class, why).Inc()
	}
	if s.Preemptions > before.preemptions {
		m.Preemptions.WithLabelValues(class, preemptKind(s.Reason)).Inc()
	}
	if s.Migrations > before.migrations {
		m.Migrations.WithLabelValues(class).Inc()
	}
	if s.Resizes > before.resizes {
		dir := "same"
		switch n := placed(s.Placement); {
		case n > before.replicas:
			dir = "up"
		case n < before.replicas:
			dir = "down"
		}
		m.Resizes.WithLabelValues(class, dir).Inc()
	}
}

// preemptKind classifies a preempted job's status reason, which
// preemptReason writes as "preempted by <job>: ..." for a Preempt with a
// beneficiary and "preempted: ..." without (TestPreemptKind pins this).
func preemptKind(reason string) string {
	if strings.HasPrefix(reason, "preempted by ") {
		return PreemptMakeRoom
	}
	return PreemptPolicy
}

// deriveStatus sets the status fields that follow from the others, on
// every status write: the Replicas column and, for a job that no longer
// waits, no queue position.
func deriveStatus(tj *v1alpha1.TrainingJob) {
	s := &tj.Status
	var running, desired int32
	for _, g := range s.Replicas {
		running += g.Running
		desired += g.Desired
	}
	if len(s.Replicas) == 0 {
		if desired = placed(s.Placement); desired == 0 && !s.Phase.Terminal() {
			for _, g := range tj.Spec.ReplicaGroups {
				desired += g.Replicas
			}
		}
	}
	s.ReplicaSummary = strconv.Itoa(int(running)) + "/" + strconv.Itoa(int(desired))
	s.ProgressSummary = progressSummary(s.Progress)
	if !queued(s.Phase) {
		s.QueuePosition = nil
	}
}

// progressSummary is kubectl's Progress column: the fraction as a whole
// percentage, rounded down so that a job shows 100% only when its trainer
// reported the end; empty with no report.
func progressSummary(p *v1alpha1.ProgressStatus) string {
	if p == nil {
		return ""
	}
	f := math.Min(math.Max(p.Fraction, 0), 1)
	return strconv.Itoa(int(math.Floor(f*100+1e-9))) + "%"
}
