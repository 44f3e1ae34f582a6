package console_test

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain checks for leaked goroutines: the fleets' rueidis clients, the
// schedulers and the browsers are all stopped by then.
func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }
