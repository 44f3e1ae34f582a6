package scheduler

import (
	"context"
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

// releaseOutageStore is an in-process store whose releases fail as
// unavailable while down is set (an outage as a run ends); every other
// call is answered. Its subscribers never hear of a trigger
// (triggerDeafStore): a trigger reaches the replica only through the
// store, as one queued while its subscription was down, or whose message
// was taken with the trigger before it.
type releaseOutageStore struct {
	*memory.Store
	down *atomic.Bool
}

func (s releaseOutageStore) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	return triggerDeafStore{s.Store}.Subscribe(ctx, fn)
}

var errReleaseOutage = lease.ErrUnavailable

func (s releaseOutageStore) Release(ctx context.Context, id string) error {
	if s.down.Load() {
		return errReleaseOutage
	}
	return s.Store.Release(ctx, id)
}

func (s releaseOutageStore) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	if s.down.Load() {
		return 0, errReleaseOutage
	}
	return s.Store.ReleaseWithStatus(ctx, l, st)
}

func (s releaseOutageStore) ReleaseWithStatusBatch(ctx context.Context, leases []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	if s.down.Load() {
		for i := range leases {
			triggers[i], errs[i] = 0, errReleaseOutage
		}
		return
	}
	s.Store.ReleaseWithStatusBatch(ctx, leases, sts, triggers, errs)
}

// A trigger queued while a run holds the job's lease waits for that run's
// release, which tells its replica that a trigger waits. When that release
// fails (the store unreachable as the run ends: the lease expires after its
// TTL), the replica does not know whether a trigger waits, and no other
// replica looks again: it asks the store for one once the lease can no
// longer be live. Without that the trigger waited until it lapsed: seed
// 51460 of the simulator, the only replica with the job.
func TestScheduler_Trigger_TakenAfterTheReleaseOfTheRunBeforeItFailed(t *testing.T) {
	for _, triggered := range []bool{false, true} {
		name := "ScheduledRun"
		if triggered {
			name = "TriggeredRun"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var down atomic.Bool
				store := releaseOutageStore{newMemoryStore(t, nil), &down}
				var rs runStarts
				started := make(chan Run, 4)
				end := make(chan struct{})
				s := newScheduler(t, store, WithInstanceID("a"))
				const ttl = 30 * time.Second
				require.NoError(t, s.Register("report", Every(time.Hour), func(ctx context.Context) error {
					r := rs.record(ctx)
					started <- r
					if len(rs.all()) == 1 {
						<-end // the first run holds the lease until told
					}
					return nil
				}, WithTTL(ttl), WithAttempts(1))) // with attempts, the failed release leaves the occurrence to resume
				time.Sleep(time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)) - time.Second)
				require.NoError(t, s.Start())
				if triggered {
					_, err := store.AddTrigger(t.Context(), "job:report", "ops", 10*time.Minute)
					require.NoError(t, err)
				}
				first := <-started
				assert.Equal(t, triggered, first.Trigger != "", "the first run")

				_, err := store.AddTrigger(t.Context(), "job:report", "ops", 10*time.Minute)
				require.NoError(t, err) // waits for the run's release: the job is locked
				down.Store(true)
				ended := time.Now()
				close(end)
				time.Sleep(MaxCleanup + time.Second) // every try of the release fails
				synctest.Wait()
				down.Store(false)
				assert.Len(t, rs.all(), 1, "the trigger waits while the lease may be live")

				select {
				case second := <-started:
					assert.NotEmpty(t, second.Trigger, "the trigger ran")
					assert.LessOrEqual(t, time.Since(ended), ttl+lease.ExpiryTolerance+time.Second,
						"asked for once the lease could no longer be live")
				case <-time.After(5 * time.Minute):
					t.Fatal("the trigger never ran: its release failed, and no one asked for it again")
				}
				shutdown(t, s)
			})
		})
	}
}
