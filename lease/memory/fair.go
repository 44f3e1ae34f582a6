package memory

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

var _ lease.FairStore = (*Store)(nil)

// place is one fair waiter's place in a key's queue.
type place struct {
	ticket  string
	expires time.Time // live while expires > now
}

// AcquireQueued implements lease.FairStore with lease/redislease's rules: the
// ticket is appended if it is not queued and its place set to expire
// entryTTL from now; tickets at the head whose place expired are dropped;
// then the lease is taken only if the key is free and the ticket is at the
// head. opts may carry lease.WithOwner only.
func (s *Store) AcquireQueued(ctx context.Context, key string, ttl time.Duration, ticket string, entryTTL time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	const op = "acquire"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, opError(op, err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return nil, opError(op, err)
	}
	if err := leasekit.ValidateID(ticket); err != nil {
		return nil, opError(op, err)
	}
	if err := lease.ValidateTTL(entryTTL); err != nil {
		return nil, opError(op, err)
	}
	o, err := lease.ResolveAcquireOptions(opts)
	if err != nil {
		return nil, opError(op, err)
	}
	if o.Round != 0 || o.PauseCheck || o.Trigger {
		return nil, opError(op, errQueuedOptions)
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	sent := s.clock.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	q := s.queues[key]
	queued := false
	for i := range q {
		if q[i].ticket == ticket {
			q[i].expires, queued = now.Add(entryTTL), true
			break
		}
	}
	if !queued {
		q = append(q, place{ticket: ticket, expires: now.Add(entryTTL)})
	}
	for len(q) > 0 && !q[0].expires.After(now) {
		q = q[1:]
	}
	s.queues[key] = q

	ks := s.keys[key]
	if ks == nil {
		ks = &keyState{name: key}
		s.keys[key] = ks
	}
	if live(ks.cur, now) {
		return nil, &lease.LockedError{Remaining: ks.cur.expiresAt.Add(lease.ExpiryTolerance).Sub(now)}
	}
	if q[0].ticket != ticket {
		return nil, &lease.LockedError{Remaining: max(q[0].expires.Sub(now), time.Millisecond)}
	}
	if ks.fence >= maxFence {
		return nil, opError(op, errFenceOverflow)
	}
	if q = q[1:]; len(q) == 0 {
		delete(s.queues, key)
	} else {
		s.queues[key] = q
	}
	l := s.take(key, ks, ttl, o.Owner, now).lease(ttl, sent)
	return lease.Attach(s, l), nil
}

// LeaveQueue implements lease.FairStore.
func (s *Store) LeaveQueue(ctx context.Context, key, ticket string) error {
	const op = "leave queue"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return opError(op, err)
	}
	if err := leasekit.ValidateID(ticket); err != nil {
		return opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[key]
	for i := range q {
		if q[i].ticket != ticket {
			continue
		}
		q = append(q[:i:i], q[i+1:]...)
		if len(q) == 0 {
			delete(s.queues, key)
		} else {
			s.queues[key] = q
		}
		if i == 0 {
			s.watchers.notify(watched{name: key})
		}
		return nil
	}
	return nil
}
