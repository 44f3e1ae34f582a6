package redislease

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cronguard/cronguard/lease"
)

// BenchmarkLockHandOff_TwentyWaiters measures hand-offs of a key among
// twenty waiting Locks (handOffRun): each iteration is 200 hand-offs, and
// each hand-off is measured from just before the holder's release is sent
// to the return of the acquire that won the key for the next waiter. At
// every release all twenty wait: the holder starts its next Lock (which
// finds the key held and sleeps) before it releases; Hold0 releases once
// that Lock sleeps, Hold100ms 100ms later. Notified: the Store as it is
// (lease.Notifier). Polling: the same Store with its Watch hidden, as a
// Store that cannot notify is waited for: each Lock polls with backoff
// (100ms doubling to 2s, ±50%), so a waiter that has waited long polls
// every 1-3s, one that just started every 50-150ms. Reports the median,
// 99th percentile (nearest rank) and longest hand-off over all
// iterations, in µs.
func BenchmarkLockHandOff_TwentyWaiters(b *testing.B) {
	_, st := benchServer(b)
	st.log = quietLogger()
	ctx := context.Background()
	const total, waiters = 200, 20
	for _, tc := range []struct {
		name     string
		notified bool
		hold     time.Duration
	}{
		{"Notified/Hold0", true, 0},
		{"Polling/Hold0", false, 0},
		{"Notified/Hold100ms", true, 100 * time.Millisecond},
		{"Polling/Hold100ms", false, 100 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := handOffRun{
				key: "job:handoff20", notified: tc.notified, total: total, waiters: waiters, hold: tc.hold,
				opts: []lease.LockOption{lease.WithMaxWait(time.Hour)},
			}
			var latencies []time.Duration
			for b.Loop() {
				log := r.run(ctx, b, st)
				if len(log) != total {
					b.Fatalf("%d hand-offs of %d", len(log), total)
				}
				for _, h := range log {
					latencies = append(latencies, h.latency)
				}
			}
			slices.Sort(latencies)
			n := len(latencies)
			b.ReportMetric(float64(latencies[n/2].Microseconds()), "handoff-p50-µs")
			b.ReportMetric(float64(latencies[(99*n+99)/100-1].Microseconds()), "handoff-p99-µs")
			b.ReportMetric(float64(latencies[n-1].Microseconds()), "handoff-max-µs")
		})
	}
}
