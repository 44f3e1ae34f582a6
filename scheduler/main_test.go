package scheduler

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// serverTests selects this package's tests that start a server (a Redis,
// or Valkey): ./scripts/test runs them again on Valkey with -run
// serverTests, and testutil fails one whose name does not match.
const serverTests = "Redis"

// TestMain leaves go test's -parallel at its default (GOMAXPROCS): the
// parallel tests are the tests on a real redis-server, all but
// TestScheduler_BufferOne_RunsBackToBackAcrossReplicasOnRedis (see there),
// and several bound on the real clock how soon the scheduler acts (a
// resume within the TTL plus 2s, TestScheduler_Completion_RealRedisResumes).
// Four per CPU (testutil.RaiseParallel) beside the Redis store's parallel
// tests and a busy core took that resume to 4.41s once, in the suite's
// Valkey step. The tests that compute (the synctest bubbles) are serial,
// and run before them.
func TestMain(m *testing.M) {
	testutil.SelectServerTests(serverTests)
	testutil.VerifyTestMain(m)
}
