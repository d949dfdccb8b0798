// Package profile is a profile as configuration: the plugin Registry
// (filled in one place, pkg/plugins), the Spec read from YAML or JSON
// (the scheduler config's `profile:`, `drover sim --profile FILE`) and
// the building of a framework.Profile from them, with errors that name
// the field. It is kept apart from pkg/framework as kube-scheduler keeps
// KubeSchedulerProfile in pkg/scheduler/apis/config, apart from the
// framework that runs a profile.
package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/placement"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/scheduler"
	"sigs.k8s.io/yaml"
)

// Spec is a profile as configuration (the scheduler config's
// `profile:` and `drover sim --profile FILE`), in the shape of
// kube-scheduler's KubeSchedulerProfile: plugins per extension point, and
// arguments per plugin in pluginConfig. A plugin named at several points
// is one instance, so it can share state between them.
type Spec struct {
	Name         string         `json:"name"`
	Plugins      PluginsSpec    `json:"plugins"`
	PluginConfig []PluginConfig `json:"pluginConfig,omitempty"`
	// Window bounds how many pending jobs one cycle considers; 0: all.
	Window int `json:"window,omitempty"`
	// Gang is per-replica (default), one-node-first or one-node-only.
	Gang string `json:"gang,omitempty"`
	// OneNodeFirstFit: the one-node stage takes the lowest-indexed node.
	OneNodeFirstFit bool `json:"oneNodeFirstFit,omitempty"`
}

// PluginsSpec lists the plugins at each extension point, in call order.
type PluginsSpec struct {
	QueueSort *PluginRef  `json:"queueSort,omitempty"`
	Admit     []PluginRef `json:"admit,omitempty"`
	Size      *PluginRef  `json:"size,omitempty"`
	Filter    []PluginRef `json:"filter,omitempty"`
	Score     []PluginRef `json:"score,omitempty"`
	Place     *PluginRef  `json:"place,omitempty"`
	Preempt   []PluginRef `json:"preempt,omitempty"`
	Reserve   []PluginRef `json:"reserve,omitempty"`
	Rebalance []PluginRef `json:"rebalance,omitempty"`
	Provision []PluginRef `json:"provision,omitempty"`
}

// PluginRef names a plugin at an extension point; Weight is for Score
// (default 1).
type PluginRef struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight,omitempty"`
}

// PluginConfig gives a plugin its arguments. Values may be strings,
// numbers or booleans; each plugin parses and bounds its own.
type PluginConfig struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// PluginEntry describes a registered plugin.
type PluginEntry struct {
	Name        string
	Description string
	// Points lists the extension points it implements, for docs.
	New func(args policy.Params) (framework.Plugin, error)
}

// Registry maps plugin names to constructors. It is filled explicitly in
// one place (pkg/plugins), never from init functions.
type Registry struct{ entries map[string]PluginEntry }

// NewRegistry returns an empty plugin registry.
func NewRegistry() *Registry { return &Registry{entries: map[string]PluginEntry{}} }

// Add registers plugins; a duplicate name is an error.
func (r *Registry) Add(es ...PluginEntry) error {
	for _, e := range es {
		if _, dup := r.entries[e.Name]; dup {
			return fmt.Errorf("plugin %q registered twice", e.Name)
		}
		r.entries[e.Name] = e
	}
	return nil
}

// Entries lists the registered plugins sorted by name.
func (r *Registry) Entries() []PluginEntry {
	out := make([]PluginEntry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Points names the extension points plugin p implements.
func Points(p framework.Plugin) []string {
	var out []string
	if _, ok := p.(framework.QueueSort); ok {
		out = append(out, "queueSort")
	}
	if _, ok := p.(framework.Admit); ok {
		out = append(out, "admit")
	}
	if _, ok := p.(framework.Size); ok {
		out = append(out, "size")
	}
	if _, ok := p.(framework.Filter); ok {
		out = append(out, "filter")
	}
	if _, ok := p.(framework.Score); ok {
		out = append(out, "score")
	}
	if _, ok := p.(framework.Place); ok {
		out = append(out, "place")
	}
	if _, ok := p.(framework.Preempt); ok {
		out = append(out, "preempt")
	}
	if _, ok := p.(framework.Reserve); ok {
		out = append(out, "reserve")
	}
	if _, ok := p.(framework.Rebalance); ok {
		out = append(out, "rebalance")
	}
	if _, ok := p.(framework.Provision); ok {
		out = append(out, "provision")
	}
	return out
}

// soonUser is implemented by plugins that plan on the Soon ledger (a
// method UsesSoon() bool returning true); a profile built from a spec
// keeps Soon when any of its plugins is one. It is a convention, not an
// extension point, so it is not exported.
type soonUser interface{ UsesSoon() bool }

// Parse reads a Spec from YAML or JSON. Unknown fields are
// errors that name the field; source names the file in errors.
func Parse(data []byte, source string) (Spec, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", source, err)
	}
	var spec Spec
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", source, err)
	}
	return spec, nil
}

// Build instantiates a spec's plugins and returns its runtime. Errors name
// the field (profile.plugins.preempt[1].name) and the reason.
func (r *Registry) Build(spec Spec) (*framework.Runtime, error) {
	p, err := r.Profile(spec)
	if err != nil {
		return nil, err
	}
	return scheduler.New(p)
}

// Profile instantiates a spec's plugins.
func (r *Registry) Profile(spec Spec) (framework.Profile, error) {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("profile.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if spec.Name == "" {
		bad("name", "empty")
	}
	args := map[string]policy.Params{}
	for i, pc := range spec.PluginConfig {
		field := fmt.Sprintf("pluginConfig[%d]", i)
		if _, ok := r.entries[pc.Name]; !ok {
			bad(field+".name", "unknown plugin %q (known: %s)", pc.Name, r.names())
			continue
		}
		if _, dup := args[pc.Name]; dup {
			bad(field+".name", "plugin %q configured twice", pc.Name)
			continue
		}
		ps := policy.Params{}
		for k, v := range pc.Args {
			s, err := argString(v)
			if err != nil {
				bad(field+".args."+k, "%v", err)
				continue
			}
			ps[k] = s
		}
		args[pc.Name] = ps
	}
	inst := map[string]framework.Plugin{}
	get := func(field string, ref PluginRef) framework.Plugin {
		if ref.Name == "" {
			bad(field+".name", "empty")
			return nil
		}
		if p, ok := inst[ref.Name]; ok {
			return p
		}
		e, ok := r.entries[ref.Name]
		if !ok {
			bad(field+".name", "unknown plugin %q (known: %s)", ref.Name, r.names())
			return nil
		}
		a := args[ref.Name]
		if a == nil {
			a = policy.Params{}
		}
		p, err := e.New(a)
		if err != nil {
			bad(field, "plugin %s: %v", ref.Name, err)
			return nil
		}
		inst[ref.Name] = p
		return p
	}
	prof := framework.Profile{Name: spec.Name, Window: spec.Window, OneNodeFirstFit: spec.OneNodeFirstFit}
	if spec.Window < 0 || spec.Window > MaxWindow {
		bad("window", "%d is outside [0, %d]", spec.Window, MaxWindow)
	}
	g, err := placement.ParseGang(spec.Gang)
	if err != nil {
		bad("gang", "%v", err)
	}
	prof.Gang = g
	ps := spec.Plugins
	pluginAt(ps.QueueSort, "plugins.queueSort", "QueueSort", get, bad, func(q framework.QueueSort) { prof.QueueSort = q })
	pluginAt(ps.Size, "plugins.size", "Size", get, bad, func(q framework.Size) { prof.Size = q })
	pluginAt(ps.Place, "plugins.place", "Place", get, bad, func(q framework.Place) { prof.Place = q })
	pluginsAt(ps.Admit, "plugins.admit", "Admit", get, bad, func(_ int, q framework.Admit) { prof.Admit = append(prof.Admit, q) })
	pluginsAt(ps.Filter, "plugins.filter", "Filter", get, bad, func(_ int, q framework.Filter) { prof.Filter = append(prof.Filter, q) })
	weights := make([]float64, len(ps.Score))
	for i, ref := range ps.Score {
		weights[i] = ref.Weight
		if weights[i] == 0 {
			weights[i] = 1
		}
		if w := weights[i]; !(w > 0 && w <= MaxScoreWeight) {
			bad(fmt.Sprintf("plugins.score[%d].weight", i), "%v must be a positive number up to %g", ref.Weight, MaxScoreWeight)
		}
	}
	pluginsAt(ps.Score, "plugins.score", "Score", get, bad, func(i int, q framework.Score) {
		prof.Score = append(prof.Score, framework.WeightedScore{Score: q, Weight: weights[i]})
	})
	pluginsAt(ps.Preempt, "plugins.preempt", "Preempt", get, bad, func(_ int, q framework.Preempt) { prof.Preempt = append(prof.Preempt, q) })
	pluginsAt(ps.Reserve, "plugins.reserve", "Reserve", get, bad, func(_ int, q framework.Reserve) { prof.Reserve = append(prof.Reserve, q) })
	pluginsAt(ps.Rebalance, "plugins.rebalance", "Rebalance", get, bad, func(_ int, q framework.Rebalance) { prof.Rebalance = append(prof.Rebalance, q) })
	pluginsAt(ps.Provision, "plugins.provision", "Provision", get, bad, func(_ int, q framework.Provision) { prof.Provision = append(prof.Provision, q) })
	for name := range args {
		if _, used := inst[name]; !used {
			bad("pluginConfig", "plugin %q is configured but not used at any extension point", name)
		}
	}
	for _, p := range inst {
		if su, ok := p.(soonUser); ok && su.UsesSoon() {
			prof.Future = true
		}
	}
	if len(errs) > 0 {
		sortErrs(errs)
		return framework.Profile{}, errors.Join(errs...)
	}
	return prof, nil
}

// pluginAt instantiates the plugin ref names (nil: none) at field through
// get and hands it to set as the extension point T, named point in the
// error when it does not implement it.
func pluginAt[T any](ref *PluginRef, field, point string, get func(string, PluginRef) framework.Plugin, bad func(field, format string, a ...any), set func(T)) {
	if ref == nil {
		return
	}
	p := get(field, *ref)
	if p == nil {
		return
	}
	if q, ok := p.(T); ok {
		set(q)
		return
	}
	bad(field+".name", "plugin %q does not implement %s", ref.Name, point)
}

// pluginsAt is pluginAt for a list of plugins at field: add gets each one
// that implements T with its index in refs.
func pluginsAt[T any](refs []PluginRef, field, point string, get func(string, PluginRef) framework.Plugin, bad func(field, format string, a ...any), add func(int, T)) {
	for i := range refs {
		pluginAt(&refs[i], fmt.Sprintf("%s[%d]", field, i), point, get, bad, func(q T) { add(i, q) })
	}
}

func sortErrs(errs []error) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

func (r *Registry) names() string {
	var ns []string
	for _, e := range r.Entries() {
		ns = append(ns, e.Name)
	}
	return strings.Join(ns, ", ")
}

// Bounds of a profile's numbers (issue 17 item 10): a window beyond a
// million jobs is "all", and a score weight beyond a million makes the
// weighted sum of scores overflow to Inf, which orders nothing.
const (
	MaxWindow      = 1_000_000
	MaxScoreWeight = 1e6
)

// argString turns a YAML scalar into the string form policy.Params holds.
func argString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case json.Number:
		return x.String(), nil
	}
	return "", fmt.Errorf("%v is not a string, number or boolean", v)
}
