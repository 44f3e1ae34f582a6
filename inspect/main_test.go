package inspect_test

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain checks for leaked goroutines: the fleet tests run schedulers
// on rueidis clients, whose reconnect back-off may outlive Close briefly
// (testutil.VerifyTestMain waits for it). The fleet tests, each on its own
// redis-server, run in parallel, up to four per CPU: they wait on
// schedules of a second or two far more than they compute
// (testutil.RaiseParallel).
func TestMain(m *testing.M) {
	testutil.MustRaiseParallel(4)
	testutil.VerifyTestMain(m)
}
