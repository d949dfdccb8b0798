package autoscale

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/forecast"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// gpus builds a pending job of one replica of n GPUs, each sized as a
// gpu1 instance (4 cores, 16 GiB).
func gpus(id string, n int64) *cluster.Job {
	j := job1(id, 0, 60)
	j.Groups[0].Demand = resource.New(4*float64(n), 16*float64(n), n)
	return j
}

// at builds a snapshot at time now with the jobs pending, no node, and
// the catalogue cat.
func at(now float64, cat []cluster.InstanceType, pending ...*cluster.Job) *cluster.Snapshot {
	s := &cluster.Snapshot{Now: now, Catalog: cat, Pending: cluster.NewQueue()}
	for _, j := range pending {
		s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(j))
	}
	return s
}

// ph is the placeholder set of virtual instance seq: count whole
// instances of catalog1 type typ in group.
func ph(typ string, seq, count int, group string) cluster.Placeholder {
	for _, it := range catalog1 {
		if it.Name == typ {
			return cluster.Placeholder{Name: fmt.Sprintf("ph-%s-%d", typ, seq), Demand: it.Capacity, Count: count, PlacementGroup: group}
		}
	}
	panic("no type " + typ)
}

// setPlaceholders returns the set of the cycle's SetPlaceholders action,
// nil when there is none (an empty set is a non-nil empty slice).
func setPlaceholders(acts []policy.Action) []cluster.Placeholder {
	var out []cluster.Placeholder
	for _, a := range acts {
		if sp, ok := a.(policy.SetPlaceholders); ok {
			out = sp.Placeholders
		}
	}
	return out
}

// TestPredictiveProvision runs the plugin alone in a profile, cycle after
// cycle: each step's snapshot in, the SetPlaceholders set out. The fake
// model's k-th forecast is the last observed row plus deltas[k] (the last
// entry repeats); buckets are gpu1, gpu4 (Alg. 1 order).
func TestPredictiveProvision(t *testing.T) {
	type step struct {
		snap *cluster.Snapshot
		want []cluster.Placeholder // nil: no SetPlaceholders action
	}
	tests := []struct {
		name   string
		args   policy.Params
		deltas [][]float64
		steps  []step
	}{
		{"a fixed cluster has nothing to overprovision", policy.Params{"warmup": "0"}, [][]float64{{5, 5}},
			[]step{{at(0, nil, gpus("a", 1)), nil}, {at(300, nil, gpus("a", 1)), nil}}},
		{"forecast growth: whole instances per type, groups round-robin, once per tick", policy.Params{"warmup": "0", "groups": "g1,g2"}, [][]float64{{2, 1}},
			[]step{
				{at(0, catalog1, gpus("a", 1), gpus("b", 4)), []cluster.Placeholder{ph("gpu1", 1, 2, "g1"), ph("gpu4", 2, 1, "g2")}},
				{at(60, catalog1, gpus("a", 1)), nil},                // within the tick
				{at(300, catalog1, gpus("a", 1), gpus("b", 4)), nil}, // same want: unchanged
			}},
		{"forecast below demand: no placeholder at all", policy.Params{"warmup": "0"}, [][]float64{{-1, -1}},
			[]step{{at(0, catalog1, gpus("a", 1)), nil}, {at(300, catalog1, gpus("a", 1), gpus("b", 1)), nil}}},
		{"ladder while warming: the next power of two above the count", policy.Params{"warmup": "1"}, [][]float64{{9, 9}},
			[]step{
				{at(0, catalog1, gpus("a", 1)), []cluster.Placeholder{ph("gpu1", 1, 1, "")}},                                                                   // 1 -> 2
				{at(300, catalog1, gpus("a", 1), gpus("b", 1), gpus("c", 1)), nil},                                                                             // 3 -> 4
				{at(600, catalog1, gpus("a", 1), gpus("b", 1), gpus("c", 1), gpus("d", 1)), []cluster.Placeholder{ph("gpu1", 1, 1, ""), ph("gpu1", 2, 3, "")}}, // 4 -> 8
			}},
		{"shrinking gives back the newest virtual instance first", policy.Params{"warmup": "0", "groups": "g1,g2"}, [][]float64{{2, 0}, {5, 0}, {1, 0}, {0, 0}},
			[]step{
				{at(0, catalog1, gpus("a", 1)), []cluster.Placeholder{ph("gpu1", 1, 2, "g1")}},
				{at(300, catalog1, gpus("a", 1)), []cluster.Placeholder{ph("gpu1", 1, 2, "g1"), ph("gpu1", 2, 3, "g2")}},
				{at(600, catalog1, gpus("a", 1)), []cluster.Placeholder{ph("gpu1", 1, 1, "g1")}},
				{at(900, catalog1, gpus("a", 1)), []cluster.Placeholder{}},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPredictive(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			p.NewForecaster = func(string, forecast.Options) (forecast.Forecaster, error) {
				return &fakeModel{fn: func(last []float64) []float64 {
					d := tc.deltas[min(calls, len(tc.deltas)-1)]
					calls++
					out := make([]float64, len(last))
					for b := range last {
						out[b] = last[b] + d[b]
					}
					return out
				}}, nil
			}
			rt, err := scheduler.New(framework.Profile{Name: "provision-only", Provision: []framework.Provision{p}})
			if err != nil {
				t.Fatal(err)
			}
			if !rt.TimeDriven() {
				t.Error("a profile with the predictive plugin is not time-driven")
			}
			for i, st := range tc.steps {
				if d := cmp.Diff(st.want, setPlaceholders(rt.Schedule(st.snap))); d != "" {
					t.Errorf("step %d (t=%g): placeholders (-want +got):\n%s", i, st.snap.Now, d)
				}
			}
			if p.Failures != 0 {
				t.Errorf("failures %d: %v", p.Failures, p.LastErr)
			}
		})
	}
}

// TestPredictiveInAnyProfile: listed in the fifo profile, the plugin runs
// after the queue: the start comes first, then the placeholders, which
// see the job that was just started as demand (it was pending).
func TestPredictiveInAnyProfile(t *testing.T) {
	p, err := NewPredictive(policy.Params{"model": "ladder"})
	if err != nil {
		t.Fatal(err)
	}
	prof := baseline.FIFOProfile(placement.Pack)
	prof.Provision = append(prof.Provision, p)
	rt, err := scheduler.New(prof)
	if err != nil {
		t.Fatal(err)
	}
	s := at(0, catalog1, gpus("a", 1))
	s.Nodes = []*cluster.NodeState{{Node: cluster.Node{Name: "n0", InstanceType: "gpu1", Capacity: catalog1[0].Capacity}, Ready: true}}
	var got []string
	for _, a := range rt.Schedule(s) {
		got = append(got, fmt.Sprintf("%T", a))
	}
	if d := cmp.Diff([]string{"policy.Start", "policy.SetPlaceholders"}, got); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if PredictiveOf(rt) != p {
		t.Error("PredictiveOf did not find the plugin")
	}
}

// TestPresets: the presets are the base preset's profile, renamed, with
// the predictive plugin at the Provision point (predictive only).
func TestPresets(t *testing.T) {
	names := func(ps []framework.Plugin) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name())
		}
		return out
	}
	tests := []struct {
		spec, name string
		plugins    []string
		timeDriven bool
	}{
		{"predictive", "predictive", []string{"priority", "node-role", "most-allocated", "predictive"}, true},
		{"predictive:base=drf;model=ladder", "predictive", []string{"drf", "node-role", "least-allocated", "predictive"}, true},
		{"predictive:base=fifo", "predictive", []string{"head-of-line", "node-role", "most-allocated", "predictive"}, true},
		{"reactive", "reactive", []string{"priority", "node-role", "most-allocated"}, false},
		{"reactive:base=k8s-default", "reactive", []string{"priority", "node-role", "least-allocated"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			rt := newPolicy(t, tc.spec).(*framework.Runtime)
			if rt.Name() != tc.name || rt.TimeDriven() != tc.timeDriven {
				t.Errorf("name %s time-driven %v, want %s %v", rt.Name(), rt.TimeDriven(), tc.name, tc.timeDriven)
			}
			if d := cmp.Diff(tc.plugins, names(rt.Plugins())); d != "" {
				t.Errorf("plugins (-want +got):\n%s", d)
			}
			if got := PredictiveOf(rt) != nil; got != tc.timeDriven {
				t.Errorf("PredictiveOf found a plugin: %v", got)
			}
		})
	}
	if PredictiveOf(baseline.NewFIFO(placement.Pack)) != nil {
		t.Error("PredictiveOf found a plugin in fifo")
	}
}

// TestPluginEntry: the registry entry parses and bounds the plugin's
// arguments; base is a preset parameter, not a plugin argument.
func TestPluginEntry(t *testing.T) {
	es := Plugins()
	if len(es) != 1 || es[0].Name != PredictiveName {
		t.Fatalf("entries %+v", es)
	}
	tests := []struct {
		args policy.Params
		want []any
	}{
		{policy.Params{"model": "ladder", "tick": "60", "warmup": "1", "refit": "2", "groups": "a, b", "quick": "1"},
			[]any{"ladder", 60.0, 60, 120, []string{"a", "b"}, true, "small"}},
		{policy.Params{"model": "transformer", "net": "paper"},
			[]any{"transformer", 300.0, 288, 288, []string(nil), false, "paper"}},
	}
	for _, tc := range tests {
		pl, err := es[0].New(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		p := pl.(*Predictive)
		got := []any{p.Model, p.Tick, p.Warmup, p.Refit, p.Groups, p.Quick, p.Net}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%v (-want +got):\n%s", tc.args, d)
		}
	}
	for _, bad := range []policy.Params{{"base": "fifo"}, {"model": "nope"}, {"tick": "-1"}, {"refit": "0"}, {"groups": ","}, {"quick": "x"}, {"net": "huge"}} {
		if _, err := es[0].New(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
