package specon

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
)

// schedule runs one cycle of a registered preset, turning a panic into a
// test failure so that one bad case does not hide the others.
func schedule(t *testing.T, spec string, s *cluster.Snapshot) (as []policy.Action) {
	t.Helper()
	r := policy.NewRegistry()
	if err := r.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	p, err := r.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if e := recover(); e != nil {
			t.Fatalf("%s panicked: %v", spec, e)
		}
	}()
	return p.Schedule(s)
}

// labelsOf returns the SetLabel values written for job id, by key.
func labelsOf(as []policy.Action, id string) map[string]string {
	out := map[string]string{}
	for _, l := range actionsOf[policy.SetLabel](as) {
		if l.Job == id {
			out[l.Key] = l.Value
		}
	}
	return out
}

// TestSlotLabelBounds (issue 17, item 1): the round-robin slot is rebuilt
// from the running jobs' rr-slot labels, which a tenant may overwrite. A
// value of math.MaxInt64 used to overflow slot+1 into a negative index and
// panic on every cycle; values outside [0, 1<<40) are now ignored as
// malformed ones are.
func TestSlotLabelBounds(t *testing.T) {
	tests := []struct {
		label    string
		wantNode int    // node of the pending job (1..3 are worker-1..3)
		wantSlot string // its rr-slot label
	}{
		{"9223372036854775807", 1, "0"}, // math.MaxInt64: slot+1 overflowed
		{"1099511627776", 1, "0"},       // 1<<40: out of range
		{"-4", 1, "0"},
		{"seven", 1, "0"},
		{"", 1, "0"},                          // no label: a fresh sequence
		{"4", 3, "5"},                         // slot 5: worker 5 mod 3 = 2, the third
		{"1099511627775", 2, "1099511627776"}, // the largest accepted; 2^40 mod 3 = 1
	}
	for _, spec := range []string{"default", "specon"} {
		for _, tc := range tests {
			t.Run(spec+"/"+tc.label, func(t *testing.T) {
				s := snapshot(300, 3, []fakeJob{{id: "old", worker: 1, labels: map[string]string{LabelSlot: tc.label}}})
				m, _ := ModelByName("vae")
				s.Pending.(*cluster.Queue).PushBack(cluster.NewJobState(NewJob("new", m, 290, 7)))
				as := schedule(t, spec, s)
				var got []string
				for _, st := range actionsOf[policy.Start](as) {
					got = append(got, fmt.Sprintf("%s@%d", st.Job, st.Placement[0].Node))
				}
				want := []string{fmt.Sprintf("new@%d", tc.wantNode)}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("starts (-want +got):\n%s", d)
				}
				if got := labelsOf(as, "new")[LabelSlot]; got != tc.wantSlot {
					t.Errorf("rr-slot of new = %q, want %q", got, tc.wantSlot)
				}
			})
		}
	}
}

// TestStateLabelBounds: the round, converged-at and migrated-at labels are
// bounded the same way. A round in the far future used to stop a job's
// categorisation for good; a converged-at of NaN or far in the future made
// the job the first one Alg. 3 moves.
func TestStateLabelBounds(t *testing.T) {
	fast := []float64{0.9, 0.7, 0.5}
	slowing := []float64{0.5, 0.3, 0.295} // growth 0.005 < alpha, below 0.2: PC -> WC
	t.Run("round", func(t *testing.T) {
		for _, tc := range []struct {
			label string
			evals []float64
			want  string
			wrote bool
		}{
			// The round (10) changes the category: it is recorded.
			{"9223372036854775807", slowing, "10", true},
			{"1099511627776", slowing, "10", true},
			{"9", slowing, "10", true},
			{"1099511627775", slowing, "", false}, // accepted: a later round than now, nothing to do
			// The round changes nothing: a valid label stays, a bad one
			// is removed.
			{"9", fast, "", false},
			{"9223372036854775807", fast, "", true},
		} {
			t.Run(tc.label, func(t *testing.T) {
				jobs := []fakeJob{{id: "p", worker: 1, labels: map[string]string{LabelCategory: "PC", LabelRound: tc.label}, evals: tc.evals}}
				got, wrote := labelsOf(schedule(t, "specon", snapshot(300, 2, jobs)), "p")[LabelRound]
				if got != tc.want || wrote != tc.wrote {
					t.Errorf("round label written %q (%v), want %q (%v)", got, wrote, tc.want, tc.wrote)
				}
			})
		}
	})
	// converged-at (Alg. 3's t_cj under candidates=converged) and
	// migrated-at (t_cj under the default candidates=migrated).
	for _, tc := range []struct{ key, spec string }{
		{LabelConvergedAt, "specon:candidates=converged"},
		{LabelMarkedAt, "specon"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			flat := []float64{0.1, 0.1, 0.1}
			conv := func(at string) map[string]string {
				l := map[string]string{LabelCategory: "CC", LabelConvergedAt: "0", LabelMigrated: "true", LabelMarkedAt: "0"}
				l[tc.key] = at
				return l
			}
			for _, lc := range []struct{ label, want string }{
				{"240", "late"}, // valid: the most recent moves
				{"NaN", "mid"},
				{"1e300", "mid"},
				{"+Inf", "mid"},
				{"-1", "mid"},
			} {
				t.Run(lc.label, func(t *testing.T) {
					jobs := []fakeJob{
						{id: "old", worker: 1, labels: conv("60"), evals: flat},
						{id: "mid", worker: 1, labels: conv("180"), evals: flat},
						{id: "late", worker: 1, labels: conv(lc.label), evals: flat},
						{id: "x", worker: 2, labels: conv("30"), evals: flat},
					}
					var got []string
					for _, m := range actionsOf[policy.Migrate](schedule(t, tc.spec, snapshot(300, 3, jobs))) {
						got = append(got, m.Job)
					}
					if d := cmp.Diff([]string{lc.want}, got); d != "" {
						t.Errorf("rebalanced (-want +got):\n%s", d)
					}
				})
			}
		})
	}
}

// TestLabelsSentUntilApplied: the Speculator keeps each job's state and
// its label values from cycle to cycle, but it decides what to write from
// the job's labels as the executor shows them: a write the executor did
// not apply (refused, or lost) is sent again on the next cycle, one it
// applied is not, and a label someone else changed is written back when
// the cycle compares them (after a write, or when their number changed).
func TestLabelsSentUntilApplied(t *testing.T) {
	fast := []float64{0.9, 0.7, 0.5}
	s := snapshot(300, 2, []fakeJob{{id: "p", worker: 1, labels: map[string]string{}, evals: fast}})
	// Only a round that changes the job's state is recorded: the first
	// one, PC -> PC, is not.
	js := s.Running[0]
	r := policy.NewRegistry()
	if err := r.Add(Entries()...); err != nil {
		t.Fatal(err)
	}
	p, err := r.New("specon")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{LabelCategory: "PC"}
	apply := func(as []policy.Action) {
		for _, l := range actionsOf[policy.SetLabel](as) {
			js.Labels[l.Key] = l.Value
		}
	}
	steps := []struct {
		name  string
		now   float64
		apply bool              // the executor applies this cycle's writes
		edit  map[string]string // labels changed by someone else before the cycle
		want  map[string]string
	}{
		{"first", 300, false, nil, want},
		{"not applied: sent again", 300, true, nil, want},
		{"applied: nothing to send", 300, true, nil, map[string]string{}},
		// The growth over (300, 330] is 0 < alpha and below the one before:
		// PC -> WC.
		{"next round", 330, true, nil, map[string]string{LabelCategory: "WC", LabelRound: "11"}},
		{"edited: written back", 330, true, map[string]string{LabelCategory: "CC", LabelMove: "M"},
			map[string]string{LabelCategory: "WC", LabelMove: ""}},
		{"restored", 330, true, nil, map[string]string{}},
		// After a cycle that wrote nothing, the labels are compared again
		// only when their number changed: only the profile's plugins write
		// them (Kubernetes keeps them in status, which tenants cannot
		// write), so an edit of a value alone is not seen...
		{"quiet: not compared", 330, true, map[string]string{LabelCategory: "PC"}, map[string]string{}},
		// ...and one that comes with a label added or lost is.
		{"another label added: compared", 330, true, map[string]string{LabelSlot: "3"}, map[string]string{LabelCategory: "WC"}},
	}
	for _, st := range steps {
		s.Now = st.now
		for k, v := range st.edit {
			js.Labels[k] = v
		}
		as := p.Schedule(s)
		if d := cmp.Diff(st.want, labelsOf(as, "p")); d != "" {
			t.Errorf("%s: labels written (-want +got):\n%s", st.name, d)
		}
		if st.apply {
			apply(as)
		}
	}
}
