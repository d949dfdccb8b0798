package autoscale

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/forecast"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

func TestPositiveDelta(t *testing.T) {
	for _, tc := range []struct {
		forecast, current float64
		want              int
	}{
		{5, 3, 2},
		{3.2, 3, 1},          // a fraction of an instance is an instance
		{3, 3, 0},            // no growth, no placeholder
		{1, 4, 0},            // never negative: the cluster-autoscaler handles shrinking
		{3.0000000001, 3, 0}, // float noise is not growth
	} {
		if got := PositiveDelta(tc.forecast, tc.current); got != tc.want {
			t.Errorf("PositiveDelta(%g, %g) = %d, want %d", tc.forecast, tc.current, got, tc.want)
		}
	}
}

func TestLadder(t *testing.T) {
	got := Ladder([]float64{0, 0, 1, 3, 4, 5.5, 8}, []bool{false, true, true, true, true, true, true})
	// rungs strictly above the count: unused 0 -> nothing; used 0 -> 1;
	// 1 -> 2; 3 -> 4; 4 -> 8; 5.5 (6) -> 8; 8 -> 16.
	want := []int{0, 1, 1, 1, 4, 2, 8}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Ladder = %v, want %v", got, want)
	}
}

// TestAdjustRoundRobinAndShrink: new virtual instances go to the placement
// groups in turn, each whole in one group; shrinking gives back the newest
// first, so older ones keep their group.
func TestAdjustRoundRobinAndShrink(t *testing.T) {
	p := &Predictive{Groups: []string{"a", "b", "c"}}
	steps := []struct {
		want    []int
		changed bool
		vis     []virtual
	}{
		{[]int{4, 2}, true, []virtual{{0, "a", 4, 1}, {1, "b", 2, 2}}},
		{[]int{4, 2}, false, []virtual{{0, "a", 4, 1}, {1, "b", 2, 2}}},
		{[]int{6, 2}, true, []virtual{{0, "a", 4, 1}, {1, "b", 2, 2}, {0, "c", 2, 3}}},
		{[]int{3, 3}, true, []virtual{{0, "a", 3, 1}, {1, "b", 2, 2}, {1, "a", 1, 4}}},
		{[]int{0, 0}, true, nil},
	}
	for i, st := range steps {
		if got := p.adjust(st.want); got != st.changed {
			t.Fatalf("step %d: changed=%v, want %v", i, got, st.changed)
		}
		if len(p.vis) != len(st.vis) || len(st.vis) > 0 && !reflect.DeepEqual(p.vis, st.vis) {
			t.Fatalf("step %d: virtual instances %+v, want %+v", i, p.vis, st.vis)
		}
	}
}

// fakeModel forecasts fn(last observed row).
type fakeModel struct {
	fn func(last []float64) []float64
}

func (*fakeModel) Name() string              { return "fake" }
func (*fakeModel) Fit(forecast.Series) error { return nil }
func (m *fakeModel) Predict(h forecast.Series) ([]float64, error) {
	return m.fn(h.Values[h.Len()-1]), nil
}

var catalog1 = []cluster.InstanceType{
	{Name: "gpu1", Capacity: resource.New(4, 16, 1), PricePerHour: 1},
	{Name: "gpu4", Capacity: resource.New(16, 64, 4), PricePerHour: 5},
}

func job1(id string, submit, work float64) *cluster.Job {
	return &cluster.Job{ID: id, Submit: submit, Work: work, Class: cluster.ClassBE,
		Groups: []cluster.ReplicaGroup{{Name: "worker", Demand: resource.New(4, 16, 1), Replicas: 1, Min: 1, Max: 1}}}
}

// stream: a 1-GPU job every 30 minutes for 6 hours, each running 10
// minutes, so that under the reactive autoscaler every job finds its
// previous node released (empty for the 10-minute timeout) and waits for
// a launch.
func stream() []*cluster.Job {
	var jobs []*cluster.Job
	for i := 0; i < 12; i++ {
		jobs = append(jobs, job1("j"+string(rune('a'+i)), float64(i)*1800, 600))
	}
	return jobs
}

func runScenario(t *testing.T, p policy.Policy) *sim.Result {
	t.Helper()
	s, err := sim.New(sim.Config{Tick: 60, LaunchDelay: 300, Catalog: catalog1, Check: true,
		Autoscaler: &sim.Autoscaler{IdleTimeout: 600}}, nil, stream(), p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Refusals) > 0 {
		t.Fatalf("refusals: %v", r.Refusals)
	}
	return r
}

func newPolicy(t *testing.T, spec string) policy.Policy {
	t.Helper()
	name, params, err := policy.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Entries() {
		if e.Name == name {
			p, err := e.New(params)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no policy %s", name)
	return nil
}

// TestScenarioPredictiveVsReactive: with a model that forecasts one more
// instance than observed, each arriving job finds a placeholder's node
// ready and starts at the next cycle; under the reactive cluster-autoscaler
// every job waits the launch delay. The predictive run costs more (it
// holds a spare node).
func TestScenarioPredictiveVsReactive(t *testing.T) {
	react := runScenario(t, newPolicy(t, "reactive")).Metrics()
	pol := newPolicy(t, "predictive:warmup=0;groups=x,y;net=paper")
	pp := PredictiveOf(pol)
	pp.NewForecaster = func(_ string, o forecast.Options) (forecast.Forecaster, error) {
		if o.Net != forecast.NetPaper {
			t.Errorf("forecaster options %+v: want net=paper passed on", o)
		}
		return &fakeModel{fn: func(last []float64) []float64 {
			out := append([]float64(nil), last...)
			out[0]++ // the gpu1 bucket (sorted first)
			return out
		}}, nil
	}
	pred := runScenario(t, pol).Metrics()
	if pp.Forecasts == 0 || pp.Failures != 0 {
		t.Fatalf("forecasts %d failures %d (%v)", pp.Forecasts, pp.Failures, pp.LastErr)
	}
	if react["pending_mean_s"] < 300 {
		t.Fatalf("reactive pending %g s, want at least the 300 s launch delay", react["pending_mean_s"])
	}
	if pred["pending_mean_s"] >= react["pending_mean_s"]/2 {
		t.Fatalf("predictive pending %g s, reactive %g s: placeholders did not help", pred["pending_mean_s"], react["pending_mean_s"])
	}
	if pred["cost"] <= react["cost"] || pred["placeholder_node_hours"] <= 0 {
		t.Fatalf("predictive cost %g vs reactive %g, placeholder node-hours %g", pred["cost"], react["cost"], pred["placeholder_node_hours"])
	}
}

// TestScenarioForecastBelowDemand: a model forecasting less than the
// demand sets no placeholder at all (positive delta only): the run is the
// reactive one.
func TestScenarioForecastBelowDemand(t *testing.T) {
	pol := newPolicy(t, "predictive:warmup=0")
	PredictiveOf(pol).NewForecaster = func(string, forecast.Options) (forecast.Forecaster, error) {
		return &fakeModel{fn: func(last []float64) []float64 { return make([]float64, len(last)) }}, nil
	}
	pred := runScenario(t, pol).Metrics()
	react := runScenario(t, newPolicy(t, "reactive")).Metrics()
	if pred["placeholder_node_hours"] != 0 || pred["pending_mean_s"] != react["pending_mean_s"] || pred["cost"] != react["cost"] {
		t.Fatalf("predictive %v\nreactive %v", pred, react)
	}
}

// TestLadderUntilWarm: before the warm-up the ladder holds placeholders;
// a failing model falls back to the ladder and is counted.
func TestLadderUntilWarm(t *testing.T) {
	pol := newPolicy(t, "predictive:warmup=1") // 12 steps of 300 s
	pp := PredictiveOf(pol)
	fits := 0
	pp.NewForecaster = func(string, forecast.Options) (forecast.Forecaster, error) {
		fits++
		return nil, errors.New("boom")
	}
	r := runScenario(t, pol).Metrics()
	if pp.Ladders == 0 || pp.Forecasts != 0 || pp.Failures == 0 || !strings.Contains(pp.LastErr.Error(), "boom") {
		t.Fatalf("ladders %d forecasts %d failures %d err %v", pp.Ladders, pp.Forecasts, pp.Failures, pp.LastErr)
	}
	if fits == 0 || r["placeholder_node_hours"] <= 0 {
		t.Fatalf("fits %d, placeholder node-hours %g", fits, r["placeholder_node_hours"])
	}
}

func TestParamsErrors(t *testing.T) {
	for _, spec := range []string{
		"predictive:model=nope", "predictive:tick=0", "predictive:tick=x", "predictive:warmup=-1",
		"predictive:refit=0", "predictive:groups=a,,b", "predictive:base=nope", "predictive:net=huge", "predictive:colour=red", "reactive:base=nope",
	} {
		name, params, _ := policy.ParseSpec(spec)
		for _, e := range Entries() {
			if e.Name != name {
				continue
			}
			if _, err := e.New(params); err == nil {
				t.Errorf("%s: no error", spec)
			}
		}
	}
}
