package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

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
