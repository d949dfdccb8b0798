package plugins

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// PolicyDirs are the packages whose code decides (plugins, the framework
// and the queue that run them), relative to pkg/.
var policyDirs = []string{"autoscale", "baseline", "drover", "elastic", "fitgpp", "framework", "oasis", "placement",
	"profile", "scheduler", "specon", "tiresias"}

// oracleFields are the selectors that read a job's true run time: the
// simulator's ground truth, which a production scheduler does not have
// (docs/scoreboard-plan.md, "Run-time estimates"). A policy reads
// Job.EstimatedWork, JobState.EstimatedRemaining, EstimatedTimeLeft and
// Attained instead.
var oracleFields = []string{"Work", "WorkLeft", "Remaining", "TimeLeft"}

// oracleAllowed lists the reads of oracleFields the policy packages may
// keep, as "dir/file.go Func.Selector", each with its reason.
var oracleAllowed = map[string]string{
	"specon/models.go NewJob.Work":      "builds a workload job from a SpeCon model (the model's Work, not a cluster.Job's): a workload generator, not a decision",
	"tiresias/tiresias.go StateOf.Work": "the bound a work-done label is parsed within (a label is never trusted beyond the job's work): it decides nothing",
}

// TestNoOracle fails when a policy package reads a job's true run time
// (Job.Work, JobState.WorkLeft, Remaining or TimeLeft) outside
// oracleAllowed, so no plugin can silently use the simulator's oracle:
// plugins see estimates, the executor runs the truth. The scan is
// syntactic (any selector of those names in non-test code).
func TestNoOracle(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range policyDirs {
		root := filepath.Join("..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", path)
			for _, decl := range f.Decls {
				name := "<decl>"
				if fd, ok := decl.(*ast.FuncDecl); ok {
					name = fd.Name.Name
				}
				ast.Inspect(decl, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok || !slices.Contains(oracleFields, sel.Sel.Name) {
						return true
					}
					key := fmt.Sprintf("%s %s.%s", filepath.ToSlash(rel), name, sel.Sel.Name)
					seen[key] = true
					if _, ok := oracleAllowed[key]; !ok {
						t.Errorf("%s: %s reads .%s, the true run time: read the estimate (Job.EstimatedWork, JobState.EstimatedRemaining, EstimatedTimeLeft, Attained) or add %q to oracleAllowed with a reason",
							fset.Position(sel.Pos()), name, sel.Sel.Name, key)
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for key := range oracleAllowed {
		if !seen[key] {
			t.Errorf("oracleAllowed has %q, which no longer occurs: remove it", key)
		}
	}
}
