package fitgpp

import (
	"context"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/scheduler"
	"github.com/drover-sched/drover/pkg/sim"
)

// TestRenewDoesNotStarve is issue 24's starvation: one node, one BE job
// of 20 days holding all 8 GPUs, and two TE trials of 10 minutes. The
// first preempts the BE job; the second arrives 3 hours after the BE job
// resumed. Under the paper's lifetime cap (P = 1) the BE job is immune
// from then on and the second trial waits for it to finish (20 days);
// with renew_h=1 the BE job, having run an hour uninterrupted, is
// preempted once more and the trial starts within its grace period. The
// BE job's harm stays bounded: P preemptions, then at most one per hour
// of uninterrupted run.
func TestRenewDoesNotStarve(t *testing.T) {
	const day = 86400.0
	mk := func(id string, class cluster.Class, submit, work, grace float64) *cluster.Job {
		j := job(id, class, 8, grace)
		j.Submit, j.Work = submit, work
		return j
	}
	for _, tc := range []struct {
		name   string
		params policy.Params
		// waitMin, waitMax bound the second trial's queueing delay.
		waitMin, waitMax float64
		longPreempted    int
	}{
		{"lifetime cap p=1 starves the trial", policy.Params{"p": "1"}, 19 * day, 21 * day, 1},
		{"renew_h=1 does not", policy.Params{"p": "1", "renew_h": "1"}, 0, 300, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []*cluster.Job{
				mk("long", cluster.ClassBE, 0, 20*day, 120),
				mk("t1", cluster.ClassTE, 3600, 600, 0),
				// t1 starts at 3720 (long's grace), ends 4320; long resumes
				// then, and has run 3 h when t2 arrives.
				mk("t2", cluster.ClassTE, 4320+3*3600, 600, 0),
			}
			pre, err := parseFitGpp(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := scheduler.New(Profile(pre))
			if err != nil {
				t.Fatal(err)
			}
			nodes := []cluster.Node{{Name: "n0", Capacity: capacity}}
			s, err := sim.New(sim.Config{Tick: 60, Check: true}, nodes, jobs, rt)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*metrics.JobRecord{}
			for i := range res.Records {
				got[res.Records[i].ID] = &res.Records[i]
			}
			if !got["t2"].Finished() || !got["long"].Finished() {
				t.Fatalf("unfinished: %+v", res.Records)
			}
			if w := got["t2"].QueueDelay(); w < tc.waitMin || w > tc.waitMax {
				t.Errorf("t2 waited %v s, want in [%v, %v]", w, tc.waitMin, tc.waitMax)
			}
			if n := got["long"].Preemptions; n != tc.longPreempted {
				t.Errorf("long preempted %d times, want %d", n, tc.longPreempted)
			}
		})
	}
}

// TestCapped is the protection rule on its own.
func TestCapped(t *testing.T) {
	js := &cluster.JobState{Preemptions: 1, LastStart: 1000}
	for _, tc := range []struct {
		name  string
		p     int
		renew float64
		now   float64
		want  bool
	}{
		{"below the cap", 2, 0, 1001, false},
		{"lifetime cap", 1, 0, 1e9, true},
		{"renewal window not yet run", 1, 3600, 1000 + 3599, true},
		{"renewal window run", 1, 3600, 1000 + 3600, false},
	} {
		p := &Preemptor{P: tc.p, Renew: tc.renew}
		if got := p.Capped(js, tc.now); got != tc.want {
			t.Errorf("%s: Capped = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseRenew(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want float64
		err  bool
	}{
		{"", 0, false}, {"inf", 0, false}, {"1", 3600, false}, {"0.5", 1800, false},
		{"0", 0, true}, {"-1", 0, true}, {"NaN", 0, true}, {"x", 0, true}, {"1e9", 0, true},
	} {
		pr := policy.Params{}
		if tc.v != "" {
			pr["renew_h"] = tc.v
		}
		got, err := ParseRenew(pr)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("renew_h=%q: %v, %v; want %v, error %v", tc.v, got, err, tc.want, tc.err)
		}
	}
}
