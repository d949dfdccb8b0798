package e2e

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/plugins"
)

// Issue 17, item 9: a leader frozen past its lease must not write after
// it resumes. The whole scheduler is frozen in the middle of a cycle,
// just before it writes a new job's start: the executor in its fault
// hook, the elector in the Lease lock's hook (so neither renews nor
// notices anything). Meanwhile another identity takes the Lease, as a
// standby replica would. The executor resumes first, the elector still
// frozen: its start must be refused (no status write, no pod), and the
// scheduler must stop. Without the fence the start went through, and the
// old leader kept scheduling until its elector gave up RenewDeadline
// later.
func TestFrozenLeaderStops(t *testing.T) {
	tc := newCluster(t, 1, "8", "0", standin.Config{TimeScale: 1})
	cfg := k8s.Config{Policy: "fifo", Namespace: tc.ns, MetricsAddr: "0", HealthAddr: "0", LeaderElection: true,
		LeaderElectionID: "frozen-" + tc.ns}
	cfg.Period.Duration = 100 * time.Millisecond
	cfg.LeaseDuration.Duration, cfg.RenewDeadline.Duration, cfg.RetryPeriod.Duration = 3*time.Second, 2*time.Second, 300*time.Millisecond
	cfg.Defaults()
	reg, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	mgr, ex, err := k8s.NewManager(restCfg, cfg, reg)
	if err != nil {
		t.Fatal(err)
	}

	// The freeze: armed once job b's start is about to be written.
	var mu sync.Mutex
	frozen, resumeExec, resumeElector := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var armed, elector bool
	var after atomic.Int32 // writes tried after the frozen one
	ex.Fault = func(op string) error {
		mu.Lock()
		hit := !armed && strings.HasSuffix(op, "/b")
		if hit {
			armed, elector = true, true
			close(frozen)
		} else if armed {
			after.Add(1)
		}
		mu.Unlock()
		if hit {
			<-resumeExec
		}
		return nil
	}
	ex.Fence().Before = func() {
		mu.Lock()
		stop := elector
		mu.Unlock()
		if stop {
			<-resumeElector
		}
	}
	thawExec, thawElector := sync.OnceFunc(func() { close(resumeExec) }), sync.OnceFunc(func() { close(resumeElector) })
	defer thawExec()
	defer thawElector()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan error, 1)
	go func() { exited <- mgr.Start(ctx) }()

	tc.create(tc.job("a", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 1, cpu: "1", gpu: "0"}))
	tc.waitPhase("a", v1alpha1.PhaseRunning, 30*time.Second)
	tc.create(tc.job("b", v1alpha1.ClassBE, 600, group{name: "worker", replicas: 1, cpu: "1", gpu: "0"}))
	select {
	case <-frozen:
	case <-time.After(20 * time.Second):
		t.Fatal("the scheduler never came to write b's start")
	}
	bBefore := tc.get("b")

	// Frozen past the lease; then a standby takes it.
	time.Sleep(cfg.LeaseDuration.Duration + 500*time.Millisecond)
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: cfg.LeaderElectionNamespace, Name: cfg.LeaderElectionID}
	if err := cl.Get(context.Background(), key, lease); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	thief, hour, n := "standby", int32(3600), int32(1)
	if lease.Spec.LeaseTransitions != nil {
		n += *lease.Spec.LeaseTransitions
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &thief, &hour
	lease.Spec.AcquireTime, lease.Spec.RenewTime, lease.Spec.LeaseTransitions = &now, &now, &n
	if err := cl.Update(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	// The executor resumes; the elector stays frozen a while longer (a
	// thread that happens to run later), so only the fence can tell.
	thawExec()
	time.Sleep(2 * time.Second) // 20 scheduling periods
	b := tc.get("b")
	if b.ResourceVersion != bBefore.ResourceVersion || b.Status.Phase != "" && b.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("b was written after the freeze: phase %q, resourceVersion %s -> %s", b.Status.Phase, bBefore.ResourceVersion, b.ResourceVersion)
	}
	if pods := tc.pods("b"); len(pods) != 0 {
		t.Errorf("b has %d pods, want none: %s", len(pods), pods[0].Name)
	}
	if n := after.Load(); n != 0 {
		t.Errorf("the executor tried %d more writes after resuming: it did not stop", n)
	}
	// Once the elector runs again the manager exits with the fence's
	// error (the process would restart as a standby).
	thawElector()
	select {
	case err := <-exited:
		if err == nil {
			t.Errorf("the manager stopped without an error")
		} else {
			t.Logf("manager stopped: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("the manager still runs 15 s after the elector resumed without its lease")
	}
	if pods := tc.pods("b"); len(pods) != 0 || tc.get("b").ResourceVersion != bBefore.ResourceVersion {
		t.Errorf("b was written once the elector resumed")
	}
}
