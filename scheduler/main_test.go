package scheduler

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// serverTests selects this package's tests that start a server (a Redis,
// or Valkey): ./scripts/test runs them again on Valkey with -run
// serverTests, and testutil fails one whose name does not match.
const serverTests = "Redis"

// TestMain lets four tests per CPU run at once (testutil.RaiseParallel),
// unless -parallel is given: the parallel tests are the tests on a real
// redis-server, which wait on it and on the real clock far more than they
// compute, and none of them bounds how soon the scheduler acts on that
// clock (their synctest twins assert the timing, on the bubble's clock).
// The tests that compute (the synctest bubbles) are serial, and run
// before them.
func TestMain(m *testing.M) {
	testutil.SelectServerTests(serverTests)
	testutil.MustRaiseParallel(4)
	testutil.VerifyTestMain(m)
}
