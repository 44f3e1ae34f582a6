package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

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
// replica stops, and tells no one, as a crash does.
type crashedStore struct {
	*memory.Store
}

func (crashedStore) DropReplica(context.Context, string) error { return nil }

func (c crashedStore) Publish(ctx context.Context, m fleet.Message) error {
	if m.Kind == fleet.MessageFleet {
		return nil
	}
	return c.Store.Publish(ctx, m)
}

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
			c := newFleetView("a", fleetOf(ids, []string{"job:" + n}), map[string]string{"job:" + n: "fp"}).jobs["job:"+n]
			h := fnv1a(fnvOffset, "job:"+n)
			f0, _ := rank(c.seeds, h, firstOcc.UnixMilli())
			f1, s1 := rank(c.seeds, h, firstOcc.Add(time.Second).UnixMilli())
			if c.ids[f0] == "a" && c.ids[f1] == "a" && c.ids[s1] == "gone" {
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
			require.Len(t, s.view.Load().jobs["job:"+name].ids, 3, "gone is still in %s's view", s.cfg.instanceID)
		}
		for _, s := range scheds[:2] {
			shutdown(t, s)
		}

		ran.mu.Lock()
		defer ran.mu.Unlock()
		assert.Equal(t, "a", ran.runs[name][firstOcc.UnixMilli()], "a ran the first occurrence")
		assert.Equal(t, "c", ran.runs[name][second.UnixMilli()], "c ran the second, which a handed over")
	})
}
