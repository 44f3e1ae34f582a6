package redislease

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

var _ lease.FairStore = (*Store)(nil)

// The fair queue's scripts.
var (
	acquireQueuedScript = rueidis.NewLuaScript(luascripts.AcquireQueued)
	queueLeaveScript    = rueidis.NewLuaScript(luascripts.QueueLeave)
)

// A key's queue of fair waiters is two keys in the key's slot:
//
//	P:queue:{G}        list of tickets, in arrival order
//	P:queue:{G}:exp    hash: ticket -> expiresAtMs (server)
//
// Both expire with the longest-lived place. Tickets that left are removed
// from both; tickets whose place expired are dropped when they reach the
// head.
func (ks keyset) queue(prefix string) (list, expiries string) {
	list = tagged(prefix, "queue", ks.tag)
	return list, list + ":exp"
}

// AcquireQueued makes one attempt of the fair waiter ticket at the lease on
// key for ttl: it keeps the ticket's place in the key's queue for
// entryTTL, and takes the lease only if the key is free and the ticket is
// the oldest live one (one script). See lease.FairStore. An attempt whose
// outcome is unknown is rolled back as Acquire's is (the lease, if it was
// taken, is released; the ticket stays queued until it leaves or its
// place expires).
func (s *Store) AcquireQueued(ctx context.Context, key string, ttl time.Duration, ticket string, entryTTL time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	const op = "acquire"
	nkey, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, opErr(op, "", err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return nil, opErr(op, "", err)
	}
	if err := leasekit.ValidateID(ticket); err != nil {
		return nil, opErr(op, "", fmt.Errorf("ticket: %w", err))
	}
	if err := lease.ValidateTTL(entryTTL); err != nil {
		return nil, opErr(op, "", fmt.Errorf("queue entry: %w", err))
	}
	o, err := lease.ResolveAcquireOptions(opts)
	if err != nil {
		return nil, opErr(op, "", err)
	}
	if o.Round != 0 || o.PauseCheck || o.Trigger {
		return nil, opErr(op, "", fmt.Errorf("%w: a queued acquire claims no round, honours no pause and runs no trigger", lease.ErrInvalidArgument))
	}
	ks, err := keysFor(s.prefix, nkey)
	if err != nil {
		return nil, opErr(op, "", err)
	}
	owner, ownerJSON := o.Owner, ownerJSONOf(o.Owner)
	id, ik := newLeaseID(s.prefix, ks.slot)
	keys, args := acquireKeysArgs(ks, ik, "", id, ttl, nkey, ownerJSON, lease.AcquireOptions{})
	list, expiries := ks.queue(s.prefix)
	keys = []string{keys[0], keys[1], keys[2], list, expiries}
	args = append(args[:5:5], ticket, strconv.FormatInt(entryTTL.Milliseconds(), 10))
	sent := s.clock.Now()
	resp := acquireQueuedScript.Exec(ctx, s.client, keys, args)
	if err := resp.Error(); err != nil {
		name := keyName(ks)
		if outcomeUnknown(ctx, err) {
			s.rollback(ctx, ks, ik, id, 0, 0, ttl, name)
		}
		return nil, wrapErr(ctx, op, name, err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return nil, internalErr(op, keyName(ks), err)
	}
	switch {
	case r.acquired():
	case r.n == 2 && r.v[0] == 0:
		return nil, opErr(op, keyName(ks), &lease.LockedError{Remaining: time.Duration(r.v[1]) * time.Millisecond})
	case r.is(codeUnreadable):
		return nil, internalErr(op, keyName(ks), errUnreadable)
	default:
		return nil, internalErr(op, keyName(ks), r.bad())
	}
	fence, err := checkFence(r.v[1])
	if err != nil {
		s.rollback(ctx, ks, ik, id, 0, 0, ttl, keyName(ks))
		return nil, internalErr(op, keyName(ks), err)
	}
	s.warnFence(keyName(ks), fence, time.UnixMilli(r.v[3]))
	return lease.Attach(s, &lease.Lease{
		Key:        nkey,
		ID:         id,
		Fence:      fence,
		Owner:      owner,
		TTL:        ttl,
		AcquiredAt: time.UnixMilli(r.v[3]),
		ExpiresAt:  time.UnixMilli(r.v[2]),
		Attempt:    1,
		Deadline:   lease.LocalDeadline(sent, ttl),
	}), nil
}

// LeaveQueue takes ticket out of key's queue, waking the key's waiters when
// it was at the head. See lease.FairStore.
func (s *Store) LeaveQueue(ctx context.Context, key, ticket string) error {
	const op = "leave queue"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return err
	}
	if err := leasekit.ValidateID(ticket); err != nil {
		return opErr(op, "", fmt.Errorf("ticket: %w", err))
	}
	list, expiries := ks.queue(s.prefix)
	if err := queueLeaveScript.Exec(ctx, s.client, []string{list, expiries, ks.data}, []string{ticket}).Error(); err != nil {
		return wrapErr(ctx, op, what, err)
	}
	return nil
}
