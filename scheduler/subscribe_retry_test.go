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

// subscribeOutageStore is an in-process store whose control channel
// cannot be subscribed to before until (on the bubble's clock): a store
// unreachable as the replica starts, or its channel refused.
type subscribeOutageStore struct {
	*memory.Store
	until time.Time
}

func (s subscribeOutageStore) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	if time.Now().Before(s.until) {
		return nil, lease.ErrUnavailable
	}
	return s.Store.Subscribe(ctx, fn)
}

// A replica whose first subscription to the control channel failed
// subscribes again within a few seconds of the store answering, not at
// its next registry refresh (30s here): a trigger queued before it
// started (announced to no replica that had the job) is found by the
// look for waiting triggers that follows a subscription, and lapsed when
// that came after its expiry: seed 53686 of the simulator.
func TestScheduler_ControlPlane_SubscribesAgainSoonAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(30 * time.Minute) // half an hour from the job's occurrences: none runs (and releases) here
		back := time.Now().Add(10 * time.Second)
		store := subscribeOutageStore{newMemoryStore(t, nil), back}
		_, err := store.AddTrigger(t.Context(), "job:report", "ops", time.Minute)
		require.NoError(t, err)
		started := make(chan time.Time, 1)
		s := newScheduler(t, store, WithInstanceID("a"), WithRegistryRefresh(30*time.Second))
		require.NoError(t, s.Register("report", Every(time.Hour), func(ctx context.Context) error {
			if r, _ := RunFromContext(ctx); r.Trigger != "" {
				started <- time.Now()
			}
			return nil
		}))
		require.NoError(t, s.Start())
		select {
		case at := <-started:
			t.Logf("ran %s after the store answered", at.Sub(back))
			assert.False(t, at.Before(back), "no subscription, no look for the trigger, before the store answers")
			assert.LessOrEqual(t, at.Sub(back), subscribeMaxWait*3/2+resumePoll+time.Second, "subscribed again within a backoff (and a poll) of the store answering")
		case <-time.After(time.Minute):
			t.Fatal("the trigger never ran")
		}
		shutdown(t, s)
	})
}
