package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// ErrNotLeader is returned for a write the Fence refused: the process
// cannot show that it still holds the leader Lease.
var ErrNotLeader = errors.New("not the leader: the lease was lost or not renewed in time")

// Fence guards the executor's API writes with the leadership the process
// holds. controller-runtime's elector learns that the Lease is lost only
// when renewing it has failed for RenewDeadline: a leader frozen past its
// lease (a stopped container, a long pause, a migrated VM) resumes
// believing it leads, and would run cycles and write for up to
// RenewDeadline while another replica schedules too (issue 17, item 9).
//
// The Fence is the elector's resource lock, wrapped: it records when this
// process last renewed the Lease (the time taken before the request was
// sent, on the monotonic clock, so a frozen process sees the whole freeze)
// and whether the API server has since shown another holder. Check allows
// a write only while the last renewal is younger than RenewDeadline, less
// than the LeaseDuration after which another replica may take the Lease,
// and no other holder was seen. It costs no API call: the elector keeps
// renewing every RetryPeriod. WithFence puts it in front of every write a
// client makes.
type Fence struct {
	resourcelock.Interface
	// valid is how long a renewal keeps the process leader: the
	// elector's RenewDeadline.
	valid time.Duration
	now   func() time.Time

	mu      sync.Mutex
	renewed time.Time // when the last renewal holding the Lease was sent; zero: not leader
	// Before, when set, is called before every request to the Lease;
	// tests freeze the elector with it. Set it before the manager starts.
	Before func()
	// Refused, when set, is called for each write WithFence refuses
	// (drover_fenced_writes_total).
	Refused func()
}

// NewFence wraps lock; a renewal keeps the process leader for valid (the
// elector's RenewDeadline, which must be below its LeaseDuration).
func NewFence(lock resourcelock.Interface, valid time.Duration) *Fence {
	return &Fence{Interface: lock, valid: valid, now: time.Now}
}

// Get implements resourcelock.Interface: a record naming another holder
// ends this process's leadership at once.
func (f *Fence) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	f.before()
	rec, raw, err := f.Interface.Get(ctx)
	if err == nil && rec != nil && rec.HolderIdentity != f.Identity() {
		f.set(time.Time{})
	}
	return rec, raw, err
}

// Create implements resourcelock.Interface.
func (f *Fence) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return f.write(ctx, ler, f.Interface.Create)
}

// Update implements resourcelock.Interface; a release (an empty holder)
// ends leadership before it is sent.
func (f *Fence) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return f.write(ctx, ler, f.Interface.Update)
}

func (f *Fence) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	sent := f.now()
	mine := ler.HolderIdentity == f.Identity()
	if !mine {
		f.set(time.Time{})
	}
	f.before()
	err := do(ctx, ler)
	if err == nil && mine {
		f.set(sent)
	}
	return err
}

func (f *Fence) before() {
	if f.Before != nil {
		f.Before()
	}
}

func (f *Fence) set(t time.Time) {
	f.mu.Lock()
	f.renewed = t
	f.mu.Unlock()
}

// Check returns nil while the process holds the Lease: renewed by this
// process less than RenewDeadline ago, with no other holder seen since;
// otherwise an error wrapping ErrNotLeader that says why.
func (f *Fence) Check() error {
	f.mu.Lock()
	renewed := f.renewed
	f.mu.Unlock()
	if renewed.IsZero() {
		return fmt.Errorf("%w (lease %s held by another or never acquired)", ErrNotLeader, f.Describe())
	}
	if age := f.now().Sub(renewed); age >= f.valid {
		return fmt.Errorf("%w (lease %s last renewed %s ago, more than the %s renew deadline)", ErrNotLeader, f.Describe(), age.Round(time.Millisecond), f.valid)
	}
	return nil
}

// WithFence returns c with every write (create, update, patch, apply,
// delete, and those of subresources: status, binding) refused with
// ErrNotLeader unless f.Check passes just before it is sent. A nil fence
// returns c.
func WithFence(c client.Client, f *Fence) client.Client {
	if f == nil {
		return c
	}
	check := func() error {
		err := f.Check()
		if err != nil && f.Refused != nil {
			f.Refused()
		}
		return err
	}
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := check(); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

// noWatch adapts a client.Client to the client.WithWatch the interceptor
// wraps; the executor never watches through its client (the manager's
// informers do).
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported through the fenced client")
}
