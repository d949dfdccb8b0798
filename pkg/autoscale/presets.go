package autoscale

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/forecast"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/scheduler"
)

// ReactiveName is the name of the reactive preset.
const ReactiveName = "reactive"

// MaxHours bounds the predictive plugin's warmup and refit: a year. With a
// tick of at least a second, the counts of ticks they become fit an int.
const MaxHours = 365 * 24

// predictiveArgs are the predictive plugin's arguments; the presets add
// "base".
var predictiveArgs = []string{"model", "tick", "warmup", "refit", "groups", "quick", "net"}

// NewPredictive returns a predictive plugin from its arguments: model
// (a forecast.Names() name or "ladder", default holt-winters), tick
// (seconds, default 300), warmup and refit (hours, default 24 each),
// groups (comma-separated placement groups) and quick (0 or 1). Unknown
// arguments are errors.
func NewPredictive(args policy.Params) (*Predictive, error) {
	if err := args.Check(PredictiveName, predictiveArgs...); err != nil {
		return nil, err
	}
	return parsePredictive(args)
}

// parsePredictive parses and bounds the plugin's arguments; the caller
// has checked for unknown keys.
func parsePredictive(pr policy.Params) (*Predictive, error) {
	p := &Predictive{Model: pr.String("model", "holt-winters"), NewForecaster: forecast.New}
	if p.Model != "ladder" {
		if _, err := forecast.New(p.Model, forecast.Options{}); err != nil {
			return nil, fmt.Errorf("parameter model: %w", err)
		}
	}
	var err error
	if p.Tick, err = pr.FloatIn("tick", 300, 1, 24*3600); err != nil {
		return nil, err
	}
	warm, err := pr.FloatIn("warmup", 24, 0, MaxHours)
	if err != nil {
		return nil, err
	}
	refit, err := pr.FloatIn("refit", 24, 1e-3, MaxHours)
	if err != nil {
		return nil, err
	}
	p.Warmup = int(math.Ceil(warm * 3600 / p.Tick))
	p.Refit = max(1, int(math.Round(refit*3600/p.Tick)))
	if g := pr.String("groups", ""); g != "" {
		for _, x := range strings.Split(g, ",") {
			if x = strings.TrimSpace(x); x == "" {
				return nil, fmt.Errorf("parameter groups=%q: empty group name", g)
			}
			p.Groups = append(p.Groups, strings.TrimSpace(x))
		}
	}
	q, err := pr.IntIn("quick", 0, 0, 1)
	if err != nil {
		return nil, err
	}
	p.Quick = q != 0
	p.Net = pr.String("net", forecast.NetSmall)
	if !slices.Contains(forecast.NetSizes(), p.Net) {
		return nil, fmt.Errorf("parameter net=%q: want one of %s", p.Net, strings.Join(forecast.NetSizes(), ", "))
	}
	return p, nil
}

// PredictiveOf returns the predictive plugin of p when p is a runtime
// whose profile lists one (the predictive preset, or any profile built
// with it), else nil: callers read its statistics (Forecasts, Ladders,
// Failures, LastErr) after a run, and tests replace its NewForecaster
// before one.
func PredictiveOf(p policy.Policy) *Predictive {
	rt, ok := p.(*framework.Runtime)
	if !ok {
		return nil
	}
	for _, pl := range rt.Plugins() {
		if pp, ok := pl.(*Predictive); ok {
			return pp
		}
	}
	return nil
}

// Plugins returns the registry entry of the predictive plugin.
func Plugins() []profile.PluginEntry {
	return []profile.PluginEntry{
		{Name: PredictiveName, Description: "provision: placeholders for the forecast growth of demand per instance type, ladder until warm (papers/004); " +
			"model=" + strings.Join(forecast.Names(), "|") + "|ladder, tick=s, warmup=h, refit=h, groups=a,b, quick=1, net=small|paper",
			New: func(a policy.Params) (framework.Plugin, error) {
				p, err := NewPredictive(a)
				if err != nil {
					return nil, err
				}
				return p, nil
			}},
	}
}

// baseProfile returns the profile of the named baseline preset with its
// default parameters.
func baseProfile(name string) (framework.Profile, error) {
	var names []string
	for _, e := range baseline.Entries() {
		if e.Name != name {
			names = append(names, e.Name)
			continue
		}
		pol, err := e.New(policy.Params{})
		if err != nil {
			return framework.Profile{}, err
		}
		rt, ok := pol.(*framework.Runtime)
		if !ok {
			return framework.Profile{}, fmt.Errorf("parameter base=%q: not a framework preset", name)
		}
		return rt.Profile(), nil
	}
	return framework.Profile{}, fmt.Errorf("parameter base=%q: unknown base policy (known: %s)", name, strings.Join(names, ", "))
}

// PredictiveProfile is the predictive preset: the base preset's profile
// (a baseline name) with p at the Provision point, named predictive.
func PredictiveProfile(base string, p *Predictive) (framework.Profile, error) {
	prof, err := baseProfile(base)
	if err != nil {
		return framework.Profile{}, err
	}
	prof.Name = PredictiveName
	prof.Provision = append(prof.Provision[:len(prof.Provision):len(prof.Provision)], p)
	return prof, nil
}

// ReactiveProfile is the reactive preset: the base preset's profile (a
// baseline name) alone, named reactive; the cluster-autoscaler adds
// nodes only once a pod is pending.
func ReactiveProfile(base string) (framework.Profile, error) {
	prof, err := baseProfile(base)
	if err != nil {
		return framework.Profile{}, err
	}
	prof.Name = ReactiveName
	return prof, nil
}

// Entries returns the registry entries of the autoscaling presets.
func Entries() []policy.Entry {
	return []policy.Entry{
		{Name: PredictiveName, Description: "base scheduling + predictive placeholder overprovisioning (papers/004); " +
			"model=" + strings.Join(forecast.Names(), "|") + "|ladder (default holt-winters), tick=s (300), warmup=h (24), refit=h (24), " +
			"groups=a,b (placement groups, round-robin), base=binpack|k8s-default|fifo|drf, quick=1, net=small|paper (networks' size, default small); needs an instance catalogue and the cluster-autoscaler model",
			New: newPredictive},
		{Name: ReactiveName, Description: "base scheduling only; the cluster-autoscaler adds nodes for pending pods (base=binpack)",
			New: func(pr policy.Params) (policy.Policy, error) {
				if err := pr.Check(ReactiveName, "base"); err != nil {
					return nil, err
				}
				prof, err := ReactiveProfile(pr.String("base", "binpack"))
				if err != nil {
					return nil, err
				}
				return scheduler.New(prof)
			}},
	}
}

func newPredictive(pr policy.Params) (policy.Policy, error) {
	if err := pr.Check(PredictiveName, append([]string{"base"}, predictiveArgs...)...); err != nil {
		return nil, err
	}
	args := policy.Params{}
	for k, v := range pr {
		if k != "base" {
			args[k] = v
		}
	}
	p, err := parsePredictive(args)
	if err != nil {
		return nil, err
	}
	prof, err := PredictiveProfile(pr.String("base", "binpack"), p)
	if err != nil {
		return nil, err
	}
	return scheduler.New(prof)
}
