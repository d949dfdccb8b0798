package specon

import (
	"math"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
)

// TestCategorize walks every branch of Alg. 1 lines 5-22.
func TestCategorize(t *testing.T) {
	const a = 0.01
	tests := []struct {
		name      string
		cur       Category
		g, prev   float64
		hasPrev   bool
		want      Category
		rule      Rule
		converged bool
	}{
		{"PC slowing below alpha -> WC (l.7-9)", PC, 0.005, 0.008, true, WC, RuleSlowing, false},
		{"WC slowing below alpha -> CC (l.10-12)", WC, 0.004, 0.005, true, CC, RuleSlowing, false},
		{"CC slowing stays CC and asks (l.13-16)", CC, 0.001, 0.002, true, CC, RuleSlowing, true},
		{"PC bouncing up below alpha stays (l.17-18)", PC, 0.006, 0.004, true, PC, RuleBouncing, false},
		{"WC bouncing up below alpha stays", WC, 0.006, 0.004, true, WC, RuleBouncing, false},
		{"CC bouncing up below alpha stays, no request", CC, 0.003, 0.002, true, CC, RuleBouncing, false},
		{"equal growth counts as bouncing (>=)", WC, 0.003, 0.003, true, WC, RuleBouncing, false},
		{"WC growth above alpha resets to PC (l.19-22)", WC, 0.02, 0.001, true, PC, RuleReset, false},
		{"CC growth above alpha resets to PC", CC, 0.5, 0.9, true, PC, RuleReset, false},
		{"PC falling but still above alpha stays PC", PC, 0.05, 0.08, true, PC, RuleReset, false},
		{"growth exactly alpha: no branch applies", WC, a, 0.02, true, WC, RuleAtAlpha, false},
		{"first growth below alpha: nothing to compare", PC, 0.001, 0, false, PC, RuleFirst, false},
		{"first growth above alpha: PC", WC, 0.2, 0, false, PC, RuleReset, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Categorize(tc.cur, tc.g, tc.prev, tc.hasPrev, a)
			if got.Next != tc.want || got.Rule != tc.rule || got.Converged != tc.converged {
				t.Errorf("Categorize(%v, g=%v, prev=%v) = %+v, want next %v rule %v converged %v",
					tc.cur, tc.g, tc.prev, got, tc.want, tc.rule, tc.converged)
			}
		})
	}
}

// TestOneStepPerRound: a job needs three falling rounds below alpha to ask
// for reallocation (PC -> WC -> CC -> request), never two steps at once.
func TestOneStepPerRound(t *testing.T) {
	cat := PC
	gs := []float64{0.009, 0.008, 0.007, 0.006}
	var steps []Step
	for i := 1; i < len(gs); i++ {
		st := Categorize(cat, gs[i], gs[i-1], true, 0.01)
		steps = append(steps, st)
		cat = st.Next
	}
	if steps[0].Next != WC || steps[1].Next != CC || !steps[2].Converged || steps[1].Converged {
		t.Fatalf("steps %+v, want WC, CC, CC+request", steps)
	}
}

func TestEvalAtAndGrowths(t *testing.T) {
	ss := []cluster.EvalSample{{T: 5, Value: 1}, {T: 10, Value: 0.8}, {T: 35, Value: 0.5}, {T: 65, Value: 0.45}}
	for _, tc := range []struct {
		t    float64
		want float64
		ok   bool
	}{{4, 0, false}, {5, 1, true}, {9.9, 1, true}, {30, 0.8, true}, {100, 0.45, true}} {
		v, ok := EvalAt(ss, tc.t)
		if ok != tc.ok || v != tc.want {
			t.Errorf("EvalAt(%v) = %v, %v; want %v, %v", tc.t, v, ok, tc.want, tc.ok)
		}
	}
	g, prev, n := Growths(ss, 90, 30) // E(90)=.45, E(60)=.5, E(30)=.8
	if n != 2 || math.Abs(g-0.05) > 1e-12 || math.Abs(prev-0.3) > 1e-12 {
		t.Errorf("Growths(90) = %v, %v, %d", g, prev, n)
	}
	if _, _, n := Growths(ss, 40, 30); n != 1 { // E(40), E(10); no E(-20)
		t.Errorf("Growths(40) n = %d, want 1", n)
	}
	if _, _, n := Growths(ss, 30, 30); n != 0 { // no E(0)
		t.Errorf("Growths(30) n = %d, want 0", n)
	}
}

// TestCurvesMatchFig1 checks the model curves against the shares of the
// total reduction the paper reports at 20% of training time, and that the
// noise makes late growth values bounce.
func TestCurvesMatchFig1(t *testing.T) {
	for _, tc := range []struct {
		model string
		share float64
	}{{"vae", 0.65}, {"bi-rnn", 0.98}, {"gru", 0.90}} {
		m, err := ModelByName(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Curve.ReductionAt(0.2); math.Abs(got-tc.share) > 0.015 {
			t.Errorf("%s: reduction at 20%% = %.3f, want %.2f", tc.model, got, tc.share)
		}
	}
	if _, err := ModelByName("lstm"); err == nil {
		t.Error("unknown model accepted")
	}
	// Late in training, successive growths bounce: both rises and falls.
	m, _ := ModelByName("vae")
	rises, falls := 0, 0
	prevG := -1.0
	for k := 0; k < 40; k++ {
		p0, p1 := 0.8+float64(k)*0.004, 0.8+float64(k+1)*0.004
		g := math.Abs(m.Curve.Sample(p1, 7, k+1) - m.Curve.Sample(p0, 7, k))
		if prevG >= 0 {
			if g > prevG {
				rises++
			} else {
				falls++
			}
		}
		prevG = g
	}
	if rises < 5 || falls < 5 {
		t.Errorf("late growth does not bounce: %d rises, %d falls", rises, falls)
	}
	// Dynamic RNN's second drop brings growth back above alpha.
	d, _ := ModelByName("dynamic-rnn")
	if g := d.Curve.Mean(0.40) - d.Curve.Mean(0.50); g < 0.05 {
		t.Errorf("dynamic-rnn second drop is only %v", g)
	}
}
