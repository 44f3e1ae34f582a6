package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// The -stall scenario. One run of the tick job freezes its replica: for
// stallFor, every call the replica makes to Redis hangs (as on a partitioned
// or blackholed connection), so its heartbeat cannot renew the lease, and
// the job itself ignores its context, sleeping through the cancellation.
// The lease expires on the server; another replica acquires it with a
// greater fencing token and writes. When the frozen run wakes and makes its
// write, fencing rejects it with fencing.ErrStale.
const (
	// stallAfter: the first tick run won at least this long after start
	// stalls, so a few normal runs come first.
	stallAfter = 2 * time.Second
	// stallFor is how long the run (and its replica's link to Redis) stays
	// frozen: longer than tickTTL plus lease.ExpiryTolerance plus one tick,
	// so that another replica runs tick in the meantime.
	stallFor = 3 * tickTTL
	// minStallRun is the shortest -for that lets the stall finish before
	// shutdown begins.
	minStallRun = 10 * time.Second
)

// stall decides which run stalls: the first tick run won by any replica
// after stallAfter. The zero value never stalls; see newStall.
type stall struct {
	enabled bool
	start   time.Time

	mu   sync.Mutex
	done bool
}

func newStall(enabled bool, start time.Time) *stall {
	return &stall{enabled: enabled, start: start}
}

// claim reports whether the run of the occurrence calling it is the one
// that stalls. Occurrences shared with the report job (every fifth second,
// which includes every rebuild) never stall: the replica could have won the
// report run too, and freezing its link would then strand that lease (its
// release would time out, leaving it held for its 30s TTL).
func (s *stall) claim(now, occurrence time.Time) bool {
	if !s.enabled || now.Sub(s.start) < stallAfter || occurrence.Second()%5 == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.done = true
	return true
}

// freezableStore is a replica's lease store that can be frozen: while it
// is, every lease call (acquire, extend, release) hangs until the freeze
// ends or the call's context is done, like a connection that forwards
// nothing. It is a fleet.Store, so that the replicas take part in the
// control plane (registry, run status, pause, triggers) and cronguard
// (cmd/cronguard) sees them; the control plane's own calls are not frozen.
type freezableStore struct {
	fleet.Store

	mu     sync.Mutex
	thawed chan struct{} // closed when the current freeze ends; nil: not frozen
}

// freeze makes calls hang until the returned thaw function is called.
func (s *freezableStore) freeze() (thaw func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.thawed = ch
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.thawed = nil
		s.mu.Unlock()
		close(ch)
	}
}

// wait blocks while the store is frozen; it returns an error wrapping
// lease.ErrTimeout if ctx ends first.
func (s *freezableStore) wait(ctx context.Context, op string) error {
	s.mu.Lock()
	ch := s.thawed
	s.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: replica frozen by -stall: %w", lease.ErrTimeout, op, context.Cause(ctx))
	}
}

// Acquire waits out a freeze, then acquires; the lease is attached to s, so
// its Extend and Release go through the freeze too.
func (s *freezableStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if err := s.wait(ctx, "acquire"); err != nil {
		return nil, err
	}
	l, err := s.Store.Acquire(ctx, key, ttl, opts...)
	if err != nil {
		return nil, err
	}
	return lease.Attach(s, l), nil
}

// Extend waits out a freeze, then extends.
func (s *freezableStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	if err := s.wait(ctx, "extend"); err != nil {
		return time.Time{}, err
	}
	return s.Store.Extend(ctx, id, ttl)
}

// Release waits out a freeze, then releases.
func (s *freezableStore) Release(ctx context.Context, id string) error {
	if err := s.wait(ctx, "release"); err != nil {
		return err
	}
	return s.Store.Release(ctx, id)
}

// ReleaseWithStatus is fleet.Store's release with the run's status, frozen
// like Release.
func (s *freezableStore) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	if err := s.wait(ctx, "release"); err != nil {
		return 0, err
	}
	return s.Store.ReleaseWithStatus(ctx, l, st)
}
