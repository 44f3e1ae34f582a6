package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// exampleFleet is an in-memory store at 12:00:01.250 UTC on a fake clock,
// where replica-a and replica-b registered report (every 5s) and replica-a
// also tick (every second), as their schedulers would. In production the
// store is a lease/redislease Store on the fleet's Redis and key prefix.
func exampleFleet() (*memory.Store, *clockwork.FakeClock) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 0, 1, 250_000_000, time.UTC))
	store, err := memory.New(memory.WithClock(clock))
	if err != nil {
		panic(err)
	}
	report := fleet.Job{Name: "report", Key: "job:report", Schedule: `cron("*/5 * * * * *")`, Spec: "cron:UTC:*/5 * * * * *", Fingerprint: "r1"}
	tick := fleet.Job{Name: "tick", Key: "job:tick", Schedule: "every(1s)", Spec: "every:1000000000+0", Fingerprint: "t1"}
	for id, jobs := range map[string][]fleet.Job{"replica-a": {report, tick}, "replica-b": {report}} {
		r := fleet.Replica{ID: id, Version: "v1.0.0", Started: clock.Now(), Refresh: 5 * time.Second, Jobs: jobs}
		if _, err := store.PublishReplica(ctx, r, 15*time.Second); err != nil {
			panic(err)
		}
	}
	return store, clock
}

// quietLogger logs the Inspector's commands to stdout without their
// timestamps and random lease forms, so that examples print them as they
// are.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "lease_hash" {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func ExampleInspector_Jobs() {
	ctx := context.Background()
	store, clock := exampleFleet()
	// replica-b runs report's 12:00:00 occurrence, with a 30s lease.
	occ := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := store.Acquire(ctx, "job:report", 30*time.Second, lease.WithOwner("replica-b/report"), lease.WithRoundTime(occ, time.Second)); err != nil {
		panic(err)
	}
	clock.Advance(2 * time.Second)

	in, err := inspect.New(store)
	if err != nil {
		panic(err)
	}
	jobs, err := in.Jobs(ctx)
	if err != nil {
		panic(err)
	}
	for _, j := range jobs {
		fmt.Printf("%s %s on %v, next %s\n", j.Name, j.Schedule, j.Replicas(), j.Next.Format(time.TimeOnly))
		if h := j.Holder; h != nil {
			fmt.Printf("  running on %s, %s left on its lease; occurrence %s\n", h.Replica, h.Left, j.LastOccurrence.Format(time.TimeOnly))
		}
	}
	// Output:
	// report cron("*/5 * * * * *") on [replica-a replica-b], next 12:00:05
	//   running on replica-b, 28s left on its lease; occurrence 12:00:00
	// tick every(1s) on [replica-a], next 12:00:04
}

func ExampleInspector_Job() {
	ctx := context.Background()
	store, _ := exampleFleet()
	in, err := inspect.New(store)
	if err != nil {
		panic(err)
	}
	_, err = in.Job(ctx, "nightly")
	fmt.Println(errors.Is(err, inspect.ErrUnknownJob))
	fmt.Println(err)
	// Output:
	// true
	// inspect: unknown job: job "nightly": no live replica has registered it (2 live replicas)
}

// A paused job's scheduled acquires are refused on every replica until it
// is resumed; the occurrences in between do not run later.
func ExampleInspector_Pause() {
	ctx := context.Background()
	store, clock := exampleFleet()
	in, err := inspect.New(store, inspect.WithLogger(quietLogger()))
	if err != nil {
		panic(err)
	}
	if err := in.Pause(ctx, "report", "alice", "warehouse migration"); err != nil {
		panic(err)
	}
	occ := time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)
	clock.Advance(4 * time.Second)
	_, err = store.Acquire(ctx, "job:report", 30*time.Second, lease.WithRoundTime(occ, time.Second), lease.WithPauseCheck())
	fmt.Println("12:00:05 occurrence:", err)

	was, err := in.Resume(ctx, "report")
	if err != nil {
		panic(err)
	}
	fmt.Println("was paused:", was)
	// Output:
	// level=INFO msg="job paused fleet-wide" job=report by=alice note="warehouse migration"
	// 12:00:05 occurrence: memory: acquire: lease: paused
	// level=INFO msg="job resumed" job=report
	// was paused: true
}

// A trigger waits in the queue until a replica that has the job takes it
// with its next acquire (the scheduler does so when the control channel
// announces it); the run claims no occurrence.
func ExampleInspector_Trigger() {
	ctx := context.Background()
	store, _ := exampleFleet()
	in, err := inspect.New(store, inspect.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	res, err := in.Trigger(ctx, "report", "alice", inspect.WithTTL(10*time.Minute))
	if err != nil {
		panic(err)
	}
	fmt.Println("queued by", res.Trigger.By, "until", res.Trigger.Expires.Format(time.TimeOnly))

	// A replica's trigger acquire (what the scheduler does on hearing it).
	l, err := store.Acquire(ctx, "job:report", 30*time.Second, lease.WithOwner("replica-a/report"), lease.WithTrigger())
	if err != nil {
		panic(err)
	}
	fmt.Println("taken:", l.Trigger == res.Trigger.ID)
	// Output:
	// queued by alice until 12:10:01
	// taken: true
}

// Force-releasing is for a holder known to be dead: the holder is not
// stopped, so it is safe only for fenced jobs. It is logged with who asked.
func ExampleInspector_ForceRelease() {
	ctx := context.Background()
	store, _ := exampleFleet()
	l, err := store.Acquire(ctx, "job:report", time.Hour, lease.WithOwner("replica-b/report"))
	if err != nil {
		panic(err)
	}
	in, err := inspect.New(store, inspect.WithLogger(quietLogger()))
	if err != nil {
		panic(err)
	}
	info, err := in.ForceRelease(ctx, "report", "alice")
	if err != nil {
		panic(err)
	}
	fmt.Println("released the lease of", info.Owner, "with fence", info.Fence == l.Fence)
	_, err = in.ForceRelease(ctx, "report", "alice")
	fmt.Println("again:", errors.Is(err, inspect.ErrNotHeld))
	// Output:
	// level=WARN msg="job lease force-released by an operator; its holder may still be running, and only fenced writes are safe from it" job=report by=alice owner=replica-b/report fence=177236640125000
	// released the lease of replica-b/report with fence true
	// again: true
}

// New takes the fleet's store: in production a lease/redislease Store on the
// fleet's Redis, with the key prefix its replicas use.
func ExampleNew() {
	ctx := context.Background()
	store, _ := exampleFleet()
	in, err := inspect.New(store, inspect.WithConcurrency(8))
	if err != nil {
		panic(err)
	}
	replicas, err := in.Replicas(ctx)
	if err != nil {
		panic(err)
	}
	for _, r := range replicas {
		fmt.Println(r.ID, r.Version, len(r.Jobs), "jobs, entry expires", r.Expires.UTC().Format(time.TimeOnly))
	}
	// Output:
	// replica-a v1.0.0 2 jobs, entry expires 12:00:16
	// replica-b v1.0.0 1 jobs, entry expires 12:00:16
}
