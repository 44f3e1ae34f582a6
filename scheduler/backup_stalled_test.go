package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// readOverlap is a memory store whose LastRounds take 5ms (on the bubble's
// clock) and which counts the LastRuns made while a LastRounds is in
// progress (beside it) and those made while none is (after it).
type readOverlap struct {
	*memory.Store
	mu            sync.Mutex
	rounds        int // LastRounds in progress
	beside, after int
}

func (r *readOverlap) LastRounds(ctx context.Context, keys []string, rounds []int64) error {
	r.mu.Lock()
	r.rounds++
	r.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	err := r.Store.LastRounds(ctx, keys, rounds)
	r.mu.Lock()
	r.rounds--
	r.mu.Unlock()
	return err
}

func (r *readOverlap) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	time.Sleep(time.Millisecond) // after the early read has begun, if it has
	r.mu.Lock()
	if r.rounds > 0 {
		r.beside++
	} else {
		r.after++
	}
	r.mu.Unlock()
	return r.Store.LastRuns(ctx, keys, spans)
}

// pausedStore is a replica's store while the replica is stopped (as by
// SIGSTOP) until until is closed: an acquire waits until then (or its
// context ends), and is made then.
type pausedStore struct {
	*memory.Store
	until <-chan struct{}
}

func (s *pausedStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	select {
	case <-s.until:
	case <-ctx.Done():
		return nil, fmt.Errorf("stalled: %w", ctx.Err())
	}
	return s.Store.Acquire(ctx, key, ttl, opts...)
}

func (s *pausedStore) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	acquireEach(ctx, s.Acquire, reqs, res)
}

// A backup that saw a first choice stalled (claiming none of the rounds it
// left open) reads the last runs of that replica's later tasks beside their
// rounds, one round trip, instead of after them; once the replica claims
// again, it no longer does. Replica a is stalled for 10s; b and c are the
// backups of its occurrences.
func TestScheduler_Backup_ReadsAStalledFirstChoicesLastRunsWithItsRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		stall := make(chan struct{})
		ids := []string{"a", "b", "c"}
		keys := []string{"job:j0", "job:j1", "job:j2", "job:j3", "job:j4", "job:j5"}
		var mu sync.Mutex
		ran := map[string]int{}
		record := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			mu.Lock()
			defer mu.Unlock()
			k := fmt.Sprintf("%s@%d", r.Job, r.Occurrence.UnixMilli())
			ran[k]++
			assert.Equal(t, 1, ran[k], "%s ran twice", k)
			return nil
		}
		reads := map[string]*readOverlap{}
		var scheds []*Scheduler
		for _, id := range ids {
			var st lease.Store
			if id == "a" {
				st = &pausedStore{Store: store, until: stall}
			} else {
				r := &readOverlap{Store: store}
				reads[id] = r
				st = r
			}
			s := newScheduler(t, st, WithInstanceID(id), WithoutControlPlane())
			for k := range keys {
				require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), record))
			}
			setView(s, ids, keys...)
			scheds = append(scheds, s)
		}
		time.Sleep(500 * time.Millisecond)
		for _, s := range scheds {
			require.NoError(t, s.Start())
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		beside := 0
		for _, r := range reads {
			r.mu.Lock()
			beside += r.beside
			r.beside, r.after = 0, 0
			r.mu.Unlock()
		}
		assert.Positive(t, beside, "the last runs of a stalled first choice's tasks were read beside their rounds")

		close(stall) // a claims again
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for _, r := range reads {
			r.mu.Lock()
			r.beside, r.after = 0, 0
			r.mu.Unlock()
		}
		time.Sleep(5 * time.Second)
		for _, s := range scheds {
			shutdown(t, s)
		}
		synctest.Wait()
		for id, r := range reads {
			assert.Zero(t, r.beside, "%s: a claims again, and is no longer read early", id)
		}

		view := scheds[0].view.Load()
		for k, key := range keys {
			for o := int64(1); o <= 18; o++ {
				ms := time.Date(2000, 1, 1, 0, 0, int(o), 0, time.UTC).UnixMilli()
				if view.role(key, ms) == roleFirst && o <= 10 {
					assert.Equal(t, 1, ran[fmt.Sprintf("j%d@%d", k, ms)], "j%d at %ds, a's, ran on its backup", k, o)
				}
			}
		}
	})
}
