// Package autoscale holds the autoscaling of issue 7 (the predictive
// autoscaler of "A Predictive Autoscaler for Elastic Batch Jobs",
// papers/004): the `predictive` Provision plugin, which overprovisions
// placeholder capacity ahead of forecast demand, and two presets,
// `predictive` and `reactive`, which leaves scaling to the cluster
// autoscaler.
//
// In Kubernetes a scheduler does not add nodes: the cluster-autoscaler
// does, when pods are pending. Both presets therefore run on a cluster
// whose executor models the cluster-autoscaler (sim.Config.Autoscaler;
// in a real cluster, the real one). Each is a base preset's profile from
// pkg/baseline (binpack by default, the most-allocated scoring
// cluster-autoscaler deployments pair with, so that empty nodes appear and
// can be released), which starts the real jobs; `predictive` adds the
// predictive plugin at the Provision point, which records one
// policy.SetPlaceholders action when its placeholder set changes. Any
// other profile may list the plugin too. Placeholders are the lowest
// priority: a real job takes their capacity at once (the executor evicts
// them), and a pending placeholder is what makes the cluster-autoscaler
// add a node.
package autoscale

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/embed"
	"github.com/drover-sched/drover/pkg/forecast"
	"github.com/drover-sched/drover/pkg/framework"
	"github.com/drover-sched/drover/pkg/policy"
)

// PredictiveName is the name of the predictive plugin and preset.
const PredictiveName = "predictive"

// Predictive is the paper's predictive autoscaler (§2.3, §4.4) as a
// Provision plugin. It manages capacity, not jobs: whatever the profile's
// other plugins do with the queue, it only ever records
// policy.SetPlaceholders actions, through the cycle's Statement, after them.
//
// Every Tick seconds (the instance launch time, 5 minutes by default) it
// embeds the demand it observes (the replicas of running and pending jobs)
// into counts of the catalogue's instance types (embed, Alg. 2) and keeps
// that series in memory. With at least Warmup steps of history it
// forecasts the next step's counts with the chosen model (refitted every
// Refit steps) and sets, per type, placeholders for the positive part of
// forecast minus current count, rounded up; placeholders never go below
// zero, so the plugin never removes what runs, and a forecast below the
// current demand leaves scaling to the cluster-autoscaler (the paper's
// "downgrade to an on-demand autoscaler"). Before that, or when the model
// fails, a ladder policy holds placeholders up to the next power of two
// above each used type's count.
//
// New placeholders form a virtual instance (a set of same-type instances
// in one placement group); virtual instances are spread over the placement
// groups round-robin, and a shrinking type gives back its newest virtual
// instances first, so placeholders that stay keep their group.
//
// The plugin's state (history, fitted model, virtual instances) lives in
// the instance, which lives for one run like the policy it replaces: after
// a restart it re-warms with the ladder, as the paper's prophet does at
// its initial stage. It is time-driven: the runtime calls it on every
// scheduling tick, and it acts once per Tick.
type Predictive struct {
	Model  string // forecaster name, or "ladder" for the ladder only
	Tick   float64
	Warmup int // steps of history before forecasting
	Refit  int // steps between refits
	Groups []string
	// NewForecaster builds the model; the periods are in steps.
	NewForecaster func(name string, o forecast.Options) (forecast.Forecaster, error)
	Quick         bool
	// Net is the networks' size (forecast.NetSmall, the default, or
	// forecast.NetPaper); the other models ignore it.
	Net string

	cat     embed.Catalog
	types   map[string]cluster.InstanceType
	hist    [][]float64
	start   float64
	next    float64
	model   forecast.Forecaster
	cols    []int  // buckets the model was fitted on
	fitAt   int    // history length at the last fit (0: never)
	usedB   []bool // buckets ever non-zero
	vis     []virtual
	rr, seq int
	// Stats for tests and notes.
	Forecasts, Ladders, Failures int
	LastErr                      error
}

// virtual is one virtual instance: Count placeholders of one instance
// type in one placement group.
type virtual struct {
	bucket int
	group  string
	count  int
	seq    int
}

var (
	_ framework.Provision  = (*Predictive)(nil)
	_ framework.TimeDriven = (*Predictive)(nil)
)

// Name implements framework.Plugin.
func (*Predictive) Name() string { return PredictiveName }

// TimeDriven implements framework.TimeDriven: the forecast runs on a
// clock, so a profile that lists the plugin is scheduled on every tick.
func (*Predictive) TimeDriven() bool { return true }

// Events implements framework.EnqueueExtensions for a TimeDriven plugin:
// on a fixed cluster (no catalogue, none seen before) Provision does
// nothing, whatever the time (0); with a catalogue the forecast runs on a
// clock (EventAlways).
func (p *Predictive) Events(c *framework.Cycle, _ *cluster.JobState) framework.Events {
	if p.cat == nil && len(c.Snap.Catalog) == 0 {
		return 0
	}
	return framework.EventAlways
}

// Requeue implements framework.EnqueueExtensions.
func (*Predictive) Requeue(*framework.Cycle, *cluster.JobState, framework.Events) bool { return true }

// Provision implements framework.Provision. On a cluster with an instance
// catalogue, once per Tick, it observes the demand, chooses the wanted
// placeholders and, when the set changed, records one SetPlaceholders
// action (the whole set) on c.St; it changes no ledger (placeholders are
// the executor's, and count as free for every real job). On a fixed
// cluster (no catalogue) and between ticks it does nothing. It returns an
// Error status, and counts a failure, when the demand cannot be embedded;
// a failing model is not an error (the ladder takes over, and Failures
// and LastErr record it).
func (p *Predictive) Provision(c *framework.Cycle) *framework.Status {
	s := c.Snap
	if p.cat == nil {
		if len(s.Catalog) == 0 {
			return nil // a fixed cluster: nothing to overprovision
		}
		p.cat, p.types = catalog(s.Catalog)
		p.start, p.next = s.Now, s.Now
	}
	if s.Now < p.next {
		return nil
	}
	for p.next <= s.Now {
		p.next += p.Tick
	}
	cur, err := p.observe(s)
	if err != nil {
		p.Failures++
		p.LastErr = err
		return framework.NewStatus(framework.Error, err.Error())
	}
	want := p.target(cur)
	if p.adjust(want) {
		c.St.Record(nil, policy.SetPlaceholders{Placeholders: p.placeholders()})
	}
	return nil
}

// catalog converts the snapshot's catalogue into embedding buckets,
// sorted by Alg. 1.
func catalog(its []cluster.InstanceType) (embed.Catalog, map[string]cluster.InstanceType) {
	c := make(embed.Catalog, 0, len(its))
	m := map[string]cluster.InstanceType{}
	for _, it := range its {
		c = append(c, embed.InstanceType{Name: it.Name, Cap: embed.FromResource(it.Capacity), Price: it.PricePerHour})
		m[it.Name] = it
	}
	return c.Sorted(), m
}

// observe embeds the current demand (running replicas where they run,
// pending jobs at their requested counts) and appends it to the history.
func (p *Predictive) observe(s *cluster.Snapshot) ([]float64, error) {
	var d []embed.Vec
	for _, js := range s.Running {
		for _, a := range js.Placement {
			d = append(d, embed.FromResource(js.Job.Groups[a.Group].Demand))
		}
	}
	for js := range s.Pending.All() {
		d = append(d, embed.JobVectors(js.Job)...)
	}
	cur := make([]float64, len(p.cat))
	if len(d) > 0 {
		var err error
		if cur, err = p.cat.Embed(d); err != nil {
			return nil, fmt.Errorf("predictive: embed demand: %w", err)
		}
	}
	p.hist = append(p.hist, cur)
	if p.usedB == nil {
		p.usedB = make([]bool, len(cur))
	}
	for b, v := range cur {
		p.usedB[b] = p.usedB[b] || v > 0
	}
	return cur, nil
}

// target returns the wanted placeholder count per bucket.
func (p *Predictive) target(cur []float64) []int {
	want := make([]int, len(cur))
	pred, err := p.forecast()
	if err != nil {
		if !errors.Is(err, errWarming) {
			p.Failures++
			p.LastErr = err
		}
		p.Ladders++
		return Ladder(cur, p.usedB)
	}
	p.Forecasts++
	for b := range cur {
		want[b] = PositiveDelta(pred[b], cur[b])
	}
	return want
}

var errWarming = errors.New("warming up")

// forecast predicts the next step's counts for every bucket; buckets
// never used get 0.
func (p *Predictive) forecast() ([]float64, error) {
	n := len(p.hist)
	if p.Model == "ladder" || n < p.Warmup {
		return nil, errWarming
	}
	if p.model == nil || n-p.fitAt >= p.Refit {
		cols := p.usedCols()
		if len(cols) == 0 {
			return nil, errWarming
		}
		m, err := p.NewForecaster(p.Model, forecast.Options{Periods: p.periods(n), Quick: p.Quick, Net: p.Net})
		if err != nil {
			return nil, err
		}
		if err := m.Fit(p.series().Columns(cols)); err != nil {
			p.fitAt = n // do not retry a failing fit on every tick
			return nil, fmt.Errorf("predictive: fit %s on %d steps: %w", p.Model, n, err)
		}
		p.model, p.cols, p.fitAt = m, cols, n
	}
	v, err := p.model.Predict(p.series().Columns(p.cols))
	if err != nil {
		return nil, fmt.Errorf("predictive: %s predict: %w", p.Model, err)
	}
	out := make([]float64, len(p.cat))
	for k, b := range p.cols {
		if math.IsNaN(v[k]) || math.IsInf(v[k], 0) {
			return nil, fmt.Errorf("predictive: %s forecast %v for %s", p.Model, v[k], p.cat[b].Name)
		}
		out[b] = v[k]
	}
	return out, nil
}

// periods are the daily and weekly seasons in steps that the history
// covers twice (a model cannot learn a season it has seen once).
func (p *Predictive) periods(n int) []int {
	var out []int
	for _, sec := range []float64{forecast.Day, forecast.Week} {
		if k := int(math.Round(sec / p.Tick)); k >= 2 && 2*k <= n {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		out = []int{max(2, n/4)}
	}
	return out
}

func (p *Predictive) series() forecast.Series {
	return forecast.Series{Start: p.start, Step: p.Tick, Buckets: p.cat.Names(), Values: p.hist}
}

// usedCols are the buckets that were ever non-zero.
func (p *Predictive) usedCols() []int {
	var out []int
	for b, u := range p.usedB {
		if u {
			out = append(out, b)
		}
	}
	return out
}

// PositiveDelta is the paper's scale-up rule (§4.4): placeholders for the
// forecast minus the current count when that is positive, rounded up (a
// fraction of an instance is an instance); never negative.
func PositiveDelta(forecast, current float64) int {
	d := forecast - current
	if d <= 1e-9 {
		return 0
	}
	return int(math.Ceil(d - 1e-9))
}

// Ladder is the static ladder overprovisioning used before a model has
// enough history: each type that was ever used is held at the next rung
// of 1, 2, 4, 8, ... strictly above its current count, so headroom grows
// in steps with the demand; the placeholders are the rung minus the count.
func Ladder(cur []float64, used []bool) []int {
	out := make([]int, len(cur))
	for b, c := range cur {
		if !used[b] && c <= 0 {
			continue
		}
		n := int(math.Ceil(c - 1e-9))
		rung := 1
		for rung <= n {
			rung *= 2
		}
		out[b] = rung - n
	}
	return out
}

// adjust moves the virtual instances to the wanted counts per bucket and
// reports whether anything changed. Growth opens one new virtual instance
// per bucket in the next placement group round-robin; shrinking removes
// from the newest virtual instances of the bucket first.
func (p *Predictive) adjust(want []int) bool {
	have := make([]int, len(want))
	for _, v := range p.vis {
		have[v.bucket] += v.count
	}
	changed := false
	for b := range want {
		switch {
		case want[b] > have[b]:
			g := ""
			if len(p.Groups) > 0 {
				g = p.Groups[p.rr%len(p.Groups)]
				p.rr++
			}
			p.seq++
			p.vis = append(p.vis, virtual{bucket: b, group: g, count: want[b] - have[b], seq: p.seq})
			changed = true
		case want[b] < have[b]:
			drop := have[b] - want[b]
			for i := len(p.vis) - 1; i >= 0 && drop > 0; i-- {
				if p.vis[i].bucket != b {
					continue
				}
				k := min(drop, p.vis[i].count)
				p.vis[i].count -= k
				drop -= k
			}
			changed = true
		}
	}
	if changed {
		kept := p.vis[:0]
		for _, v := range p.vis {
			if v.count > 0 {
				kept = append(kept, v)
			}
		}
		p.vis = kept
	}
	return changed
}

// placeholders lists the virtual instances as placeholder sets: one pod
// per instance, the instance type's whole capacity, so that one pending
// placeholder makes the cluster-autoscaler add exactly that type.
func (p *Predictive) placeholders() []cluster.Placeholder {
	out := make([]cluster.Placeholder, 0, len(p.vis))
	for _, v := range p.vis {
		it := p.types[p.cat[v.bucket].Name]
		out = append(out, cluster.Placeholder{Name: PlaceholderName(it.Name, v.seq), Demand: it.Capacity,
			Count: v.count, PlacementGroup: v.group})
	}
	return out
}

// maxNameLen is the longest Kubernetes object name that is also a label
// (DNS-1123 label, RFC 1123).
const maxNameLen = 63

// PlaceholderName names the placeholder set of virtual instance seq of
// instance type typ: "ph-<type>-<seq>", the type lower-cased with every
// run of characters other than a-z and 0-9 turned into one '-' (so
// g4dn.xlarge gives ph-g4dn-xlarge-1) and cut so that the whole name has at
// most 63 characters. The result is always a DNS-1123 label, which the
// Kubernetes executor requires: it names the placeholder's Deployment and
// labels its pods with it, and refuses a name with dots such as the
// instance types' (pkg/k8s/apply, Cycle.Unsupported). Names are collision-free
// within a plugin instance whatever the types are called: seq is unique per
// virtual instance and is always kept whole as the name's last '-'-separated
// field, so two virtual instances never share a name even when their
// sanitised types coincide (m5.xlarge and m5-xlarge) or are cut.
func PlaceholderName(typ string, seq int) string {
	suffix := "-" + strconv.Itoa(seq)
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(typ) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	t := b.String()
	if room := maxNameLen - len("ph-") - len(suffix); len(t) > room {
		t = strings.TrimRight(t[:max(room, 0)], "-")
	}
	if t == "" {
		return "ph" + suffix
	}
	return "ph-" + t + suffix
}
