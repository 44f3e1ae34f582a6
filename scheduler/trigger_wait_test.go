package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// A trigger queued while a run goes waits for its end; the release tells
// the run's replica that it waits, and that replica claims it at once,
// even when it is not the trigger's first choice (the first choice found
// the job locked, or heard of nothing, and does not look again by
// itself). Held back a backup's grace, a trigger whose time to live ends
// just after the run lapses.
func TestScheduler_Trigger_TakenAtOnceByTheReplicaItWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "b"}
		start := time.Now()
		firstOcc := start.Truncate(time.Hour).Add(time.Hour)
		// A job whose second hourly occurrence falls to b and whose
		// triggers fall to a.
		name := ""
		for k := 0; k < 1000 && name == ""; k++ {
			n := fmt.Sprintf("j%d", k)
			v := newFleetView("b", fleetOf(ids, []string{"job:" + n}), map[string]string{"job:" + n: "fp"})
			if v.choose("job:"+n, firstOcc.UnixMilli()).role == roleFirst && v.choose("job:"+n, 0).role == roleBackup {
				name = n
			}
		}
		require.NotEmpty(t, name, "a job whose occurrence and trigger have different first choices")

		var rs runStarts
		var ended time.Time
		job := func(ctx context.Context) error {
			if r := rs.record(ctx); r.Trigger == "" {
				time.Sleep(10 * time.Second)
				ended = time.Now()
			}
			return nil
		}
		var scheds []*Scheduler
		for _, id := range ids {
			s := newScheduler(t, store, WithInstanceID(id))
			require.NoError(t, s.Register(name, Every(time.Hour), job, WithTTL(time.Minute)))
			require.NoError(t, s.Start())
			scheds = append(scheds, s)
		}
		time.Sleep(time.Until(firstOcc) + time.Second) // b runs the occurrence
		_, err := store.AddTrigger(t.Context(), "job:"+name, "ops", time.Minute)
		require.NoError(t, err)
		time.Sleep(20 * time.Second)
		for _, s := range scheds {
			shutdown(t, s)
		}

		runs := rs.all()
		require.Len(t, runs, 3, "the first occurrence, the second, then the trigger")
		assert.Equal(t, "b", runs[1].replica)
		assert.False(t, runs[1].trigger)
		assert.True(t, runs[2].trigger)
		assert.Equal(t, "b", runs[2].replica, "the replica whose run the trigger waited for runs it")
		assert.Less(t, runs[2].at.Sub(ended), BackupGrace/2, "claimed at once, not after a backup's grace")
	})
}

// A trigger whose claim meets a long outage asks the store again at most
// retryMax (1s, randomized by ±50%) apart, also once its claim's retries
// have run out: when the store answers, the trigger runs within 1.5s.
func TestScheduler_Trigger_RunsSoonAfterALongOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireOutageStore{Store: newMemoryStore(t, nil)}
		var rs runStarts
		var evs events
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		time.Sleep(30 * time.Second) // off the hourly grid: only triggers run
		s := newScheduler(t, store, WithObserver(evs.observe))
		require.NoError(t, s.Register("report", Every(time.Hour), job, WithTTL(time.Minute)))
		require.NoError(t, s.Start())
		synctest.Wait()

		store.down.Store(true)
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", 5*time.Minute)
		require.NoError(t, err)
		time.Sleep(40 * time.Second) // the claim's backoff reaches its longest wait
		back := endOutageAfterATry(store, &evs)
		time.Sleep(2 * time.Second)

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger runs once the store is back")
		assert.True(t, runs[0].trigger)
		assert.LessOrEqual(t, runs[0].at.Sub(back), 1500*time.Millisecond)
	})
}

// An occurrence whose claim meets a long outage runs within retryMax (1s,
// randomized by ±50%) of the store's return, not a long backoff later:
// the store comes back just after a try.
func TestScheduler_Claim_RunsSoonAfterALongOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireOutageStore{Store: newMemoryStore(t, nil)}
		var rs runStarts
		var evs events
		job := func(ctx context.Context) error { rs.record(ctx); return nil }
		time.Sleep(30 * time.Second) // the first occurrence is 10 minutes away
		s := newScheduler(t, store, WithObserver(evs.observe))
		require.NoError(t, s.Register("report", Every(10*time.Minute), job, WithTTL(time.Minute)))
		require.NoError(t, s.Start())
		synctest.Wait()

		store.down.Store(true)
		time.Sleep(10*time.Minute + 40*time.Second) // the claim's backoff reaches its longest wait
		require.NotEmpty(t, evs.of(EventAcquireRetrying), "the occurrence's claim met the outage")
		back := endOutageAfterATry(store, &evs)
		time.Sleep(5 * time.Second)

		runs := rs.all()
		require.Len(t, runs, 1, "the occurrence runs once the store is back")
		assert.LessOrEqual(t, runs[0].at.Sub(back), 1500*time.Millisecond)
	})
}

// endOutageAfterATry ends store's outage just after the next failed try
// of a claim (a retry, or a claim that gave up), so that the next try is
// a whole wait away, and returns when it ended it.
func endOutageAfterATry(store *acquireOutageStore, evs *events) time.Time {
	tries := func() int { return len(evs.of(EventAcquireRetrying)) + len(evs.of(EventAcquireFailed)) }
	for n := tries(); tries() == n; {
		time.Sleep(10 * time.Millisecond)
	}
	store.down.Store(false)
	return time.Now()
}

// extendLosesStore answers every Extend of its leases as a store that lost
// them with its data: the lease is gone (released underneath), and the
// heartbeat is told it is not held.
type extendLosesStore struct {
	*memory.Store
}

func (s extendLosesStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	_ = s.Store.Release(ctx, id)
	return time.Time{}, fmt.Errorf("%w: test data loss", lease.ErrNotHeld)
}

// crashedStore leaves its replica's registry entry behind when the
// replica stops, as a crash does.
type crashedStore struct {
	*memory.Store
}

func (crashedStore) DropReplica(context.Context, string) error { return nil }

// A preferred replica whose earlier run of a job still executes, its
// lease lost, cannot run the job's next occurrence: it hands it over on
// the control channel, and another replica runs it at once, even when the
// backup is gone (a replica still in the views, as a crashed one is until
// its registry entry lapses).
func TestScheduler_HandOver_AnOccurrenceThePreferredReplicaCannotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "c", "gone"}
		firstOcc := time.Now().Truncate(time.Second).Add(20 * time.Second)
		// A job whose two occurrences from firstOcc are a's, with "gone"
		// the backup of the second.
		name := ""
		for k := 0; k < 5000 && name == ""; k++ {
			n := fmt.Sprintf("j%d", k)
			vj := newFleetView("a", fleetOf(ids, []string{"job:" + n}), map[string]string{"job:" + n: "fp"}).jobs["job:"+n]
			f0, _ := rank(vj.c.seeds, vj.keyHash, firstOcc.UnixMilli())
			f1, s1 := rank(vj.c.seeds, vj.keyHash, firstOcc.Add(time.Second).UnixMilli())
			if vj.c.ids[f0] == "a" && vj.c.ids[f1] == "a" && vj.c.ids[s1] == "gone" {
				name = n
			}
		}
		require.NotEmpty(t, name)
		second := firstOcc.Add(time.Second)

		ran := newRanBy(t)
		job := func(ctx context.Context) error {
			if r, _ := RunFromContext(ctx); r.Occurrence.Equal(firstOcc) {
				time.Sleep(1500 * time.Millisecond) // ignores its context, past the second occurrence
			}
			return ran.record(ctx)
		}
		var scheds []*Scheduler
		for _, id := range ids {
			var st lease.Store = store
			switch id {
			case "a":
				st = extendLosesStore{store}
			case "gone":
				st = crashedStore{store} // leaves its registry entry behind
			}
			s := newScheduler(t, st, WithInstanceID(id), WithRegistryRefresh(time.Hour))
			require.NoError(t, s.Register(name, Every(time.Second), job, WithTTL(time.Second)))
			require.NoError(t, s.Start())
			scheds = append(scheds, s)
		}
		time.Sleep(10 * time.Second)
		shutdown(t, scheds[2]) // its entry stays in the registry: it lapses in 3 hours
		for _, s := range scheds[:2] {
			setView(s, ids, "job:"+name) // as the next read of the registry gives it
		}
		time.Sleep(time.Until(second) + 500*time.Millisecond)
		for _, s := range scheds[:2] {
			require.Len(t, s.view.Load().jobs["job:"+name].c.ids, 3, "gone is still in %s's view", s.cfg.instanceID)
			shutdown(t, s)
		}

		ran.mu.Lock()
		defer ran.mu.Unlock()
		assert.Equal(t, "a", ran.runs[name][firstOcc.UnixMilli()], "a ran the first occurrence")
		assert.Equal(t, "c", ran.runs[name][second.UnixMilli()], "c ran the second, which a handed over")
	})
}
