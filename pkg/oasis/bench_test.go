package oasis

import (
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
)

// BenchmarkAdmission measures one admission decision (Alg. 2, the best
// schedule over every completion slot) at 100 worker servers, 50 PS
// servers and 100 slots, with 300 jobs already admitted so that prices
// differ across servers and slots. Target: under 10 ms (the paper reports
// under a second).
func BenchmarkAdmission(b *testing.B) {
	st := DefaultSetting(301, 100, 50, 100)
	jobs := st.Generate(1)
	nodes := st.Nodes(1)
	bounds := ComputeBounds(jobs, nodes, st.Slot, st.Slots)
	o, err := New(Config{Slot: st.Slot, Slots: st.Slots, Eta: 1, Bounds: &bounds})
	if err != nil {
		b.Fatal(err)
	}
	s := snapshotOf(nodes, 0)
	o.sync(s)
	for _, j := range jobs[:300] {
		if p := o.BestSchedule(j, arrivalSlot(j.Submit, st.Slot)); p != nil && p.Utility > p.Cost {
			o.admit(j, p)
		}
	}
	// The decided job is the workload's largest and arrives at time 0,
	// so that every one of the 100 slots is a candidate completion.
	big := jobs[300]
	for _, c := range jobs {
		if WorkerSlots(c.PS, st.Slot) > WorkerSlots(big.PS, st.Slot) {
			big = c
		}
	}
	j := *big
	j.Submit = 0
	var p *Plan
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p = o.BestSchedule(&j, 0)
	}
	b.StopTimer()
	if p == nil {
		b.Fatal("no schedule")
	}
	b.ReportMetric(float64(WorkerSlots(j.PS, st.Slot)), "worker-slots")
	_ = cluster.ClassBE
}
