package inspect_test

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain checks for leaked goroutines: the fleet tests run schedulers
// on rueidis clients, whose reconnect back-off may outlive Close briefly
// (testutil.VerifyTestMain waits for it).
func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }
