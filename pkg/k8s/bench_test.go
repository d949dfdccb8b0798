package k8s

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
)

// bigWorld is 5,000 ready nodes (16 CPU, 8 GPU) and 10,000 pending
// single-replica jobs (4 CPU, 1 GPU), the benchmark size.
func bigWorld() *view.World { return scaledWorld(5000, 10000) }

// scaledWorld is bigWorld with n nodes and m pending jobs.
func scaledWorld(n, m int) *view.World {
	w := &view.World{Nodes: make([]corev1.Node, n), Jobs: make([]v1alpha1.TrainingJob, m)}
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
			view.Build(w, t0.Add(time.Hour), view.Options{DefaultDuration: 3600})
		}
	})
	b.Run("warm", func(b *testing.B) { // later cycles: specs from the JobCache
		o := view.Options{DefaultDuration: 3600, Jobs: view.NewJobCache(), Nodes: view.NewNodeTable()}
		view.Build(w, t0.Add(time.Hour), o)
		b.ResetTimer()
		for range b.N {
			view.Build(w, t0.Add(time.Hour), o)
		}
	})
}

// BenchmarkCycle5kNodes10kJobs measures one in-process scheduling cycle
// (snapshot + policy decision, no API calls) per policy. Target: < 50 ms.
func BenchmarkCycle5kNodes10kJobs(b *testing.B) {
	benchCycle(b, bigWorld(), "fifo", "k8s-default", "binpack", "fitgpp")
}

// BenchmarkCycleScale is BenchmarkCycle5kNodes10kJobs at 1,000, 5,000 and
// 20,000 nodes with twice as many pending jobs (issue 15, item 4: how a
// cycle's cost grows with the cluster). docs/simulator.md has the table.
func BenchmarkCycleScale(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			benchCycle(b, scaledWorld(n, 2*n), "fifo", "fitgpp")
		})
	}
}

// BenchmarkCycle5kNodes10kGangs is BenchmarkCycle5kNodes10kJobs with gangs:
// 10,000 pending jobs of 4 replicas (2 CPU, 1 GPU each), which fill the
// 5,000 nodes exactly (two gangs a node). fifo, k8s-default, binpack and
// fitgpp place replica by replica; drover tries each gang on one node
// first. (elastic is left out: it starts one job per cycle by design.)
func BenchmarkCycle5kNodes10kGangs(b *testing.B) {
	w := bigWorld()
	for i := range w.Jobs {
		w.Jobs[i] = testJob(fmt.Sprintf("gang-%05d", i), t0.Add(time.Duration(i)*time.Millisecond), 4, "2", "1")
	}
	benchCycle(b, w, "fifo", "k8s-default", "binpack", "fitgpp", "drover")
}

// BenchmarkCycle5kNodesFullPreempt is FitGpp's preemption path on a full
// cluster: the 5,000 nodes each run two BE jobs (8 CPU, 4 GPU, grace 30 s),
// and 10,000 jobs wait, 3,000 TE and 7,000 BE (4 CPU, 1 GPU). Each TE job
// either fits in the room a victim of an earlier one is freeing
// (nominated) or chooses a BE victim of its own; the BE jobs wait behind
// the head of the BE queue.
func BenchmarkCycle5kNodesFullPreempt(b *testing.B) {
	w := bigWorld()
	w.Jobs = w.Jobs[:0]
	for i := range 10000 {
		name := fmt.Sprintf("run-%05d", i)
		j := testJob(name, t0.Add(time.Duration(i)*time.Millisecond), 1, "8", "4")
		j.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Attempt: 1,
			Placement: []v1alpha1.Assignment{{Group: "worker", Node: w.Nodes[i/2].Name, Count: 1}}}
		w.Jobs = append(w.Jobs, j)
	}
	for i := range 10000 {
		j := testJob(fmt.Sprintf("job-%05d", i), t0.Add(time.Minute+time.Duration(i)*time.Millisecond), 1, "4", "1")
		if i%10 < 3 {
			j.Spec.Class = v1alpha1.ClassTE
		}
		w.Jobs = append(w.Jobs, j)
	}
	benchCycle(b, w, "fitgpp")
}

// benchCycle runs one cycle per iteration (snapshot from the informer
// objects with the spec cache, node table and eligible sets kept, as every
// executor cycle after the first, and a fresh policy, so that every cycle sees the same pending
// queue) for each policy, and reports the actions of a cycle.
func benchCycle(b *testing.B, w *view.World, specs ...string) {
	reg, err := plugins.Policies()
	if err != nil {
		b.Fatal(err)
	}
	for _, spec := range specs {
		b.Run(spec, func(b *testing.B) {
			if _, err := reg.New(spec); err != nil {
				b.Skipf("policy %s: %v", spec, err)
			}
			var acts []policy.Action
			o := view.Options{DefaultDuration: 3600, Jobs: view.NewJobCache(), Nodes: view.NewNodeTable(), Eligibility: cluster.NewEligibility()}
			view.Build(w, t0.Add(time.Hour), o)
			b.ReportAllocs()
			b.ResetTimer()
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				pol, _ := reg.New(spec)
				c0 := cpuTime()
				b.StartTimer()
				v := view.Build(w, t0.Add(time.Hour), o)
				acts = pol.Schedule(v.Snap)
				b.StopTimer()
				cpu += cpuTime() - c0
				b.StartTimer()
			}
			b.StopTimer()
			// CPU time of the process (garbage collection included) per
			// cycle: on a machine shared with other work, wall time counts
			// the time the cycle waited for a core too.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			counts := map[string]int{}
			for _, a := range acts {
				counts[policy.Kind(a)]++
			}
			b.ReportMetric(float64(len(acts)), "actions")
			for _, k := range []string{"start", "preempt"} {
				if counts[k] > 0 {
					b.ReportMetric(float64(counts[k]), k+"s")
				}
			}
		})
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCycle5kNodes10kJobsConstrained is the cycle benchmark on a
// cluster with a dedicated pool: 500 of the 5,000 nodes are labelled
// pool=a and tainted dedicated=a:NoSchedule, and every fifth job selects
// and tolerates the pool; the others may not use it. The eligible sets
// are kept between cycles (Options.Eligibility), as the executor does.
func BenchmarkCycle5kNodes10kJobsConstrained(b *testing.B) {
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
	benchCycle(b, w, "fifo", "k8s-default")
}
