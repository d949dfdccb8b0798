package k8s

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// A status write that races with another writer gets a resourceVersion
// conflict; the executor re-reads the job from the API server and applies
// its change on top of the other writer's, instead of overwriting it.
func TestStatusConflictRetried(t *testing.T) {
	tj := testJob("j", t0, 1, "1", "0")
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(&tj).WithStatusSubresource(&v1alpha1.TrainingJob{})
	raced := false
	c = c.WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if !raced {
			raced = true
			other := &v1alpha1.TrainingJob{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
				return err
			}
			other.Status.Reason = "written by someone else"
			if err := cl.Status().Update(ctx, other); err != nil {
				return err
			}
		}
		return cl.SubResource(sub).Update(ctx, obj, opts...)
	}})
	cl := c.Build()
	cur := &v1alpha1.TrainingJob{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(&tj), cur); err != nil {
		t.Fatal(err)
	}
	e := New(Config{}, cl, nil, nil, nil, logr.Discard())
	before := conflicts(e)
	jv := &view.Job{TJ: cur, St: cluster.NewJobState(&cluster.Job{ID: "ns/j"})}
	err := e.w.UpdateStatus(context.Background(), jv, func(o *v1alpha1.TrainingJob) error {
		o.Status.Preemptions++
		now := metav1.Now()
		o.Status.RequeuedAt = &now
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.TrainingJob{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(&tj), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Reason != "written by someone else" || got.Status.Preemptions != 1 {
		t.Errorf("status %+v: want the other writer's reason kept and preemptions 1", got.Status)
	}
	if conflicts(e) != before+1 {
		t.Errorf("conflicts counter %v -> %v, want +1", before, conflicts(e))
	}
	if jv.TJ.ResourceVersion != got.ResourceVersion {
		t.Errorf("executor holds rv %s, server %s", jv.TJ.ResourceVersion, got.ResourceVersion)
	}
}

func conflicts(e *Executor) float64 {
	m := &dtoMetric{}
	_ = e.w.M.Conflicts.Write(&m.Metric)
	return m.Metric.GetCounter().GetValue()
}

type dtoMetric struct{ Metric dto.Metric }
