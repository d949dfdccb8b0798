package drover

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
)

// TestOrderAttainedService: TE first; then priority; then least attained
// GPU-service (a preempted job with work done goes behind a fresh one);
// ties keep queue order, whatever the job's size. Order{Weight: true} is
// the elastic weight, largest first.
func TestOrderAttainedService(t *testing.T) {
	mk := func(id string, b jb, done float64) *cluster.JobState {
		js := cluster.NewJobState(b.j)
		js.WorkLeft = b.j.Work - done
		return js
	}
	jobs := []*cluster.JobState{
		mk("ran", be("ran", 1, 1, 1), 1000),
		mk("small", be("small", 1, 1, 1), 0),
		mk("big", be("big", 4, 4, 4), 0),
		mk("te", te("te", 1), 0),
		mk("prio", be("prio", 1, 1, 1).prio(3), 2000),
	}
	sorted := func(o Order) []string {
		snap := newWorld(2).s
		snap.Now = 5000
		c := &framework.Cycle{Snap: snap}
		out := append([]*cluster.JobState(nil), jobs...)
		// insertion sort: stable, as the queue keeps ties in queue order
		for i := 1; i < len(out); i++ {
			for k := i; k > 0 && o.Compare(c, out[k-1], out[k]) > 0; k-- {
				out[k-1], out[k] = out[k], out[k-1]
			}
		}
		var ids []string
		for _, js := range out {
			ids = append(ids, js.Job.ID)
		}
		return ids
	}
	if diff := gocmp.Diff([]string{"te", "prio", "small", "big", "ran"}, sorted(Order{})); diff != "" {
		t.Errorf("attained-service order (-want +got):\n%s", diff)
	}
	// SRSF: the BE jobs by remaining GPU-service (ran 2,600, small 3,600,
	// big 4 x 3,600), after TE and priority.
	if diff := gocmp.Diff([]string{"te", "prio", "ran", "small", "big"}, sorted(Order{SRSF: true})); diff != "" {
		t.Errorf("SRSF order (-want +got):\n%s", diff)
	}
	// A job nobody stated a run time for (NoEstimate: Work is the
	// executor's default) is keyed by its attained service: 2 GPUs x 600 s.
	nb := be("noest", 2, 2, 2)
	nb.j.NoEstimate = true
	noEst := cluster.NewJobState(nb.j)
	noEst.WorkLeft = nb.j.Work - 600
	if r := RemainingService(noEst, 5000); r != 1200 {
		t.Errorf("RemainingService of a job without an estimate = %v, want its attained service 1200", r)
	}
	// SRSF reads the estimate, never the true run time: big's estimate of
	// 500 s (4 GPUs, nothing done: 2,000) puts it first among the BE jobs,
	// and small's estimate of twice its run time (7,200) last.
	big0, small0 := jobs[2].Job, jobs[1].Job
	big, small := *big0, *small0
	big.Estimate, small.Estimate = 500, 2*small.Work
	jobs[2].Job, jobs[1].Job = &big, &small
	if diff := gocmp.Diff([]string{"te", "prio", "big", "ran", "small"}, sorted(Order{SRSF: true})); diff != "" {
		t.Errorf("SRSF order with estimates (-want +got):\n%s", diff)
	}
	if r := RemainingService(jobs[2], 5000); r != 2000 {
		t.Errorf("RemainingService of big with an estimate of 500 s = %v, want 2000", r)
	}
	jobs[2].Job, jobs[1].Job = big0, small0
	if got := sorted(Order{Weight: true}); got[2] != "big" {
		t.Errorf("weight order puts the largest BE job third, got %v", got)
	}
	if a := Attained(jobs[0], 5000); a != 1000 {
		t.Errorf("Attained = %v, want 1000 (1000 s at 1 GPU)", a)
	}
}

// TestPresetArgs: the issue-24 arguments build, bad values are errors.
func TestPresetArgs(t *testing.T) {
	e := Entries()[0]
	for _, spec := range []policy.Params{{}, {"renew_h": "inf"}, {"renew_h": "0.5"}, {"place": "spread"}, {"order": "weight"},
		{"size": "elastic"}, {"victim": "fitgpp"}, {"hol": "true"}, {"payoff": "true"}, {"order": "las"}, {"order": "srsf"},
		{"reserve": "true"}, {"reserve": "true", "reserve_h": "1", "reserve_q": "0.5"}} {
		if _, err := e.New(spec); err != nil {
			t.Errorf("%v: %v", spec, err)
		}
	}
	for _, spec := range []policy.Params{{"renew_h": "0"}, {"place": "x"}, {"order": "x"}, {"size": "x"}, {"victim": "rand"}, {"hol": "x"}, {"reserve_h": "0"}, {"reserve_q": "2"}} {
		if _, err := e.New(spec); err == nil {
			t.Errorf("%v: no error", spec)
		}
	}
	o := DefaultOptions()
	if o.Payoff || o.Renew != 3600 || !o.Requested || o.WeightOrder || !o.SRSFOrder || o.Reserve {
		t.Errorf("defaults %+v: want payoff off, renew 1 h, requested sizes, the SRSF BE order (order=las: least attained), no TE reserve", o)
	}
}
