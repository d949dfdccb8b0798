package apply

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// fullStatus is a status with every field set, nested ones too (one
// element per slice and map, every pointer set).
func fullStatus() *v1alpha1.TrainingJobStatus {
	at := func(s int) *metav1.Time { t := metav1.NewTime(t0.Add(time.Duration(s) * time.Second)); return &t }
	pos, metric := int32(3), 0.5
	return &v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Reason: "r", Placement: []v1alpha1.Assignment{{Group: "worker", Node: "n", Count: 2}},
		Attempt: 1, Migrating: true, RequeuedAt: at(1), Replicas: []v1alpha1.GroupStatus{{Name: "worker", Desired: 2, Running: 1}},
		ReplicaSummary: "1/2", ProgressSummary: "50%", QueuePosition: &pos, ProgressCategory: "PC",
		Progress: &v1alpha1.ProgressStatus{Fraction: 0.5, Metric: &metric, Checkpoint: "c", CheckpointFraction: 0.25, ReportedAt: v1alpha1.NewReportTime(t0)},
		Evals:    []v1alpha1.EvalSample{{Time: v1alpha1.NewReportTime(t0), Value: 1}}, Preemptions: 1, Migrations: 2, Resizes: 3,
		StartTime: at(2), CompletionTime: at(3), PolicyLabels: map[string]string{"k": "v"}, Tenant: "t",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: *at(4), Reason: "R", Message: "m"}}}
}

// leaves calls f with the path and value of every settable leaf reachable
// from v (through pointers, the first element of slices, struct fields,
// the values of maps are changed as a whole).
func leaves(path string, v reflect.Value, f func(string, reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			leaves(path, v.Elem(), f)
		}
		f(path+"(nil)", v)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			f(path, v)
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				leaves(path+"."+v.Type().Field(i).Name, v.Field(i), f)
			}
		}
	case reflect.Slice:
		if v.Len() > 0 {
			leaves(path+"[0]", v.Index(0), f)
		}
		f(path+"(len)", v)
	default:
		f(path, v)
	}
}

// change makes the leaf v differ from what it was.
func change(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map:
		v.Set(reflect.Zero(v.Type()))
	case reflect.Slice:
		v.Set(v.Slice(0, 0))
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Struct: // time.Time
		v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Second)))
	default:
		panic(fmt.Sprintf("no change for %v", v.Kind()))
	}
}

// TestStatusEqualIsSemantic: StatusEqual answers as Semantic.DeepEqual
// when any one field of a full status changes, nested fields included, so
// a field added to the status and not compared fails here; and for what
// Semantic takes as equal though the values differ (an empty slice for a
// nil one, a time in another zone).
func TestStatusEqualIsSemantic(t *testing.T) {
	var paths []string
	leaves("Status", reflect.ValueOf(fullStatus()).Elem(), func(p string, _ reflect.Value) { paths = append(paths, p) })
	if len(paths) < 40 {
		t.Fatalf("only %d leaves of the status; the walk is wrong", len(paths))
	}
	for i, p := range paths {
		a, b := fullStatus(), fullStatus()
		k := 0
		leaves("Status", reflect.ValueOf(b).Elem(), func(_ string, v reflect.Value) {
			if k == i {
				change(v)
			}
			k++
		})
		want := Semantic.DeepEqual(a, b)
		if want {
			t.Errorf("%s: changing it leaves Semantic equal; the test's change is no change", p)
		}
		if got := StatusEqual(a, b); got != want {
			t.Errorf("%s changed: StatusEqual = %v, Semantic.DeepEqual = %v", p, got, want)
		}
	}
	// Equal to Semantic, though not identical.
	a, b := fullStatus(), fullStatus()
	b.Placement, a.Placement = []v1alpha1.Assignment{}, nil
	b.PolicyLabels, a.PolicyLabels = map[string]string{}, nil
	b.StartTime = &metav1.Time{Time: a.StartTime.In(time.FixedZone("x", 3600))}
	b.Progress.ReportedAt = v1alpha1.NewReportTime(a.Progress.ReportedAt.In(time.FixedZone("y", -3600)))
	if !Semantic.DeepEqual(a, b) || !StatusEqual(a, b) {
		t.Errorf("nil vs empty, zones: Semantic %v, StatusEqual %v; want both true", Semantic.DeepEqual(a, b), StatusEqual(a, b))
	}
	if !StatusEqual(&v1alpha1.TrainingJobStatus{}, &v1alpha1.TrainingJobStatus{}) {
		t.Error("two empty statuses differ")
	}
}
