package fitgpp

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// ids returns the jobs' IDs.
func ids(js []*cluster.JobState) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.Job.ID
	}
	return out
}

// jobsOf builds pending job states from "id:class" pairs (TE, BE or ?).
func jobsOf(specs ...string) []*cluster.JobState {
	var out []*cluster.JobState
	for _, sp := range specs {
		id, class, _ := strings.Cut(sp, ":")
		c := cluster.ClassUnknown
		switch class {
		case "TE":
			c = cluster.ClassTE
		case "BE":
			c = cluster.ClassBE
		}
		out = append(out, cluster.NewJobState(job(id, c, 1, 0)))
	}
	return out
}

func TestTEFirst(t *testing.T) {
	tests := []struct {
		name  string
		queue []string
		want  []string
	}{
		{"TE before BE, stable within each", []string{"b1:BE", "t1:TE", "b2:BE", "t2:TE"}, []string{"t1", "t2", "b1", "b2"}},
		{"unclassified jobs rank with TE jobs", []string{"b1:BE", "x:?", "t1:TE"}, []string{"x", "t1", "b1"}},
		{"all BE: queue order", []string{"b2:BE", "b1:BE"}, []string{"b2", "b1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js := jobsOf(tc.queue...)
			slices.SortStableFunc(js, func(a, b *cluster.JobState) int { return TEFirst{}.Compare(nil, a, b) })
			if d := cmp.Diff(tc.want, ids(js)); d != "" {
				t.Errorf("order (-want +got):\n%s", d)
			}
		})
	}
}

func TestClass(t *testing.T) {
	tests := []struct {
		job      string
		code     framework.Code
		contains string
	}{
		{"t:TE", framework.Success, ""},
		{"b:BE", framework.Success, ""},
		{"x:?", framework.Unresolvable, "job x has no class"},
	}
	for _, tc := range tests {
		st := Class{}.Admit(nil, jobsOf(tc.job)[0])
		if st.Code() != tc.code || !strings.Contains(st.Reason(), tc.contains) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.job, st, tc.code, tc.contains)
		}
	}
}

// TestProfileActions runs the preset profiles on one cycle and compares
// every action, in order: the head-of-line rule among BE jobs, the
// reservation for a waiting TE job, instant and graceful preemption.
func TestProfileActions(t *testing.T) {
	be, te := cluster.ClassBE, cluster.ClassTE
	one := func(n int) cluster.Placement { return cluster.Placement{{Group: 0, Node: n}} }
	tests := []struct {
		name    string
		pre     *Preemptor
		strict  bool // StrictProfile
		nodes   int
		running []rj
		pending []*cluster.Job
		want    []policy.Action
	}{
		{
			name: "strict TE priority: a TE job that cannot start blocks every BE job",
			pre:  &Preemptor{Rule: FitGpp, Lambda: 1, P: 1, NoPreempt: true}, strict: true, nodes: 1,
			running: []rj{{id: "r", class: be, node: 0, gpus: 6}},
			pending: []*cluster.Job{job("b1", be, 1, 0), job("t", te, 4, 0), job("b2", be, 1, 0)},
			want: []policy.Action{
				policy.Wait{Job: "t", Reason: "no room and preemption is off"},
			},
		},
		{
			name: "strict TE priority: once every TE job has started, BE jobs start",
			pre:  &Preemptor{Rule: FitGpp, Lambda: 1, P: 1, NoPreempt: true}, strict: true, nodes: 1,
			running: []rj{{id: "r", class: be, node: 0, gpus: 4}},
			pending: []*cluster.Job{job("b1", be, 1, 0), job("t", te, 2, 0), job("b2", be, 1, 0)},
			want: []policy.Action{
				policy.Start{Job: "t", Placement: one(0)},
				policy.Start{Job: "b1", Placement: one(0)},
				policy.Start{Job: "b2", Placement: one(0)},
			},
		},
		{
			name: "a TE job that cannot start blocks no BE job",
			pre:  &Preemptor{Rule: FitGpp, Lambda: 1, P: 1, NoPreempt: true}, nodes: 1,
			running: []rj{{id: "r", class: be, node: 0, gpus: 6}},
			pending: []*cluster.Job{job("b1", be, 1, 0), job("t", te, 4, 0), job("b2", be, 1, 0)},
			want: []policy.Action{
				policy.Wait{Job: "t", Reason: "no room and preemption is off"},
				policy.Start{Job: "b1", Placement: one(0)},
				policy.Start{Job: "b2", Placement: one(0)},
			},
		},
		{
			name: "a BE job that cannot start blocks the BE jobs behind it",
			pre:  &Preemptor{Rule: FitGpp, Lambda: 1, P: 1}, nodes: 1,
			running: []rj{{id: "r", class: be, node: 0, gpus: 6}},
			pending: []*cluster.Job{job("big", be, 4, 0), job("small", be, 1, 0)},
			want: []policy.Action{
				policy.Wait{Job: "big", Reason: "no node has cpu=16 memory=128Gi gpu=4 free for replica 1 of group worker"},
			},
		},
		{
			name: "grace 0: the victim goes at once and the TE job starts",
			pre:  &Preemptor{Rule: FitGpp, Lambda: 1, P: 1}, nodes: 1,
			running: []rj{{id: "v", class: be, node: 0, gpus: 8}},
			pending: []*cluster.Job{job("t", te, 4, 0)},
			want: []policy.Action{
				policy.Preempt{Job: "v", By: "t", Reason: "fitgpp victim for TE job t"},
				policy.Start{Job: "t", Placement: one(0)},
			},
		},
		{
			name: "grace > 0: the TE job waits, its room is held back from BE jobs",
			pre:  &Preemptor{Rule: LRTP, P: Unlimited}, nodes: 1,
			running: []rj{{id: "v", class: be, node: 0, gpus: 4, grace: 60}, {id: "w", class: be, node: 0, gpus: 2, grace: 60}},
			pending: []*cluster.Job{job("b", be, 2, 0), job("t", te, 6, 0)},
			// LRTP: equal remaining times, the first by ID (v) goes; 2
			// free + 4 coming = 6. b may not take the 2 free GPUs.
			want: []policy.Action{
				policy.Preempt{Job: "v", Grace: 60, By: "t", Reason: "lrtp victim for TE job t"},
				policy.Wait{Job: "t", Reason: "preempted 1 BE jobs; waiting for their grace periods"},
				policy.Wait{Job: "b", Reason: "no node has cpu=8 memory=64Gi gpu=2 free for replica 1 of group worker"},
			},
		},
		{
			name: "a job without a class is rejected where the queue has it",
			pre:  &Preemptor{Rule: Rand, P: Unlimited}, nodes: 1,
			pending: []*cluster.Job{job("b", be, 1, 0), job("x", cluster.ClassUnknown, 1, 0), job("t", te, 1, 0)},
			want: []policy.Action{
				policy.Reject{Job: "x", Reason: "job x has no class (want TE or BE)"},
				policy.Start{Job: "t", Placement: one(0)},
				policy.Start{Job: "b", Placement: one(0)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prof := Profile(tc.pre)
			if tc.strict {
				prof = StrictProfile(tc.pre)
			}
			rt, err := scheduler.New(prof)
			if err != nil {
				t.Fatal(err)
			}
			acts := rt.Schedule(snapshot(tc.nodes, tc.running, tc.pending...))
			if d := cmp.Diff(tc.want, acts); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}

// TestNeedsSoon: a Preemptor in a profile without the Soon ledger fails
// with a reason instead of planning on nothing.
func TestNeedsSoon(t *testing.T) {
	p := Profile(&Preemptor{Rule: FitGpp, Lambda: 1, P: 1})
	p.Future = false
	r, err := scheduler.New(p)
	if err != nil {
		t.Fatal(err)
	}
	acts := r.Schedule(snapshot(1, []rj{{id: "v", class: cluster.ClassBE, node: 0, gpus: 8}}, job("t", cluster.ClassTE, 4, 0)))
	if len(acts) != 1 || !strings.Contains(acts[0].(policy.Wait).Reason, "Soon") {
		t.Errorf("actions %v, want one wait naming the Soon ledger", acts)
	}
}

// TestPluginRegistry builds the presets from a profile spec with the
// plugin registry: the arguments are parsed and bounded as the presets'
// parameters, the Preemptor turns the Soon ledger on, and the built
// profile decides as the preset does.
func TestPluginRegistry(t *testing.T) {
	reg := profile.NewRegistry()
	if err := reg.Add(append(baseline.Plugins(), Plugins()...)...); err != nil {
		t.Fatal(err)
	}
	spec := func(pre string, args map[string]any) profile.Spec {
		s := profile.Spec{Name: pre, Plugins: profile.PluginsSpec{
			QueueSort: &profile.PluginRef{Name: TEFirstName},
			Admit:     []profile.PluginRef{{Name: ClassName}, {Name: BEHeadOfLineName}},
			Filter:    []profile.PluginRef{{Name: "node-role"}},
			Score:     []profile.PluginRef{{Name: "most-allocated"}},
			Preempt:   []profile.PluginRef{{Name: pre}},
		}}
		if args != nil {
			s.PluginConfig = []profile.PluginConfig{{Name: pre, Args: args}}
		}
		return s
	}
	for _, tc := range []struct {
		preset string
		args   map[string]any
		want   Preemptor
	}{
		{"fitgpp", map[string]any{"lambda": 2.5, "p": 3.0}, Preemptor{Rule: FitGpp, Lambda: 2.5, P: 3}},
		{"fitgpp", map[string]any{"p": "inf", "preempt": false}, Preemptor{Rule: FitGpp, Lambda: DefaultLambda, P: Unlimited, NoPreempt: true}},
		{"lrtp", nil, Preemptor{Rule: LRTP, P: DefaultP}},
		{"rand", nil, Preemptor{Rule: Rand, P: DefaultP}},
		{"lrtp", map[string]any{"p": "inf"}, Preemptor{Rule: LRTP, P: Unlimited}},
		{"rand", map[string]any{"p": 2.0}, Preemptor{Rule: Rand, P: 2}},
	} {
		p, err := reg.Profile(spec(tc.preset, tc.args))
		if err != nil {
			t.Fatalf("%s %v: %v", tc.preset, tc.args, err)
		}
		if !p.Future {
			t.Errorf("%s: profile without the Soon ledger", tc.preset)
		}
		// The parameters; the unexported fields are what a running
		// Preemptor remembers between cycles.
		if d := cmp.Diff(&tc.want, p.Preempt[0], cmpopts.IgnoreUnexported(Preemptor{})); d != "" {
			t.Errorf("%s %v: preemptor (-want +got):\n%s", tc.preset, tc.args, d)
		}
		// The same decisions as the preset on a cycle that preempts.
		built, err := scheduler.New(p)
		if err != nil {
			t.Fatal(err)
		}
		preset := mustRuntime(t, p.Preempt[0].(*Preemptor))
		s := func() *cluster.Snapshot {
			return snapshot(2, []rj{{id: "a", class: cluster.ClassBE, node: 0, gpus: 4}, {id: "b", class: cluster.ClassBE, node: 0, gpus: 4},
				{id: "c", class: cluster.ClassBE, node: 1, gpus: 6, grace: 30}, {id: "d", class: cluster.ClassBE, node: 1, gpus: 2}},
				job("t", cluster.ClassTE, 8, 0), job("u", cluster.ClassTE, 2, 0), job("e", cluster.ClassBE, 1, 0))
		}
		if d := cmp.Diff(preset.Schedule(s()), built.Schedule(s())); d != "" {
			t.Errorf("%s %v: built profile vs preset (-preset +built):\n%s", tc.preset, tc.args, d)
		}
	}
	for _, bad := range []struct {
		plugin string
		args   map[string]any
		want   string
	}{
		{"fitgpp", map[string]any{"lambda": -1.0}, "lambda"},
		{"fitgpp", map[string]any{"p": 0.0}, "p=0"},
		{"fitgpp", map[string]any{"preempt": "maybe"}, "preempt"},
		{"fitgpp", map[string]any{"q": 1.0}, "unknown parameter"},
		{"lrtp", map[string]any{"lambda": 1.0}, "unknown parameter"},
		{"rand", map[string]any{"lambda": 2.0}, "unknown parameter"},
		{"rand", map[string]any{"p": 0.0}, "p=0"},
		{"lrtp", map[string]any{"p": -1.0}, "p=-1"},
	} {
		if _, err := reg.Profile(spec(bad.plugin, bad.args)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %v: error %v, want one mentioning %q", bad.plugin, bad.args, err, bad.want)
		}
	}
	for _, e := range Plugins() {
		p, err := e.New(policy.Params{})
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if p.Name() != e.Name {
			t.Errorf("entry %s builds plugin %s", e.Name, p.Name())
		}
		points := profile.Points(p)
		if pt, _, _ := strings.Cut(e.Description, ":"); pt != strings.Join(points, ", ") {
			t.Errorf("%s: description starts %q, plugin implements %v", e.Name, pt, points)
		}
	}
}
