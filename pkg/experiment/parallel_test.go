package experiment

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParallelKeepsIndexOrder(t *testing.T) {
	for _, workers := range []int{1, 2, 7} {
		env := &Env{Workers: workers}
		got, err := Parallel(context.Background(), env, "x", 20, func(_ context.Context, i int, _ func(int, int)) (int, error) {
			return i * i, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, 20)
		for i := range want {
			want[i] = i * i
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("workers=%d (-want +got):\n%s", workers, d)
		}
	}
}

// A serial run stops at the first failing index; in parallel the error
// returned is still that one, whichever finished first.
func TestParallelReturnsLowestError(t *testing.T) {
	for _, workers := range []int{1, 3} {
		env := &Env{Workers: workers}
		_, err := Parallel(context.Background(), env, "x", 10, func(_ context.Context, i int, _ func(int, int)) (int, error) {
			if i == 2 || i == 3 {
				return 0, fmt.Errorf("task %d", i)
			}
			return i, nil
		})
		if err == nil || err.Error() != "task 2" {
			t.Errorf("workers=%d: error %v, want task 2", workers, err)
		}
	}
}

// Progress calls are serialised (run with -race) and end at the total,
// with a label counting finished runs.
func TestParallelProgress(t *testing.T) {
	var calls int
	var last [2]int
	var label string
	env := &Env{Workers: 3, Progress: func(l string, done, total int) {
		calls++ // unsynchronised on purpose: -race fails if calls overlap
		last, label = [2]int{done, total}, l
	}}
	_, err := Parallel(context.Background(), env, "sweep", 6, func(_ context.Context, i int, report func(int, int)) (int, error) {
		for k := range 5 {
			report(k, 5)
		}
		return i, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != [2]int{6 * progressScale, 6 * progressScale} || label != "sweep (6/6 runs)" {
		t.Errorf("calls %d, last %v %q; want the total 6/6", calls, last, label)
	}
	if _, err := Parallel(context.Background(), &Env{}, "none", 0, func(context.Context, int, func(int, int)) (int, error) {
		return 0, errors.New("never called")
	}); err != nil {
		t.Errorf("no tasks: %v", err)
	}
}
