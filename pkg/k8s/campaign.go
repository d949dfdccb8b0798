package k8s

import (
	"context"
	"errors"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-sched/drover/pkg/policy"
)

// Campaign runs the scheduler until ctx ends, one manager (NewManager) per
// term of leadership. When the lease is lost or a renewal fails (an API
// server or etcd stall longer than the renew deadline, another replica
// taking the Lease), the term's manager stops: the executor stops acting
// (the fence refuses its writes from the moment the lease is in doubt),
// and its queue, caches and in-memory state go with the manager. Campaign
// then builds a new manager and campaigns again in the same process,
// after RetryPeriod; the new leader rebuilds everything from the API
// server, as a restarted process would. So a stall costs a pause, not a
// process: kube-scheduler and kube-controller-manager exit on a lost lease
// and rely on being restarted, which with no live standby left nothing
// scheduling until the restart, and repeated stalls crash-looped.
//
// It returns nil when ctx ends, and the error of a term that ended for
// any other reason than a lost lease (a bad config, a port in use) or
// when leader election is off. started, when set, is called with each
// term's executor before its manager starts (tests install hooks there).
func Campaign(ctx context.Context, rc *rest.Config, cfg Config, reg *policy.Registry, started func(term int, ex *Executor)) error {
	log := ctrl.Log.WithName("drover-scheduler")
	for term := 1; ; term++ {
		mgr, ex, err := NewManager(rc, cfg, reg)
		if err != nil {
			return err
		}
		if started != nil {
			started(term, ex)
		}
		err = mgr.Start(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !cfg.LeaderElection || !LostLease(err) {
			return err
		}
		DefaultMetrics().LeaseLosses.Inc()
		log.Info("lost the lease: stopped scheduling and dropped the queue; campaigning again", "term", term, "reason", err.Error(),
			"retryIn", cfg.RetryPeriod.Duration.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.RetryPeriod.Duration):
		}
	}
}

// LostLease reports whether a manager stopped because its leadership
// ended: the fence refused a write (ErrNotLeader) or controller-runtime's
// elector stopped leading ("leader election lost").
func LostLease(err error) bool {
	return err != nil && (errors.Is(err, ErrNotLeader) || strings.Contains(err.Error(), "leader election lost"))
}
