package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func Example() {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		panic(err)
	}

	l, err := store.Acquire(ctx, "reports/daily", 30*time.Second, lease.WithOwner("worker-1"))
	if err != nil {
		panic(err)
	}
	fmt.Println("acquired", l.Key, "owned by", l.Owner)
	first := l.Fence

	_, err = store.Acquire(ctx, "reports/daily", 30*time.Second)
	fmt.Println("second acquire locked:", errors.Is(err, lease.ErrLocked))

	if err := l.Release(ctx); err != nil {
		panic(err)
	}
	err = l.Release(ctx)
	var nh *lease.NotHeldError
	if errors.As(err, &nh) {
		fmt.Println("second release:", nh.Reason)
	}

	l, err = store.Acquire(ctx, "reports/daily", 30*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("re-acquired with a greater fence:", l.Fence > first)
	// Output:
	// acquired reports/daily owned by worker-1
	// second acquire locked: true
	// second release: not found
	// re-acquired with a greater fence: true
}

func ExampleLock() {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	holder, err := store.Acquire(ctx, "reports/daily", 30*time.Second)
	if err != nil {
		panic(err)
	}

	// Lock retries while the key is locked. Give up after a short wait.
	_, err = lease.Lock(ctx, store, "reports/daily", 30*time.Second, lease.WithMaxWait(200*time.Millisecond))
	fmt.Println("timed out:", errors.Is(err, lease.ErrAcquireTimeout), "locked:", errors.Is(err, lease.ErrLocked))

	// Once the holder releases, Lock gets the lease at its next attempt.
	time.AfterFunc(50*time.Millisecond, func() { _ = holder.Release(context.Background()) })
	l, err := lease.Lock(ctx, store, "reports/daily", 30*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("acquired with a greater fence:", l.Fence > holder.Fence)
	// Output:
	// timed out: true locked: true
	// acquired with a greater fence: true
}

func ExampleWithRoundTime() {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	// Every replica computes the same occurrence; only the first claims it.
	occurrence := time.Now().Truncate(time.Minute)
	for _, replica := range []string{"a", "b"} {
		l, err := store.Acquire(ctx, "jobs/sync", 10*time.Second,
			lease.WithRoundTime(occurrence, 5*time.Second), lease.WithOwner(replica))
		switch {
		case err == nil:
			fmt.Println(replica, "runs the occurrence")
			_ = l.Release(ctx)
		case errors.Is(err, lease.ErrRoundClaimed):
			fmt.Println(replica, "skips: round already claimed")
		default:
			fmt.Println(replica, "error:", err)
		}
	}
	// Output:
	// a runs the occurrence
	// b skips: round already claimed
}

func ExampleSemaphore() {
	ctx := context.Background()
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	// At most two exports at a time, across every process sharing the store.
	exports, err := lease.NewSemaphore(store, "exports", 2)
	if err != nil {
		panic(err)
	}
	a, err := exports.TryAcquire(ctx, 30*time.Second)
	if err != nil {
		panic(err)
	}
	b, err := exports.TryAcquire(ctx, 30*time.Second)
	if err != nil {
		panic(err)
	}
	_, err = exports.TryAcquire(ctx, 30*time.Second)
	fmt.Println("third holder locked out:", errors.Is(err, lease.ErrLocked))

	// A waiter gets the slot the moment a holder releases it.
	go func() { _ = a.Release(ctx) }()
	c, err := exports.Acquire(ctx, 30*time.Second, lease.WithMaxWait(time.Minute))
	if err != nil {
		panic(err)
	}
	fmt.Println("fences grow:", c.Fence > b.Fence && b.Fence > a.Fence)
	held, _ := exports.Held(ctx)
	fmt.Println("holders:", held)
	// Output:
	// third holder locked out: true
	// fences grow: true
	// holders: 2
}
