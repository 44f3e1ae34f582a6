package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

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
	exp, code, err := readExtend(ctx, op, what, resp)
	if err != nil || code == codeDone {
		return exp, err
	}
	return time.Time{}, notHeldCode(op, what, code)
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
	code, err := readRelease(ctx, op, what, resp)
	if err != nil || code == codeDone {
		return err
	}
	return notHeldCode(op, what, code)
}

// readExtend reads an extend script's reply: {1, expiresAtMs} (code
// codeDone and the new expiry) or a single code.
func readExtend(ctx context.Context, op, what string, resp rueidis.RedisResult) (time.Time, int64, error) {
	if err := resp.Error(); err != nil {
		return time.Time{}, 0, wrapErr(ctx, op, what, err)
	}
	v, err := intsReply(resp)
	if err != nil {
		return time.Time{}, 0, internalErr(op, what, err)
	}
	if len(v) == 2 && v[0] == codeDone {
		return time.UnixMilli(v[1]), codeDone, nil
	}
	if len(v) != 1 || v[0] == codeDone {
		return time.Time{}, 0, internalErr(op, what, fmt.Errorf("%w: %v", errBadReply, v))
	}
	return time.Time{}, v[0], nil
}

// readRelease reads a release script's reply: a single code.
func readRelease(ctx context.Context, op, what string, resp rueidis.RedisResult) (int64, error) {
	if err := resp.Error(); err != nil {
		return 0, wrapErr(ctx, op, what, err)
	}
	v, err := intsReply(resp)
	if err != nil {
		return 0, internalErr(op, what, err)
	}
	if len(v) != 1 {
		return 0, internalErr(op, what, fmt.Errorf("%w: %v", errBadReply, v))
	}
	return v[0], nil
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
