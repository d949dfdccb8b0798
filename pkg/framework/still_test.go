package framework_test

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
)

// ticker is a TimeDriven Rebalance plugin that records nothing and counts
// the cycles it ran in; clock says what its ClocklessOn answers (nil: it
// does not implement it, see plainTicker).
type ticker struct {
	runs  int
	clock func(*cluster.Snapshot) bool
}

func (*ticker) Name() string                                   { return "ticker" }
func (*ticker) TimeDriven() bool                               { return true }
func (t *ticker) Rebalance(*framework.Cycle) *framework.Status { t.runs++; return nil }
func (t *ticker) ClocklessOn(s *cluster.Snapshot) bool         { return t.clock(s) }

// plainTicker is a ticker without ClocklessOn.
type plainTicker struct{ runs int }

func (*plainTicker) Name() string                                   { return "plain-ticker" }
func (*plainTicker) TimeDriven() bool                               { return true }
func (t *plainTicker) Rebalance(*framework.Cycle) *framework.Status { t.runs++; return nil }

// A time-driven profile answers an idle cycle on an unchanged cluster at
// once when every ClocklessOn plugin agrees on that cluster, runs it when
// one does not, and never answers it at once when a TimeDriven plugin is
// neither Clockless nor ClocklessOn.
func TestClocklessOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clock func(*cluster.Snapshot) bool
		plain bool
		want  int // cycles the ticker ran, of 4 on one cluster
	}{
		{name: "clockless on this cluster: the first cycle only", clock: func(*cluster.Snapshot) bool { return true }, want: 1},
		{name: "not on this cluster: every cycle", clock: func(*cluster.Snapshot) bool { return false }, want: 4},
		{name: "decided per cluster", clock: func(s *cluster.Snapshot) bool { return s.Now < 2 }, want: 3},
		{name: "another time-driven plugin needs the clock", clock: func(*cluster.Snapshot) bool { return true }, plain: true, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := &ticker{clock: tc.clock}
			p := framework.Profile{Name: "t", Rebalance: []framework.Rebalance{tk}}
			if tc.plain {
				p.Rebalance = append(p.Rebalance, &plainTicker{})
			}
			rt, err := framework.New(p)
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld().node("n0", 8).pending(job("big", 16, 1))
			for i := range 4 {
				w.s.Now, w.s.Cycle = float64(i), uint64(i+1)
				for _, a := range rt.Schedule(w.s) {
					wa, ok := a.(policy.Wait)
					if !ok {
						t.Fatalf("cycle %d: %v", i, a)
					}
					// The executor applies the Wait: the job shows its
					// reason from now on.
					for js := range w.s.Pending.All() {
						if js.Job.ID == wa.Job {
							js.Reason = wa.Reason
						}
					}
				}
			}
			if tk.runs != tc.want {
				t.Errorf("ticker ran in %d cycles, want %d", tk.runs, tc.want)
			}
		})
	}
}

// keeper is a Reserve plugin that says it keeps the order; resort makes
// it call Cycle.Resort anyway.
type keeper struct{ keeps, resort bool }

func (*keeper) Name() string       { return "keeper" }
func (k *keeper) KeepsOrder() bool { return k.keeps }
func (k *keeper) Reserve(c *framework.Cycle, _ *cluster.JobState, _ cluster.Placement) {
	if k.resort {
		c.Resort()
	}
}

// A Reserve plugin that says it keeps the order and calls Resort breaks
// the contract the scheduling queue relies on: the cycle panics rather
// than decide on a wrong premise. One that does not say so may resort.
func TestOrderKeeperResort(t *testing.T) {
	for _, tc := range []struct {
		name      string
		k         keeper
		wantPanic bool
	}{
		{"keeps the order, resorts: panic", keeper{keeps: true, resort: true}, true},
		{"keeps the order", keeper{keeps: true}, false},
		{"may resort", keeper{resort: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := framework.New(framework.Profile{Name: "k", Reserve: []framework.Reserve{&tc.k}})
			if err != nil {
				t.Fatal(err)
			}
			var got any
			func() {
				defer func() { got = recover() }()
				acts := rt.Schedule(newWorld().node("n0", 8).pending(job("a", 4, 1), job("b", 4, 1)).s)
				if d := gocmp.Diff([]string{"start a [0]", "start b [0]"}, summary(acts)); d != "" {
					t.Errorf("actions (-want +got):\n%s", d)
				}
			}()
			if (got != nil) != tc.wantPanic {
				t.Errorf("panic %v, want one: %v", got, tc.wantPanic)
			}
			if msg, _ := got.(string); tc.wantPanic && !strings.Contains(msg, "OrderKeeper") {
				t.Errorf("panic %q does not name OrderKeeper", msg)
			}
		})
	}
}
