package k8s

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/report"
	"github.com/drover-sched/drover/pkg/k8s/view"
)

// A report dated beyond the clock skew is not read, whether it comes from
// a pod the cycle lists or from the informer (ObserveReport), and a
// status.progress dated that far ahead is dropped with its checkpoint: a
// report from 2099 no longer pins the job's progress, and replacement
// pods do not resume from the checkpoint it named; and only pods the job
// controls are read (issue 17 item 3).
func TestFutureReportsIgnored(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	forged := report.Report{Progress: 1, Checkpoint: "s3://attacker/ckpt", CheckpointProgress: 1,
		Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
	real := report.Report{Progress: 0.3, Checkpoint: "s3://team/ckpt-3", CheckpointProgress: 0.3, Time: now.Add(-10 * time.Second)}
	skewed := report.Report{Progress: 0.4, Time: now.Add(30 * time.Second)}
	progress := func(r report.Report) *v1alpha1.ProgressStatus {
		return &v1alpha1.ProgressStatus{Fraction: r.Progress, Checkpoint: r.Checkpoint, CheckpointFraction: r.CheckpointProgress,
			ReportedAt: v1alpha1.NewReportTime(r.Time)}
	}
	cases := []struct {
		name     string
		pods     []report.Report // reports on the pods the cycle lists
		observed []report.Report // reports the informer delivered
		foreign  []report.Report // reports on pods with the job's label that it does not control
		status   *v1alpha1.ProgressStatus
		want     *v1alpha1.ProgressStatus
	}{
		{name: "a report from 2099 on a pod is ignored; the trainer's own is read",
			pods: []report.Report{forged, real}, want: progress(real)},
		{name: "a report from 2099 seen by the informer is ignored",
			observed: []report.Report{forged}, pods: []report.Report{real}, want: progress(real)},
		{name: "a report within the skew is read",
			pods: []report.Report{real, skewed}, want: &v1alpha1.ProgressStatus{Fraction: 0.4, ReportedAt: v1alpha1.NewReportTime(skewed.Time)}},
		{name: "a status pinned in 2099 is dropped with its checkpoint; the real report is read",
			status: progress(forged), pods: []report.Report{{Progress: 0.5, Time: now.Add(-time.Second)}},
			want: &v1alpha1.ProgressStatus{Fraction: 0.5, ReportedAt: v1alpha1.NewReportTime(now.Add(-time.Second))}},
		{name: "a status pinned in 2099 with no report left is dropped",
			status: progress(forged), pods: []report.Report{forged}, want: nil},
		{name: "a pod with the job's label that the job does not control is not read, from the cycle or the informer",
			pods: []report.Report{real}, foreign: []report.Report{skewed}, want: progress(real)},
		{name: "a status in the past is kept when no newer report is read",
			status: progress(real), pods: []report.Report{forged}, want: progress(real)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{}
			cfg.Defaults()
			e := New(cfg, nil, nil, nil, nil, logr.Discard())
			e.Now = func() time.Time { return now }
			tj := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
			jv := &view.Job{TJ: tj}
			pod := func(i int, r report.Report, owner types.UID) *corev1.Pod {
				b, err := report.Patch(r)
				if err != nil {
					t.Fatal(err)
				}
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("j-w-%d", i), Namespace: "ns",
					Labels:      map[string]string{v1alpha1.LabelJob: "j"},
					Annotations: map[string]string{v1alpha1.AnnotationReport: annotationValue(t, b)}}}
				if owner != "" {
					o := tj.DeepCopy()
					o.UID = owner
					p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(o, v1alpha1.GroupVersion.WithKind("TrainingJob"))}
				}
				return p
			}
			for i, r := range c.observed {
				e.ObserveReport(pod(i, r, tj.UID))
			}
			for i, r := range c.foreign {
				e.ObserveReport(pod(100+i, r, "uid-other"))
				e.ObserveReport(pod(200+i, r, ""))
				jv.Pods = append(jv.Pods, pod(100+i, r, "uid-other"), pod(200+i, r, ""))
			}
			for i, r := range c.pods {
				jv.Pods = append(jv.Pods, pod(i, r, tj.UID))
			}
			s := &v1alpha1.TrainingJobStatus{Progress: c.status.DeepCopy()}
			e.copyProgress(jv, s)
			if diff := cmp.Diff(c.want, s.Progress); diff != "" {
				t.Errorf("status.progress (-want +got):\n%s", diff)
			}
		})
	}
}

// annotationValue takes the report out of the merge patch report.Patch
// returns, so that the test writes exactly what trainers write.
func annotationValue(t *testing.T, patch []byte) string {
	t.Helper()
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	return p.Metadata.Annotations[v1alpha1.AnnotationReport]
}

// Statuses holding report times compare by instant, as metav1.Time does
// under equality.Semantic (which panics on a time.Time of its own).
func TestSemanticReportTime(t *testing.T) {
	at := time.Date(2026, 11, 23, 19, 55, 18, 668799116, time.UTC)
	status := func(t time.Time) *v1alpha1.TrainingJobStatus {
		return &v1alpha1.TrainingJobStatus{Evals: []v1alpha1.EvalSample{{Time: v1alpha1.NewReportTime(t), Value: 1}},
			Progress: &v1alpha1.ProgressStatus{Fraction: 0.5, ReportedAt: v1alpha1.NewReportTime(t)}}
	}
	for _, tc := range []struct {
		name string
		a, b time.Time
		want bool
	}{
		{"same instant", at, at, true},
		{"same instant, another zone", at, at.In(time.FixedZone("x", 3600)), true},
		{"a nanosecond apart", at, at.Add(time.Nanosecond), false},
	} {
		if got := apply.Semantic.DeepEqual(status(tc.a), status(tc.b)); got != tc.want {
			t.Errorf("%s: equal %v, want %v", tc.name, got, tc.want)
		}
	}
}
