package redislease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
)

// lockCall is what one Lock call did, as its store saw it. Its fields
// other than sleeping are touched by the Lock's goroutine only.
type lockCall struct {
	sleepsAfter int           // the refused attempt after which the Lock sleeps
	attempts    int           // attempts made
	sleeping    chan struct{} // closed once attempt sleepsAfter was refused
	won         time.Time     // when the winning attempt returned
}

// lockCallKey is the context key of a Lock call's *lockCall.
type lockCallKey struct{}

// callStore is a lease.Store that reports the attempts of each Lock call
// made through it to the call's *lockCall (from the attempt's context).
// It hides the Store's Watch: a Lock on it polls.
type callStore struct{ lease.Store }

func (s callStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	l, err := s.Store.Acquire(ctx, key, ttl, opts...)
	c, ok := ctx.Value(lockCallKey{}).(*lockCall)
	if !ok {
		return l, err
	}
	c.attempts++
	switch {
	case err == nil:
		c.won = time.Now()
	case errors.Is(err, lease.ErrLocked) && c.attempts == c.sleepsAfter:
		close(c.sleeping)
	}
	return l, err
}

// notifiedCallStore is callStore with the Store's Watch: a Lock on it
// sleeps until a release is notified.
type notifiedCallStore struct {
	callStore
	lease.Notifier
}

// handOff is one hand-off of a run of runHandOffs: a waiter's Lock got
// the key after the previous holder released it.
type handOff struct {
	waiter  int
	fence   fencing.Token
	attempt int           // the attempt of the Lock that won the key
	latency time.Duration // from just before the release was sent to the return of the winning attempt
}

// handOffRun is a run of hand-offs of a key among waiting Locks.
type handOffRun struct {
	key      string
	notified bool // the Locks see the store's Watch (it must be a lease.Notifier); else they poll
	total    int  // hand-offs to make
	waiters  int
	// hold is how long a waiter holds the key, after its next Lock sleeps,
	// before it releases it.
	hold time.Duration
	// waiting, unless nil, is called once all waiters first sleep, before
	// the first release.
	waiting func()
	opts    []lease.LockOption // of every Lock
}

// run hands r.key on st from waiter to waiter, r.total times, and returns
// the hand-offs in the order the key was held. A holder takes the key
// first; the waiters' Locks wait for it. Each waiter that gets the key
// starts its next Lock while it holds it, waits until that Lock sleeps (it
// found the key held: it waits again, behind the others), holds the key
// for r.hold more, and releases it. So at every release all waiters sleep
// in a Lock, and every hand-off goes to one that was waiting; a waiter
// that released first and locked after would take the free key back at
// once instead. Notified Locks sleep after their second attempt (attempt,
// watch, attempt), polling ones after their first. Once the last hand-off
// is made, the Locks still waiting are cancelled and the key released.
func (r handOffRun) run(ctx context.Context, tb testing.TB, st lease.Store) []handOff {
	tb.Helper()
	var store lease.Store = callStore{st}
	sleepsAfter := 1
	if r.notified {
		store = notifiedCallStore{callStore{st}, st.(lease.Notifier)}
		sleepsAfter = 2
	}
	holder, err := st.Acquire(ctx, r.key, time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	lockCtx, stop := context.WithCancel(ctx)
	defer stop()
	type won struct {
		l    *lease.Lease // nil: the Lock failed or was stopped
		call *lockCall
	}
	var (
		mu       sync.Mutex
		released time.Time // just before the last release was sent
		log      []handOff
		holding  atomic.Int32
		locks    sync.WaitGroup // the Lock goroutines
		turns    sync.WaitGroup // the waiters
	)
	// lock starts a Lock in a goroutine of its own and returns once it
	// sleeps (or returned); what it got comes on the channel.
	lock := func() <-chan won {
		c := &lockCall{sleepsAfter: sleepsAfter, sleeping: make(chan struct{})}
		got := make(chan won, 1)
		returned := make(chan struct{})
		locks.Go(func() {
			defer close(returned)
			l, err := lease.Lock(context.WithValue(lockCtx, lockCallKey{}, c), store, r.key, time.Minute, r.opts...)
			if err != nil && lockCtx.Err() == nil {
				tb.Errorf("lock: %v", err)
			}
			got <- won{l, c}
		})
		select {
		case <-c.sleeping:
		case <-returned:
		}
		return got
	}
	firsts := make([]<-chan won, r.waiters)
	for i := range r.waiters {
		firsts[i] = lock()
	}
	for i := range r.waiters {
		turns.Go(func() {
			for got := firsts[i]; ; {
				w := <-got
				if w.l == nil {
					return
				}
				if n := holding.Add(1); n != 1 {
					tb.Errorf("%d holders at once", n)
				}
				mu.Lock()
				log = append(log, handOff{waiter: i, fence: w.l.Fence, attempt: w.call.attempts, latency: w.call.won.Sub(released)})
				last := len(log) == r.total
				mu.Unlock()
				if last {
					stop() // the others stop waiting while the key is still held
					locks.Wait()
				} else {
					got = lock() // behind the others, before the release
				}
				time.Sleep(r.hold) // real time: a benchmark measures it
				holding.Add(-1)
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				if err := w.l.Release(ctx); err != nil {
					tb.Errorf("release: %v", err)
				}
				if last {
					return
				}
			}
		})
	}
	if r.waiting != nil {
		r.waiting()
	}
	mu.Lock()
	released = time.Now()
	mu.Unlock()
	if err := holder.Release(ctx); err != nil {
		tb.Error(err)
	}
	turns.Wait()
	stop() // when the run broke off before the last hand-off
	locks.Wait()
	return log
}

// Twenty Lock callers hand a key on among themselves 200 times: each one
// that gets the key starts waiting for it again (a Lock that sleeps) and
// then releases it, so that at every release all twenty wait. Their Lock
// clock is a fake clock that never moves, so no wait can end on a timer:
// all 200 hand-offs are woken by release notifications, none is lost (a
// lost one would leave every waiter asleep), and the key is held by one
// waiter at a time, in the order of its fences. The twenty share one
// subscription to the key's channel, which ends with the last of them.
func TestLock_Notified_TwoHundredHandOffsAmongTwentyWaiters(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t, WithLogger(quietLogger()))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // a lost hand-off fails, not hangs
	defer cancel()
	const key, total, waiters = "handoff", 200, 20
	ks, err := keysFor(st.prefix, key)
	require.NoError(t, err)
	var subscribers int64
	frozen := clockwork.NewFakeClock()
	log := handOffRun{
		key: key, notified: true, total: total, waiters: waiters,
		waiting: func() { subscribers = shardSubscribers(t, srv, ks.data) },
		opts:    []lease.LockOption{lease.WithLockClock(frozen), lease.WithMaxWait(time.Hour)},
	}.run(ctx, t, st)

	require.Len(t, log, total, "every release handed the key on; none was lost")
	winners := make(map[int]bool)
	for i, h := range log {
		winners[h.waiter] = true
		assert.GreaterOrEqual(t, h.attempt, 3, "hand-off %d: won after a sleep (attempt, watch, attempt, wake)", i)
		if i > 0 {
			assert.Greater(t, h.fence, log[i-1].fence, "hand-off %d: fences grow in the order the key was held", i)
		}
	}
	assert.Greater(t, len(winners), 1, "the key went from waiter to waiter")
	assert.EqualValues(t, 1, subscribers, "one subscription for all twenty waiters of the key")
	assert.Zero(t, shardSubscribers(t, srv, ks.data), "the subscription ended with the last waiter")
}
