package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// A fake clock drives expiry without sleeping.
func ExampleNew() {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		panic(err)
	}
	l, err := store.Acquire(ctx, "job", time.Second)
	if err != nil {
		panic(err)
	}

	clock.Advance(time.Second + lease.ExpiryTolerance)
	locked, _ := store.IsLocked(ctx, "job")
	fmt.Println("locked after TTL + tolerance:", locked)

	_, err = l.Extend(ctx, time.Second)
	var nh *lease.NotHeldError
	if errors.As(err, &nh) {
		fmt.Println("extend:", nh.Reason)
	}
	// Output:
	// locked after TTL + tolerance: false
	// extend: expired
}

// A trigger queued by an operator runs once, under the job's lease; the
// control channel tells the Store's subscribers about it.
func ExampleStore_AddTrigger() {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	heard := make(chan fleet.Message, 1)
	stop, err := store.Subscribe(ctx, func(m fleet.Message) { heard <- m })
	if err != nil {
		panic(err)
	}
	defer stop()

	tr, err := store.AddTrigger(ctx, "job:report", "ops/alice", time.Minute)
	if err != nil {
		panic(err)
	}
	m := <-heard
	fmt.Println("heard:", m.Kind, m.Key, m.Trigger == tr.ID)

	l, err := store.Acquire(ctx, m.Key, time.Minute, lease.WithTrigger())
	if err != nil {
		panic(err)
	}
	fmt.Println("runs trigger:", l.Trigger == tr.ID)
	waiting, err := store.ReleaseWithStatus(ctx, l, fleet.Status{Outcome: "succeeded", Trigger: l.Trigger})
	if err != nil {
		panic(err)
	}
	fmt.Println("triggers waiting:", waiting)
	_, err = store.Acquire(ctx, m.Key, time.Minute, lease.WithTrigger())
	fmt.Println("again:", errors.Is(err, lease.ErrNoTrigger))
	// Output:
	// heard: trigger job:report true
	// runs trigger: true
	// triggers waiting: 0
	// again: true
}

// A paused job's occurrences are refused by acquires that honour the
// pause, and recorded as handled.
func ExampleStore_SetPause() {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	if err := store.SetPause(ctx, "job:report", fleet.Pause{By: "ops/alice", Note: "incident 42"}); err != nil {
		panic(err)
	}
	_, err = store.Acquire(ctx, "job:report", time.Minute, lease.WithPauseCheck(), lease.WithRound(1))
	fmt.Println("paused:", errors.Is(err, lease.ErrPaused))

	if _, err := store.ClearPause(ctx, "job:report"); err != nil {
		panic(err)
	}
	_, err = store.Acquire(ctx, "job:report", time.Minute, lease.WithPauseCheck(), lease.WithRound(1))
	fmt.Println("round 1 after resume:", lease.Class(err))
	// Output:
	// paused: true
	// round 1 after resume: claimed
}
