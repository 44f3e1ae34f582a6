package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// Start keeps a lease alive while work runs under the returned context;
// stop ends the renewals and says whether the lease was lost.
func ExampleStart() {
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	l, err := store.Acquire(context.Background(), "reports/daily", 30*time.Second)
	if err != nil {
		panic(err)
	}

	ctx, stop, err := heartbeat.Start(context.Background(), store, l)
	if err != nil {
		panic(err)
	}
	work := func(ctx context.Context) error { return ctx.Err() } // must stop when ctx is done
	fmt.Println("work:", work(ctx))

	if err := stop(); err != nil {
		fmt.Println("lease lost while working:", err)
	}
	fmt.Println("ctx:", context.Cause(ctx))

	// Release with a fresh, bounded context: ctx is done by now.
	rctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println("release:", l.Release(rctx))
	// Output:
	// work: <nil>
	// ctx: heartbeat: stopped
	// release: <nil>
}

// A lease released behind the holder's back ends the holder's context at
// the next renewal, with ErrLeaseLost as the cause. A fake clock drives time.
func ExampleStart_lost() {
	clock := clockwork.NewFakeClock()
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		panic(err)
	}
	l, err := store.Acquire(context.Background(), "reports/daily", 30*time.Second)
	if err != nil {
		panic(err)
	}
	ctx, stop, err := heartbeat.Start(context.Background(), store, l, heartbeat.WithClock(clock),
		heartbeat.WithLogger(slog.New(slog.DiscardHandler))) // a loss is logged at Error otherwise
	if err != nil {
		panic(err)
	}
	defer stop()

	// Someone else holding the ID releases the lease.
	if err := store.Release(context.Background(), l.ID); err != nil {
		panic(err)
	}
	_ = clock.BlockUntilContext(context.Background(), 1) // the heartbeat waits for its first renewal
	clock.Advance(10 * time.Second)                      // the next renewal (every TTL/3)
	<-ctx.Done()

	cause := context.Cause(ctx)
	fmt.Println("lost:", errors.Is(cause, heartbeat.ErrLeaseLost))
	fmt.Println("store said not held:", errors.Is(cause, lease.ErrNotHeld))
	// Output:
	// lost: true
	// store said not held: true
}
