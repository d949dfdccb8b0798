package k8s

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// memLock is a resourcelock.Interface over one record in memory.
type memLock struct {
	id  string
	rec resourcelock.LeaderElectionRecord
}

func (l *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r := l.rec
	return &r, nil, nil
}
func (l *memLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.rec = r
	return nil
}
func (l *memLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.rec = r
	return nil
}
func (l *memLock) RecordEvent(string) {}
func (l *memLock) Identity() string   { return l.id }
func (l *memLock) Describe() string   { return "ns/lease" }

// The fence's view of leadership, step by step, on a clock the test moves.
func TestFence(t *testing.T) {
	lock := &memLock{id: "me"}
	f := NewFence(lock, 10*time.Second)
	now := t0
	f.now = func() time.Time { return now }
	ctx := context.Background()
	steps := []struct {
		name   string
		do     func()
		leader bool
	}{
		{"never acquired", func() {}, false},
		{"acquired", func() { _ = f.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) }, true},
		{"9 s later", func() { now = now.Add(9 * time.Second) }, true},
		{"frozen past the renew deadline", func() { now = now.Add(2 * time.Second) }, false},
		{"renewed after resuming", func() { _ = f.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) }, true},
		{"another holder seen", func() {
			lock.rec.HolderIdentity = "thief"
			_, _, _ = f.Get(ctx)
		}, false},
		{"renewed again", func() { _ = f.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}) }, true},
		{"released", func() { _ = f.Update(ctx, resourcelock.LeaderElectionRecord{}) }, false},
	}
	for _, s := range steps {
		s.do()
		err := f.Check()
		if got := err == nil; got != s.leader || (err != nil && !errors.Is(err, ErrNotLeader)) {
			t.Errorf("%s: Check() = %v, want leader %v", s.name, err, s.leader)
		}
	}
}

// Issue 17, item 9: a leader frozen past its lease runs no write after it
// resumes. The executor's clock of the lease jumps past the renew
// deadline between two cycles (the elector had no chance to renew): the
// next cycle stops before its first write, with ErrNotLeader, which makes
// Run return and the manager stop.
func TestFrozenLeaderWritesNothing(t *testing.T) {
	n := testNode("n1", "16", "8", true)
	j := aJob("j").obj()
	var writes atomic.Int32
	count := func() { writes.Add(1) }
	cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&n, j).WithStatusSubresource(&v1alpha1.TrainingJob{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				count()
				return c.Create(ctx, obj, opts...)
			},
			SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
				count()
				return bindFake(ctx, c, sub, obj, subObj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				count()
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	lock := &memLock{id: "me"}
	f := NewFence(lock, 10*time.Second)
	now := t0
	f.now = func() time.Time { return now }
	if err := f.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{LeaderElection: true}
	cfg.Defaults()
	e := New(cfg, WithFence(cl, f), nil, nil, idle{}, logr.Discard())
	e.fence = f
	e.Now, e.Origin = func() time.Time { return t0.Add(time.Minute) }, t0
	if _, err := e.Cycle(context.Background()); err != nil {
		t.Fatalf("cycle as leader: %v", err)
	}
	if writes.Load() == 0 {
		t.Fatal("the leader's cycle wrote nothing: the test does not exercise the fence")
	}
	// Frozen for 20 s; another replica takes the lease meanwhile (the
	// elector has not run since, so the fence has not seen it).
	now = now.Add(20 * time.Second)
	lock.rec.HolderIdentity = "other"
	// A new job arrives: a leader would start it.
	if err := cl.Create(context.Background(), aJob("k").obj()); err != nil {
		t.Fatal(err)
	}
	before := writes.Load()
	_, err := e.Cycle(context.Background())
	if !errors.Is(err, ErrNotLeader) {
		t.Errorf("cycle after the freeze: error %v, want ErrNotLeader", err)
	}
	if got := writes.Load() - before; got != 0 {
		t.Errorf("%d writes after the freeze, want 0", got)
	}
	// The fenced client refuses a write made outside a cycle too.
	if err := WithFence(cl, f).Create(context.Background(), aJob("x").obj()); !errors.Is(err, ErrNotLeader) {
		t.Errorf("fenced create: %v, want ErrNotLeader", err)
	}
	// Run returns the error instead of going on.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Run(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("Run: %v, want ErrNotLeader", err)
	}
}
