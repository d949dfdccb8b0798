package drover

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

// TestReserveScenario runs drover in the simulator on one node of 8 GPUs:
// trial t1 (4 GPUs, 300 s) arrives at 0, BE jobs b1 and b2 (4 GPUs, 10 h,
// 60 s grace) at 10 and 20, trial t2 (4 GPUs, 120 s) at 1,000.
//
// Without te-reserve b1 starts beside t1 and b2 takes t1's GPUs when it
// ends, so t2 preempts a BE job and waits out its grace period. With it,
// t1's arrival reserves 4 GPUs: b1 still starts (t1 holds the reserve),
// b2 does not take the GPUs t1 gives back, and t2 starts at once. With a
// window shorter than the gap between the trials the reserve lapses
// before t2 arrives, b2 backfills, and t2 waits again.
func TestReserveScenario(t *testing.T) {
	type out struct {
		T2Wait    float64
		B2Started bool
		Preempted int
	}
	tests := []struct {
		name string
		mod  func(*Options)
		want out
	}{
		{"no reserve: t2 preempts and waits a grace period", nil, out{T2Wait: 60, B2Started: true, Preempted: 1}},
		{"reserve: t2 starts at once, b2 waits", func(o *Options) { o.Reserve = true }, out{T2Wait: 0, B2Started: false, Preempted: 0}},
		{"reserve lapsed after its window: as without", func(o *Options) { o.Reserve, o.ReserveWindow = true, 360 }, out{T2Wait: 60, B2Started: true, Preempted: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []cluster.Node{{Name: "n0", Capacity: resource.New(64, 512, 8)}}
			t1, t2 := te("t1", 4).j, te("t2", 4).j
			t1.Work, t2.Work, t2.Submit = 300, 120, 1000
			b1, b2 := be("b1", 4, 4, 4).j, be("b2", 4, 4, 4).j
			b1.Work, b2.Work, b1.Submit, b2.Submit = 36000, 36000, 10, 20
			o := DefaultOptions()
			o.Provision = false
			if tc.mod != nil {
				tc.mod(&o)
			}
			p, err := Profile(o)
			if err != nil {
				t.Fatal(err)
			}
			res := simulate(t, p, sim.Config{Tick: 10, Horizon: 3000}, nodes, []*cluster.Job{t1, b1, b2, t2})
			var got out
			for _, rec := range res.Records {
				switch rec.ID {
				case "t2":
					got.T2Wait = rec.FirstStart - rec.Submit
				case "b2":
					got.B2Started = rec.FirstStart >= 0
				}
				got.Preempted += rec.Preemptions
			}
			if d := gocmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestReservation: the reservation is the largest TE job seen within the
// window that fits one node, and 0 once the window has passed.
func TestReservation(t *testing.T) {
	p, err := NewReserve(3600)
	if err != nil {
		t.Fatal(err)
	}
	p.seen = map[string]teArrival{"a": {submit: 0, gpus: 2}, "b": {submit: 1000, gpus: 4}, "big": {submit: 1000, gpus: 0}}
	for _, tc := range []struct {
		now  float64
		want int64
	}{{500, 4}, {3600, 4}, {4600, 4}, {4601, 0}} {
		if got := p.Reservation(tc.now); got != tc.want {
			t.Errorf("Reservation(%v) = %d, want %d", tc.now, got, tc.want)
		}
	}
	if _, err := NewReserve(0); err == nil {
		t.Error("NewReserve(0): no error")
	}
}
