package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// BenchmarkBindings measures end-to-end binding throughput through the
// real API server: 1,000 stand-in nodes and b.N·500 pending
// single-replica TrainingJobs; the time from starting the scheduler until
// every replica pod is bound gives bindings per second. Each job costs the scheduler three writes (a
// status update, a pod create and a Binding).
//
//	go test -run XXX -bench Bindings -benchtime 1x ./pkg/k8s/e2e/
func BenchmarkBindings(b *testing.B) {
	// The stand-in only registers the nodes (Tick: an hour): the benchmark
	// measures the scheduler, not the stand-in's status updates.
	tcb := newCluster(b, 1000, "64", "8", standin.Config{Tick: time.Hour})
	if q := os.Getenv("DROVER_BENCH_QPS"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil {
			b.Fatalf("DROVER_BENCH_QPS=%q: %v", q, err)
		}
		tcb.tune = func(c *k8s.Config) { c.ClientQPS, c.ClientBurst = float32(v), 2*v }
	}
	n := 500 * b.N
	start := time.Now()
	for i := range n {
		j := tcb.job(fmt.Sprintf("b%05d", i), v1alpha1.ClassBE, 600, group{name: "worker", replicas: 1, cpu: "1", gpu: "0"})
		if err := cl.Create(context.Background(), j); err != nil {
			b.Fatal(err)
		}
	}
	created := time.Since(start)
	// The jobs wait; the clock starts with the scheduler (informer sync
	// included).
	start = time.Now()
	tcb.startScheduler("k8s-default", nil)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var pods corev1.PodList
		if err := cl.List(context.Background(), &pods, client.InNamespace(tcb.ns)); err != nil {
			b.Fatal(err)
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if bound >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pods bound after 10 minutes", bound, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	el := time.Since(start)
	b.ReportMetric(float64(n)/el.Seconds(), "bindings/s")
	b.ReportMetric(created.Seconds(), "create-s")
	b.Logf("%d jobs on 1000 nodes: created in %v; scheduler started, all bound after %v: %.0f bindings/s", n, created.Round(time.Millisecond), el.Round(time.Millisecond), float64(n)/el.Seconds())
}
