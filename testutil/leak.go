package testutil

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// LeakOptions are the goleak options for packages whose tests use rueidis
// against servers that the tests stop: after a failed reconnect, rueidis's
// (*call).DelayDo sleeps out its back-off (at most about a second) in a
// goroutine that Close does not interrupt. It ends by itself; it is the one
// third-party goroutine the leak checks ignore.
func LeakOptions() []goleak.Option {
	return []goleak.Option{goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1")}
}

// VerifyTestMain runs the package's tests and then checks that they left
// no goroutine running, as goleak.VerifyTestMain(m, LeakOptions()...)
// does, except that it gives goroutines that are still ending up to
// leakWait to end by themselves before it reports them. rueidis's cluster
// client closes the connections it dropped after a topology refresh from a
// goroutine that first sleeps 5s ((*clusterClient)._refresh), which Close
// does not interrupt; waiting for it, rather than ignoring it, still
// reports every goroutine that never ends.
//
//	func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(leakWait)
		for {
			err := goleak.Find(LeakOptions()...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goleak: errors on successful test run (after waiting %s): %v\n", leakWait, err)
				code = 1
				break
			}
			time.Sleep(leakPoll)
		}
	}
	os.Exit(code)
}

// How long, and how often, VerifyTestMain looks again for goroutines that
// are still ending: longer than the cluster client's 5s.
const (
	leakWait = 7 * time.Second
	leakPoll = 100 * time.Millisecond
)
