package k8s

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// Cache indexes that let a cycle read only the live part of the world.
// A finished TrainingJob and its finished pods stay in the API server (and
// so in the informer cache) until someone deletes them; without these a
// cycle would copy every one of them from the cache, every period, and
// its cost would grow with the jobs that ever ran rather than with the
// work left (issue 17: idle cycles of 170 ms with 2,000 finished jobs).
const (
	// IndexJobLive indexes TrainingJobs: "true" while the job is not
	// finished (not Succeeded, Failed or Rejected) nor being deleted.
	IndexJobLive = "drover.dev/live"
	// IndexPod indexes pods: podLive for a pod that has not finished (or
	// belongs to a PodGroup gang, whose status counts finished members);
	// podDone+<job> for a finished replica pod of TrainingJob <job>, read
	// only while that job runs (its completion or failure is decided from
	// them); podDone for any other finished pod, never read.
	IndexPod = "drover.dev/pod"

	podLive = "live"
	podDone = "done"
)

// jobLive is the IndexJobLive value of a TrainingJob.
func jobLive(tj *v1alpha1.TrainingJob) string {
	if tj.Status.Phase.Terminal() || tj.DeletionTimestamp != nil {
		return "false"
	}
	return "true"
}

// podState is the IndexPod value of a pod for a scheduler named
// schedulerName.
func podState(p *corev1.Pod, schedulerName string) string {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return podLive
	}
	if view.GangOf(p, schedulerName) != "" {
		return podLive
	}
	if job := p.Labels[v1alpha1.LabelJob]; job != "" {
		return podDone + "/" + job
	}
	return podDone
}

// indexLive registers the indexes with the manager's cache.
func indexLive(ctx context.Context, fi client.FieldIndexer, schedulerName string) error {
	if err := fi.IndexField(ctx, &v1alpha1.TrainingJob{}, IndexJobLive, func(o client.Object) []string {
		return []string{jobLive(o.(*v1alpha1.TrainingJob))}
	}); err != nil {
		return fmt.Errorf("indexing trainingjobs: %w", err)
	}
	if err := fi.IndexField(ctx, &corev1.Pod{}, IndexPod, func(o client.Object) []string {
		return []string{podState(o.(*corev1.Pod), schedulerName)}
	}); err != nil {
		return fmt.Errorf("indexing pods: %w", err)
	}
	return nil
}

// phaseClass is a drover_jobs series.
type phaseClass struct{ phase, class string }

// finishedJobs counts the finished TrainingJobs of the informer cache by
// phase and class, kept current by the informer's events, so that the
// drover_jobs gauge counts them without a cycle reading them. It costs one
// map entry per finished job (its key), not the object.
type finishedJobs struct {
	ns string // the scheduler's namespace; "" for all

	mu   sync.Mutex
	jobs map[string]phaseClass
	n    map[phaseClass]int
}

func newFinishedJobs(ns string) *finishedJobs {
	return &finishedJobs{ns: ns, jobs: map[string]phaseClass{}, n: map[phaseClass]int{}}
}

// handler returns the informer event handler that keeps f current.
func (f *finishedJobs) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.update(o, false) },
		UpdateFunc: func(_, o any) { f.update(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			f.update(o, true)
		},
	}
}

func (f *finishedJobs) update(o any, deleted bool) {
	tj, ok := o.(*v1alpha1.TrainingJob)
	if !ok || (f.ns != "" && tj.Namespace != f.ns) {
		return
	}
	key := view.JobKey(tj)
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.jobs[key]; ok {
		f.n[old]--
		delete(f.jobs, key)
	}
	if deleted || !tj.Status.Phase.Terminal() {
		return
	}
	pc := phaseClass{string(tj.Status.Phase), apply.JobClass(tj)}
	f.jobs[key] = pc
	f.n[pc]++
}

// counts returns the counts and, of the given keys, those counted.
func (f *finishedJobs) counts(keys []string) (map[phaseClass]int, map[string]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[phaseClass]int, len(f.n))
	for k, v := range f.n {
		out[k] = v
	}
	var in map[string]bool
	for _, k := range keys {
		if _, ok := f.jobs[k]; ok {
			if in == nil {
				in = map[string]bool{}
			}
			in[k] = true
		}
	}
	return out, in
}
