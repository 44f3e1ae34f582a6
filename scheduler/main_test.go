package scheduler

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// serverTests selects this package's tests that start a server (a Redis,
// or Valkey): ./scripts/test runs them again on Valkey with -run
// serverTests, and testutil fails one whose name does not match.
const serverTests = "Redis"

// TestMain runs up to four parallel tests per CPU (testutil.RaiseParallel):
// the parallel ones are the tests on a real redis-server, which wait on
// the real clock for schedules of up to 10s, all but
// TestScheduler_BufferOne_RunsBackToBackAcrossReplicasOnRedis (see there).
// The tests that compute (the synctest bubbles) are serial, and run before
// them.
func TestMain(m *testing.M) {
	testutil.SelectServerTests(serverTests)
	testutil.MustRaiseParallel(4)
	testutil.VerifyTestMain(m)
}
