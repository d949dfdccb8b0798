// Package constraint implements cluster.NodeConstraint, a replica group's
// rules about nodes (nodeSelector, required and preferred node affinity,
// tolerations of NoSchedule and NoExecute taints), with
// k8s.io/component-helpers: the same matching kube-scheduler's NodeAffinity
// and TaintToleration plugins call, not rules written again here. Both
// executors build constraints with it: the Kubernetes executor from pod
// templates and pods, the simulator from the trace's node_selector and
// tolerations columns (Parse* below).
package constraint

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/drover-sched/drover/pkg/cluster"
)

// Spec is a replica group's node constraints in Kubernetes' own types.
type Spec struct {
	NodeSelector map[string]string    `json:"nodeSelector,omitempty"`
	Affinity     *corev1.NodeAffinity `json:"affinity,omitempty"`
	Tolerations  []corev1.Toleration  `json:"tolerations,omitempty"`
}

// FromPodSpec takes the constraints of a pod (template) spec.
func FromPodSpec(p *corev1.PodSpec) Spec {
	s := Spec{NodeSelector: p.NodeSelector, Tolerations: p.Tolerations}
	if p.Affinity != nil {
		s.Affinity = p.Affinity.NodeAffinity
	}
	return s
}

// Empty reports whether the spec constrains nothing.
func (s Spec) Empty() bool {
	return len(s.NodeSelector) == 0 && len(s.Tolerations) == 0 &&
		(s.Affinity == nil || s.Affinity.RequiredDuringSchedulingIgnoredDuringExecution == nil &&
			len(s.Affinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0)
}

// Constraint is a compiled Spec; it implements cluster.NodeConstraint.
type Constraint struct {
	key      string
	spec     Spec
	required nodeaffinity.RequiredNodeAffinity
	// preferred is nil without preferred terms.
	preferred *nodeaffinity.PreferredSchedulingTerms
}

var _ cluster.NodeConstraint = (*Constraint)(nil)

// New compiles s. It returns a nil constraint (and no error) when s is
// empty, so that an unconstrained group keeps placement's fast path, and
// an error naming the field when a selector, an affinity term or a
// toleration is invalid.
func New(s Spec) (cluster.NodeConstraint, error) {
	if s.Empty() {
		return nil, nil
	}
	if _, err := labels.ValidatedSelectorFromSet(s.NodeSelector); err != nil {
		return nil, fmt.Errorf("nodeSelector: %w", err)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: s.NodeSelector}}
	c := &Constraint{spec: s}
	if a := s.Affinity; a != nil {
		if r := a.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			if _, err := nodeaffinity.NewNodeSelector(r); err != nil {
				return nil, fmt.Errorf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: %w", err)
			}
		}
		if len(a.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			p, err := nodeaffinity.NewPreferredSchedulingTerms(a.PreferredDuringSchedulingIgnoredDuringExecution)
			if err != nil {
				return nil, fmt.Errorf("affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: %w", err)
			}
			c.preferred = p
		}
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: a}
	}
	for i, t := range s.Tolerations {
		if err := validToleration(t); err != nil {
			return nil, fmt.Errorf("tolerations[%d]: %w", i, err)
		}
	}
	c.required = nodeaffinity.GetRequiredNodeAffinity(pod)
	// The key is the spec's JSON with tolerations sorted (their order does
	// not matter); map keys are sorted by encoding/json.
	norm := s
	norm.Tolerations = slices.Clone(s.Tolerations)
	slices.SortFunc(norm.Tolerations, func(a, b corev1.Toleration) int {
		return strings.Compare(tolString(a), tolString(b))
	})
	b, err := json.Marshal(norm)
	if err != nil {
		return nil, err
	}
	c.key = string(b)
	return c, nil
}

// FromPod compiles a pod (template) spec's constraints.
func FromPod(p *corev1.PodSpec) (cluster.NodeConstraint, error) { return New(FromPodSpec(p)) }

// Spec returns the spec the constraint was compiled from.
func (c *Constraint) Spec() Spec { return c.spec }

// Key implements cluster.NodeConstraint.
func (c *Constraint) Key() string { return c.key }

// Prefers implements cluster.NodeConstraint.
func (c *Constraint) Prefers() bool { return c.preferred != nil }

// Admits implements cluster.NodeConstraint: no untolerated NoSchedule or
// NoExecute taint, and the node selector and required affinity match.
func (c *Constraint) Admits(n *cluster.Node) bool { return c.Why(n) == "" }

// Why implements cluster.NodeConstraint, checking in kube-scheduler's
// filter order (TaintToleration before NodeAffinity) with its messages.
func (c *Constraint) Why(n *cluster.Node) string {
	node := toNode(n)
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(node.Spec.Taints, c.spec.Tolerations, hardTaint); bad {
		return cluster.ReasonUntolerated(cluster.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	if ok, err := c.required.Match(node); err != nil || !ok {
		return ReasonAffinity
	}
	return ""
}

// ReasonAffinity is kube-scheduler's NodeAffinity message.
const ReasonAffinity = "node(s) didn't match Pod's node affinity/selector"

// Preference implements cluster.NodeConstraint: the summed weights of the
// preferred terms the node matches (NodeAffinity's score before
// normalisation).
func (c *Constraint) Preference(n *cluster.Node) int64 {
	if c.preferred == nil {
		return 0
	}
	return c.preferred.Score(toNode(n))
}

func hardTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// toNode is the part of a Kubernetes Node the matching reads: labels, the
// name (matchFields metadata.name) and taints.
func toNode(n *cluster.Node) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
	if len(n.Taints) > 0 {
		node.Spec.Taints = make([]corev1.Taint, len(n.Taints))
		for i, t := range n.Taints {
			node.Spec.Taints[i] = corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}
		}
	}
	return node
}

// Taints converts Kubernetes taints to the cluster model's.
func Taints(ts []corev1.Taint) []cluster.Taint {
	if len(ts) == 0 {
		return nil
	}
	out := make([]cluster.Taint, len(ts))
	for i, t := range ts {
		out[i] = cluster.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
	}
	return out
}

func validToleration(t corev1.Toleration) error {
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			return errors.New("operator Equal needs a key")
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf("operator Exists takes no value (got %q)", t.Value)
		}
	default:
		return fmt.Errorf("operator %q is not Equal or Exists", t.Operator)
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule:
	default:
		return fmt.Errorf("effect %q is not NoSchedule, NoExecute or PreferNoSchedule", t.Effect)
	}
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("key %q: %s", t.Key, strings.Join(errs, "; "))
		}
	}
	return nil
}

func tolString(t corev1.Toleration) string {
	return t.Key + "\x00" + string(t.Operator) + "\x00" + t.Value + "\x00" + string(t.Effect)
}

// The simulator's text forms (trace columns and cluster spec keys).

// ParseSelector parses "key=value;key=value" (empty: none).
func ParseSelector(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		if err := validLabel(k, v); err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("key %q given twice", k)
		}
		m[k] = v
	}
	return m, nil
}

// ParseLabel parses one "key=value" node label.
func ParseLabel(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("%q is not key=value", s)
	}
	return k, v, validLabel(k, v)
}

func validLabel(k, v string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("label value %q: %s", v, strings.Join(errs, "; "))
	}
	return nil
}

// ParseTaint parses "key=value:Effect" or "key:Effect" (kubectl taint's
// form); the effect is NoSchedule, NoExecute or PreferNoSchedule.
func ParseTaint(s string) (cluster.Taint, error) {
	kv, eff, ok := strings.Cut(s, ":")
	if !ok {
		return cluster.Taint{}, fmt.Errorf("%q: want key=value:Effect or key:Effect", s)
	}
	k, v, _ := strings.Cut(kv, "=")
	switch eff {
	case cluster.TaintNoSchedule, cluster.TaintNoExecute, cluster.TaintPreferNoSchedule:
	default:
		return cluster.Taint{}, fmt.Errorf("%q: effect %q is not NoSchedule, NoExecute or PreferNoSchedule", s, eff)
	}
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return cluster.Taint{}, fmt.Errorf("%q: key %q: %s", s, k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return cluster.Taint{}, fmt.Errorf("%q: value %q: %s", s, v, strings.Join(errs, "; "))
	}
	return cluster.Taint{Key: k, Value: v, Effect: eff}, nil
}

// ParseTolerations parses "tol;tol;..." where a toleration is
// "key=value:Effect" (Equal), "key:Effect" or "key" (Exists; no effect
// means every effect) or "*" (Exists with no key: tolerates every taint).
func ParseTolerations(s string) ([]corev1.Toleration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []corev1.Toleration
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "*" {
			out = append(out, corev1.Toleration{Operator: corev1.TolerationOpExists})
			continue
		}
		kv, eff, _ := strings.Cut(part, ":")
		t := corev1.Toleration{Effect: corev1.TaintEffect(eff)}
		if k, v, eq := strings.Cut(kv, "="); eq {
			t.Key, t.Value, t.Operator = k, v, corev1.TolerationOpEqual
		} else {
			t.Key, t.Operator = kv, corev1.TolerationOpExists
		}
		if t.Key == "" {
			return nil, fmt.Errorf("%q: empty key (use * to tolerate every taint)", part)
		}
		if err := validToleration(t); err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		if t.Operator == corev1.TolerationOpEqual {
			if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
				return nil, fmt.Errorf("%q: value %q: %s", part, t.Value, strings.Join(errs, "; "))
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// FormatSelector is ParseSelector's inverse (keys sorted).
func FormatSelector(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ";")
}

// FormatTolerations is ParseTolerations' inverse.
func FormatTolerations(ts []corev1.Toleration) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		switch {
		case t.Key == "" && t.Operator == corev1.TolerationOpExists:
			parts[i] = "*"
		case t.Operator == corev1.TolerationOpExists:
			parts[i] = t.Key
		default:
			parts[i] = t.Key + "=" + t.Value
		}
		if t.Effect != "" && parts[i] != "*" {
			parts[i] += ":" + string(t.Effect)
		}
	}
	return strings.Join(parts, ";")
}
