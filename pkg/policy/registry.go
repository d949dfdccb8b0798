package policy

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Params are a policy's settings as key=value strings, parsed by the
// policy's constructor so that each policy owns its validation.
type Params map[string]string

// Float returns the named parameter, or def when absent.
func (p Params) Float(key string, def float64) (float64, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%q: not a number", key, s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("parameter %s=%q: not a finite number", key, s)
	}
	return v, nil
}

// Int returns the named parameter, or def when absent.
func (p Params) Int(key string, def int) (int, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%q: not an integer", key, s)
	}
	return v, nil
}

// FloatIn returns the named parameter, or def when absent, and fails
// unless it lies in [min, max]. Every numeric parameter of a preset is read
// through FloatIn or IntIn so that its bounds are declared once, next to
// its default: a value that parses but makes no sense (slot=1e-300 would
// stall the clock, warmup=1e300 overflows a count of ticks) is an error
// naming the key, the value and the range rather than a hang or a
// silently absurd run.
func (p Params) FloatIn(key string, def, min, max float64) (float64, error) {
	v, err := p.Float(key, def)
	if err != nil {
		return 0, err
	}
	if v < min || v > max {
		return 0, fmt.Errorf("parameter %s=%q: want a number in [%v, %v]", key, p[key], min, max)
	}
	return v, nil
}

// IntIn returns the named parameter, or def when absent, and fails unless
// it lies in [min, max] (see FloatIn). A count such as slots sizes
// allocations, so its upper bound is what keeps memory bounded.
func (p Params) IntIn(key string, def, min, max int) (int, error) {
	v, err := p.Int(key, def)
	if err != nil {
		return 0, err
	}
	if v < min || v > max {
		return 0, fmt.Errorf("parameter %s=%q: want an integer in [%d, %d]", key, p[key], min, max)
	}
	return v, nil
}

// Bool returns the named parameter (true/false, 1/0), or def when absent.
func (p Params) Bool(key string, def bool) (bool, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("parameter %s=%q: not true or false", key, s)
	}
	return v, nil
}

// Enum returns the named parameter, which must be one of allowed, or def
// when absent.
func (p Params) Enum(key, def string, allowed ...string) (string, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", fmt.Errorf("parameter %s=%q: want one of %s", key, s, strings.Join(allowed, ", "))
}

// String returns the named parameter, or def when absent.
func (p Params) String(key, def string) string {
	if s, ok := p[key]; ok {
		return s
	}
	return def
}

// Check fails when p holds a key not in known, so that a typo in a
// parameter is an error rather than a silently ignored setting.
func (p Params) Check(policy string, known ...string) error {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys) // name the same unknown key on every run
	for _, k := range keys {
		found := false
		for _, n := range known {
			if n == k {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("policy %s: unknown parameter %q (known: %s)", policy, k, strings.Join(known, ", "))
		}
	}
	return nil
}

// Factory builds a fresh policy instance. Every run gets its own instance,
// so a policy may keep state between cycles.
type Factory func(Params) (Policy, error)

// Entry describes a registered policy.
type Entry struct {
	Name        string
	Description string
	New         Factory
}

// Registry maps policy names to factories. It is filled explicitly in one
// place (package registry), never from init functions.
type Registry struct {
	entries map[string]Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{entries: map[string]Entry{}} }

// Add registers entries; a duplicate name is an error.
func (r *Registry) Add(es ...Entry) error {
	for _, e := range es {
		if _, dup := r.entries[e.Name]; dup {
			return fmt.Errorf("policy %q registered twice", e.Name)
		}
		r.entries[e.Name] = e
	}
	return nil
}

// Entries lists the registered policies sorted by name.
func (r *Registry) Entries() []Entry {
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// New builds a policy from a spec "name" or "name:key=value;key=value".
func (r *Registry) New(spec string) (Policy, error) {
	name, params, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	e, ok := r.entries[name]
	if !ok {
		names := make([]string, 0, len(r.entries))
		for _, e := range r.Entries() {
			names = append(names, e.Name)
		}
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(names, ", "))
	}
	p, err := e.New(params)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	return p, nil
}

// ParseSpec splits "name:k=v;k=v" into the name and its parameters.
// Parameters are separated by semicolons, because commas separate
// policies in --policy; a key given twice is an error.
func ParseSpec(spec string) (string, Params, error) {
	name, rest, _ := strings.Cut(strings.TrimSpace(spec), ":")
	name = strings.TrimSpace(name) // "fifo : k=v" names fifo, not "fifo " (found by FuzzParseSpec)
	if name == "" {
		return "", nil, fmt.Errorf("empty policy name in %q", spec)
	}
	params := Params{}
	if rest == "" {
		return name, params, nil
	}
	for _, kv := range strings.Split(rest, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return "", nil, fmt.Errorf("policy %s: parameter %q is not key=value", name, kv)
		}
		if _, dup := params[k]; dup {
			return "", nil, fmt.Errorf("policy %s: parameter %q given twice", name, k)
		}
		params[k] = v
	}
	return name, params, nil
}
