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

// A replica whose earlier run of a job still executes, its lease lost,
// cannot run the job's next occurrence. When it is the occurrence's first
// choice, or its backup while the first choice is gone (a replica still in
// the views, as a crashed or stopped one is until its registry entry
// lapses), it hands the occurrence over on the control channel, and the
// third replica runs it at once; otherwise nobody would: the first choice
// does not claim, the backup skips it as running here, and the third is
// chosen for nothing. Found by the fault run of seed 20261241: the first
// choice r1 was stopped (SIGSTOP) 32ms before the occurrence, its backup
// r3 still ran the job's earlier occurrence after a rollback took its
// lease, and r2 did nothing.
func TestScheduler_HandOver_AnOccurrenceItsChosenReplicaCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, backup string // of the second occurrence
		overlap       OverlapPolicy
	}{
		{"FirstChoice", "a", "gone", OverlapSkip},
		{"BackupWhileTheFirstChoiceIsGone", "gone", "a", OverlapSkip},
		// With OverlapBufferOne the occurrence waits for the run here to
		// end, which outlasts its wait (to 0.1s before the next
		// occurrence): without the hand-over, its wait ends unclaimed.
		{"FirstChoice/BufferOne", "a", "gone", OverlapBufferOne},
		{"BackupWhileTheFirstChoiceIsGone/BufferOne", "gone", "a", OverlapBufferOne},
	} {
		t.Run(tc.name, func(t *testing.T) { handOverScenario(t, tc.first, tc.backup, tc.overlap) })
	}
}

// handOverScenario runs a job with overlap policy overlap on replicas a, c
// and gone, whose first occurrence from 20s on is a's, and whose second
// has first choice first and backup backup. a's run of the first
// occurrence ignores its context past the second occurrence's wait, its
// lease lost at its first renewal; gone stops before the first
// occurrence, its registry entry left behind. c must run the second
// occurrence.
func handOverScenario(t *testing.T, first, backup string, overlap OverlapPolicy) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "c", "gone"}
		firstOcc := time.Now().Truncate(time.Second).Add(20 * time.Second)
		name := jobNameWhere(t, "a", ids, func(v *fleetView, key string) bool {
			f0, _ := ranked(v, key, firstOcc.UnixMilli())
			f1, s1 := ranked(v, key, firstOcc.Add(time.Second).UnixMilli())
			return f0 == "a" && f1 == first && s1 == backup
		})
		second := firstOcc.Add(time.Second)

		ran := newRanBy(t)
		job := func(ctx context.Context) error {
			if r, _ := RunFromContext(ctx); r.Occurrence.Equal(firstOcc) {
				time.Sleep(2500 * time.Millisecond) // ignores its context, past the second occurrence and its wait
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
			require.NoError(t, s.Register(name, Every(time.Second), job, WithTTL(time.Second), WithOverlap(overlap)))
			require.NoError(t, s.Start())
			scheds = append(scheds, s)
		}
		time.Sleep(10 * time.Second)
		shutdown(t, scheds[2]) // its entry stays in the registry: it lapses in 3 hours
		for _, s := range scheds[:2] {
			setView(s, ids, "job:"+name) // as the next read of the registry gives it
		}
		time.Sleep(time.Until(second) + 1200*time.Millisecond) // past the second occurrence's wait (OverlapBufferOne)
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
