package completion

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain runs the tests, or, in a process the tests started again with
// childEnv set, one replica (runChild).
func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(runChild(cfg))
	}
	goleak.VerifyTestMain(m, testutil.LeakOptions()...)
}
