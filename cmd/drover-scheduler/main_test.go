package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile and .ko.yaml build this command as the image expects: the
// builder's Go is go.mod's, the binary is static (no cgo anywhere in its
// imports, so ko's default build works too), the final stage is distroless
// and non-root with the binary as entrypoint (the chart passes only
// arguments).
func TestDockerfile(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	df, gomod, ko := read("../../Dockerfile"), read("../../go.mod"), read("../../.ko.yaml")
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(gomod)
	arg := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)$`).FindStringSubmatch(df)
	if goLine == nil || arg == nil || goLine[1] != arg[1] {
		t.Errorf("Dockerfile GO_VERSION %v, go.mod go line %v: want them equal", arg, goLine)
	}
	for _, want := range []string{
		"CGO_ENABLED=0", "./cmd/drover-scheduler",
		"FROM gcr.io/distroless/static-debian12:nonroot", "USER 65532:65532", `ENTRYPOINT ["/drover-scheduler"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	froms := regexp.MustCompile(`(?m)^FROM `).FindAllStringIndex(df, -1)
	if len(froms) != 2 {
		t.Errorf("%d FROM lines, want a build stage and a final stage", len(froms))
	}
	if !strings.Contains(ko, "main: ./cmd/drover-scheduler") || !strings.Contains(ko, "defaultBaseImage: gcr.io/distroless/static-debian12:nonroot") {
		t.Errorf(".ko.yaml does not build ./cmd/drover-scheduler on the Dockerfile's base")
	}
	if testing.Short() {
		return
	}
	// With cgo off (as the Dockerfile and ko build), every package of the
	// binary still resolves: none needs cgo. (Building it here would
	// recompile every package that imports net, minutes on a cold cache;
	// `CGO_ENABLED=0 go build ./cmd/drover-scheduler` gives a static binary.)
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("with CGO_ENABLED=0 these packages of drover-scheduler do not build:\n%s", s)
	}
}
