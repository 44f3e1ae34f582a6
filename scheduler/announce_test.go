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
	"github.com/cronguard/cronguard/lease/memory"
)

// viewOf returns the replicas in s's view for key, or nil when the key
// races (absent from the view).
func viewOf(s *Scheduler, key string) []string {
	v := s.view.Load()
	if v == nil {
		return nil
	}
	vj, ok := v.jobs[key]
	if !ok {
		return nil
	}
	return vj.ids
}

// A replica that joins or leaves the fleet is in the others' views at
// once, not at their next refresh (an hour here): it announces the change
// of its registry entry on the control channel, and they read the registry
// then. Until they do, their choices of a preferred replica differ from
// its own, which costs extra claims or a grace of lateness.
func TestScheduler_ControlPlane_JoinAndLeaveSeenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		noop := func(context.Context) error { return nil }
		a := newScheduler(t, store, WithInstanceID("a"), WithRegistryRefresh(time.Hour))
		require.NoError(t, a.Register("j", Every(time.Minute), noop))
		require.NoError(t, a.Start())
		synctest.Wait()
		require.Equal(t, []string{"a"}, viewOf(a, "job:j"), "a alone")

		time.Sleep(announceGap) // a read the registry as it started: the next read for an announcement may come at once

		b := newScheduler(t, store, WithInstanceID("b"), WithRegistryRefresh(time.Hour))
		require.NoError(t, b.Register("j", Every(time.Minute), noop))
		require.NoError(t, b.Start())
		synctest.Wait()
		assert.Equal(t, []string{"a", "b"}, viewOf(b, "job:j"), "b read the registry as it published")
		assert.Equal(t, []string{"a", "b"}, viewOf(a, "job:j"), "a read it when b announced its entry")

		time.Sleep(announceGap)
		shutdown(t, b)
		synctest.Wait()
		assert.Equal(t, []string{"a"}, viewOf(a, "job:j"), "a read it when b announced it left")
	})
}

// readsCounted counts the registry reads of one replica.
type readsCounted struct {
	*memory.Store
	reads atomic.Int64
}

func (r *readsCounted) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	r.reads.Add(1)
	return r.Store.Replicas(ctx)
}

// Replicas that start together announce themselves together; a replica
// reads the registry for their announcements at most once per announceGap,
// not once per replica, and its view then has them all.
func TestScheduler_ControlPlane_AnnouncementsReadAtMostOncePerGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemoryStore(t, nil)
		noop := func(context.Context) error { return nil }
		counted := &readsCounted{Store: mem}
		a := newScheduler(t, counted, WithInstanceID("a"), WithRegistryRefresh(time.Hour))
		require.NoError(t, a.Register("j", Every(time.Minute), noop))
		require.NoError(t, a.Start())
		time.Sleep(announceGap)
		synctest.Wait()
		before := counted.reads.Load()

		ids := []string{"a"}
		for i := range 8 {
			id := fmt.Sprintf("r%d", i)
			s := newScheduler(t, mem, WithInstanceID(id), WithRegistryRefresh(time.Hour))
			require.NoError(t, s.Register("j", Every(time.Minute), noop))
			require.NoError(t, s.Start())
			ids = append(ids, id)
			time.Sleep(100 * time.Millisecond) // a rolling start
		}
		time.Sleep(announceGap)
		synctest.Wait()
		assert.Equal(t, ids, viewOf(a, "job:j"), "a's view has every replica one gap after the last announced itself")
		assert.LessOrEqual(t, counted.reads.Load()-before, int64(2), "8 announcements within 0.8 s: a read at the first and one gap later")
	})
}

// lossyStore is an in-process store whose subscription loses every
// announcement of a registry change (fleet.MessageFleet), as one that was
// down while they were published; deliver hands its subscriber a message,
// as the store does with fleet.MessageResync once it subscribed again.
type lossyStore struct {
	*memory.Store
	fn atomic.Pointer[func(fleet.Message)]
}

func (s *lossyStore) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	s.fn.Store(&fn)
	return s.Store.Subscribe(ctx, func(m fleet.Message) {
		if m.Kind != fleet.MessageFleet {
			fn(m)
		}
	})
}

func (s *lossyStore) deliver(m fleet.Message) { (*s.fn.Load())(m) }

// A replica whose subscription was down while another joined missed its
// announcement: when it subscribes again (fleet.MessageResync), it reads
// the registry, as it looks for the triggers it may have missed. Without
// that its view lacked the new replica until its next refresh (an hour
// here; up to three refreshes by default), and its choices of a preferred
// replica differed from the fleet's meanwhile.
func TestScheduler_ControlPlane_ResyncReadsTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemoryStore(t, nil)
		lossy := &lossyStore{Store: mem}
		a := newScheduler(t, lossy, WithInstanceID("a"), WithRegistryRefresh(time.Hour))
		require.NoError(t, a.Register("j", Every(time.Minute), nop))
		require.NoError(t, a.Start())
		synctest.Wait()
		time.Sleep(announceGap)

		b := newScheduler(t, mem, WithInstanceID("b"), WithRegistryRefresh(time.Hour))
		require.NoError(t, b.Register("j", Every(time.Minute), nop))
		require.NoError(t, b.Start())
		synctest.Wait()
		require.Equal(t, []string{"a"}, viewOf(a, "job:j"), "a missed b's announcement")

		lossy.deliver(fleet.Message{Kind: fleet.MessageResync})
		synctest.Wait()
		assert.Equal(t, []string{"a", "b"}, viewOf(a, "job:j"), "a read the registry when it subscribed again")
	})
}
