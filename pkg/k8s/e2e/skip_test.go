package e2e

import (
	"fmt"
	"os"
	"testing"
)

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
