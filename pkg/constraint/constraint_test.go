package constraint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Builders, in the style of kube-scheduler's st.MakePod()...Obj().

type nodeB struct{ n cluster.Node }

func mkNode(name string) *nodeB { return &nodeB{cluster.Node{Name: name}} }
func (b *nodeB) label(k, v string) *nodeB {
	if b.n.Labels == nil {
		b.n.Labels = map[string]string{}
	}
	b.n.Labels[k] = v
	return b
}
func (b *nodeB) taint(k, v, eff string) *nodeB {
	b.n.Taints = append(b.n.Taints, cluster.Taint{Key: k, Value: v, Effect: eff})
	return b
}
func (b *nodeB) obj() *cluster.Node { return &b.n }

type specB struct{ s Spec }

func mkSpec() *specB { return &specB{} }
func (b *specB) selector(k, v string) *specB {
	if b.s.NodeSelector == nil {
		b.s.NodeSelector = map[string]string{}
	}
	b.s.NodeSelector[k] = v
	return b
}
func (b *specB) tolerate(k, op, v, eff string) *specB {
	b.s.Tolerations = append(b.s.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOperator(op), Value: v, Effect: corev1.TaintEffect(eff)})
	return b
}
func (b *specB) affinity() *corev1.NodeAffinity {
	if b.s.Affinity == nil {
		b.s.Affinity = &corev1.NodeAffinity{}
	}
	return b.s.Affinity
}
func (b *specB) require(k string, op corev1.NodeSelectorOperator, vals ...string) *specB {
	a := b.affinity()
	if a.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	t := &a.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	t.MatchExpressions = append(t.MatchExpressions, corev1.NodeSelectorRequirement{Key: k, Operator: op, Values: vals})
	return b
}
func (b *specB) prefer(w int32, k, v string) *specB {
	a := b.affinity()
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}})
	return b
}
func (b *specB) obj() Spec { return b.s }

func TestWhy(t *testing.T) {
	gpuPool := mkNode("g1").label("pool", "gpu").label("gpu", "a100").taint("nvidia.com/gpu", "", cluster.TaintNoSchedule).obj()
	evict := mkNode("e1").label("pool", "gpu").taint("maintenance", "true", cluster.TaintNoExecute).obj()
	soft := mkNode("s1").label("pool", "cpu").taint("busy", "", cluster.TaintPreferNoSchedule).obj()
	plain := mkNode("p1").label("pool", "cpu").obj()
	tests := []struct {
		name string
		spec Spec
		// want is Why per node: gpuPool, evict, soft, plain.
		want []string
	}{
		{"no constraint tolerates nothing", mkSpec().selector("pool", "cpu").obj(),
			[]string{"node(s) had untolerated taint {nvidia.com/gpu: }", "node(s) had untolerated taint {maintenance: true}", "", ""}},
		{"selector", mkSpec().selector("pool", "gpu").tolerate("nvidia.com/gpu", "Exists", "", "NoSchedule").obj(),
			[]string{"", "node(s) had untolerated taint {maintenance: true}", ReasonAffinity, ReasonAffinity}},
		{"toleration of NoSchedule does not cover NoExecute", mkSpec().tolerate("maintenance", "Equal", "true", "NoSchedule").obj(),
			[]string{"node(s) had untolerated taint {nvidia.com/gpu: }", "node(s) had untolerated taint {maintenance: true}", "", ""}},
		{"empty effect tolerates every effect", mkSpec().tolerate("maintenance", "Exists", "", "").obj(),
			[]string{"node(s) had untolerated taint {nvidia.com/gpu: }", "", "", ""}},
		{"tolerate everything", mkSpec().tolerate("", "Exists", "", "").obj(), []string{"", "", "", ""}},
		{"required affinity NotIn", mkSpec().tolerate("", "Exists", "", "").require("pool", corev1.NodeSelectorOpNotIn, "gpu").obj(),
			[]string{ReasonAffinity, ReasonAffinity, "", ""}},
		{"required affinity Exists", mkSpec().tolerate("", "Exists", "", "").require("gpu", corev1.NodeSelectorOpExists).obj(),
			[]string{"", ReasonAffinity, ReasonAffinity, ReasonAffinity}},
		{"selector and affinity both apply", mkSpec().tolerate("", "Exists", "", "").selector("pool", "gpu").require("gpu", corev1.NodeSelectorOpIn, "h100").obj(),
			[]string{ReasonAffinity, ReasonAffinity, ReasonAffinity, ReasonAffinity}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range []*cluster.Node{gpuPool, evict, soft, plain} {
				why := c.Why(n)
				got = append(got, why)
				if c.Admits(n) != (why == "") {
					t.Errorf("%s: Admits %v but Why %q", n.Name, c.Admits(n), why)
				}
				if cluster.WhyNot(n, c) != why {
					t.Errorf("%s: cluster.WhyNot differs", n.Name)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Why (-want +got):\n%s", d)
			}
		})
	}
}

func TestNilConstraintMatchesEmptySpec(t *testing.T) {
	c, err := New(Spec{})
	if err != nil || c != nil {
		t.Fatalf("empty spec: %v, %v; want nil, nil", c, err)
	}
	// A group without a constraint (nil) must be treated as an empty
	// spec: tolerates no hard taint, matches any labels.
	tainted := mkNode("t").taint("a", "b", cluster.TaintNoExecute).obj()
	none, _ := New(mkSpec().tolerate("other", "Exists", "", "").obj())
	for _, n := range []*cluster.Node{tainted, mkNode("p").obj(), mkNode("s").taint("x", "", cluster.TaintPreferNoSchedule).obj()} {
		if cluster.Admits(n, nil) != none.Admits(n) || cluster.WhyNot(n, nil) != none.Why(n) {
			t.Errorf("%s: nil %v %q, empty %v %q", n.Name, cluster.Admits(n, nil), cluster.WhyNot(n, nil), none.Admits(n), none.Why(n))
		}
	}
}

func TestPreference(t *testing.T) {
	c, err := New(mkSpec().prefer(10, "gpu", "a100").prefer(5, "zone", "a").obj())
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*cluster.Node{
		mkNode("both").label("gpu", "a100").label("zone", "a").obj(),
		mkNode("gpu").label("gpu", "a100").obj(),
		mkNode("zone").label("zone", "a").obj(),
		mkNode("none").obj(),
	}
	var got []int64
	for _, n := range nodes {
		got = append(got, c.Preference(n))
		if !c.Admits(n) {
			t.Errorf("%s: preferences must not filter", n.Name)
		}
	}
	if d := cmp.Diff([]int64{15, 10, 5, 0}, got); d != "" {
		t.Errorf("Preference (-want +got):\n%s", d)
	}
	if !c.Prefers() {
		t.Error("Prefers() = false")
	}
}

func TestKeyIgnoresTolerationOrder(t *testing.T) {
	a, _ := New(mkSpec().tolerate("a", "Exists", "", "").tolerate("b", "Equal", "x", "NoSchedule").obj())
	b, _ := New(mkSpec().tolerate("b", "Equal", "x", "NoSchedule").tolerate("a", "Exists", "", "").obj())
	c, _ := New(mkSpec().tolerate("a", "Exists", "", "").obj())
	if a.Key() != b.Key() || a.Key() == c.Key() {
		t.Errorf("keys: %s / %s / %s", a.Key(), b.Key(), c.Key())
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"bad selector value", mkSpec().selector("pool", "a b").obj(), "nodeSelector:"},
		{"bad operator", mkSpec().tolerate("k", "Like", "", "").obj(), "tolerations[0]: operator \"Like\""},
		{"exists with value", mkSpec().tolerate("k", "Exists", "v", "").obj(), "tolerations[0]: operator Exists takes no value"},
		{"bad effect", mkSpec().tolerate("k", "Equal", "v", "Sometimes").obj(), "tolerations[0]: effect"},
		{"bad affinity operator", mkSpec().require("k", "Near", "v").obj(), "requiredDuringSchedulingIgnoredDuringExecution"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseRoundTrip(t *testing.T) {
	tol, err := ParseTolerations("dedicated=team-a:NoSchedule; spot ;gpu:NoExecute;*")
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Toleration{
		{Key: "dedicated", Operator: "Equal", Value: "team-a", Effect: "NoSchedule"},
		{Key: "spot", Operator: "Exists"},
		{Key: "gpu", Operator: "Exists", Effect: "NoExecute"},
		{Operator: "Exists"},
	}
	if d := cmp.Diff(want, tol); d != "" {
		t.Errorf("ParseTolerations (-want +got):\n%s", d)
	}
	if s := FormatTolerations(tol); s != "dedicated=team-a:NoSchedule;spot;gpu:NoExecute;*" {
		t.Errorf("FormatTolerations = %q", s)
	}
	sel, err := ParseSelector("b=2;a=1")
	if err != nil || FormatSelector(sel) != "a=1;b=2" {
		t.Errorf("selector %v %v", sel, err)
	}
	taint, err := ParseTaint("nvidia.com/gpu=present:NoSchedule")
	if d := cmp.Diff(cluster.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}, taint); d != "" || err != nil {
		t.Errorf("ParseTaint %v (-want +got):\n%s", err, d)
	}
}

// FuzzParseTolerations: a parsed list always compiles and formats back to
// an equal list; never a panic.
func FuzzParseTolerations(f *testing.F) {
	for _, s := range []string{"a=b:NoSchedule", "a", "*", "a:NoExecute;b=c", "=x", "a=b=c:NoSchedule;;", "x.io/y:PreferNoSchedule"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tol, err := ParseTolerations(s)
		if err != nil {
			return
		}
		if _, err := New(Spec{Tolerations: tol}); err != nil {
			t.Fatalf("parsed %q but it does not compile: %v", s, err)
		}
		again, err := ParseTolerations(FormatTolerations(tol))
		if err != nil {
			t.Fatalf("format of %q does not parse: %v", s, err)
		}
		if d := cmp.Diff(tol, again); d != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", s, d)
		}
	})
}

// FuzzParseSelector: a parsed selector compiles and round-trips.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"a=b", "a=b;c=d", "a=", "x.io/y=z", "a=b;a=c", "=b", "a b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseSelector(s)
		if err != nil {
			return
		}
		if _, err := New(Spec{NodeSelector: m}); err != nil {
			t.Fatalf("parsed %q but it does not compile: %v", s, err)
		}
		again, err := ParseSelector(FormatSelector(m))
		if err != nil {
			t.Fatalf("format of %q does not parse: %v", s, err)
		}
		if len(m) > 0 || len(again) > 0 {
			if d := cmp.Diff(m, again); d != "" {
				t.Fatalf("round trip of %q:\n%s", s, d)
			}
		}
	})
}

// FuzzParseTaint: a parsed taint has a valid effect and key.
func FuzzParseTaint(f *testing.F) {
	for _, s := range []string{"a=b:NoSchedule", "a:NoExecute", "a", ":NoSchedule", "a=b:Nope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tt, err := ParseTaint(s)
		if err != nil {
			return
		}
		if tt.Key == "" || tt.Effect != cluster.TaintNoSchedule && tt.Effect != cluster.TaintNoExecute && tt.Effect != cluster.TaintPreferNoSchedule {
			t.Fatalf("%q parsed to %+v", s, tt)
		}
	})
}
