package scheduler

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// serverTests selects this package's tests that start a server (a Redis,
// or Valkey): ./scripts/test runs them again on Valkey with -run
// serverTests, and testutil fails one whose name does not match.
const serverTests = "Redis"

func TestMain(m *testing.M) {
	testutil.SelectServerTests(serverTests)
	testutil.VerifyTestMain(m)
}
