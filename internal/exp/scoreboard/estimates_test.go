package scoreboard

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/drover"
	"github.com/drover-sched/drover/pkg/resource"
)

// At sigma 0 the estimate board's setup gives the scoreboard's jobs, and
// at sigma > 0 the same jobs with estimates: every job's Work (the truth
// the simulator runs) unchanged, its Estimate drawn, and SRSF's key
// (drover.RemainingService) read from the estimate, so the BE jobs' SRSF
// order differs from the order by true remaining work.
func TestEstimatesSetup(t *testing.T) {
	env := quickEnv(t, 1)
	const seed = 2
	for _, r := range Regimes() {
		t.Run(r.Name, func(t *testing.T) {
			setup, err := r.Setup(env)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := setup.Jobs(seed)
			if err != nil {
				t.Fatal(err)
			}
			zero, err := withEstimates(setup, 0).Jobs(seed)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(summary(plain), summary(zero)); d != "" {
				t.Fatalf("sigma 0 changed the jobs (-plain +sigma 0):\n%s", d)
			}
			est, err := withEstimates(setup, 0.5).Jobs(seed)
			if err != nil {
				t.Fatal(err)
			}
			var trueKey, estKey []float64
			var be []int
			for i, j := range est {
				if j.Work != plain[i].Work || j.ID != plain[i].ID {
					t.Fatalf("job %s: Work %v, want the truth %v", j.ID, j.Work, plain[i].Work)
				}
				if !(j.Estimate > 0) || j.Estimate == j.Work {
					t.Fatalf("job %s: estimate %v for work %v: not drawn", j.ID, j.Estimate, j.Work)
				}
				if j.Class != cluster.ClassBE {
					continue
				}
				js := cluster.NewJobState(j)
				gpus := float64(max(j.RequestedDemand()[resource.GPU], 1))
				if k := drover.RemainingService(js, 0); math.Abs(k-j.Estimate*gpus) > 1e-6*k {
					t.Fatalf("job %s: SRSF key %v, want estimate %v x %v GPUs", j.ID, k, j.Estimate, gpus)
				}
				be = append(be, len(be))
				trueKey = append(trueKey, cluster.NewJobState(plain[i]).Remaining(0)*gpus)
				estKey = append(estKey, drover.RemainingService(js, 0))
			}
			byTrue, byEst := slices.Clone(be), slices.Clone(be)
			slices.SortStableFunc(byTrue, func(a, b int) int { return cmpF(trueKey[a], trueKey[b]) })
			slices.SortStableFunc(byEst, func(a, b int) int { return cmpF(estKey[a], estKey[b]) })
			if slices.Equal(byTrue, byEst) {
				t.Errorf("%d BE jobs: the SRSF order with estimates at sigma 0.5 is the exact order", len(be))
			}
		})
	}
}

// jobSummary is what of a job the run time and its estimate are.
type jobSummary struct {
	ID                     string
	Submit, Work, Estimate float64
	NoEstimate             bool
}

func summary(jobs []*cluster.Job) []jobSummary {
	var out []jobSummary
	for _, j := range jobs {
		out = append(out, jobSummary{j.ID, j.Submit, j.Work, j.Estimate, j.NoEstimate})
	}
	return out
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The decision rule of docs/scoreboard-plan.md: SRSF (drover) is the
// default only if on both boards it meets the target on at least as many
// regimes as the least-attained order and is strictly best on at least 4
// of 8.
func TestDecide(t *testing.T) {
	vs := func(met, best int) boardVerdicts {
		out := make(boardVerdicts, 8)
		for i := range out {
			out[i].Met, out[i].StrictlyBest = i < met, i < best
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		boards [][]boardVerdicts // per board: SRSF, LAS
		srsf   bool
	}{
		{"passes both", [][]boardVerdicts{{vs(6, 5), vs(6, 3)}, {vs(7, 4), vs(6, 3)}}, true},
		{"strictly best on 3 at sigma 1", [][]boardVerdicts{{vs(6, 5), vs(6, 3)}, {vs(6, 3), vs(6, 3)}}, false},
		{"meets fewer at sigma 0.5", [][]boardVerdicts{{vs(5, 6), vs(6, 3)}, {vs(6, 6), vs(6, 3)}}, false},
		{"best on 4, met as often", [][]boardVerdicts{{vs(4, 4), vs(4, 0)}, {vs(4, 4), vs(4, 0)}}, true},
	} {
		got := Decide([]float64{0.5, 1}, tc.boards)
		if strings.Contains(got, "SRSF stays the default") != tc.srsf {
			t.Errorf("%s: %s", tc.name, got)
		}
	}
}

// TestEstimatesSigmaZero: the estimate boards' code at sigma 0, with both
// candidates judged, gives the plain scoreboard's figures bit for bit;
// the only additions are the verdict metrics of the LAS row.
func TestEstimatesSigmaZero(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick scoreboard twice")
	}
	env := quickEnv(t, 0)
	rep, err := Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runBoard(context.Background(), env, "scoreboard-estimates", 0, EstimateCandidates)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.rows) != len(rep.Results) {
		t.Fatalf("%d rows, scoreboard %d", len(b.rows), len(rep.Results))
	}
	for i, row := range rep.Results {
		got := b.rows[i]
		if got.Policy != row.Policy || !maps(got.Params, row.Params) {
			t.Fatalf("row %d: %s %v, scoreboard %s %v", i, got.Policy, got.Params, row.Policy, row.Params)
		}
		for k, v := range row.Metrics {
			if math.Float64bits(got.Metrics[k]) != math.Float64bits(v) {
				t.Errorf("row %d (%s %v) %s: %v, scoreboard %v", i, row.Policy, row.Params, k, got.Metrics[k], v)
			}
		}
		extra := len(got.Metrics) - len(row.Metrics)
		if want := map[bool]int{true: 2, false: 0}[rowLabel(row) == LAS]; extra != want {
			t.Errorf("row %d (%s): %d metrics more than the scoreboard's, want %d", i, rowLabel(row), extra, want)
		}
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
