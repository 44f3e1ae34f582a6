package redislease

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Extend sets the expiry of the lease with id to server-now + ttl and
// returns the new expiry in server time. See lease.Store. It fails with a
// *lease.NotHeldError whose Reason tells not found, expired and not owner
// apart; an ID this Store cannot have issued is not found without any I/O.
func (s *Store) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	const op = "extend"
	if err := leasekit.ValidateID(id); err != nil {
		return time.Time{}, opErr(op, "", err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return time.Time{}, opErr(op, "", err)
	}
	ik, ok := indexKey(s.prefix, id)
	if !ok {
		return time.Time{}, notHeld(op, id, lease.ReasonNotFound)
	}
	ttlMs := ttl.Milliseconds()
	resp := extendScript.Exec(ctx, s.client, []string{ik}, []string{
		id,
		strconv.FormatInt(ttlMs, 10),
		strconv.FormatInt(ttlMs+dataKeep.Milliseconds(), 10),
		strconv.FormatInt(ttlMs+indexKeep.Milliseconds(), 10),
		s.dataPrefix,
	})
	exp, code, err := readExtend(ctx, op, id, resp)
	if err != nil || code == codeDone {
		return exp, err
	}
	return time.Time{}, notHeldCode(op, id, code)
}

// Release deletes the lease with id if and only if id holds it. See
// lease.Store. It fails with a *lease.NotHeldError whose Reason tells not
// found, expired and not owner apart; an ID this Store cannot have issued
// is not found without any I/O.
func (s *Store) Release(ctx context.Context, id string) error {
	const op = "release"
	if err := leasekit.ValidateID(id); err != nil {
		return opErr(op, "", err)
	}
	ik, ok := indexKey(s.prefix, id)
	if !ok {
		return notHeld(op, id, lease.ReasonNotFound)
	}
	resp := releaseScript.Exec(ctx, s.client, []string{ik}, []string{id, s.dataPrefix})
	code, err := readRelease(ctx, op, id, resp)
	if err != nil || code == codeDone {
		return err
	}
	return notHeldCode(op, id, code)
}

// leaseName names the lease with id in errors: "lease …" and the last
// characters of the ID (lease.ShortID). Only error paths call it.
func leaseName(id string) string {
	return "lease " + lease.ShortID(id)
}

// readExtend reads an extend script's reply about the lease with id:
// {1, expiresAtMs} (code codeDone and the new expiry) or a single code.
func readExtend(ctx context.Context, op, id string, resp rueidis.RedisResult) (time.Time, int64, error) {
	if err := resp.Error(); err != nil {
		return time.Time{}, 0, wrapErr(ctx, op, leaseName(id), err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return time.Time{}, 0, internalErr(op, leaseName(id), err)
	}
	switch {
	case r.n == 2 && r.v[0] == codeDone:
		return time.UnixMilli(r.v[1]), codeDone, nil
	case r.n != 1 || r.v[0] == codeDone:
		return time.Time{}, 0, internalErr(op, leaseName(id), r.bad())
	}
	return time.Time{}, r.v[0], nil
}

// readRelease reads a release script's reply about the lease with id: a
// single code.
func readRelease(ctx context.Context, op, id string, resp rueidis.RedisResult) (int64, error) {
	if err := resp.Error(); err != nil {
		return 0, wrapErr(ctx, op, leaseName(id), err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return 0, internalErr(op, leaseName(id), err)
	}
	if r.n != 1 {
		return 0, internalErr(op, leaseName(id), r.bad())
	}
	return r.v[0], nil
}

// notHeldCode maps an extend or release code other than success, about the
// lease with id.
func notHeldCode(op, id string, code int64) error {
	switch code {
	case codeNotOwner:
		return notHeld(op, id, lease.ReasonNotOwner)
	case codeNotFound:
		return notHeld(op, id, lease.ReasonNotFound)
	case codeExpired:
		return notHeld(op, id, lease.ReasonExpired)
	case codeUnreadable:
		return internalErr(op, leaseName(id), errUnreadable)
	}
	return internalErr(op, leaseName(id), fmt.Errorf("%w: code %d", errBadReply, code))
}

// notHeld is the error for the lease with id not being held, and why.
func notHeld(op, id string, reason lease.NotHeldReason) error {
	return opErr(op, leaseName(id), &lease.NotHeldError{Op: op, Reason: reason})
}
