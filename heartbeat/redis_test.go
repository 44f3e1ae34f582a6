package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// These tests run the heartbeat against a real redis-server through the
// real lease/redislease Store, and assert on outcomes ordered on one monotonic
// clock (time.Now readings in this process). TTLs are short; the sleeps
// only set the phase of a fault, they decide nothing.

// redisTTL is short, yet long enough that 20 holders renewing at once on a
// loaded 2-core machine with -race confirm their renewals before the fault
// (at 300ms-1s, round trips of several hundred milliseconds under a load
// average of 16 made rounds fail before the fault was even applied).
const redisTTL = 2 * time.Second

var redisPrefixSeq atomic.Int64

// newRedisStore returns a lease/redislease Store on client under a prefix no
// other test uses, so tests on one server do not interfere.
func newRedisStore(t *testing.T, client rueidis.Client, prefix string) *redislease.Store {
	t.Helper()
	st, err := redislease.New(client, redislease.WithPrefix(prefix), redislease.WithLogger(discard))
	require.NoError(t, err)
	return st
}

func uniqueRedisPrefix() string {
	return fmt.Sprintf("hbtest%d", redisPrefixSeq.Add(1))
}

// proxiedClient returns a rueidis client whose connection goes through a
// fresh proxy to srv, closed when the test ends (after the proxy is
// restored, so that closing does not wait on a blackholed connection).
func proxiedClient(t *testing.T, srv *testutil.Redis) (rueidis.Client, *testutil.Proxy) {
	t.Helper()
	proxy := testutil.NewProxy(t, srv.Addr)
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:      []string{proxy.Addr},
		DisableCache:     true,
		ConnWriteTimeout: time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	t.Cleanup(proxy.Restore) // runs before c.Close
	return c, proxy
}

// TestStart_Redis_BlackholedHolderDoneBeforeOtherAcquires: the holder's
// connection is blackholed (open, but nothing gets through); a second
// client, connected directly, polls Acquire on the same key. The holder's
// context must be done strictly before that acquire succeeds. 20 rounds run
// at once, each on its own key and proxy, each cutting at a different phase
// of the renewal cycle.
func TestStart_Redis_BlackholedHolderDoneBeforeOtherAcquires(t *testing.T) {
	srv := testutil.StartRedis(t)
	direct := srv.Client(t)
	const rounds = 20
	var wg sync.WaitGroup
	results := make([]blackholeResult, rounds)
	for i := range rounds {
		holderClient, proxy := proxiedClient(t, srv)
		prefix := uniqueRedisPrefix()
		holder := newRedisStore(t, holderClient, prefix)
		other := newRedisStore(t, direct, prefix)
		phase := time.Duration(i) * redisTTL / heartbeat.DefaultIntervalDivisor / rounds
		wg.Go(func() { results[i] = blackholeRound(t, holder, other, proxy, phase) })
	}
	wg.Wait()
	for i, r := range results {
		if !assert.NoError(t, r.err, "round %d", i) {
			continue
		}
		// The server and this process share CLOCK_REALTIME (one machine):
		// the holder must be done before its lease expires on the server,
		// not merely before the server's 1s tolerance has passed too.
		assert.True(t, r.done.Before(r.expiresAt),
			"round %d: holder done %s after its lease expired on the server", i, r.done.Sub(r.expiresAt))
		assert.True(t, r.done.Before(r.acquired),
			"round %d: holder done %s after the other client acquired", i, r.done.Sub(r.acquired))
		assert.ErrorIs(t, r.cause, heartbeat.ErrLeaseUnconfirmed, "round %d", i)
		assert.Equal(t, r.cause, r.stopErr, "round %d: stop returns the cause", i)
		assert.Greater(t, r.otherFence, r.holderFence, "round %d", i)
		t.Logf("round %d: holder done %s before its server-side expiry, %s before the other acquired",
			i, r.expiresAt.Sub(r.done), r.acquired.Sub(r.done))
	}
}

type blackholeResult struct {
	done, acquired          time.Time // on this process's clock (monotonic and wall)
	expiresAt               time.Time // the lease's last confirmed expiry, server time
	cause, stopErr          error
	holderFence, otherFence fencing.Token
	err                     error // the round could not run
}

// blackholeRound runs one round of the blackhole test. It runs on its own
// goroutine, so it reports failures in its result instead of stopping the
// test.
func blackholeRound(t *testing.T, holder, other lease.Store, proxy *testutil.Proxy, phase time.Duration) (r blackholeResult) {
	ctx := t.Context()
	l, err := holder.Acquire(ctx, "job", redisTTL)
	if err != nil {
		r.err = fmt.Errorf("holder acquire: %w", err)
		return r
	}
	r.holderFence = l.Fence
	extended := make(chan struct{}, 1)
	var mu sync.Mutex
	expiresAt := l.ExpiresAt
	hctx, stop, err := heartbeat.Start(ctx, holder, l, heartbeat.WithLogger(discard),
		heartbeat.WithObserver(func(e heartbeat.Event) {
			if e.Kind == heartbeat.EventRenewed {
				mu.Lock()
				expiresAt = e.ExpiresAt
				mu.Unlock()
				select {
				case extended <- struct{}{}:
				default:
				}
			}
		}))
	if err != nil {
		r.err = fmt.Errorf("start: %w", err)
		return r
	}
	doneAt := watchDone(hctx)

	// One confirmed renewal through the proxy, then the fault.
	select {
	case <-extended:
	case <-hctx.Done():
		r.err = fmt.Errorf("renewals through the proxy failed before the fault: %w", context.Cause(hctx))
		_ = stop()
		return r
	}
	time.Sleep(phase)
	proxy.Blackhole()

	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	for r.acquired.IsZero() {
		ol, err := other.Acquire(ctx, "job", redisTTL)
		switch {
		case err == nil:
			r.acquired = time.Now()
			r.otherFence = ol.Fence
		case !errors.Is(err, lease.ErrLocked):
			r.err = fmt.Errorf("other acquire: %w", err)
			_ = stop()
			return r
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			r.err = errors.New("the other client never acquired")
			_ = stop()
			return r
		}
	}
	r.done = doneAt()
	r.cause = context.Cause(hctx)
	r.stopErr = stop()
	mu.Lock()
	r.expiresAt = expiresAt
	mu.Unlock()
	return r
}
