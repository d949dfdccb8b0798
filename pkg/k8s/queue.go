package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// QueueOptions tune ReadQueue; they should match the scheduler's config.
type QueueOptions struct {
	// SchedulerName is the scheduler's (default drover): opted-in plain
	// pods with it are queued too.
	SchedulerName string
	// Namespace is the scheduler's config.namespace: the TrainingJobs it
	// schedules (empty: all).
	Namespace string
}

// ReadQueue reads nodes, pods and TrainingJobs from the API server (or any
// reader) and returns the queue as the scheduler would build it now. Wait
// reasons are those the scheduler last wrote.
func ReadQueue(ctx context.Context, c client.Reader, o QueueOptions) ([]view.QueueEntry, error) {
	if o.SchedulerName == "" {
		o.SchedulerName = "drover"
	}
	w := &view.World{}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	w.Nodes = nodes.Items
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	w.Pods = pods.Items
	var jobs v1alpha1.TrainingJobList
	var opts []client.ListOption
	if o.Namespace != "" {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if err := c.List(ctx, &jobs, opts...); err != nil {
		return nil, fmt.Errorf("listing trainingjobs: %w", err)
	}
	w.Jobs = jobs.Items
	var pgs schedv1alpha1.PodGroupList
	if err := c.List(ctx, &pgs, opts...); err == nil {
		w.PodGroups = pgs.Items // (no PodGroup CRD: gangs from the Volcano annotation only)
	}
	var cfg Config
	cfg.Defaults()
	v := view.Build(w, time.Now(), view.Options{DefaultDuration: cfg.DefaultDurationSeconds, StuckAfter: cfg.StuckAfter.Duration,
		SchedulerName: o.SchedulerName})
	return v.Queue(), nil
}

// publishQueue writes status.queuePosition for the first
// cfg.QueuePositions waiting jobs and clears it on the others, at most
// every cfg.QueuePositionPeriod and only where it changed, so the writes
// it costs are bounded however long the queue is. It runs after the
// cycle's actions, so a job started this cycle gets no position.
func (e *Executor) publishQueue(ctx context.Context, v *view.View) error {
	now := e.Now()
	if !e.positioned.IsZero() && now.Sub(e.positioned) < e.cfg.QueuePositionPeriod.Duration {
		return nil
	}
	e.positioned = now
	limit := 0
	if e.cfg.QueuePositions != nil {
		limit = *e.cfg.QueuePositions
	}
	want := map[string]int32{}
	for _, q := range v.Queue() {
		if q.Position > limit {
			break
		}
		if q.Kind == "TrainingJob" {
			want[q.Namespace+"/"+q.Name] = int32(q.Position)
		}
	}
	// The writes run apply.Workers at a time (each touches only its own
	// job). A job with a write in flight (a start of this cycle: its
	// jobView is the flight's) is left alone: that write clears its
	// position (deriveStatus clears it on a job that no longer waits).
	busy := e.w.InFlight()
	var mu sync.Mutex
	var errs []error
	var g errgroup.Group
	g.SetLimit(apply.Workers)
	for _, key := range v.Order {
		jv := v.Jobs[key]
		if jv.Invalid != nil || jv.St == nil || busy[key] {
			continue
		}
		pos, have := want[key], jv.TJ.Status.QueuePosition
		if (have == nil && pos == 0) || (have != nil && *have == pos) {
			continue
		}
		g.Go(func() error {
			err := e.w.UpdateStatus(ctx, jv, func(o *v1alpha1.TrainingJob) error {
				o.Status.QueuePosition = nil
				if pos > 0 {
					o.Status.QueuePosition = &pos
				}
				return nil // deriveStatus clears it on a job that no longer waits
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("queue position of %s: %w", key, err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
