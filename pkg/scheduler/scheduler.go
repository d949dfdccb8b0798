// Package scheduler puts drover's scheduler together, as kube-scheduler's
// pkg/scheduler sits above its framework and its scheduling queue: a
// framework Runtime (pkg/framework) running a Profile, with a scheduling
// queue (pkg/scheduler/queue).
package scheduler

import (
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/scheduler/queue"
)

// New checks a profile and returns its runtime, with a scheduling queue
// of queue.DefaultOptions.
func New(p framework.Profile) (*framework.Runtime, error) {
	r, err := framework.NewRuntime(p)
	if err != nil {
		return nil, err
	}
	return WithQueue(r, queue.DefaultOptions()), nil
}

// WithQueue gives r a new scheduling queue with options o, in place of
// the one it has (tests turn the backoff off to compare the queue with
// the exhaustive walk, Runtime.WithoutQueue), and returns r.
func WithQueue(r *framework.Runtime, o queue.Options) *framework.Runtime {
	return r.WithQueue(queue.New(r, o))
}
