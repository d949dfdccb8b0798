package combined

import (
	"context"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/resource"
)

func TestWorkloadShape(t *testing.T) {
	o := DefaultOptions(112)
	jobs := Generate(3, o)
	again := Generate(3, o)
	if len(jobs) != len(again) || len(jobs) < 200 {
		t.Fatalf("%d jobs (again %d)", len(jobs), len(again))
	}
	var te, ps, util int
	gpuSec := 0.0
	for i, j := range jobs {
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if j.ID != again[i].ID || j.Submit != again[i].Submit || j.Work != again[i].Work {
			t.Fatalf("job %d differs between two generations of one seed", i)
		}
		if i > 0 && j.Submit < jobs[i-1].Submit {
			t.Fatalf("not sorted by submit at %d", i)
		}
		if j.Submit < 0 || j.Submit >= Day {
			t.Fatalf("job %s submitted at %v, outside the day", j.ID, j.Submit)
		}
		switch {
		case j.Class == cluster.ClassTE:
			te++
		case j.PS != nil:
			ps++
		}
		if j.Utility != nil {
			util++
		}
		gpuSec += j.Work * float64(j.RequestedDemand()[resource.GPU])
	}
	load := gpuSec / (Day * 112)
	if load < 0.9 || load > 1.0 {
		t.Errorf("offered load %.3f, want just above 0.9", load)
	}
	if f := float64(te) / float64(len(jobs)); f < 0.28 || f > 0.42 {
		t.Errorf("TE share %.2f, want about 0.35", f)
	}
	if ps == 0 || ps != util {
		t.Errorf("%d parameter-server jobs, %d with a utility: want the same, > 0", ps, util)
	}
}

// TestQuick runs the three experiments at quick scale: every profile
// runs without a refused action and the drover row is there.
func TestQuick(t *testing.T) {
	pols, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	env := &experiment.Env{Seed: 1, Seeds: 1, Policies: pols, Quick: true}
	for _, e := range Experiments() {
		rep, err := e.Run(context.Background(), env)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		found := false
		for _, r := range rep.Results {
			if r.Metrics["refused_actions"] != 0 {
				t.Errorf("%s: %s refused %v actions", e.Name, r.Policy, r.Metrics["refused_actions"])
			}
			found = found || r.Policy == "drover"
		}
		if !found {
			t.Errorf("%s: no drover row", e.Name)
		}
	}
}
