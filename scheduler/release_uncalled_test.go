package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// triggerDeafStore is an in-process store whose subscribers never hear of
// a trigger (a replica that subscribed after it was queued, or whose
// subscription lost the message): a trigger reaches the replicas only
// through the store.
type triggerDeafStore struct{ *memory.Store }

func (s triggerDeafStore) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	return s.Store.Subscribe(ctx, func(m fleet.Message) {
		if m.Kind != fleet.MessageTrigger {
			fn(m)
		}
	})
}

// holdTheOnlySlot takes the only slot of the concurrency limit "shared"
// (WithConcurrencyLimit("shared", 1)) for an hour, as a run elsewhere would.
func holdTheOnlySlot(t *testing.T, store lease.Store) *lease.Lease {
	t.Helper()
	sem, err := lease.NewSemaphore(store, JobKeyPrefix+"shared", 1)
	require.NoError(t, err)
	slot, err := sem.Acquire(t.Context(), time.Hour)
	require.NoError(t, err)
	return slot
}

// A trigger queued while the job's run waits for a slot of its concurrency
// limit, and heard of by no replica, runs as soon as that run gives up and
// releases the job's lease: the release tells the replica that held it
// that a trigger waits, as a run's release does. Without that, no replica
// looks for the trigger again (those that found the job locked ask again
// only when its lease runs out, and a job whose runs wait for a slot holds
// its lease almost all the time), and it lapsed: seed 334 of the
// simulator.
func TestScheduler_Trigger_TakenWhenARunSkippedForItsLimitReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := triggerDeafStore{newMemoryStore(t, nil)}
		slot := holdTheOnlySlot(t, store)

		time.Sleep(5 * time.Second) // off the 10s grid: the first occurrence comes after Start
		var rs runStarts
		skipped := make(chan time.Time, 4)
		s := newScheduler(t, store, WithInstanceID("a"), WithObserver(func(e Event) {
			if e.Kind == EventSkipped && e.Reason == SkipConcurrencyLimit {
				skipped <- time.Now()
			}
		}))
		require.NoError(t, s.Register("report", Every(10*time.Second), func(ctx context.Context) error {
			rs.record(ctx)
			return nil
		}, WithConcurrencyLimit("shared", 1), WithTTL(30*time.Second)))
		require.NoError(t, s.Start())

		first := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		time.Sleep(time.Until(first) + time.Second) // its run waits for the slot
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		at := <-skipped // no slot before the next occurrence: skipped, and released
		require.NoError(t, slot.Release(t.Context()))
		time.Sleep(time.Until(first.Add(10*time.Second)) - time.Millisecond)
		shutdown(t, s)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger ran before the job's next occurrence")
		assert.True(t, runs[0].trigger)
		assert.Less(t, runs[0].at.Sub(at), BackupGrace/2, "claimed at once after the release")
	})
}

// The same release on a replica that shuts down hands the trigger on: a's
// run waits for the slot when a trigger is queued that a never hears of; b,
// started after it, found the job locked and would ask again only when a's
// lease ran out. a shuts down, its run gives up, and b runs the trigger
// before the job's next occurrence.
func TestScheduler_Trigger_HandedOnWhenARunWaitingForASlotStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemoryStore(t, nil)
		slot := holdTheOnlySlot(t, mem)

		time.Sleep(5 * time.Second) // off the 10s grid
		var rs runStarts
		register := func(s *Scheduler) {
			require.NoError(t, s.Register("report", Every(10*time.Second), func(ctx context.Context) error {
				rs.record(ctx)
				return nil
			}, WithConcurrencyLimit("shared", 1), WithTTL(30*time.Second)))
			require.NoError(t, s.Start())
		}
		a := newScheduler(t, triggerDeafStore{mem}, WithInstanceID("a"))
		register(a)
		first := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		time.Sleep(time.Until(first) + time.Second) // a's run waits for the slot
		_, err := mem.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		b := newScheduler(t, mem, WithInstanceID("b"))
		register(b) // finds the trigger, and the job locked by a
		synctest.Wait()

		shutdown(t, a)
		require.NoError(t, slot.Release(t.Context()))
		time.Sleep(time.Until(first.Add(10*time.Second)) - time.Millisecond)
		shutdown(t, b)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger ran before the job's next occurrence")
		assert.True(t, runs[0].trigger)
		assert.Equal(t, "b", runs[0].replica)
	})
}

// An attempt that got no slot of its job's concurrency limit did not run
// the job: its occurrence stays open, and is attempted again, or given up
// past its deadline, at the next read of the fleet's index, not when the
// attempt's lease would have expired. Its release carries no status, so
// its index entry stayed due at that expiry: a resumed attempt whose wait
// for a slot ended at the occurrence's deadline, soon after it started,
// left the occurrence open for up to a TTL past its deadline before it was
// given up (the simulator's seed 4969 of the long mode from 4952).
func TestScheduler_Limit_AnAttemptWithoutASlotIsGivenUpAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		holdTheOnlySlot(t, store)
		time.Sleep(30 * time.Second)
		var ev events
		var givenAt time.Time
		s := newScheduler(t, store, WithInstanceID("a"), WithObserver(func(e Event) {
			if e.Kind == EventGivenUp {
				givenAt = time.Now() // the bubble's clock; read after shutdown
			}
			ev.observe(e)
		}))
		require.NoError(t, s.Register("report", Every(time.Hour), nop, WithConcurrencyLimit("shared", 1), WithTTL(10*time.Second),
			WithCatchUp(time.Minute), WithAttemptWindow(62*time.Second))) // the first attempt waits for a slot until occ + 1m
		occ := time.Now().Truncate(time.Hour) // 30s ago: caught up at Start
		require.NoError(t, s.Start())
		time.Sleep(time.Until(occ.Add(90 * time.Second)))
		shutdown(t, s)

		skips := 0
		for _, e := range ev.of(EventSkipped) {
			if e.Reason == SkipConcurrencyLimit {
				skips++
			}
		}
		assert.Equal(t, 2, skips, "two attempts, each without a slot")
		given := ev.of(EventGivenUp)
		require.Len(t, given, 1)
		deadline := occ.Add(62 * time.Second)
		assert.Less(t, givenAt.Sub(deadline), 2*resumePoll, "given up at the next read of the index after its deadline, %s after it", givenAt.Sub(deadline))
	})
}
