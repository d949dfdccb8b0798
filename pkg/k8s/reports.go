package k8s

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/report"
)

// reportBook is what the executor remembers of trainers' reports and
// stuck pods between cycles. The informer's handlers write it while a
// cycle runs, hence the lock.
type reportBook struct {
	mu sync.Mutex
	// byJob is the newest report seen per job (ObserveReport).
	byJob map[string]observed
	// rejected is the time of the last future-dated report seen per job,
	// so that each gets one ReportRejected Event.
	rejected map[string]time.Time
	// stuck remembers stuck pods already reported, by UID.
	stuck map[types.UID]bool
}

func newReportBook() *reportBook {
	return &reportBook{byJob: map[string]observed{}, rejected: map[string]time.Time{}, stuck: map[types.UID]bool{}}
}

// forget drops the reports of jobs not in present.
func (b *reportBook) forget(present map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.byJob {
		if !present[k] {
			delete(b.byJob, k)
		}
	}
	for k := range b.rejected {
		if !present[k] {
			delete(b.rejected, k)
		}
	}
}

// ObserveReport records the report on a replica pod as the informer
// delivers it. A trainer that checkpoints on SIGTERM writes its report and
// exits at once, so the pod may be gone before the next cycle reads it;
// the informer's update event still carries it. A report dated more than
// ReportClockSkew ahead of the scheduler's clock is not recorded; it gets
// a Warning Event (ReportRejected) on the pod, once per report.
func (e *Executor) ObserveReport(p *corev1.Pod) {
	name := p.Labels[v1alpha1.LabelJob]
	owner := metav1.GetControllerOf(p)
	if name == "" || owner == nil || owner.Kind != "TrainingJob" || owner.Name != name {
		return
	}
	r, err := report.Parse(p.Annotations[v1alpha1.AnnotationReport])
	if err != nil || r == nil {
		return
	}
	key := p.Namespace + "/" + name
	if now := e.Now(); e.future(r, now) {
		e.reports.mu.Lock()
		seen := e.reports.rejected[key].Equal(r.Time)
		e.reports.rejected[key] = r.Time
		e.reports.mu.Unlock()
		if !seen {
			e.log.V(1).Info("report dated in the future ignored", "pod", p.Namespace+"/"+p.Name, "time", r.Time, "now", now)
			e.w.Event(p, true, "ReportRejected", "drover.dev/report dated %s is more than %v ahead of the scheduler's clock (%s); ignored",
				r.Time.UTC().Format(time.RFC3339), e.cfg.ReportClockSkew.Duration, now.UTC().Format(time.RFC3339))
		}
		return
	}
	e.reports.mu.Lock()
	defer e.reports.mu.Unlock()
	if old, ok := e.reports.byJob[key]; !ok || old.owner != owner.UID || r.Time.After(old.r.Time) {
		e.reports.byJob[key] = observed{r: r, owner: owner.UID}
	}
}

// future reports whether r is dated more than ReportClockSkew after now.
func (e *Executor) future(r *report.Report, now time.Time) bool {
	return r.Time.After(now.Add(e.cfg.ReportClockSkew.Duration))
}

// observed is a report the informer delivered, with the UID of the
// TrainingJob that controls its pod.
type observed struct {
	r     *report.Report
	owner types.UID
}

// observedReport is the newest report seen on a pod controlled by the job
// with this key and UID (a job deleted and created again under the same
// name does not inherit its predecessor's reports).
func (e *Executor) observedReport(key string, uid types.UID) *report.Report {
	e.reports.mu.Lock()
	defer e.reports.mu.Unlock()
	if o, ok := e.reports.byJob[key]; ok && o.owner == uid {
		return o.r
	}
	return nil
}
