package heartbeat_test

import (
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/heartbeat"
)

// BenchmarkStart_StopBeforeFirstRenewal measures what a heartbeat costs a
// run that ends before its first renewal is due, as most runs do.
func BenchmarkStart_StopBeforeFirstRenewal(b *testing.B) {
	store := newFakeStore(clockwork.NewRealClock())
	l := acquire(b, store, "job", ttl)
	b.ReportAllocs()
	for b.Loop() {
		_, stop, err := heartbeat.Start(b.Context(), store, l, heartbeat.WithLogger(discard))
		if err != nil {
			b.Fatal(err)
		}
		if err := stop(); err != nil {
			b.Fatal(err)
		}
	}
}
