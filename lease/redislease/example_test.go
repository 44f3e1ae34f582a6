package redislease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
)

// Example takes a lease, extends it and gives it back. It needs a Redis
// server on 127.0.0.1:6379, so it is compiled but not run by go test.
func Example() {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{"127.0.0.1:6379"},
		DisableCache: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	store, err := redislease.New(client, redislease.WithPrefix("myapp"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := store.Acquire(ctx, "job:nightly-report", 30*time.Second, lease.WithOwner("worker-1"))
	switch {
	case errors.Is(err, lease.ErrLocked):
		fmt.Println("another replica holds the job")
		return
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println("fence", l.Fence, "trust until", l.Deadline)

	if _, err := l.Extend(ctx, 30*time.Second); err != nil {
		log.Print(err) // errors.Is(err, lease.ErrNotHeld): stop the work
	}

	// Release with a fresh, bounded context, even if ctx is done.
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		log.Print(err)
	}
}

// ExampleStore_Acquire_round claims one scheduled occurrence across
// replicas: the first replica to acquire the round runs it, the rest get
// lease.ErrRoundClaimed (or lease.ErrLocked while it runs).
func ExampleStore_Acquire_round() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}, DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store, err := redislease.New(client)
	if err != nil {
		log.Fatal(err)
	}
	occurrence := time.Date(2030, 1, 1, 3, 0, 0, 0, time.UTC)
	l, err := store.Acquire(context.Background(), "job:nightly-report", time.Minute,
		lease.WithRoundTime(occurrence, 5*time.Second))
	if errors.Is(err, lease.ErrRoundClaimed) || errors.Is(err, lease.ErrLocked) {
		return // another replica runs this occurrence
	}
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(context.Background())
	fmt.Println("running occurrence", occurrence, "with fence", l.Fence)
}
