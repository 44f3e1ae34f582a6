package scheduler

import (
	"context"
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
