package lease

import (
	"context"
	"time"
)

// KeyedStore is an optional interface of a Store that can extend and
// release a held *Lease using what the lease knows besides its ID (its
// Key), which can save the store a lookup by ID. lease/redislease implements it.
//
// The results must be those of the Store's ID methods, for every state the
// store itself produces: ExtendLease(ctx, l, ttl) answers as Extend(ctx,
// l.ID, ttl) would, with the same errors and NotHeldError reasons, and
// ReleaseLease(ctx, l) as Release(ctx, l.ID) (leasetest checks this). In
// particular, a Lease whose Key does not belong to its ID (a copy someone
// edited) acts on the lease its ID names, never on another one.
//
// Callers use Extend and Release (the functions, or the Lease methods),
// which pick the keyed method when the store has it.
type KeyedStore interface {
	// ExtendLease is Store.Extend for l.ID, given the whole lease.
	ExtendLease(ctx context.Context, l *Lease, ttl time.Duration) (time.Time, error)
	// ReleaseLease is Store.Release for l.ID, given the whole lease.
	ReleaseLease(ctx context.Context, l *Lease) error
}

// Extend extends l through s: s.ExtendLease(ctx, l, ttl) when s is a
// KeyedStore, else s.Extend(ctx, l.ID, ttl). Both answer alike (see
// KeyedStore); the keyed form may cost the store less. Use it when s is
// not necessarily the store l is attached to (heartbeat does).
func Extend(ctx context.Context, s Store, l *Lease, ttl time.Duration) (time.Time, error) {
	switch {
	case s == nil:
		return time.Time{}, invalid("extend: store must not be nil")
	case l == nil:
		return time.Time{}, invalid("extend: lease must not be nil")
	}
	if ks, ok := s.(KeyedStore); ok {
		return ks.ExtendLease(ctx, l, ttl)
	}
	return s.Extend(ctx, l.ID, ttl)
}

// Release releases l through s: s.ReleaseLease(ctx, l) when s is a
// KeyedStore, else s.Release(ctx, l.ID). Both answer alike (see
// KeyedStore).
func Release(ctx context.Context, s Store, l *Lease) error {
	switch {
	case s == nil:
		return invalid("release: store must not be nil")
	case l == nil:
		return invalid("release: lease must not be nil")
	}
	if ks, ok := s.(KeyedStore); ok {
		return ks.ReleaseLease(ctx, l)
	}
	return s.Release(ctx, l.ID)
}
