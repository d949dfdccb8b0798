package plugins_test

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
)

// TestRegistries: both registries build (no duplicate names), every
// plugin builds from empty args and implements the points its
// description names first, and every preset is a framework runtime.
func TestRegistries(t *testing.T) {
	reg, err := plugins.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range reg.Entries() {
		p, err := e.New(policy.Params{})
		if err != nil {
			t.Errorf("plugin %s: %v", e.Name, err)
			continue
		}
		if p.Name() != e.Name {
			t.Errorf("plugin registered as %s calls itself %s", e.Name, p.Name())
		}
		points := profile.Points(p)
		if len(points) == 0 {
			t.Errorf("plugin %s implements no extension point", e.Name)
		}
		head, _, _ := strings.Cut(e.Description, ":")
		for _, pt := range strings.Split(head, ",") {
			pt = strings.TrimSpace(strings.ReplaceAll(pt, " ", ""))
			found := false
			for _, q := range points {
				if strings.EqualFold(q, pt) {
					found = true
				}
			}
			if !found {
				t.Errorf("plugin %s: description names %q, implements %v", e.Name, pt, points)
			}
		}
		if _, err := e.New(policy.Params{"no-such-arg": "1"}); err == nil {
			t.Errorf("plugin %s accepted an unknown argument", e.Name)
		}
	}
	pols, err := plugins.Policies()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pols.Entries() {
		p, err := pols.New(e.Name)
		if err != nil {
			t.Errorf("preset %s: %v", e.Name, err)
			continue
		}
		if _, ok := p.(*framework.Runtime); !ok {
			t.Errorf("preset %s is a %T, not a framework profile", e.Name, p)
		}
	}
}
