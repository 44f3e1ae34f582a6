package redislease

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cronguard/cronguard/lease"
)

var _ lease.KeyedStore = (*Store)(nil)

// ExtendLease is Extend for l.ID, for a holder that has the whole lease
// (lease.Lease.Extend and heartbeat call it through lease.Extend). It
// answers exactly as Extend(ctx, l.ID, ttl) would, but the script it runs
// names the lease's data key in KEYS and reads the record directly, without
// the ID index lookup: one command fewer, and every key it touches is
// declared. When l.Key does not lead to the record of l.ID (a Lease whose
// fields were edited), it falls back to Extend by ID. One difference, on
// damaged data only: when the record is the lease's own, a garbled index
// key is not read, so the holder can still extend (Extend by ID fails with
// lease.ErrInternal).
func (s *Store) ExtendLease(ctx context.Context, l *lease.Lease, ttl time.Duration) (time.Time, error) {
	const op = "extend"
	if l == nil {
		return time.Time{}, opErr(op, "", fmt.Errorf("%w: lease must not be nil", lease.ErrInvalidArgument))
	}
	data, index, head, ok := heldKeys(s.prefix, l.Key, l.ID)
	if !ok {
		return s.Extend(ctx, l.ID, ttl)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return time.Time{}, opErr(op, "", err)
	}
	ttlMs := ttl.Milliseconds()
	resp := extendLeaseScript.Exec(ctx, s.client, []string{data, index}, []string{
		head,
		strconv.FormatInt(ttlMs, 10),
		strconv.FormatInt(ttlMs+dataKeep.Milliseconds(), 10),
		strconv.FormatInt(ttlMs+indexKeep.Milliseconds(), 10),
	})
	exp, code, err := readExtend(ctx, op, l.ID, resp)
	switch {
	case err != nil || code == codeDone:
		return exp, err
	case code == codeElsewhere:
		return s.Extend(ctx, l.ID, ttl)
	}
	return time.Time{}, notHeldCode(op, l.ID, code)
}

// ReleaseLease is Release for l.ID, for a holder that has the whole lease
// (lease.Lease.Release calls it through lease.Release). It answers exactly
// as Release(ctx, l.ID) would, but the script it runs names the lease's
// data key in KEYS and reads the record directly, without the ID index
// lookup. When l.Key does not lead to the record of l.ID, it falls back to
// Release by ID. As with ExtendLease, a garbled index key does not stop
// the holder whose record is intact; the release deletes it.
func (s *Store) ReleaseLease(ctx context.Context, l *lease.Lease) error {
	const op = "release"
	if l == nil {
		return opErr(op, "", fmt.Errorf("%w: lease must not be nil", lease.ErrInvalidArgument))
	}
	data, index, head, ok := heldKeys(s.prefix, l.Key, l.ID)
	if !ok {
		return s.Release(ctx, l.ID)
	}
	kv := [...]string{data, index, head} // one allocation for KEYS and ARGV
	resp := releaseLeaseScript.Exec(ctx, s.client, kv[:2:2], kv[2:])
	code, err := readRelease(ctx, op, l.ID, resp)
	switch {
	case err != nil || code == codeDone:
		return err
	case code == codeElsewhere:
		return s.Release(ctx, l.ID)
	}
	return notHeldCode(op, l.ID, code)
}
