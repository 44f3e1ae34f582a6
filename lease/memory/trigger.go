package memory

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// trigger is one queued trigger.
type trigger struct {
	id      string
	at      time.Time // when it was queued, store time
	expires time.Time // live while expires > now
}

// triggerQueues are the queued triggers of every key, oldest first. A key
// whose queue empties is deleted, and all queues are swept of expired
// triggers whenever the number queued has doubled since the last sweep, so
// memory stays proportional to the live triggers.
type triggerQueues struct {
	queues  map[string][]trigger // normalized key -> its triggers, oldest first
	queued  int                  // triggers in queues, live or not
	sweepAt int                  // queued at which add next sweeps every queue
}

// live returns key's queue without its expired triggers, which it drops.
func (q *triggerQueues) live(key string, now time.Time) []trigger {
	ts := q.queues[key]
	kept := ts[:0]
	for _, t := range ts {
		if t.expires.After(now) {
			kept = append(kept, t)
		}
	}
	clear(ts[len(kept):]) // let the dropped IDs go
	q.queued -= len(ts) - len(kept)
	if len(kept) == 0 {
		delete(q.queues, key)
		return nil
	}
	q.queues[key] = kept
	return kept
}

// add queues t for key, sweeping every queue first when due.
func (q *triggerQueues) add(key string, t trigger, now time.Time) {
	if q.queued >= q.sweepAt {
		for k := range q.queues {
			q.live(k, now)
		}
		q.sweepAt = max(2*q.queued, minSweep)
	}
	q.queues[key] = append(q.queues[key], t)
	q.queued++
}

// pop removes and returns key's oldest live trigger, dropping the expired
// ones, and false when none is live.
func (q *triggerQueues) pop(key string, now time.Time) (trigger, bool) {
	ts := q.live(key, now)
	if len(ts) == 0 {
		return trigger{}, false
	}
	t := ts[0]
	ts[0] = trigger{}
	q.queued--
	if len(ts) == 1 {
		delete(q.queues, key)
	} else {
		q.queues[key] = ts[1:]
	}
	return t, true
}

// acquireTrigger is Acquire with lease.WithTrigger, under s.mu: take the
// free key to run its oldest live trigger, consuming it, and claim the
// run's round: now, or the millisecond after the recorded round when that
// is not before now (a fast replica claimed it). An occurrence still open
// is given up (Lease.Superseded): it can never be resumed after a later
// round. With pauseCheck a paused key refuses it and keeps its triggers.
func (s *Store) acquireTrigger(key string, ks *keyState, ttl time.Duration, owner string, pauseCheck bool, now, sent time.Time) (*lease.Lease, error) {
	const op = "acquire"
	if _, paused := s.pauses[key]; pauseCheck && paused {
		return nil, opError(op, lease.ErrPaused)
	}
	if live(ks.cur, now) {
		return nil, &lease.LockedError{Remaining: ks.cur.expiresAt.Add(lease.ExpiryTolerance).Sub(now)}
	}
	if ks.fence >= maxFence {
		return nil, opError(op, errFenceOverflow)
	}
	t, ok := s.triggers.pop(key, now)
	if !ok {
		return nil, opError(op, lease.ErrNoTrigger)
	}
	l := s.take(key, ks, ttl, owner, now).lease(ttl, sent)
	l.Trigger = t.id
	l.PrevRound = ks.round
	ks.round = max(now.UnixMilli(), ks.round+1)
	l.Round = ks.round
	l.Superseded = s.supersede(ks, l.Round, now)
	return lease.Attach(s, l), nil
}

// AddTrigger queues a trigger for key, living ttl unless consumed, and
// announces it on the control channel (a fleet.MessageTrigger). See
// fleet.Store. ttl must be a positive whole number of milliseconds up to
// fleet.MaxTriggerTTL; by must pass lease.ValidateOwner. The trigger's ID is 12
// random bytes, base64url; At and Expires are in the store's time.
func (s *Store) AddTrigger(ctx context.Context, key, by string, ttl time.Duration) (fleet.Trigger, error) {
	const op = "trigger"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return fleet.Trigger{}, opError(op, err)
	}
	if lease.ValidateTTL(ttl) != nil || ttl > fleet.MaxTriggerTTL {
		return fleet.Trigger{}, opError(op, fmt.Errorf("%w: trigger ttl must be a whole number of milliseconds from 1ms to %s, got %s",
			lease.ErrInvalidArgument, fleet.MaxTriggerTTL, ttl))
	}
	if err := lease.ValidateOwner(by); err != nil {
		return fleet.Trigger{}, opError(op, fmt.Errorf("by: %w", err))
	}
	if err := ctxError(ctx); err != nil {
		return fleet.Trigger{}, opError(op, err)
	}
	id := newTriggerID()

	s.mu.Lock()
	now := s.now()
	t := trigger{id: id, at: now, expires: now.Add(ttl)}
	s.triggers.add(key, t, now)
	s.mu.Unlock()

	s.channel.publish(fleet.Message{Kind: fleet.MessageTrigger, Key: key, Trigger: id})
	return fleet.Trigger{ID: id, Key: key, By: by, At: t.at, Expires: t.expires}, nil
}

// PendingTriggers returns how many live triggers wait for key.
func (s *Store) PendingTriggers(ctx context.Context, key string) (int, error) {
	const op = "triggers"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return 0, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return 0, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.triggers.live(key, s.now())), nil
}

// PendingTriggersBatch sets counts[i] to the number of live triggers
// waiting for keys[i] (fleet.TriggerCounter), all at one instant.
func (s *Store) PendingTriggersBatch(ctx context.Context, keys []string, counts []int) error {
	const op = "triggers"
	if len(counts) < len(keys) {
		return opError(op, fmt.Errorf("%w: counts must be as long as keys", lease.ErrInvalidArgument))
	}
	nkeys := make([]string, len(keys))
	for i, k := range keys {
		nk, err := lease.NormalizeKey(k)
		if err != nil {
			return opError(op, err)
		}
		nkeys[i] = nk
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for i, k := range nkeys {
		counts[i] = len(s.triggers.live(k, now))
	}
	return nil
}

// newTriggerID returns a fresh trigger ID: 12 random bytes, base64url.
func newTriggerID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
