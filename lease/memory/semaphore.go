package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

var _ lease.SemaphoreStore = (*Store)(nil)

// semaphore is what the store keeps per semaphore name; like a key's
// state, it is never deleted (its fence counter must not go back).
type semaphore struct {
	fence   fencing.Token
	holders map[string]*holder // ID -> holder; dropped by the next acquire once not live
}

// holder is one holder of a semaphore.
type holder struct {
	acquiredAt, expiresAt time.Time
}

// liveHolder reports whether h is live at now (the rule of leases).
func liveHolder(h *holder, now time.Time) bool {
	return h.expiresAt.After(now.Add(-lease.ExpiryTolerance))
}

// AcquireSemaphore implements lease.SemaphoreStore: holders no longer live
// are dropped, then the acquire succeeds if fewer than limit remain. The
// Lease is not attached to the store: use it through lease.Semaphore.
func (s *Store) AcquireSemaphore(ctx context.Context, name string, limit int, ttl time.Duration) (*lease.Lease, error) {
	const op = "acquire semaphore"
	name, err := lease.NormalizeKey(name)
	if err != nil {
		return nil, opError(op, err)
	}
	if err := lease.ValidateSemaphoreLimit(limit); err != nil {
		return nil, opError(op, err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return nil, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	sent := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	sem := s.semaphores[name]
	if sem == nil {
		sem = &semaphore{holders: make(map[string]*holder)}
		s.semaphores[name] = sem
	}
	var first time.Time
	for id, h := range sem.holders {
		switch {
		case !liveHolder(h, now):
			delete(sem.holders, id)
		case first.IsZero() || h.expiresAt.Before(first):
			first = h.expiresAt
		}
	}
	if len(sem.holders) >= limit {
		return nil, &lease.LockedError{Remaining: first.Add(lease.ExpiryTolerance).Sub(now)}
	}
	if sem.fence >= maxFence {
		return nil, opError(op, errFenceOverflow)
	}
	id := leasekit.NewID()
	for sem.holders[id] != nil { // 128 random bits: never in practice
		id = leasekit.NewID()
	}
	sem.fence = max(sem.fence+1, lease.FenceFloor(now))
	h := &holder{acquiredAt: now, expiresAt: now.Add(ttl)}
	sem.holders[id] = h
	return &lease.Lease{
		Key:        name,
		ID:         id,
		Fence:      sem.fence,
		TTL:        ttl,
		AcquiredAt: h.acquiredAt,
		ExpiresAt:  h.expiresAt,
		Attempt:    1,
		Deadline:   lease.LocalDeadline(sent, ttl),
	}, nil
}

// heldSemaphore returns holder id of the semaphore name, or why it holds
// nothing, as the Redis store tells: no such holder (never, released, or
// dropped) -> ReasonNotFound; a holder no longer live, not yet dropped ->
// ReasonExpired. The caller holds s.mu.
func (s *Store) heldSemaphore(name, id string, now time.Time) (*semaphore, *holder, lease.NotHeldReason) {
	sem := s.semaphores[name]
	if sem == nil || sem.holders[id] == nil {
		return nil, nil, lease.ReasonNotFound
	}
	h := sem.holders[id]
	if !liveHolder(h, now) {
		return sem, nil, lease.ReasonExpired
	}
	return sem, h, 0
}

// semaphoreArgs validates the name and ID of a holder.
func semaphoreArgs(ctx context.Context, op, name, id string) (string, error) {
	name, err := lease.NormalizeKey(name)
	if err != nil {
		return "", opError(op, err)
	}
	if err := leasekit.ValidateID(id); err != nil {
		return "", opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return "", opError(op, err)
	}
	return name, nil
}

// ExtendSemaphore implements lease.SemaphoreStore.
func (s *Store) ExtendSemaphore(ctx context.Context, name, id string, ttl time.Duration) (time.Time, error) {
	const op = "extend"
	name, err := semaphoreArgs(ctx, op, name, id)
	if err != nil {
		return time.Time{}, err
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return time.Time{}, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	_, h, reason := s.heldSemaphore(name, id, now)
	if h == nil {
		return time.Time{}, &lease.NotHeldError{Op: op, Reason: reason}
	}
	h.expiresAt = now.Add(ttl)
	return h.expiresAt, nil
}

// ReleaseSemaphore implements lease.SemaphoreStore. A holder no longer
// live is removed too (ReasonExpired), as by the Redis store.
func (s *Store) ReleaseSemaphore(ctx context.Context, name, id string) error {
	const op = "release"
	name, err := semaphoreArgs(ctx, op, name, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sem, h, reason := s.heldSemaphore(name, id, s.now())
	if sem != nil {
		delete(sem.holders, id)
	}
	if h == nil {
		return &lease.NotHeldError{Op: op, Reason: reason}
	}
	s.watchers.notify(watched{semaphore: true, name: name})
	return nil
}

// SemaphoreHeld implements lease.SemaphoreStore.
func (s *Store) SemaphoreHeld(ctx context.Context, name string) (int, error) {
	const op = "semaphore held"
	name, err := lease.NormalizeKey(name)
	if err != nil {
		return 0, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return 0, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	if sem := s.semaphores[name]; sem != nil {
		for _, h := range sem.holders {
			if liveHolder(h, now) {
				n++
			}
		}
	}
	return n, nil
}

// WatchSemaphore implements lease.SemaphoreStore: the Watch receives a
// value after every release of a live holder of name. It is always live.
func (s *Store) WatchSemaphore(ctx context.Context, name string) (lease.Watch, error) {
	const op = "watch semaphore"
	name, err := lease.NormalizeKey(name)
	if err != nil {
		return nil, opError(op, fmt.Errorf("semaphore: %w", err))
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	return s.watchers.add(watched{semaphore: true, name: name}), nil
}
