package view

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// Bounds of the policy labels the executor stores in a TrainingJob's
// status.policyLabels and reads back every cycle (policy.SetLabel).
const (
	// PolicyLabelPrefix starts every policy label key (docs/ARCHITECTURE.md:
	// "label keys live under drover.dev/").
	PolicyLabelPrefix = "drover.dev/"
	// MaxPolicyLabels is the most labels one job keeps (the CRD's
	// maxProperties says the same).
	MaxPolicyLabels = 32
	// MaxPolicyLabelKey is the longest key, in bytes.
	MaxPolicyLabelKey = 63
	// MaxPolicyLabelValue is the longest value, in bytes (an OASiS plan
	// is the longest value a shipped plugin writes).
	MaxPolicyLabelValue = 64 << 10
	// MaxPolicyLabelBytes bounds the keys and values of one job together.
	MaxPolicyLabelBytes = 256 << 10
)

// CheckPolicyLabel returns why key and value cannot be a policy label, or
// nil: the key must start with PolicyLabelPrefix, have something after it
// and be at most MaxPolicyLabelKey bytes; the value at most
// MaxPolicyLabelValue bytes; both valid UTF-8 without NUL. The executor
// refuses a SetLabel that fails it, and PolicyLabels drops an entry that
// fails it.
func CheckPolicyLabel(key, value string) error {
	switch {
	case !strings.HasPrefix(key, PolicyLabelPrefix) || len(key) == len(PolicyLabelPrefix):
		return fmt.Errorf("key %.80q: not of the form %s<name>", key, PolicyLabelPrefix)
	case len(key) > MaxPolicyLabelKey:
		return fmt.Errorf("key %.80q: %d bytes, more than %d", key, len(key), MaxPolicyLabelKey)
	case !utf8.ValidString(key) || strings.ContainsRune(key, 0):
		return fmt.Errorf("key %.80q: not valid UTF-8 text", key)
	case len(value) > MaxPolicyLabelValue:
		return fmt.Errorf("key %s: value of %d bytes, more than %d", key, len(value), MaxPolicyLabelValue)
	case !utf8.ValidString(value) || strings.ContainsRune(value, 0):
		return fmt.Errorf("key %s: value is not valid UTF-8 text", key)
	}
	return nil
}

// PolicyLabels decodes the policy labels kept in a TrainingJob's
// status.policyLabels, which policies read back as JobState.Labels every
// cycle. It is the one decoder of stored policy state, and its contract
// is what policies may rely on whatever the stored object holds:
//
//   - only status.policyLabels is read; the drover.dev/policy-labels
//     annotation of earlier versions is ignored (any user who may edit the
//     job can write annotations, so it cannot be trusted even once);
//   - every entry returned passes CheckPolicyLabel; at most
//     MaxPolicyLabels entries and MaxPolicyLabelBytes bytes are returned,
//     the first in key order;
//   - the map returned is nil when no entry is kept, and is a new map the
//     caller may keep or change;
//   - the error is nil when every stored entry was kept, and otherwise
//     names the field and every key dropped (in key order, quoted and
//     truncated);
//   - it never panics, for any object.
//
// Values are opaque here: each plugin still bounds what it parses out of
// them (SpeCon's labelInt, say), because a status may also be written by
// whoever was granted trainingjobs/status.
func PolicyLabels(tj *v1alpha1.TrainingJob) (map[string]string, error) {
	return keepLabels(tj.Status.PolicyLabels, "trainingjob "+JobKey(tj)+": status.policyLabels")
}

// keepLabels is PolicyLabels over stored labels; where names the field
// in the error.
func keepLabels(stored map[string]string, where string) (map[string]string, error) {
	if len(stored) == 0 {
		return nil, nil
	}
	keys := slices.Sorted(maps.Keys(stored))
	var out map[string]string
	var errs []error
	size := 0
	for _, k := range keys {
		v := stored[k]
		if err := CheckPolicyLabel(k, v); err != nil {
			errs = append(errs, err)
			continue
		}
		if len(out) == MaxPolicyLabels || size+len(k)+len(v) > MaxPolicyLabelBytes {
			errs = append(errs, fmt.Errorf("key %s: beyond %d labels or %d bytes", k, MaxPolicyLabels, MaxPolicyLabelBytes))
			continue
		}
		if out == nil {
			out = make(map[string]string, len(stored))
		}
		out[k] = v
		size += len(k) + len(v)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s: dropped %d of %d entries: %w", where, len(errs), len(keys), errors.Join(errs...))
	}
	return out, nil
}

// checkSetLabel returns why a job whose labels are labels may not store
// key=value, or nil: the label must pass CheckPolicyLabel, and the job's
// labels must stay within MaxPolicyLabels and MaxPolicyLabelBytes.
func CheckSetLabel(labels map[string]string, key, value string) error {
	if err := CheckPolicyLabel(key, value); err != nil {
		return err
	}
	_, replaces := labels[key]
	if !replaces && len(labels) >= MaxPolicyLabels {
		return fmt.Errorf("key %s: the job has %d labels already, the most it may keep", key, MaxPolicyLabels)
	}
	size := len(key) + len(value)
	for k, v := range labels {
		if k != key {
			size += len(k) + len(v)
		}
	}
	if size > MaxPolicyLabelBytes {
		return fmt.Errorf("key %s: the job's labels would exceed %d bytes", key, MaxPolicyLabelBytes)
	}
	return nil
}
