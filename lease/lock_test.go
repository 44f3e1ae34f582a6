package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// attemptStore counts Acquire calls and records when they happened.
type attemptStore struct {
	lease.Store
	mu    sync.Mutex
	times []time.Time
	err   error // returned instead of calling Store when set
}

func (s *attemptStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	return s.Store.Acquire(ctx, key, ttl, opts...)
}

func (s *attemptStore) attempts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// newLockStore returns a memory store on the real clock (the synctest
// bubble's clock when called inside one), wrapped to count attempts.
func newLockStore(t *testing.T) *attemptStore {
	t.Helper()
	s, err := memory.New()
	require.NoError(t, err)
	return &attemptStore{Store: s}
}

func TestLock_FreeKey_AcquiresAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLockStore(t)
		start := time.Now()
		l, err := lease.Lock(t.Context(), s, "k", time.Second, lease.WithAcquireOptions(lease.WithOwner("me")))
		require.NoError(t, err)
		assert.Equal(t, "me", l.Owner, "acquire options are passed on")
		assert.Len(t, s.attempts(), 1)
		assert.Equal(t, start, time.Now(), "no wait for a free key")
	})
}

func TestLock_Released_AcquiresAfterRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newLockStore(t)
		holder, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		go func() {
			time.Sleep(700 * time.Millisecond)
			assert.NoError(t, holder.Release(context.Background()))
		}()
		l, err := lease.Lock(ctx, s, "k", time.Second)
		require.NoError(t, err)
		assert.Greater(t, l.Fence, holder.Fence)
		waited := time.Since(start)
		assert.GreaterOrEqual(t, waited, 700*time.Millisecond)
		assert.LessOrEqual(t, waited, 700*time.Millisecond+3*lease.DefaultLockBackoffMax/2,
			"Lock notices a release within one (jittered) max backoff")
		assert.LessOrEqual(t, len(s.attempts()), 6, "backoff, not polling: attempts %d", len(s.attempts()))
	})
}

func TestLock_Expiring_AcquiresWhenHolderStopsBeingLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newLockStore(t)
		const ttl = time.Second
		_, err := s.Store.Acquire(ctx, "k", ttl)
		require.NoError(t, err)
		start := time.Now()
		_, err = lease.Lock(ctx, s, "k", time.Second)
		require.NoError(t, err)
		waited := time.Since(start)
		free := ttl + lease.ExpiryTolerance
		assert.GreaterOrEqual(t, waited, free, "the holder is live until ExpiresAt + ExpiryTolerance")
		assert.LessOrEqual(t, waited, free+5*time.Millisecond,
			"Lock waits LockedError.Remaining when it is shorter than the backoff, so it takes over at once")
	})
}

func TestLock_MaxWait_FailsWithAcquireTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newLockStore(t)
		_, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		start := time.Now()
		l, err := lease.Lock(ctx, s, "k", time.Second, lease.WithMaxWait(3*time.Second))
		require.Nil(t, l)
		require.ErrorIs(t, err, lease.ErrAcquireTimeout)
		require.ErrorIs(t, err, lease.ErrLocked, "the last ErrLocked is wrapped")
		var le *lease.LockedError
		require.ErrorAs(t, err, &le)
		assert.Positive(t, le.Remaining)
		assert.Equal(t, 3*time.Second, time.Since(start), "the last attempt is made when the max wait has passed")
		attempts := s.attempts()
		assert.Equal(t, start.Add(3*time.Second), attempts[len(attempts)-1], "last attempt at the max wait")
		assert.LessOrEqual(t, len(attempts), 8, "3s of backoff from 100ms is a handful of attempts, got %d", len(attempts))
	})
}

func TestLock_Backoff_GrowsAndStaysBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newLockStore(t)
		_, err := s.Store.Acquire(ctx, "k", time.Hour)
		require.NoError(t, err)
		_, err = lease.Lock(ctx, s, "k", time.Second,
			lease.WithMaxWait(20*time.Second), lease.WithBackoff(10*time.Millisecond, 400*time.Millisecond))
		require.ErrorIs(t, err, lease.ErrAcquireTimeout)
		attempts := s.attempts()
		require.Greater(t, len(attempts), 10)
		for i := 1; i < len(attempts)-1; i++ { // the last wait is cut short by the max wait
			gap := attempts[i].Sub(attempts[i-1])
			assert.GreaterOrEqual(t, gap, 5*time.Millisecond, "wait %d: at least half the initial backoff", i)
			assert.LessOrEqual(t, gap, 600*time.Millisecond, "wait %d: at most 1.5 x max backoff", i)
		}
		late := attempts[len(attempts)-2].Sub(attempts[len(attempts)-3])
		assert.GreaterOrEqual(t, late, 200*time.Millisecond, "the wait grows to the max backoff (±50%%)")
	})
}

func TestLock_ContextDeadline_FailsWithAcquireTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLockStore(t)
		_, err := s.Store.Acquire(t.Context(), "k", time.Hour)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = lease.Lock(ctx, s, "k", time.Second)
		require.ErrorIs(t, err, lease.ErrAcquireTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, lease.ErrLocked)
		assert.Equal(t, 700*time.Millisecond, time.Since(start), "Lock returns when the context ends")
	})
}

func TestLock_ContextCanceled_FailsWithAborted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLockStore(t)
		_, err := s.Store.Acquire(t.Context(), "k", time.Hour)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(300*time.Millisecond, cancel)
		_, err = lease.Lock(ctx, s, "k", time.Second)
		require.ErrorIs(t, err, lease.ErrAborted)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, lease.ErrLocked)
		assert.False(t, errors.Is(err, lease.ErrAcquireTimeout))
	})
}

func TestLock_OtherErrors_ReturnedAtOnce(t *testing.T) {
	ctx := t.Context()
	unavailable := &attemptStore{err: lease.ErrUnavailable}
	_, err := lease.Lock(ctx, unavailable, "k", time.Second)
	require.ErrorIs(t, err, lease.ErrUnavailable)
	assert.Len(t, unavailable.attempts(), 1)

	s := newLockStore(t)
	_, err = lease.Lock(ctx, s, "", time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)

	l, err := s.Store.Acquire(ctx, "r", time.Second, lease.WithRound(5))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	_, err = lease.Lock(ctx, s, "r", time.Second, lease.WithAcquireOptions(lease.WithRound(5)))
	require.ErrorIs(t, err, lease.ErrRoundClaimed)
	assert.Len(t, s.attempts(), 2, "one attempt each, no retries")
}

func TestLock_Options_Invalid(t *testing.T) {
	s := newLockStore(t)
	tests := []struct {
		name string
		opt  lease.LockOption
	}{
		{"zero max wait", lease.WithMaxWait(0)},
		{"negative max wait", lease.WithMaxWait(-time.Second)},
		{"sub-ms initial backoff", lease.WithBackoff(time.Microsecond, time.Second)},
		{"max below initial", lease.WithBackoff(time.Second, 500*time.Millisecond)},
		{"invalid round", lease.WithAcquireOptions(lease.WithRound(0))},
		{"nil clock", lease.WithLockClock(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lease.Lock(t.Context(), s, "k", time.Second, tt.opt)
			require.ErrorIs(t, err, lease.ErrInvalidArgument)
		})
	}
	_, err := lease.Lock(t.Context(), nil, "k", time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "nil store")
	//lint:ignore SA1012 a nil context is what is tested
	_, err = lease.Lock(nil, s, "k", time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument, "nil context")
	assert.Empty(t, s.attempts(), "invalid options are rejected before any attempt")
}

// TestLock_WithLockClock_FakeClock drives Lock and a memory store from one
// clockwork fake clock.
func TestLock_WithLockClock_FakeClock(t *testing.T) {
	clock := clockwork.NewFakeClock()
	s, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	ctx := t.Context()
	holder, err := s.Acquire(ctx, "k", time.Second)
	require.NoError(t, err)

	lockCtx, done := context.WithCancel(ctx)
	var (
		got     *lease.Lease
		lockErr error
	)
	go func() {
		defer done()
		got, lockErr = lease.Lock(ctx, s, "k", time.Second, lease.WithLockClock(clock), lease.WithMaxWait(time.Minute))
	}()
	start := clock.Now()
	for clock.BlockUntilContext(lockCtx, 1) == nil {
		clock.Advance(250 * time.Millisecond)
	}
	<-lockCtx.Done()
	require.NoError(t, lockErr)
	assert.Greater(t, got.Fence, holder.Fence)
	assert.GreaterOrEqual(t, clock.Since(start), time.Second+lease.ExpiryTolerance,
		"Lock acquired only once the holder stopped being live on the fake clock")
}

// A nil option is refused, as every package refuses one.
func TestLock_NilOption(t *testing.T) {
	store, err := memory.New()
	require.NoError(t, err)
	_, err = lease.Lock(t.Context(), store, "k", time.Second, nil)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "option must not be nil")
}

func TestMemoryNew_NilOption(t *testing.T) {
	_, err := memory.New(nil)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "option must not be nil")
}
