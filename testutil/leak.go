package testutil

import "go.uber.org/goleak"

// LeakOptions are the goleak options for packages whose tests use rueidis
// against servers that the tests stop: after a failed reconnect, rueidis's
// (*call).DelayDo sleeps out its back-off (at most about a second) in a
// goroutine that Close does not interrupt. It ends by itself; it is the one
// third-party goroutine the leak checks allow.
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testutil.LeakOptions()...) }
func LeakOptions() []goleak.Option {
	return []goleak.Option{goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1")}
}
