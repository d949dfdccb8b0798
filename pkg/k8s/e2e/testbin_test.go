package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// testbinDir is where a hack/testbin script caches a real part: the
// directory named by the environment variable env when it is set (to test
// against another build), else name under the scripts' cache root
// ($DROVER_TESTBIN_CACHE, default ~/.cache/drover/testbin, as
// hack/testbin/lib.sh has it). The name carries the part's version, as the
// script writes it.
func testbinDir(env, name string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	root := os.Getenv("DROVER_TESTBIN_CACHE")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".cache", "drover", "testbin")
	}
	return filepath.Join(root, name)
}

// skipUnlessCI skips a test whose real part (the training-operator, Kueue,
// Karpenter, Debian's PyTorch) is not installed on this machine, and fails
// it in CI (CI set, as .ci/run's callers set it): .ci/run builds every part
// before `make test`, so a part missing there is a broken build, and a
// silent skip would let the test it guards stop running unnoticed.
func skipUnlessCI(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI (.ci/run) builds this part before `make test`, so it must be there", msg)
	}
	t.Skip(msg)
}
