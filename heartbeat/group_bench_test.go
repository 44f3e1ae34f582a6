package heartbeat_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// The cost of a heartbeat for work that ends before its first renewal
// (most of a scheduler's runs): Start and Stop, with Start alone and with
// a Group, side by side in one run (go test -bench Heartbeat -count 5).
func BenchmarkHeartbeat_StopBeforeTheFirstRenewal(b *testing.B) {
	store, err := memory.New()
	require.NoError(b, err)
	l, err := store.Acquire(context.Background(), "job", time.Minute)
	require.NoError(b, err)
	opts := []heartbeat.Option{heartbeat.WithLogger(discard)}
	cycle := func(b *testing.B, start func(context.Context, lease.Store, *lease.Lease, ...heartbeat.Option) (context.Context, heartbeat.Stop, error)) {
		_, stop, err := start(context.Background(), store, l, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := stop(); err != nil {
			b.Fatal(err)
		}
	}
	g := heartbeat.NewGroup(lease.ClockOf(store))
	defer g.Close()
	for _, c := range []struct {
		name  string
		start func(context.Context, lease.Store, *lease.Lease, ...heartbeat.Option) (context.Context, heartbeat.Stop, error)
	}{{"start", heartbeat.Start}, {"group", g.Start}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cycle(b, c.start)
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					cycle(b, c.start)
				}
			})
		})
	}
}
