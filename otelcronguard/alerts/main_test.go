package alerts

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }
