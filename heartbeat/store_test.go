package heartbeat_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// fakeStore is a lease.Store kept in memory on an injectable clock, with a
// hook that lets a test fail or hang Extend calls.
type fakeStore struct {
	clock clockwork.Clock

	mu      sync.Mutex
	leases  map[string]*fakeRecord // by ID
	fence   fencing.Token
	extends int // Extend calls seen
	// extendHook, when set, runs first in every Extend with the call's
	// number (1-based); a non-nil error is returned instead of extending.
	extendHook func(ctx context.Context, n int) error
}

type fakeRecord struct {
	key       string
	expiresAt time.Time
}

func newFakeStore(clock clockwork.Clock) *fakeStore {
	return &fakeStore{clock: clock, leases: map[string]*fakeRecord{}}
}

// live reports whether r is live at now, with the tolerance every Store uses.
func live(r *fakeRecord, now time.Time) bool {
	return r.expiresAt.After(now.Add(-lease.ExpiryTolerance))
}

func (s *fakeStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	sent := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.leases {
		if r.key == key && live(r, sent) {
			return nil, &lease.LockedError{}
		}
	}
	id := leasekit.NewID()
	s.fence++
	s.leases[id] = &fakeRecord{key: key, expiresAt: sent.Add(ttl)}
	return lease.Attach(s, &lease.Lease{
		Key: key, ID: id, Fence: s.fence, TTL: ttl,
		AcquiredAt: sent, ExpiresAt: sent.Add(ttl),
		Deadline: lease.LocalDeadline(sent, ttl),
	}), nil
}

func (s *fakeStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	s.mu.Lock()
	s.extends++
	n, hook := s.extends, s.extendHook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, n); err != nil {
			return time.Time{}, err
		}
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.leases[id]
	switch {
	case !ok:
		return time.Time{}, &lease.NotHeldError{Op: "extend", Reason: lease.ReasonNotFound}
	case !live(r, now):
		return time.Time{}, &lease.NotHeldError{Op: "extend", Reason: lease.ReasonExpired}
	}
	r.expiresAt = now.Add(ttl)
	return r.expiresAt, nil
}

func (s *fakeStore) Release(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.leases[id]
	if !ok || !live(r, s.clock.Now()) {
		return &lease.NotHeldError{Op: "release", Reason: lease.ReasonNotFound}
	}
	delete(s.leases, id)
	return nil
}

func (s *fakeStore) IsLocked(ctx context.Context, key string) (bool, error) {
	_, err := s.Lookup(ctx, key)
	return err == nil, nil
}

func (s *fakeStore) Lookup(ctx context.Context, key string) (lease.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.leases {
		if r.key == key && live(r, s.clock.Now()) {
			return lease.Info{KeyHash: leasekit.Hash(key), ExpiresAt: r.expiresAt}, nil
		}
	}
	return lease.Info{}, lease.ErrNotFound
}

func (s *fakeStore) LookupID(ctx context.Context, id string) (lease.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.leases[id]; ok && live(r, s.clock.Now()) {
		return lease.Info{KeyHash: leasekit.Hash(r.key), IDHash: leasekit.Hash(id), ExpiresAt: r.expiresAt}, nil
	}
	return lease.Info{}, lease.ErrNotFound
}

func (s *fakeStore) setExtendHook(hook func(ctx context.Context, n int) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extendHook = hook
}

func (s *fakeStore) extendCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extends
}

// errUnavailable is a transient store error, as a Store would wrap it.
var errUnavailable = fmt.Errorf("%w: connection refused", lease.ErrUnavailable)

// hang is an extend hook that blocks until the call's context ends.
func hang(ctx context.Context, _ int) error {
	<-ctx.Done()
	return fmt.Errorf("%w: %w", lease.ErrTimeout, ctx.Err())
}

var _ lease.Store = (*fakeStore)(nil)
