package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cronguard/cronguard/lease"
)

// Extend sets the expiry of the lease with id to server-now + ttl and
// returns the new expiry in server time. See lease.Store. It fails with a
// *lease.NotHeldError whose Reason tells not found, expired and not owner
// apart; an ID this Store cannot have issued is not found without any I/O.
func (s *Store) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	const op = "extend"
	if err := lease.ValidateID(id); err != nil {
		return time.Time{}, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return time.Time{}, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	what := "lease " + lease.ShortID(id)
	ik, ok := indexKey(s.prefix, id)
	if !ok {
		return time.Time{}, notHeld(op, what, lease.ReasonNotFound)
	}
	ttlMs := ttl.Milliseconds()
	resp := extendScript.Exec(ctx, s.client, []string{ik}, []string{
		id,
		strconv.FormatInt(ttlMs, 10),
		strconv.FormatInt(ttlMs+keepExtra.Milliseconds(), 10),
		s.dataPrefix,
	})
	if err := resp.Error(); err != nil {
		return time.Time{}, wrapErr(ctx, op, what, err)
	}
	v, err := intsReply(resp)
	if err != nil {
		return time.Time{}, internalErr(op, what, err)
	}
	if len(v) == 2 && v[0] == 1 {
		return time.UnixMilli(v[1]), nil
	}
	if len(v) != 1 {
		return time.Time{}, internalErr(op, what, fmt.Errorf("%w: %v", errBadReply, v))
	}
	return time.Time{}, notHeldCode(op, what, v[0])
}

// Release deletes the lease with id if and only if id holds it. See
// lease.Store. It fails with a *lease.NotHeldError whose Reason tells not
// found, expired and not owner apart; an ID this Store cannot have issued
// is not found without any I/O.
func (s *Store) Release(ctx context.Context, id string) error {
	const op = "release"
	if err := lease.ValidateID(id); err != nil {
		return fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	what := "lease " + lease.ShortID(id)
	ik, ok := indexKey(s.prefix, id)
	if !ok {
		return notHeld(op, what, lease.ReasonNotFound)
	}
	resp := releaseScript.Exec(ctx, s.client, []string{ik}, []string{id, s.dataPrefix})
	if err := resp.Error(); err != nil {
		return wrapErr(ctx, op, what, err)
	}
	v, err := intsReply(resp)
	if err != nil {
		return internalErr(op, what, err)
	}
	if len(v) != 1 {
		return internalErr(op, what, fmt.Errorf("%w: %v", errBadReply, v))
	}
	if v[0] == 1 {
		return nil
	}
	return notHeldCode(op, what, v[0])
}

// notHeldCode maps an extend or release code other than success.
func notHeldCode(op, what string, code int64) error {
	switch code {
	case codeNotOwner:
		return notHeld(op, what, lease.ReasonNotOwner)
	case codeNotFound:
		return notHeld(op, what, lease.ReasonNotFound)
	case codeExpired:
		return notHeld(op, what, lease.ReasonExpired)
	case codeUnreadable:
		return internalErr(op, what, errUnreadable)
	}
	return internalErr(op, what, fmt.Errorf("%w: code %d", errBadReply, code))
}

func notHeld(op, what string, reason lease.NotHeldReason) error {
	return fmt.Errorf("lease/redis: %s %s: %w", op, what, &lease.NotHeldError{Op: op, Reason: reason})
}
