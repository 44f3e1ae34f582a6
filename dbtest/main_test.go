package dbtest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testutil.LeakOptions()...)
}
