// Package report is how a training container tells drover its progress:
// it writes a small JSON document into the drover.dev/report annotation of
// its own pod. Any language can do that with one PATCH of the pod (the
// pod's name and namespace are in the DROVER_POD_NAME and
// DROVER_POD_NAMESPACE environment variables that drover sets); Go trainers
// call Send, shell and Python ones run `drover report`.
//
// The scheduler copies the newest report into the TrainingJob's status
// (status.progress, and status.evals for the metric history), where
// policies such as SpeCon's convergence monitor read it, and passes the
// last checkpoint back to the replicas it recreates after a preemption or
// migration as the drover.dev/resume-from annotation and the
// DROVER_RESUME_FROM environment variable.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// Environment variables drover sets in every replica container.
const (
	EnvPodName      = "DROVER_POD_NAME"
	EnvPodNamespace = "DROVER_POD_NAMESPACE"
	EnvResumeFrom   = "DROVER_RESUME_FROM"
)

// Report is one progress report, the value of the drover.dev/report
// annotation:
//
//	{"progress":0.42,"metric":0.31,"checkpoint":"s3://b/ckpt-420","checkpointProgress":0.4,"time":"2026-01-02T15:04:05Z"}
type Report struct {
	// Progress is the fraction of training done, in [0, 1].
	Progress float64 `json:"progress"`
	// Metric is the current value of the job's evaluation metric
	// (spec.progress.metric), if it has one.
	Metric *float64 `json:"metric,omitempty"`
	// Checkpoint is the last checkpoint written, in a form the trainer can
	// restore from; CheckpointProgress is the progress it holds.
	Checkpoint         string  `json:"checkpoint,omitempty"`
	CheckpointProgress float64 `json:"checkpointProgress,omitempty"`
	// Time is when the report was made; the scheduler keeps the newest.
	Time time.Time `json:"time"`
}

// Validate checks a report; errors name the field.
func (r *Report) Validate() error {
	switch {
	case math.IsNaN(r.Progress) || r.Progress < 0 || r.Progress > 1:
		return fmt.Errorf("progress: %v is not in [0, 1]", r.Progress)
	case r.Metric != nil && (math.IsNaN(*r.Metric) || math.IsInf(*r.Metric, 0)):
		return fmt.Errorf("metric: %v is not a finite number", *r.Metric)
	case r.CheckpointProgress < 0 || r.CheckpointProgress > 1:
		return fmt.Errorf("checkpointProgress: %v is not in [0, 1]", r.CheckpointProgress)
	case r.Time.IsZero():
		return errors.New("time: not set")
	}
	return nil
}

// Parse decodes an annotation value; an empty value gives nil.
func Parse(s string) (*Report, error) {
	if s == "" {
		return nil, nil
	}
	var r Report
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("drover.dev/report: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("drover.dev/report: %w", err)
	}
	return &r, nil
}

// Patch returns the merge patch that sets the report on a pod.
func Patch(r Report) ([]byte, error) {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationReport: string(b)}}})
}

// Send writes the report on the given pod with a merge patch (no
// read-modify-write, so it never conflicts with the scheduler).
func Send(ctx context.Context, c client.Client, namespace, pod string, r Report) error {
	patch, err := Patch(r)
	if err != nil {
		return fmt.Errorf("report for pod %s/%s: %w", namespace, pod, err)
	}
	p := &corev1.Pod{}
	p.Name, p.Namespace = pod, namespace
	if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching pod %s/%s with its report: %w", namespace, pod, err)
	}
	return nil
}

// Self returns the pod name and namespace from the environment drover sets.
func Self() (namespace, pod string, err error) {
	namespace, pod = os.Getenv(EnvPodNamespace), os.Getenv(EnvPodName)
	if namespace == "" || pod == "" {
		return "", "", fmt.Errorf("%s and %s are not set: not in a drover replica pod (pass --namespace and --pod)", EnvPodNamespace, EnvPodName)
	}
	return namespace, pod, nil
}
