package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// unrenewableStore fails every Extend as the store being unreachable, so a
// run's heartbeat can only cut off.
type unrenewableStore struct{ lease.Store }

func (u unrenewableStore) Extend(context.Context, string, time.Duration) (time.Time, error) {
	return time.Time{}, fmt.Errorf("%w: test store refuses renewals", lease.ErrUnavailable)
}

// The heartbeat's cut-off is measured on the clock the lease's deadline was
// measured on (the store's), not on the scheduler's: with a scheduler clock
// seconds off the store's, a run whose lease cannot be renewed is still
// cancelled at its local deadline minus the stop margin, before the lease
// expires in the store.
func TestScheduler_Run_HeartbeatCutoffOnTheStoreClock(t *testing.T) {
	for _, offset := range []time.Duration{-3 * time.Second, 3 * time.Second} {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newMemoryStore(t, nil) // on the bubble's clock
				const ttl = 3 * time.Second
				type result struct {
					cause           error
					at              time.Time
					deadline, begin time.Time
				}
				res := make(chan result, 1)
				s := newScheduler(t, unrenewableStore{mem}, WithClock(skewedClock{clockwork.NewRealClock(), offset}))
				time.Sleep(500 * time.Millisecond)
				require.NoError(t, s.Register("cut", Every(time.Minute), func(ctx context.Context) error {
					info, err := mem.Lookup(ctx, "job:cut")
					if err != nil {
						return err
					}
					begin := time.Now()
					<-ctx.Done()
					res <- result{context.Cause(ctx), time.Now(), info.ExpiresAt, begin}
					return nil
				}, WithTTL(ttl)))
				require.NoError(t, s.Start())
				r := <-res
				assert.ErrorIs(t, r.cause, heartbeat.ErrLeaseUnconfirmed)
				// Deadline = sent + ttl - drift; the cut-off is ttl/6 earlier.
				want := ttl - leasekit.Drift(ttl) - ttl/heartbeat.DefaultStopMarginDivisor
				assert.Equal(t, want, r.at.Sub(r.begin), "cut off at the local deadline minus the stop margin, on the store's clock")
				assert.True(t, r.at.Before(r.deadline), "cancelled before the lease expires in the store")
			})
		})
	}
}
