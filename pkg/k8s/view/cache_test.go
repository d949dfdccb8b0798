package view

import (
	"testing"
)

// The JobCache reuses a converted job until its spec generation (or model
// label) changes, and forgets jobs that are gone.
func TestJobCache(t *testing.T) {
	tj := testJob("a", t0, 1, "4", "1")
	tj.Generation = 1
	c := NewJobCache()
	o := Options{DefaultDuration: 3600, Jobs: c}
	j1, err := c.get(&tj, o)
	if err != nil {
		t.Fatal(err)
	}
	c.sweep()
	if j2, _ := c.get(&tj, o); j2 != j1 {
		t.Error("unchanged spec was converted again")
	}
	tj.Spec.Priority = 7
	tj.Generation = 2
	j3, _ := c.get(&tj, o)
	if j3 == j1 || j3.Priority != 7 {
		t.Errorf("changed spec not reconverted: priority %d", j3.Priority)
	}
	tj.Labels = map[string]string{"drover.dev/model": "vae"}
	if j4, _ := c.get(&tj, o); j4 == j3 || j4.Model != "vae" {
		t.Error("changed model label not reconverted")
	}
	c.sweep()
	c.sweep() // not seen since the last sweep
	if len(c.m) != 0 {
		t.Errorf("cache kept %d jobs that are gone", len(c.m))
	}
	other := testJob("b", t0, 1, "4", "1")
	other.UID = tj.UID // a UID reused by another job must not return a's job
	if jb, _ := c.get(&other, o); jb.ID != JobKey(&other) {
		t.Errorf("got job %s for %s", jb.ID, JobKey(&other))
	}
}
