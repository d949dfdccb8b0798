package plugins_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
)

// randomProfile draws a profile from the plugin registry: each extension
// point gets zero or more of the plugins that implement it (one at the
// single-plugin points), in random order, with default arguments. A
// plugin named at several points is one instance, as in any profile.
func randomProfile(t *testing.T, reg *profile.Registry, r *rand.Rand, i int) profile.Spec {
	t.Helper()
	at := map[string][]string{}
	for _, e := range reg.Entries() {
		p, err := e.New(nil)
		if err != nil {
			t.Fatalf("plugin %s with default arguments: %v", e.Name, err)
		}
		for _, pt := range profile.Points(p) {
			at[pt] = append(at[pt], e.Name)
		}
	}
	one := func(pt string, must bool) *profile.PluginRef {
		names := at[pt]
		if len(names) == 0 || (!must && r.IntN(2) == 0) {
			return nil
		}
		return &profile.PluginRef{Name: names[r.IntN(len(names))]}
	}
	some := func(pt string, max int) []profile.PluginRef {
		names := append([]string(nil), at[pt]...)
		r.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		var out []profile.PluginRef
		for _, n := range names[:r.IntN(min(max, len(names))+1)] {
			out = append(out, profile.PluginRef{Name: n, Weight: float64(1 + r.IntN(3))})
		}
		return out
	}
	gangs := []string{"", "one-node-first", "one-node-only"}
	return profile.Spec{
		Name: fmt.Sprintf("random-%d", i),
		Gang: gangs[r.IntN(len(gangs))],
		Plugins: profile.PluginsSpec{
			QueueSort: one("queueSort", true),
			Admit:     some("admit", 2),
			Size:      one("size", false),
			Filter:    some("filter", 2),
			Score:     some("score", 3),
			Place:     one("place", false),
			Preempt:   some("preempt", 2),
			Reserve:   some("reserve", 1),
			Rebalance: some("rebalance", 2),
			Provision: some("provision", 1),
		},
	}
}

// TestRandomProfilesQueueChangesNoDecision is the queue's contract for
// profiles nobody wrote: profiles drawn at random from the registry (every
// plugin at the points it implements, in any combination the registry
// accepts) replay random workloads with the simulator's invariant checks
// on, with and without the scheduling queue, and every action, metric and
// record must be the same. Profiles the registry refuses (a plugin that
// needs another) are counted, and most draws must build.
func TestRandomProfilesQueueChangesNoDecision(t *testing.T) {
	reg, err := plugins.Registry()
	if err != nil {
		t.Fatal(err)
	}
	// A user's Filter that reads the job's tenant: the queue must not
	// take one tenant's fit for another's (TestQueueShapeMemoKeepsTenantsApart).
	if err := reg.Add(profile.PluginEntry{Name: "refuse-tenant", Description: "filter: tenant t1 only on half the nodes",
		New: func(a policy.Params) (framework.Plugin, error) {
			return refuseTenant{tenant: "t1", half: true}, a.Check("refuse-tenant")
		}}); err != nil {
		t.Fatal(err)
	}
	profiles := 40
	if testing.Short() {
		profiles = 12
	}
	r := rand.New(rand.NewPCG(2026, 11))
	built, refused, tenantFiltered := 0, 0, 0
	for i := range profiles {
		spec := randomProfile(t, reg, r, i)
		if _, err := reg.Build(spec); err != nil {
			refused++
			t.Logf("profile %d refused: %v", i, err)
			continue
		}
		built++
		for _, f := range spec.Plugins.Filter {
			if f.Name == "refuse-tenant" {
				tenantFiltered++
			}
		}
		seed := uint64(i + 1)
		nodes, jobs := randomWorld(seed)
		if i%2 == 1 {
			nodes, jobs = longQueueWorld(seed)
		}
		t.Run(spec.Name, func(t *testing.T) {
			run := func(queue bool) (string, []string) {
				rt, err := reg.Build(spec)
				if err != nil {
					t.Fatal(err)
				}
				return observeQueue(t, rt, queue, nodes, jobs, seed)
			}
			m0, log0 := run(false)
			m1, log1 := run(true)
			if d := cmp.Diff(log0, log1); d != "" {
				t.Errorf("profile %s: actions differ with the queue (-without +with):\n%s", describe(spec), d)
			}
			if m0 != m1 {
				t.Errorf("profile %s: metrics or records differ with the queue", describe(spec))
			}
		})
	}
	if built < profiles/2 {
		t.Errorf("only %d of %d random profiles built (%d refused): the draw does not exercise the registry", built, profiles, refused)
	}
	t.Logf("%d of %d built profiles have the tenant filter", tenantFiltered, built)
	if tenantFiltered == 0 {
		t.Errorf("no built profile drew the tenant filter: the draw does not exercise a Filter that reads the job")
	}
}

// describe prints a profile as the YAML a user would write.
func describe(spec profile.Spec) string {
	b, err := yaml.Marshal(spec)
	if err != nil {
		return fmt.Sprintf("%+v", spec)
	}
	return "\n" + string(b)
}
