package crd

import (
	"os"
	"strings"
	"testing"
)

// The embedded manifests are the TrainingJob CRD, written out whole.
func TestWriteTo(t *testing.T) {
	dir := t.TempDir()
	paths, err := WriteTo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 || !strings.HasSuffix(paths[0], "drover.dev_trainingjobs.yaml") {
		t.Fatalf("paths %v", paths)
	}
	got, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("drover.dev_trainingjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || !strings.Contains(string(got), "name: trainingjobs.drover.dev") {
		t.Errorf("written CRD differs from config/crd/drover.dev_trainingjobs.yaml (%d vs %d bytes)", len(got), len(want))
	}
}
