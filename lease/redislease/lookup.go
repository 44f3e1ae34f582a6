package redislease

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// IsLocked reports whether a live lease holds key. It is read-only: the
// record of an expired lease leaves Redis by itself when its liveness ends.
func (s *Store) IsLocked(ctx context.Context, key string) (bool, error) {
	const op = "islocked"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return false, err
	}
	resp := isLockedScript.Exec(ctx, s.client, []string{ks.data}, nil)
	if err := resp.Error(); err != nil {
		return false, wrapErr(ctx, op, what, err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return false, internalErr(op, what, err)
	}
	switch {
	case r.is(1):
		return true, nil
	case r.is(0):
		return false, nil
	case r.is(codeUnreadable):
		return false, internalErr(op, what, errUnreadable)
	}
	return false, internalErr(op, what, r.bad())
}

// Lookup returns what is known of the live lease on key, or an error
// wrapping lease.ErrNotFound. The Info carries hashes, never the raw key
// or ID.
func (s *Store) Lookup(ctx context.Context, key string) (lease.Info, error) {
	const op = "lookup"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return lease.Info{}, err
	}
	resp := lookupScript.Exec(ctx, s.client, []string{ks.data}, nil)
	p, err := s.recordReply(ctx, op, what, resp)
	if err != nil {
		return lease.Info{}, err
	}
	return p.info(ks.storage), nil
}

// LookupID returns what is known of the live lease with id, or an error
// wrapping lease.ErrNotFound (also when the ID's key is now held under
// another ID). An ID this Store cannot have issued is not found without any
// I/O.
func (s *Store) LookupID(ctx context.Context, id string) (lease.Info, error) {
	const op = "lookupid"
	if err := leasekit.ValidateID(id); err != nil {
		return lease.Info{}, opErr(op, "", err)
	}
	what := leaseName(id)
	ik, ok := indexKey(s.prefix, id)
	if !ok {
		return lease.Info{}, opErr(op, what, lease.ErrNotFound)
	}
	resp := lookupIDScript.Exec(ctx, s.client, []string{ik}, []string{id, s.dataPrefix})
	p, err := s.recordReply(ctx, op, what, resp)
	if err != nil {
		return lease.Info{}, err
	}
	if p.id != id {
		return lease.Info{}, internalErr(op, what, fmt.Errorf("%w: record names another lease", lease.ErrInternal))
	}
	ks, err := keysFor(s.prefix, p.key)
	if err != nil {
		return lease.Info{}, internalErr(op, what, err)
	}
	return p.info(ks.storage), nil
}

// keysForOp validates key and derives its keyset and log-safe name.
func (s *Store) keysForOp(op, key string) (keyset, string, error) {
	nkey, err := lease.NormalizeKey(key)
	if err != nil {
		return keyset{}, "", opErr(op, "", err)
	}
	ks, err := keysFor(s.prefix, nkey)
	if err != nil {
		return keyset{}, "", opErr(op, "", err)
	}
	return ks, "key#" + leasekit.Hash(ks.storage)[:8], nil
}

// recordReply reads a lookup script's reply: a record, 0 (not found) or
// -9 (unreadable).
func (s *Store) recordReply(ctx context.Context, op, what string, resp rueidis.RedisResult) (parsedRecord, error) {
	if err := resp.Error(); err != nil {
		return parsedRecord{}, wrapErr(ctx, op, what, err)
	}
	m, err := resp.ToMessage()
	if err != nil {
		return parsedRecord{}, internalErr(op, what, err)
	}
	if m.IsInt64() {
		n, _ := m.AsInt64()
		switch n {
		case 0:
			return parsedRecord{}, opErr(op, what, lease.ErrNotFound)
		case codeUnreadable:
			return parsedRecord{}, internalErr(op, what, errUnreadable)
		}
		return parsedRecord{}, internalErr(op, what, fmt.Errorf("%w: code %d", errBadReply, n))
	}
	raw, err := m.ToString()
	if err != nil {
		return parsedRecord{}, internalErr(op, what, fmt.Errorf("%w: %w", errBadReply, err))
	}
	p, err := parseRecord(raw)
	if err != nil {
		return parsedRecord{}, internalErr(op, what, err)
	}
	if p.fence > fenceWarn {
		s.log.Warn("fence counter nearing its limit", "key", what, "fence", p.fence, "limit", fencing.Token(fenceMax))
	}
	return p, nil
}
