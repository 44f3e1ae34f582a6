package scheduler

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// Tests where a job's features meet: triggers, catch-up, pause, overlap,
// Remove and re-Register, Shutdown. Each drives one replica (or two) in a
// synctest bubble on the in-process store.

// startedRun is one run as its job saw it when it started.
type startedRun struct {
	replica    string
	occurrence time.Time
	trigger    bool
	catchUp    bool
	at         time.Time // when it started, in the bubble's time
}

// runStarts records the runs of a job as they start.
type runStarts struct {
	mu   sync.Mutex
	runs []startedRun
}

func (rs *runStarts) record(ctx context.Context) Run {
	r, _ := RunFromContext(ctx)
	rs.mu.Lock()
	rs.runs = append(rs.runs, startedRun{replica: r.Replica, occurrence: r.Occurrence, trigger: r.Trigger != "", catchUp: r.CatchUp, at: time.Now()})
	rs.mu.Unlock()
	return r
}

func (rs *runStarts) all() []startedRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.runs)
}

// A trigger that waits behind a run is handed on when that run's replica
// stops: a runs the job, a trigger is queued and b finds the job locked;
// a shuts down; b, live and idle, runs the trigger within its minute.
func TestScheduler_Trigger_HandedOnWhenTheRunningReplicaStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		job := func(ctx context.Context) error {
			if r := rs.record(ctx); r.Replica == "a" {
				<-ctx.Done()
			}
			return nil
		}
		time.Sleep(30 * time.Second) // off the hourly grid: only triggers run
		a := newScheduler(t, store, WithInstanceID("a"))
		require.NoError(t, a.Register("report", Every(time.Hour), job))
		require.NoError(t, a.Start())
		synctest.Wait()
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		synctest.Wait()
		require.Len(t, rs.all(), 1, "a runs the first trigger, and holds the job")

		b := newScheduler(t, store, WithInstanceID("b"))
		require.NoError(t, b.Register("report", Every(time.Hour), job))
		require.NoError(t, b.Start())
		synctest.Wait()
		_, err = store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		synctest.Wait() // b finds the job locked
		shutdown(t, a)
		time.Sleep(2 * time.Minute)

		runs := rs.all()
		require.Len(t, runs, 2, "the second trigger runs")
		assert.Equal(t, "b", runs[1].replica)
		assert.True(t, runs[1].trigger)
		assert.Less(t, runs[1].at.Sub(runs[0].at), time.Minute, "within the trigger's minute")
	})
}

// A trigger that arrives while a run outlives a later occurrence does not
// cancel the catch-up of that occurrence (WithCatchUp): at the run's end
// the missed occurrence is caught up, and the trigger runs after it.
func TestScheduler_Trigger_DoesNotCancelACatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		var n atomic.Int32
		job := func(ctx context.Context) error {
			rs.record(ctx)
			if n.Add(1) == 1 {
				time.Sleep(90 * time.Second) // 00:00:00 to 00:01:30: the 00:01 firing finds it running
			}
			return nil
		}
		s := newScheduler(t, store)
		require.NoError(t, s.Register("report", Every(time.Minute), job, WithCatchUp(time.Hour), WithTTL(10*time.Second)))
		start := time.Now()
		require.NoError(t, s.Start())
		time.Sleep(45 * time.Second) // the first run going
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		time.Sleep(60 * time.Second) // 00:01:45
		shutdown(t, s)

		runs := rs.all()
		require.GreaterOrEqual(t, len(runs), 3, "the first run, the catch-up and the trigger")
		assert.Equal(t, start.UnixMilli(), runs[0].occurrence.UnixMilli())
		assert.Equal(t, start.Add(time.Minute).UnixMilli(), runs[1].occurrence.UnixMilli(), "the occurrence the first run outlived is caught up")
		assert.True(t, runs[1].catchUp)
		assert.True(t, runs[2].trigger, "the trigger runs after the catch-up")
		assert.True(t, runs[2].occurrence.After(runs[1].occurrence))
	})
}

// A trigger queued before a pause does not run while the job is paused:
// no run starts until the job is resumed.
func TestScheduler_Trigger_QueuedBeforeAPauseWaitsForTheResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		hold := make(chan struct{})
		job := func(ctx context.Context) error {
			if rs.record(ctx); len(rs.all()) == 1 {
				<-hold
			}
			return nil
		}
		time.Sleep(30 * time.Second) // off the hourly grid: only triggers run
		s := newScheduler(t, store)
		require.NoError(t, s.Register("report", Every(time.Hour), job))
		require.NoError(t, s.Start())
		synctest.Wait()
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		synctest.Wait()
		require.Len(t, rs.all(), 1, "the first trigger runs")
		_, err = store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		synctest.Wait() // the second waits behind the first
		require.NoError(t, store.SetPause(t.Context(), "job:report", fleet.Pause{By: "ops", Note: "migration"}))
		close(hold)
		time.Sleep(10 * time.Second)
		assert.Len(t, rs.all(), 1, "no run starts while the job is paused")
		shutdown(t, s)
	})
}

// Remove stops an OverlapBufferOne occurrence that already waits for the
// job's running one: the removed job starts nothing more.
func TestScheduler_Remove_StopsABufferedOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		job := func(ctx context.Context) error {
			rs.record(ctx)
			time.Sleep(1500 * time.Millisecond)
			return nil
		}
		s := newScheduler(t, store)
		require.NoError(t, s.Register("slow", Every(time.Second), job, WithOverlap(OverlapBufferOne), WithTTL(3*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(1200 * time.Millisecond) // the run of :00 goes on; :01 waits for it
		removedAt := time.Now()
		require.NoError(t, s.Remove("slow"))
		time.Sleep(3 * time.Second)
		shutdown(t, s)

		runs := rs.all()
		require.NotEmpty(t, runs)
		for _, r := range runs {
			assert.True(t, r.at.Before(removedAt), "occurrence %s started at %s, after Remove", r.occurrence, r.at)
		}
	})
}

// An OverlapBufferOne occurrence that Remove drops while it waits is
// reported (SkipLocked, as when its wait ends without the lease), whether
// it waited for the run here or for the job's lease elsewhere: it came due
// while the replica had the job, and no claim of a later round will report
// it missed once the job is gone.
func TestScheduler_Remove_ReportsADroppedBufferedOccurrence(t *testing.T) {
	for _, elsewhere := range []bool{false, true} {
		name := "waiting for the run here"
		if elsewhere {
			name = "waiting for the lease elsewhere"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newMemoryStore(t, nil)
				job := func(ctx context.Context) error {
					select {
					case <-ctx.Done():
					case <-time.After(time.Minute):
					}
					return nil
				}
				opts := []JobOption{WithOverlap(OverlapBufferOne), WithTTL(3 * time.Second)}
				var ev events
				s := newScheduler(t, store, WithObserver(ev.observe), WithInstanceID("b"))
				require.NoError(t, s.Register("slow", Every(10*time.Second), job, opts...))
				if elsewhere {
					a := newScheduler(t, store, WithInstanceID("a"))
					require.NoError(t, a.Register("slow", Every(10*time.Second), job, opts...))
					require.NoError(t, a.Start())
					time.Sleep(5 * time.Second) // a runs :00 (b, started later, never fired it)
					defer shutdown(t, a)
				}
				require.NoError(t, s.Start())
				time.Sleep(12 * time.Second) // the run of :00 goes on; :10 waits for it
				require.NoError(t, s.Remove("slow"))
				synctest.Wait()

				started := ev.of(EventStarted)
				require.Len(t, started, map[bool]int{false: 1, true: 0}[elsewhere], "b runs :00 unless a does")
				skipped := ev.of(EventSkipped)
				occ10 := time.Date(2000, 1, 1, 0, 0, 10, 0, time.UTC)
				var found bool
				for _, e := range skipped {
					found = found || (e.Occurrence.Equal(occ10) && e.Reason == SkipLocked)
				}
				assert.True(t, found, "the buffered occurrence %s dropped by Remove is reported skipped (locked); skips: %v", occ10, skipped)
				shutdown(t, s)
			})
		})
	}
}

// An occurrence queued behind the buffered one (it came due while that one
// waited, and waits to be claimed after it) is reported too when Remove
// drops them both: it too came due while the replica had the job (the
// simulator's seed 5714 of the long mode from 4952).
func TestScheduler_Remove_ReportsTheOccurrenceQueuedBehindTheBufferedOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("slow", Every(10*time.Second), func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}, WithOverlap(OverlapBufferOne), WithTTL(3*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(22 * time.Second) // :00 runs; :10 waits for it, and :20 waits behind :10
		require.NoError(t, s.Remove("slow"))
		synctest.Wait()
		shutdown(t, s)

		skipped := map[time.Time]SkipReason{}
		for _, e := range ev.of(EventSkipped) {
			skipped[e.Occurrence.UTC()] = e.Reason
		}
		for _, sec := range []int{10, 20} {
			occ := time.Date(2000, 1, 1, 0, 0, sec, 0, time.UTC)
			reason, ok := skipped[occ]
			if assert.True(t, ok, "occurrence %s, dropped by Remove, is reported; skips: %v", occ, skipped) {
				assert.Equal(t, SkipLocked, reason)
			}
		}
	})
}

// Remove then Register of the same name keeps SkipRunning: while the
// removed job's run still executes here (it ignores its context, and its
// lease ran out after its timeout), the job registered again does not
// start a second run on this replica.
func TestScheduler_Register_AgainAfterRemoveNeverRunsTwoAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var inflight, most, n atomic.Int32
		job := func(ctx context.Context) error {
			cur := inflight.Add(1)
			defer inflight.Add(-1)
			for m := most.Load(); cur > m && !most.CompareAndSwap(m, cur); m = most.Load() {
			}
			if n.Add(1) == 1 {
				time.Sleep(5 * time.Second) // ignores its context
			}
			return nil
		}
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		opts := []JobOption{WithTTL(time.Second), WithTimeout(200 * time.Millisecond)}
		require.NoError(t, s.Register("report", Every(time.Second), job, opts...))
		require.NoError(t, s.Start())
		time.Sleep(1500 * time.Millisecond) // the first run goes on past its timeout
		require.NoError(t, s.Remove("report"))
		require.NoError(t, s.Register("report", Every(time.Second), job, opts...))
		time.Sleep(7 * time.Second)
		shutdown(t, s)

		assert.EqualValues(t, 1, most.Load(), "never two runs of the job at once on one replica")
		assert.True(t, slices.ContainsFunc(ev.of(EventSkipped), func(e Event) bool { return e.Reason == SkipRunning }),
			"occurrences that found the removed job's run going are skipped as running here")
	})
}

// Remove gives up the job's share of its concurrency limit: the job can be
// registered again with another n.
func TestScheduler_Register_AgainAfterRemoveWithAnotherLimit(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	require.NoError(t, s.Register("report", Every(time.Minute), nop, WithConcurrencyLimit("db", 2)))
	require.NoError(t, s.Remove("report"))
	require.NoError(t, s.Register("report", Every(time.Minute), nop, WithConcurrencyLimit("db", 3)))

	require.NoError(t, s.Register("other", Every(time.Minute), nop, WithConcurrencyLimit("db", 3)))
	err := s.Register("third", Every(time.Minute), nop, WithConcurrencyLimit("db", 4))
	require.ErrorIs(t, err, ErrInvalidArgument, "jobs that still share the limit keep its n")
}

// A triggered run's occurrence follows every occurrence claimed before it:
// a replica whose clock runs 800ms fast claims occurrence :02 while the
// store reads :01.200, and a trigger run right after gets an occurrence
// after :02 (fencing.AdvanceOnce would refuse an earlier one as a
// duplicate).
func TestScheduler_Trigger_OccurrenceFollowsAFastClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		s := newScheduler(t, store, WithClock(skewedClock{clockwork.NewRealClock(), 800 * time.Millisecond}))
		require.NoError(t, s.Register("report", Every(2*time.Second), job))
		require.NoError(t, s.Start())
		time.Sleep(1300 * time.Millisecond) // :02 claimed at :01.200 store time
		require.Len(t, rs.all(), 1)
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		synctest.Wait()
		shutdown(t, s)

		runs := rs.all()
		require.Len(t, runs, 2)
		assert.False(t, runs[0].trigger)
		assert.True(t, runs[1].trigger)
		assert.True(t, runs[1].occurrence.After(runs[0].occurrence),
			"the trigger's occurrence %s follows the claimed %s", runs[1].occurrence, runs[0].occurrence)
	})
}

// The mirror case: a scheduled occurrence claimed late, after a trigger
// ran past it, is refused (SkipClaimed): in start order, occurrences only
// increase.
func TestScheduler_Trigger_LateScheduledClaimAfterATriggerIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe), WithClock(skewedClock{clockwork.NewRealClock(), -300 * time.Millisecond}))
		require.NoError(t, s.Register("report", Every(2*time.Second), job))
		require.NoError(t, s.Start())
		time.Sleep(4100 * time.Millisecond) // :04.100, the replica reads :03.800
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		time.Sleep(time.Second) // its :04 firing comes at :04.300
		shutdown(t, s)

		runs := rs.all()
		for i := 1; i < len(runs); i++ {
			assert.True(t, runs[i].occurrence.After(runs[i-1].occurrence),
				"run %d's occurrence %s follows %s", i, runs[i].occurrence, runs[i-1].occurrence)
		}
		assert.True(t, slices.ContainsFunc(ev.of(EventSkipped), func(e Event) bool { return e.Reason == SkipClaimed }),
			"the late claim is refused")
	})
}

// A run whose job lease is lost while it waits for a slot of its
// concurrency limit is reported as a lost lease (SkipLeaseLost), not as a
// skip for want of a slot.
func TestScheduler_ConcurrencyLimit_LeaseLostWhileWaitingIsNoLimitSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		sem, err := lease.NewSemaphore(store, "job:db", 1)
		require.NoError(t, err)
		slot, err := sem.TryAcquire(t.Context(), time.Hour) // the one slot, held elsewhere
		require.NoError(t, err)
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		require.NoError(t, s.Register("report", Every(time.Minute), nop, WithConcurrencyLimit("db", 1), WithTTL(3*time.Second)))
		time.Sleep(30 * time.Second)
		require.NoError(t, s.Start())
		time.Sleep(31 * time.Second) // the 00:01 occurrence won, waiting for the slot
		_, err = store.ForceRelease(t.Context(), "job:report")
		require.NoError(t, err)
		time.Sleep(3 * time.Second) // the heartbeat finds the lease gone
		shutdown(t, s)
		require.NoError(t, slot.Release(t.Context()))

		require.NotEmpty(t, ev.of(EventLeaseLost), "the loss is reported")
		assert.True(t, slices.ContainsFunc(ev.of(EventSkipped), func(e Event) bool { return e.Reason == SkipLeaseLost }),
			"the occurrence not run is reported")
		for _, e := range ev.of(EventSkipped) {
			assert.NotEqual(t, SkipConcurrencyLimit, e.Reason, "no slot was missing: the lease was lost")
		}
	})
}

// A trigger that finds the job's lease held by a holder that dies (it
// never releases, never hands the trigger on) runs once that lease has
// run out, within the trigger's minute.
func TestScheduler_Trigger_RunsAfterADeadHoldersLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		time.Sleep(30 * time.Second) // off the hourly grid: only triggers run
		s := newScheduler(t, store)
		require.NoError(t, s.Register("report", Every(time.Hour), job))
		require.NoError(t, s.Start())
		synctest.Wait()
		_, err := store.Acquire(t.Context(), "job:report", 5*time.Second) // a holder that dies
		require.NoError(t, err)
		_, err = store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		time.Sleep(time.Minute)
		shutdown(t, s)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger runs")
		assert.True(t, runs[0].trigger)
	})
}

// Remove drops a claim that is queued and not yet sent: the removed job
// claims no round (the replicas that still have the job would skip it).
func TestScheduler_Remove_DropsAQueuedClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		gate := make(chan struct{})
		s := newScheduler(t, &gatedStore{Store: store, key: "job:first", gate: gate}, WithAcquireConcurrency(1))
		require.NoError(t, s.Register("first", Every(time.Hour), nop))
		require.NoError(t, s.Register("second", Every(time.Hour), nop))
		time.Sleep(30 * time.Second) // off the hourly grid
		require.NoError(t, s.Start())
		time.Sleep(59*time.Minute + 31*time.Second) // 01:00:01: first's claim held in the store, second's queued behind it
		require.NoError(t, s.Remove("second"))
		close(gate)
		synctest.Wait()
		shutdown(t, s)

		st, err := store.JobState(t.Context(), "job:second")
		require.NoError(t, err)
		assert.Zero(t, st.LastRound, "the removed job claimed no round")
		first, err := store.JobState(t.Context(), "job:first")
		require.NoError(t, err)
		assert.NotZero(t, first.LastRound, "the claim that held the worker went on")
	})
}

// A claim sent before Remove that wins after the job was registered again
// runs the new registration, not the removed one.
func TestScheduler_Register_AgainWhileAClaimIsInFlightRunsTheNewFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		gate := make(chan struct{})
		s := newScheduler(t, &gatedStore{Store: store, key: "job:report", gate: gate})
		var ranOld, ranNew atomic.Int32
		require.NoError(t, s.Register("report", Every(time.Hour), func(context.Context) error { ranOld.Add(1); return nil }))
		time.Sleep(30 * time.Second) // off the hourly grid
		require.NoError(t, s.Start())
		time.Sleep(59*time.Minute + 31*time.Second) // 01:00:01: the claim of 01:00 held in the store
		require.NoError(t, s.Remove("report"))
		require.NoError(t, s.Register("report", Every(time.Hour), func(context.Context) error { ranNew.Add(1); return nil }))
		close(gate)
		synctest.Wait()
		shutdown(t, s)

		assert.Zero(t, ranOld.Load(), "the removed registration does not run")
		assert.EqualValues(t, 1, ranNew.Load(), "the claim won runs the job registered again")
	})
}

// A trigger queued while no replica had the job runs when a replica that
// has it starts (its new subscription to the control channel missed the
// announcement), within the trigger's time to live.
func TestScheduler_Trigger_QueuedBeforeStartRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var rs runStarts
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		time.Sleep(30 * time.Second) // off the hourly grid: only triggers run
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", 10*time.Second)
		require.NoError(t, err)
		s := newScheduler(t, store)
		require.NoError(t, s.Register("report", Every(time.Hour), job))
		require.NoError(t, s.Start())
		time.Sleep(5 * time.Second)
		shutdown(t, s)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger queued before the start runs")
		assert.True(t, runs[0].trigger)
	})
}

// Remove while the job's claim is at the store (retried through an
// outage, say): a claim that then wins gives the lease back unrun. With
// one attempt, its round is claimed, so no later claim's ledger reports
// the occurrence: the give-back reports it skipped (SkipLocked, as Remove
// reports the occurrences it drops while they wait for the lease). With
// attempts, the occurrence stays open for another replica to resume (or
// for the fleet to give up at its deadline), and no skip is reported: the
// give-back puts it in the fleet's index, which nothing else would (no run
// started), so that the fleet gives it up at its deadline when no replica
// has the job. (The simulator's seeds 10768 of the long mode from 9858
// and 54886 of the lighter fleet showed it with attempts.)
func TestScheduler_Remove_ReportsAnOccurrenceWhoseClaimWonAfterIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attempts int
		reported bool
	}{{"one attempt", 1, true}, {"with attempts", DefaultAttempts, false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gate := make(chan struct{})
				store := &gatedFleetStore{Store: newMemoryStore(t, nil), key: JobKeyPrefix + "report", gate: gate, entered: make(chan struct{}, 1)}
				var ev events
				var calls atomic.Int32
				s := newScheduler(t, store, WithObserver(ev.observe))
				require.NoError(t, s.Register("report", Every(time.Minute), func(context.Context) error {
					calls.Add(1)
					return nil
				}, WithAttempts(tc.attempts)))
				require.NoError(t, s.Start())
				<-store.entered // the first occurrence's claim waits at the store
				occ := time.Now()
				require.NoError(t, s.Remove("report"))
				close(gate)
				synctest.Wait()
				time.Sleep(time.Minute + 3*resumePoll) // past the occurrence's deadline, its next occurrence
				shutdown(t, s)

				assert.Zero(t, calls.Load(), "the removed job is not called")
				var skips []SkipReason
				for _, e := range ev.of(EventSkipped) {
					if e.Occurrence.Equal(occ) {
						skips = append(skips, e.Reason)
					}
				}
				var givenUp []time.Time
				for _, e := range ev.of(EventGivenUp) {
					givenUp = append(givenUp, e.Occurrence)
				}
				if tc.reported {
					assert.Equal(t, []SkipReason{SkipLocked}, skips, "the occurrence, claimed and not run, is reported")
					assert.Empty(t, givenUp, "one attempt: no completion record")
				} else {
					assert.Empty(t, skips, "the occurrence stays open for another replica")
					require.Len(t, givenUp, 1, "no replica has the job: the fleet gives the occurrence up at its deadline")
					assert.True(t, givenUp[0].Equal(occ))
				}
			})
		})
	}
}

// gatedFleetStore is gatedStore for a scheduler with its control plane
// (and so completion): a memory store whose acquires of key, one by one
// or in a batch, wait until gate is closed.
type gatedFleetStore struct {
	*memory.Store
	key     string
	gate    chan struct{}
	entered chan struct{}
}

func (g *gatedFleetStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	return (&gatedStore{Store: g.Store, key: g.key, gate: g.gate, entered: g.entered}).Acquire(ctx, key, ttl, opts...)
}

func (g *gatedFleetStore) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	for i, r := range reqs {
		res[i].Lease, res[i].Err = g.Acquire(ctx, r.Key, r.TTL, r.Options...)
	}
}
