package fitgpp

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/baseline"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	fg "github.com/drover-sched/drover/pkg/fitgpp"
	"github.com/drover-sched/drover/pkg/metrics"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/sim"
)

func quickEnv(t *testing.T) *experiment.Env {
	t.Helper()
	reg := policy.NewRegistry()
	if err := reg.Add(baseline.Entries()...); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(fg.Entries()...); err != nil {
		t.Fatal(err)
	}
	return &experiment.Env{Seed: 1, Policies: reg, Quick: true}
}

func byName(t *testing.T, name string) experiment.Experiment {
	t.Helper()
	for _, e := range Experiments() {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no experiment %s", name)
	return experiment.Experiment{}
}

// TestComparisonQuick checks the expected direction at the quick
// scale, under the simulator's default grace model (a victim makes no
// progress during its grace period), where our model agrees with it:
// FitGpp cuts the TE p95 slowdown by at least 90% against FIFO, the BE p50
// slowdown rises by at most 25% (in our model it does not rise: see
// docs/fitgpp.md), FitGpp's BE p50 and p95 are below LRTP's and RAND's,
// and FitGpp makes fewer preemption events per job than both (the paper's
// Table 3; "far fewer" does not hold in our model). With the paper's
// P = 1 for all three policies no job is preempted twice, so preemption
// events per job equal the fraction of jobs preempted; the p=inf rows
// preempt some jobs more than once.
func TestComparisonQuick(t *testing.T) {
	rep, err := byName(t, "fitgpp").Run(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string]float64{}
	for _, r := range rep.Results {
		key := r.Policy
		for _, k := range []string{"p", "preempt", "strict"} {
			if r.Params[k] != "" {
				key += ":" + k + "=" + r.Params[k]
			}
		}
		m[key] = r.Metrics
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Policy+paramStr(r.Params))
	}
	want := []string{"fifo", "lrtp", "rand", "fitgpp", "lrtp(p=inf)", "rand(p=inf)", "fitgpp(p=inf)", "fitgpp(preempt=false)", "fitgpp(preempt=false;strict=true)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("rows (-want +got):\n%s", d)
	}
	fifo, lrtp, rnd, fit := m["fifo"], m["lrtp"], m["rand"], m["fitgpp"]
	for _, k := range []string{"fitgpp:preempt=false", "fitgpp:preempt=false:strict=true"} {
		if n := m[k]["preemptions"]; n != 0 || m[k] == nil {
			t.Errorf("%s preempted %v times (row found: %v)", k, n, m[k] != nil)
		}
	}
	if n := m["fitgpp:preempt=false"]["preemptions"]; n != 0 {
		t.Errorf("fitgpp:preempt=false preempted %v times", n)
	}
	if c := experiment.Change(fifo["te_slowdown_p95"], fit["te_slowdown_p95"]); c > -0.9 {
		t.Errorf("fitgpp TE p95 slowdown changed %.1f%% vs fifo, want at most -90%%", 100*c)
	}
	if c := experiment.Change(fifo["be_slowdown_p50"], fit["be_slowdown_p50"]); c > 0.25 {
		t.Errorf("fitgpp BE p50 slowdown changed %+.1f%% vs fifo, want at most +25%%", 100*c)
	}
	for _, k := range []string{"be_slowdown_p50", "be_slowdown_p95"} {
		if fit[k] >= lrtp[k] || fit[k] >= rnd[k] {
			t.Errorf("%s: fitgpp %.3f, lrtp %.3f, rand %.3f; want fitgpp lowest", k, fit[k], lrtp[k], rnd[k])
		}
	}
	const ev = "preemption_events_per_job"
	if fit[ev] >= lrtp[ev] || fit[ev] >= rnd[ev] {
		t.Errorf("%s: fitgpp %.3f, lrtp %.3f, rand %.3f; want fitgpp lowest", ev, fit[ev], lrtp[ev], rnd[ev])
	}
	for _, sp := range []string{"lrtp", "rand", "fitgpp"} {
		r := m[sp]
		if r["preempted_twice_frac"] != 0 || r["preempted_thrice_frac"] != 0 {
			t.Errorf("%s p=1 preempted jobs twice (%v) or thrice (%v)", sp, r["preempted_twice_frac"], r["preempted_thrice_frac"])
		}
		if r[ev] == 0 || r[ev] != r["preempted_frac"] {
			t.Errorf("%s p=1: %v events per job, %v of jobs preempted; want equal and above 0", sp, r[ev], r["preempted_frac"])
		}
	}
	if r := m["lrtp:p=inf"]; r[ev] <= r["preempted_frac"] {
		t.Errorf("lrtp p=inf: %v events per job, %v of jobs preempted; want some jobs preempted more than once", r[ev], r["preempted_frac"])
	}
	if fifo["preemptions"] != 0 {
		t.Errorf("fifo preempted %v jobs", fifo["preemptions"])
	}
	for _, k := range []string{"te_slowdown_p50", "te_slowdown_p95", "te_slowdown_p99", "be_slowdown_p50", "be_slowdown_p95", "be_slowdown_p99",
		"preempted_once_frac", "preempted_twice_frac", "preempted_thrice_frac", "suspended_wait_p50_min", "suspended_wait_p75_min",
		"suspended_wait_p95_min", "suspended_wait_p99_min", "reschedule_interval_p50_min", "reschedule_interval_p95_min"} {
		if _, ok := fit[k]; !ok {
			t.Errorf("metric %s missing", k)
		}
	}
	if len(rep.Charts) != 2 {
		t.Errorf("%d charts, want 2", len(rep.Charts))
	}
}

// metricsBy indexes report rows by policy and the given params, e.g.
// "fitgpp|no-progress|8" for keys grace_model and gp_scale.
func metricsBy(rep *experiment.Report, keys ...string) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, r := range rep.Results {
		k := r.Policy
		for _, p := range keys {
			k += "|" + r.Params[p]
		}
		m[k] = r.Metrics
	}
	return m
}

// TestGraceModelQuick runs the grace-model ablation at the quick scale and
// checks what docs/fitgpp.md reads from it:
//   - its no-progress rows at scale 1 are the fitgpp experiment's rows
//     (same setup, same seeds, the simulator's default model);
//   - at grace periods x8, spending the grace period without progress
//     costs BE jobs under every preemptive policy (mean BE slowdown above
//     the progress model's);
//   - even then FitGpp keeps the lowest BE p50 and p95 of the preemptive
//     policies, as in the paper.
func TestGraceModelQuick(t *testing.T) {
	env := quickEnv(t)
	rep, err := byName(t, "fitgpp-grace-model").Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + len(GraceModels)*len(GraceModelScales)*len(graceModelPolicies); len(rep.Results) != want {
		t.Fatalf("%d rows, want %d", len(rep.Results), want)
	}
	if len(rep.Charts) != 1 {
		t.Errorf("%d charts, want 1", len(rep.Charts))
	}
	g := metricsBy(rep, "grace_model", "gp_scale")
	main, err := byName(t, "fitgpp").Run(context.Background(), quickEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	mm := metricsBy(main, "p", "preempt")
	if g["fifo|any|any"]["preemptions"] != 0 {
		t.Errorf("fifo preempted %v times", g["fifo|any|any"]["preemptions"])
	}
	for _, sp := range append([]string{"fifo"}, graceModelPolicies...) {
		key := sp + "|no-progress|1"
		if sp == "fifo" {
			key = "fifo|any|any"
		}
		for _, k := range []string{"be_slowdown_p50", "be_slowdown_p95", "te_slowdown_p95", "preempted_frac"} {
			if a, b := g[key][k], mm[sp+"||"][k]; a != b {
				t.Errorf("%s %s: grace-model %v, fitgpp experiment %v; want equal", key, k, a, b)
			}
		}
	}
	for _, sp := range graceModelPolicies {
		np, pr := g[sp+"|no-progress|8"], g[sp+"|progress|8"]
		if np == nil || pr == nil {
			t.Fatalf("%s: missing x8 rows", sp)
		}
		if np["be_slowdown_mean"] <= pr["be_slowdown_mean"] {
			t.Errorf("%s x8: BE mean slowdown %.3f without progress during grace, %.3f with; want higher without", sp, np["be_slowdown_mean"], pr["be_slowdown_mean"])
		}
	}
	fit := g["fitgpp|no-progress|8"]
	for _, k := range []string{"be_slowdown_p50", "be_slowdown_p95"} {
		if l, r := g["lrtp|no-progress|8"][k], g["rand|no-progress|8"][k]; fit[k] >= l || fit[k] >= r {
			t.Errorf("x8 no progress %s: fitgpp %.3f, lrtp %.3f, rand %.3f; want fitgpp lowest", k, fit[k], l, r)
		}
	}
}

// TestSweepsQuick runs every sweep and the Philly run at the quick scale:
// rows for every point and a chart each.
func TestSweepsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, tc := range []struct {
		name string
		rows int
	}{
		{"fitgpp-lambda", len(Lambdas)},
		{"fitgpp-p", len(Ps)},
		{"fitgpp-te-share", len(TEShares) * len(sweepPolicies)},
		{"fitgpp-te-work", len(TEWorks) * len(teWorkPolicies)},
		{"fitgpp-gp-scale", len(GPScales) * 4},
		{"fitgpp-philly", 4},
		{"fitgpp-te-demand", len(TEDemandScales) * len(teDemandSpecs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := quickEnv(t)
			env.Seeds = 1
			rep, err := byName(t, tc.name).Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != tc.rows {
				t.Errorf("%d rows, want %d", len(rep.Results), tc.rows)
			}
			if len(rep.Charts) == 0 {
				t.Error("no chart")
			}
			for _, r := range rep.Results {
				if r.Metrics["completed"] != r.Metrics["jobs"] {
					t.Errorf("%s %v: completed %v of %v jobs", r.Policy, r.Params, r.Metrics["completed"], r.Metrics["jobs"])
				}
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	p := DefaultParams()
	p.Nodes, p.Jobs = 6, 300
	a, err := Generate(5, p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(5, p)
	c, _ := Generate(6, p)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different workloads")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds, same workload")
	}
	var capacity, atZero resource.Vector
	for _, n := range p.ClusterNodes() {
		capacity = capacity.Add(n.Capacity)
	}
	te := 0
	for i, j := range a {
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
		if !j.RequestedDemand().Fits(p.Node) {
			t.Errorf("%s asks %v, more than a node", j.ID, j.RequestedDemand())
		}
		if i > 0 && j.Submit < a[i-1].Submit {
			t.Errorf("%s submitted before its predecessor", j.ID)
		}
		if j.Class == cluster.ClassTE {
			te++
			if j.GracePeriod != 0 {
				t.Errorf("TE job %s has grace %v", j.ID, j.GracePeriod)
			}
		}
		if j.Submit == 0 {
			atZero = atZero.Add(j.RequestedDemand())
		}
	}
	// The initial burst brings the load to Load and no further.
	if l := atZero.DominantShare(capacity); l < p.Load || l > p.Load+1 {
		t.Errorf("load at time 0 is %.2f, want just above %v", l, p.Load)
	}
	if f := float64(te) / float64(len(a)); f < 0.2 || f > 0.4 {
		t.Errorf("TE share %.2f, want about 0.3", f)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Params)
		want string
	}{
		{"grace below 0", func(p *Params) { p.Grace.Lo = -1 }, "grace"},
		{"te share", func(p *Params) { p.TEShare = 1.5 }, "te_share"},
		{"te work", func(p *Params) { p.TEWork = 1 }, "te_work"},
		{"te work below 0", func(p *Params) { p.TEWork = -0.1 }, "te_work"},
		{"grace scale", func(p *Params) { p.GraceScale = -2 }, "grace_scale"},
		{"load", func(p *Params) { p.Load = 0 }, "load"},
		{"run time", func(p *Params) { p.TE.Run.Lo = 0 }, "te.run"},
		{"truncation", func(p *Params) { p.BE.GPU.Lo, p.BE.GPU.Hi = 4, 2 }, "be.gpu"},
	} {
		p := DefaultParams()
		tc.mod(&p)
		_, err := Generate(1, p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
	if err := DefaultParams().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// recordsOf builds job records and final states: each job with its
// preemption count, grace period and waits after suspension (seconds).
type recSpec struct {
	id     string
	pre    int
	grace  float64
	delays []float64
}

func recordsOf(specs ...recSpec) ([]metrics.JobRecord, []*cluster.JobState) {
	var recs []metrics.JobRecord
	var final []*cluster.JobState
	for _, x := range specs {
		recs = append(recs, metrics.JobRecord{ID: x.id, Preemptions: x.pre, RescheduleDelays: x.delays})
		final = append(final, &cluster.JobState{Job: &cluster.Job{ID: x.id, GracePeriod: x.grace}})
	}
	return recs, final
}

func TestRecordMetrics(t *testing.T) {
	keys := []string{"preemption_events_per_job", "preempted_frac", "preempted_once_frac", "preempted_twice_frac", "preempted_thrice_frac",
		"suspended_wait_p50_min", "reschedule_interval_p50_min"}
	for _, tc := range []struct {
		name string
		jobs []recSpec
		want map[string]float64
	}{
		{
			name: "events per job count every preemption, preempted_frac distinct jobs",
			jobs: []recSpec{{"a", 0, 0, nil}, {"b", 1, 60, []float64{60}}, {"c", 2, 120, []float64{0, 120}}, {"d", 3, 0, []float64{60, 60, 180}}},
			// 6 events over 4 jobs; waits 1 0 2 1 1 3 min -> 1 1 1 0 2 3
			// sorted 0 1 1 1 2 3; intervals (wait + grace) 2 2 4 1 1 3.
			want: map[string]float64{"preemption_events_per_job": 1.5, "preempted_frac": 0.75, "preempted_once_frac": 0.25,
				"preempted_twice_frac": 0.25, "preempted_thrice_frac": 0.25, "suspended_wait_p50_min": 1, "reschedule_interval_p50_min": 2},
		},
		{
			name: "at P = 1 events per job equal the fraction preempted",
			jobs: []recSpec{{"a", 1, 300, []float64{30}}, {"b", 0, 0, nil}, {"c", 0, 0, nil}, {"d", 1, 0, []float64{90}}},
			want: map[string]float64{"preemption_events_per_job": 0.5, "preempted_frac": 0.5, "preempted_once_frac": 0.5,
				"suspended_wait_p50_min": 1, "reschedule_interval_p50_min": 3.5},
		},
		{
			name: "a job preempted four times counts four events",
			jobs: []recSpec{{"a", 4, 0, []float64{0, 0, 0, 0}}, {"b", 0, 0, nil}},
			want: map[string]float64{"preemption_events_per_job": 2, "preempted_frac": 0.5},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := RecordMetrics(recordsOf(tc.jobs...))
			got := map[string]float64{}
			for _, k := range keys {
				if m[k] != 0 {
					got[k] = m[k]
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("metrics (-want +got):\n%s", d)
			}
		})
	}
}

func TestScaleDemand(t *testing.T) {
	be := DefaultParams().BE
	got := be.ScaleDemand(0.5)
	want := ClassDist{Run: be.Run, CPU: Dist{4, 3, 1, 32}, MemGiB: Dist{32, 24, 4, 256}, GPU: Dist{1.5, 1.25, 1, 8}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ScaleDemand(0.5) (-want +got):\n%s", d)
	}
	// The default TE demand is BE's at TEDemandScale, with TE run times.
	p := DefaultParams()
	te := p.BE.ScaleDemand(TEDemandScale)
	te.Run = p.TE.Run
	if d := cmp.Diff(te, p.TE); d != "" {
		t.Errorf("default TE distributions (-want +got):\n%s", d)
	}
	if p.TE.Run == p.BE.Run {
		t.Error("TE and BE run times are the same distribution")
	}
}

// TestUnknownClassIsAnError: a workload with a job of no class makes the
// experiment path fail with an error naming the job.
func TestUnknownClassIsAnError(t *testing.T) {
	p := DefaultParams()
	p.Nodes, p.Jobs = 4, 50
	jobs, err := Generate(1, p)
	if err != nil {
		t.Fatal(err)
	}
	jobs[7].Class = cluster.ClassUnknown
	if err := fg.ValidateJobs(jobs); err == nil || !strings.Contains(err.Error(), jobs[7].ID) {
		t.Errorf("error %v, want one naming %s", err, jobs[7].ID)
	}
}

// TestInvariantsUnderCheck runs each policy over a small synthetic
// workload with the simulator's invariant checks on: no action refused,
// every job completes, TE jobs are never preempted, and with P = 1 (the
// default of all three) no job is preempted twice.
func TestInvariantsUnderCheck(t *testing.T) {
	p := DefaultParams()
	p.Nodes, p.Jobs = 6, 300
	env := quickEnv(t)
	for _, spec := range []string{"fifo", "lrtp", "rand", "fitgpp", "lrtp:p=inf", "rand:p=inf", "fitgpp:lambda=4;p=inf"} {
		jobs, err := Generate(3, p)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := env.Policies.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New(sim.Config{Tick: p.Tick, Check: true, Seed: 3}, p.ClusterNodes(), jobs, pol)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if len(res.Refusals) > 0 {
			t.Errorf("%s: %d refusals, first %v", spec, len(res.Refusals), res.Refusals[0])
		}
		pre := 0
		for _, r := range res.Records {
			if !r.Finished() {
				t.Errorf("%s: %s did not finish: %s", spec, r.ID, r.Reason)
			}
			if r.Class == cluster.ClassTE && r.Preemptions > 0 {
				t.Errorf("%s: TE job %s preempted", spec, r.ID)
			}
			if !strings.Contains(spec, "p=inf") && r.Preemptions > 1 {
				t.Errorf("%s (p=1): %s preempted %d times", spec, r.ID, r.Preemptions)
			}
			pre += r.Preemptions
		}
		if spec != "fifo" && pre == 0 {
			t.Errorf("%s: no preemptions; the scenario does not exercise preemption", spec)
		}
	}
}

func TestPreemptRecorder(t *testing.T) {
	r := &preemptRecorder{by: map[string]int{}}
	for _, ev := range []struct{ kind, detail string }{
		{"preempt", "grace=60s by=te-1 lrtp victim for TE job te-1"},
		{"preempt", "grace=0s by=te-1 lrtp victim for TE job te-1"},
		{"preempt", "grace=30s by=te-2 lrtp victim for TE job te-2"},
		{"start", "by=te-3"},
		{"suspend", ""},
	} {
		r.Observe(0, sim.Observed(ev.kind), nil, ev.detail)
	}
	if d := cmp.Diff(map[string]int{"te-1": 2, "te-2": 1}, r.by); d != "" {
		t.Errorf("victims per TE job (-want +got):\n%s", d)
	}
	want := map[string]float64{"preempting_te_per_job": 0.2, "victims_per_preempting_te": 1.5}
	if d := cmp.Diff(want, PreemptorMetrics(r.by, 10)); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]float64{"preempting_te_per_job": 0, "victims_per_preempting_te": 0}, PreemptorMetrics(nil, 0)); d != "" {
		t.Errorf("no preemptions (-want +got):\n%s", d)
	}
}

// TestTEWorkHonoured: with TEWork set, the generated jobs' TE share of the
// work is the target (within sampling noise of 6000 jobs), and the share
// of TE jobs moves with it; without it the share of jobs is TEShare.
func TestTEWorkHonoured(t *testing.T) {
	for _, w := range []float64{0, 0.1, 0.3, 0.5} {
		p := DefaultParams()
		p.TEWork = w
		jobs, err := Generate(7, p)
		if err != nil {
			t.Fatal(err)
		}
		te := 0
		for _, j := range jobs {
			if j.Class == cluster.ClassTE {
				te++
			}
		}
		jobShare, workShare := float64(te)/float64(len(jobs)), WorkShare(jobs, p.Node)
		if w == 0 {
			if math.Abs(jobShare-p.TEShare) > 0.02 {
				t.Errorf("te_work 0: %.3f of jobs are TE, want TEShare %v", jobShare, p.TEShare)
			}
			continue
		}
		if math.Abs(workShare-w) > 0.03 {
			t.Errorf("te_work %v: TE share of the work %.3f", w, workShare)
		}
		if q := TEJobShare(p); math.Abs(jobShare-q) > 0.02 {
			t.Errorf("te_work %v: %.3f of jobs are TE, TEJobShare says %.3f", w, jobShare, q)
		}
	}
}

// TestStrictTEPriority runs a small workload with strict TE priority and
// watches every start: no BE job starts while a TE job submitted before
// that cycle is still waiting. preempt=false alone (TE jobs first, BE jobs
// may pass a TE job that does not fit) does start BE jobs then, which
// shows the scenario exercises the rule.
func TestStrictTEPriority(t *testing.T) {
	p := DefaultParams()
	p.Nodes, p.Jobs, p.TEWork = 6, 400, 0.3
	env := quickEnv(t)
	passed := map[string]int{}
	for _, spec := range []string{StrictSpec, "fitgpp:preempt=false"} {
		jobs, err := Generate(5, p)
		if err != nil {
			t.Fatal(err)
		}
		submit := map[string]float64{}
		for _, j := range jobs {
			if j.Class == cluster.ClassTE {
				submit[j.ID] = j.Submit
			}
		}
		waiting := map[string]bool{} // TE jobs submitted and not started, as of the last start seen
		observe := func(now float64, kind sim.Observed, js *cluster.JobState, _ string) {
			if kind != sim.ObsStart {
				return
			}
			for id, at := range submit {
				if at < now {
					waiting[id] = true
					delete(submit, id)
				}
			}
			if js.Job.Class == cluster.ClassTE {
				delete(waiting, js.Job.ID)
				delete(submit, js.Job.ID)
				return
			}
			if len(waiting) > 0 {
				passed[spec]++
			}
		}
		pol, err := env.Policies.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New(sim.Config{Tick: p.Tick, Seed: 5, Observe: observe}, p.ClusterNodes(), jobs, pol)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		for _, r := range res.Records {
			if !r.Finished() {
				t.Errorf("%s: %s did not finish: %s", spec, r.ID, r.Reason)
			}
		}
	}
	if passed[StrictSpec] != 0 {
		t.Errorf("%s: %d BE starts while a TE job waited", StrictSpec, passed[StrictSpec])
	}
	if passed["fitgpp:preempt=false"] == 0 {
		t.Error("fitgpp:preempt=false never started a BE job while a TE job waited: the scenario does not exercise strict priority")
	}
}
