package profile_test

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
)

// shared is a plugin at two extension points; its args are checked.
type shared struct{ k float64 }

func (*shared) Name() string                                                   { return "shared" }
func (*shared) Reserve(*framework.Cycle, *cluster.JobState, cluster.Placement) {}
func (*shared) Rebalance(*framework.Cycle) *framework.Status                   { return nil }

func testRegistry(t *testing.T) *profile.Registry {
	t.Helper()
	r := profile.NewRegistry()
	err := r.Add(
		profile.PluginEntry{Name: "most-allocated", New: func(a policy.Params) (framework.Plugin, error) {
			return framework.Strategy{S: placement.Pack}, a.Check("most-allocated")
		}},
		profile.PluginEntry{Name: "shared", New: func(a policy.Params) (framework.Plugin, error) {
			if err := a.Check("shared", "k"); err != nil {
				return nil, err
			}
			k, err := a.Float("k", 1)
			return &shared{k: k}, err
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(profile.PluginEntry{Name: "shared"}); err == nil {
		t.Error("a duplicate plugin name was accepted")
	}
	return r
}

func TestProfileFromYAML(t *testing.T) {
	spec, err := profile.Parse([]byte(`
name: mine
gang: one-node-first
plugins:
  score: [{name: most-allocated, weight: 2}]
  reserve: [{name: shared}]
  rebalance: [{name: shared}]
pluginConfig:
  - name: shared
    args: {k: 0.5}
`), "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := testRegistry(t).Profile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Gang != placement.OneNodeFirst || p.Score[0].Weight != 2 {
		t.Errorf("gang %v, weight %v", p.Gang, p.Score[0].Weight)
	}
	res, reb := p.Reserve[0].(*shared), p.Rebalance[0].(*shared)
	if res != reb || res.k != 0.5 {
		t.Errorf("one plugin at two points must be one instance with its args: %p %p k=%v", res, reb, res.k)
	}
}

func TestProfileErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown field", "name: x\nplugin: {}\n", []string{`unknown field "plugin"`}},
		{"unknown plugin", "name: x\nplugins: {score: [{name: nope}]}\n", []string{`profile.plugins.score[0].name: unknown plugin "nope"`}},
		{"wrong point", "name: x\nplugins: {queueSort: {name: shared}}\n", []string{`profile.plugins.queueSort.name: plugin "shared" does not implement QueueSort`}},
		{"bad arg", "name: x\nplugins: {reserve: [{name: shared}]}\npluginConfig: [{name: shared, args: {kk: 1}}]\n", []string{`profile.plugins.reserve[0]: plugin shared: policy shared: unknown parameter "kk"`}},
		{"bad gang and weight", "name: x\ngang: sideways\nplugins: {score: [{name: most-allocated, weight: -1}]}\n", []string{`profile.gang: unknown gang mode "sideways"`, `profile.plugins.score[0].weight: -1 must be a positive number`}},
		{"huge weight and window", "name: x\nwindow: -5\nplugins: {score: [{name: most-allocated, weight: 1e300}]}\n", []string{"profile.window: -5 is outside [0, 1000000]", "profile.plugins.score[0].weight: 1e+300 must be a positive number up to 1e+06"}},
		{"unused config", "name: x\npluginConfig: [{name: shared}]\n", []string{`profile.pluginConfig: plugin "shared" is configured but not used`}},
		{"no name", "plugins: {}\n", []string{"profile.name: empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := profile.Parse([]byte(tc.yaml), "p.yaml")
			if err == nil {
				_, err = testRegistry(t).Profile(spec)
			}
			if err == nil {
				t.Fatal("no error")
			}
			var missing []string
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					missing = append(missing, w)
				}
			}
			if diff := gocmp.Diff([]string(nil), missing); diff != "" {
				t.Errorf("error %q lacks (-want +got):\n%s", err, diff)
			}
		})
	}
}
