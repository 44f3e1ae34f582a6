package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// withUnreadableEntry is a registry that holds, besides its replicas, the
// live entry of a replica "strange" that it cannot read, and reports it as
// lease/redislease does: the readable replicas, with a
// *fleet.UnreadableError.
type withUnreadableEntry struct {
	*memory.Store
	publishes atomic.Int64
}

func (w *withUnreadableEntry) unreadable() error {
	return &fleet.UnreadableError{Replicas: []string{"strange"},
		Err: fmt.Errorf("%w: the entry of replica %q is not JSON", lease.ErrInternal, "strange")}
}

func (w *withUnreadableEntry) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	all, err := w.Store.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	return all, w.unreadable()
}

func (w *withUnreadableEntry) PublishReplica(ctx context.Context, r fleet.Replica, ttl time.Duration) ([]fleet.Conflict, error) {
	w.publishes.Add(1)
	conflicts, err := w.Store.PublishReplica(ctx, r, ttl)
	if err != nil {
		return nil, err
	}
	return conflicts, w.unreadable()
}

// One registry entry that a replica cannot read (garbage, or the format of
// a later version) is left out of its view: the replicas still build their
// views from the others and share the job, their publishes count as done
// (no publish again at every refresh, which bumps the fleet's generation
// and makes every replica read the registry again), and each warns once,
// not at every read.
func TestScheduler_ControlPlane_AnUnreadableEntryIsLeftOutOfTheView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &withUnreadableEntry{Store: newMemoryStore(t, nil)}
		noop := func(context.Context) error { return nil }
		type replica struct {
			s    *Scheduler
			logs *logRecorder
		}
		var replicas []replica
		for _, id := range []string{"a", "b"} {
			logs := &logRecorder{}
			s := newScheduler(t, store, WithInstanceID(id), WithRegistryRefresh(time.Second), WithLogger(logs.logger()))
			require.NoError(t, s.Register("j", Every(time.Minute), noop))
			require.NoError(t, s.Start())
			synctest.Wait()
			replicas = append(replicas, replica{s, logs})
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()

		for _, r := range replicas {
			id := r.s.cfg.instanceID
			assert.Equal(t, []string{"a", "b"}, viewOf(r.s, "job:j"), "%s's view leaves the unreadable entry out", id)
			assert.Equal(t, 1, r.logs.count("WARN", "registry entries this replica cannot read are left out of its view of the fleet"), "%s warned once", id)
			assert.False(t, r.logs.has("WARN", "could not publish this replica to the registry; trying again at the next refresh"), id)
			assert.False(t, r.logs.has("WARN", "could not read the registry"), id)
		}
		assert.Equal(t, int64(2), store.publishes.Load(), "one publish per replica, not one per refresh")
	})
}

// unreadableFirstKey reads as lease/redislease does when the first key of
// every read of many keys holds a value it cannot read (another type): that
// key answers zero, the others are read, and the call returns a
// *lease.UnreadableKeysError naming it. It counts the acquires refused
// because their round was claimed.
type unreadableFirstKey struct {
	*memory.Store
	refused atomic.Int64
}

func (s *unreadableFirstKey) unreadable() error {
	return &lease.UnreadableKeysError{Keys: []int{0}, Err: fmt.Errorf("%w: WRONGTYPE", lease.ErrInternal)}
}

func (s *unreadableFirstKey) LastRounds(ctx context.Context, keys []string, rounds []int64) error {
	if err := s.Store.LastRounds(ctx, keys, rounds); err != nil {
		return err
	}
	rounds[0] = 0
	return s.unreadable()
}

func (s *unreadableFirstKey) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	if err := s.Store.LastRuns(ctx, keys, spans); err != nil {
		return err
	}
	spans[0] = lease.RunSpan{}
	return s.unreadable()
}

func (s *unreadableFirstKey) PendingTriggersBatch(ctx context.Context, keys []string, counts []int) error {
	if err := s.Store.PendingTriggersBatch(ctx, keys, counts); err != nil {
		return err
	}
	counts[0] = 0
	return s.unreadable()
}

func (s *unreadableFirstKey) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	l, err := s.Store.Acquire(ctx, key, ttl, opts...)
	if errors.Is(err, lease.ErrRoundClaimed) {
		s.refused.Add(1)
	}
	return l, err
}

func (s *unreadableFirstKey) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	acquireEach(ctx, s.Acquire, reqs, res)
}

// A backup that cannot read one job's round record still reads the
// others': it claims that one occurrence (its acquire decides), not every
// occurrence of the firing whose first choice already claimed it. Before,
// the one unreadable record failed the whole read, and the backup claimed
// them all: a second claim per occurrence, at every firing, for as long as
// the record stayed.
func TestScheduler_Backup_AnUnreadableRoundIsLeftOutOfTheRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids, keys := []string{"a", "b"}, pairKeys()
		ran := newRanBy(t)
		b := &unreadableFirstKey{Store: store}
		var scheds []*Scheduler
		for _, id := range ids {
			var st lease.Store = store
			if id == "b" {
				st = b
			}
			s := newScheduler(t, st, WithInstanceID(id), WithoutControlPlane())
			for k := range keys {
				require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), ran.record))
			}
			setView(s, ids, keys...)
			scheds = append(scheds, s)
		}
		runFor(t, scheds, 10*time.Second)

		backups := 0 // b's backup tasks: occurrences whose first choice is a
		view := scheds[1].view.Load()
		for _, key := range keys {
			for o := int64(1); o <= 9; o++ {
				if view.role(key, time.Date(2000, 1, 1, 0, 0, int(o), 0, time.UTC).UnixMilli()) == roleBackup {
					backups++
				}
			}
		}
		require.Greater(t, backups, 20, "b is the backup of many occurrences")
		assert.LessOrEqual(t, b.refused.Load(), int64(10), "b claimed at most the unreadable one of each firing (of %d backup tasks)", backups)
		assert.Positive(t, b.refused.Load(), "b claimed the occurrence whose round it could not read")
	})
}

// A job whose trigger queue cannot be read does not keep the replica from
// finding the triggers that wait for the other jobs read with it: they run,
// and the replica warns. Before, the one unreadable queue
// failed the whole read, and the lookup stopped.
func TestScheduler_ControlPlane_AnUnreadableTriggerQueueIsLeftOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &unreadableFirstKey{Store: newMemoryStore(t, nil)}
		rs := &runStarts{}
		logs := &logRecorder{}
		time.Sleep(30 * time.Minute) // off the hourly grid: only the trigger runs
		s := newScheduler(t, store, WithLogger(logs.logger()))
		for i := range 3 {
			require.NoError(t, s.Register(fmt.Sprintf("j%d", i), Every(time.Hour), func(ctx context.Context) error {
				rs.record(ctx)
				return nil
			}))
		}
		_, err := store.AddTrigger(t.Context(), "job:j2", "ops", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Start())
		time.Sleep(time.Second)
		synctest.Wait()

		runs := rs.all()
		require.Len(t, runs, 1, "the trigger queued before Start ran")
		assert.True(t, runs[0].trigger)
		assert.Equal(t, 1, logs.count("WARN", "the trigger queues of some jobs hold another type than a list: they cannot be triggered until those keys are deleted"), "the replica warned")
	})
}
