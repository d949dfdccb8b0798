package k8s

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/plugins"
)

// bigWorld is 5,000 ready nodes (16 CPU, 8 GPU) and 10,000 pending
// single-replica jobs (4 CPU, 1 GPU), the benchmark size.
func bigWorld() *World {
	w := &World{Nodes: make([]corev1.Node, 5000), Jobs: make([]v1alpha1.TrainingJob, 10000)}
	for i := range w.Nodes {
		w.Nodes[i] = testNode(fmt.Sprintf("node-%05d", i), "16", "8", true)
	}
	for i := range w.Jobs {
		w.Jobs[i] = testJob(fmt.Sprintf("job-%05d", i), t0.Add(time.Duration(i)*time.Millisecond), 1, "4", "1")
	}
	return w
}

// BenchmarkSnapshot5kNodes10kJobs measures rebuilding the snapshot from
// the informer cache's objects, the executor's part of a cycle.
func BenchmarkSnapshot5kNodes10kJobs(b *testing.B) {
	w := bigWorld()
	b.Run("cold", func(b *testing.B) { // the first cycle: every spec converted
		for range b.N {
			Build(w, t0.Add(time.Hour), Options{DefaultDuration: 3600})
		}
	})
	b.Run("warm", func(b *testing.B) { // later cycles: specs from the JobCache
		o := Options{DefaultDuration: 3600, Jobs: NewJobCache()}
		Build(w, t0.Add(time.Hour), o)
		b.ResetTimer()
		for range b.N {
			Build(w, t0.Add(time.Hour), o)
		}
	})
}

// BenchmarkCycle5kNodes10kJobs measures one in-process scheduling cycle
// (snapshot + policy decision, no API calls) per policy. Target: < 100 ms.
func BenchmarkCycle5kNodes10kJobs(b *testing.B) {
	reg, err := plugins.Policies()
	if err != nil {
		b.Fatal(err)
	}
	w := bigWorld()
	for _, spec := range []string{"fifo", "k8s-default", "binpack", "fitgpp"} {
		b.Run(spec, func(b *testing.B) {
			if _, err := reg.New(spec); err != nil {
				b.Skipf("policy %s: %v", spec, err)
			}
			starts := 0
			// As in every executor cycle after the first, converted specs
			// come from the cache.
			o := Options{DefaultDuration: 3600, Jobs: NewJobCache()}
			Build(w, t0.Add(time.Hour), o)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				pol, _ := reg.New(spec) // fresh state: every cycle sees 10,000 pending jobs
				b.StartTimer()
				v := Build(w, t0.Add(time.Hour), o)
				acts := pol.Schedule(v.Snap)
				starts = len(acts)
			}
			b.ReportMetric(float64(starts), "actions")
		})
	}
}

// BenchmarkCycle5kNodes10kJobsConstrained is the cycle benchmark on a
// cluster with a dedicated pool: 500 of the 5,000 nodes are labelled
// pool=a and tainted dedicated=a:NoSchedule, and every fifth job selects
// and tolerates the pool; the others may not use it. The eligible sets
// are kept between cycles (Options.Eligibility), as the executor does.
func BenchmarkCycle5kNodes10kJobsConstrained(b *testing.B) {
	reg, err := plugins.Policies()
	if err != nil {
		b.Fatal(err)
	}
	w := bigWorld()
	for i := 0; i < len(w.Nodes); i += 10 {
		w.Nodes[i].Labels = map[string]string{"pool": "a"}
		w.Nodes[i].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	}
	for i := 0; i < len(w.Jobs); i += 5 {
		spec := &w.Jobs[i].Spec.ReplicaGroups[0].Template.Spec
		spec.NodeSelector = map[string]string{"pool": "a"}
		spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, spec := range []string{"fifo", "k8s-default"} {
		b.Run(spec, func(b *testing.B) {
			o := Options{DefaultDuration: 3600, Jobs: NewJobCache(), Nodes: NewNodeTable(), Eligibility: cluster.NewEligibility()}
			Build(w, t0.Add(time.Hour), o)
			starts := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				pol, _ := reg.New(spec)
				b.StartTimer()
				v := Build(w, t0.Add(time.Hour), o)
				acts := pol.Schedule(v.Snap)
				starts = len(acts)
			}
			b.ReportMetric(float64(starts), "actions")
		})
	}
}
