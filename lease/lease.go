package lease

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
)

// Store keeps leases. Implementations are safe for concurrent use; every
// method validates its arguments before doing any I/O.
//
// lease/redislease is the production Store; lease/memory keeps leases in process
// with the same semantics.
type Store interface {
	// Acquire makes a single attempt to take the lease on key for ttl.
	// It returns ErrPaused when WithPauseCheck is given and key is paused,
	// ErrRoundClaimed when WithRound names a round that is not newer than
	// the last one recorded for key (whether or not key is held), a
	// *LockedError (ErrLocked) when another lease holds key, ErrClockSkew
	// when a time round is too far ahead of the server's clock, and
	// ErrNoTrigger when WithTrigger is given and no trigger is pending,
	// checked in that order. A successful acquire with a round reports the
	// round recorded before it (Lease.PrevRound). With WithAttempts it also
	// writes the occurrence's completion record; WithResume claims the
	// next attempt of an open occurrence instead of a new round (its
	// answers are listed there).
	Acquire(ctx context.Context, key string, ttl time.Duration, opts ...AcquireOption) (*Lease, error)

	// Extend sets the expiry of the lease with this ID to server-now + ttl
	// (it replaces the expiry; it never adds to it) and returns the new
	// expiry in server time. It returns a *NotHeldError (ErrNotHeld) when
	// the lease is gone, expired or held by another ID.
	Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error)

	// Release deletes the lease if and only if this ID holds it. It returns
	// a *NotHeldError (ErrNotHeld) otherwise.
	Release(ctx context.Context, id string) error

	// IsLocked reports whether a live lease holds key.
	IsLocked(ctx context.Context, key string) (bool, error)

	// Lookup returns what is known of the live lease on key, or ErrNotFound.
	Lookup(ctx context.Context, key string) (Info, error)

	// LookupID returns what is known of the live lease with this ID, or
	// ErrNotFound.
	LookupID(ctx context.Context, id string) (Info, error)
}

// Lease is a held lease, as returned by Store.Acquire. Its fields are a
// record of the acquire; they are not updated by Extend.
type Lease struct {
	// Key is the user's key after NFC normalization.
	Key string
	// ID proves ownership: Extend and Release need it. It is a secret of
	// sorts: log ShortID(ID) instead.
	ID string
	// Fence is this acquire's fencing token, strictly greater than every
	// token issued before for Key.
	Fence fencing.Token
	// Owner is the free-text holder label stored with the lease, if any.
	Owner string
	// TTL is the time to live the lease was acquired with.
	TTL time.Duration
	// AcquiredAt and ExpiresAt are server times, for display only: never
	// compare them with the local clock.
	AcquiredAt, ExpiresAt time.Time
	// Round is the round this acquire claimed (WithRound, WithRoundTime,
	// or, for WithTrigger, the one the store chose), or 0 when it claimed
	// none.
	Round int64
	// PrevRound is the round recorded for Key just before this acquire
	// claimed Round: the last round claimed before it, or 0 when there was
	// none (the first claim) or the acquire claimed no round. Every round
	// strictly between PrevRound and Round was claimed by no one.
	PrevRound int64
	// Trigger is the ID of the trigger the acquire consumed (WithTrigger),
	// or "".
	Trigger string
	// Attempt is the acquire's attempt at its occurrence: 1 for a first
	// attempt or an acquire without WithAttempts, k+1 for a resume
	// (WithResume) of an occurrence whose last attempt was k.
	Attempt int
	// Attempts is the occurrence's completion policy as the store recorded
	// it (WithAttempts, or the record a resume continued); Max is 0 when
	// the lease has no completion record, and ReleaseWithStatus (package
	// fleet) then writes none.
	Attempts Attempts
	// Superseded is set by a round acquire with WithAttempts, or a trigger's
	// acquire (WithTrigger), that found an earlier round's occurrence still
	// open or running with no live lease: that occurrence will never
	// complete (no resume claims a round once a later one is claimed). The
	// store marked it given up in the same step, so exactly one acquire
	// reports it. nil otherwise.
	Superseded *Superseded
	// Deadline is the local time, on the Store's clock, up to which the
	// lease can be trusted: the moment the acquire request was sent, plus
	// TTL, minus TTL/100 + 2ms (see LocalDeadline). It carries a monotonic reading when the clock
	// provides one.
	Deadline time.Time

	store Store
}

// Superseded names an occurrence that a newer round's acquire gave up
// (Lease.Superseded).
type Superseded struct {
	Round   int64 // the given-up occurrence's round
	Attempt int   // its last attempt
}

// Attach returns l bound to s, so that l.Extend and l.Release go to s.
// Store implementations call it on the leases they hand out.
func Attach(s Store, l *Lease) *Lease {
	l.store = s
	return l
}

// Extend extends the lease through the Store it came from, with the
// Store's keyed method when it has one (see KeyedStore and Extend), else
// Store.Extend(ctx, l.ID, ttl).
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if l.store == nil {
		return time.Time{}, invalid("extend: lease is not attached to a store")
	}
	return Extend(ctx, l.store, l, ttl)
}

// Release releases the lease through the Store it came from, with the
// Store's keyed method when it has one (see KeyedStore and Release), else
// Store.Release(ctx, l.ID).
func (l *Lease) Release(ctx context.Context) error {
	if l.store == nil {
		return invalid("release: lease is not attached to a store")
	}
	return Release(ctx, l.store, l)
}

// Info is what Lookup and LookupID return: enough to inspect a lease
// without revealing its key or ID.
type Info struct {
	KeyHash    string        // base64url(SHA-256(storage key)[:16])
	IDHash     string        // base64url(SHA-256(ID)[:16])
	Fence      fencing.Token // the holder's fencing token
	Owner      string        // the holder's label, if any
	AcquiredAt time.Time     // server time
	ExpiresAt  time.Time     // server time
}

// LocalDeadline returns the local time up to which a lease whose expiry was
// set by a request sent at sent can be trusted: sent + ttl - (ttl/100 +
// 2ms), the allowance covering clock-rate differences between client and
// server. Stores set Lease.Deadline with it.
func LocalDeadline(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - leasekit.Drift(ttl))
}

// ExpiryTolerance is how long past its ExpiresAt a lease still counts as
// live, on the server's clock: a lease is live while
// ExpiresAt > now - ExpiryTolerance. It absorbs small clock steps on the
// server and errs on the side of exclusion; every Store uses this one value.
const ExpiryTolerance = 1000 * time.Millisecond

// ExpiredRetention is how long a Store remembers a lease's ID after the
// lease stopped being live, so that Extend and Release can say
// ReasonExpired rather than ReasonNotFound. An expired lease is never live
// and never blocks an acquire (lease/redislease keeps only the ID index that
// long; its record leaves Redis when the lease stops being live).
const ExpiredRetention = 10 * time.Second

// FencesPerMillisecond is the rate of the fence floor: every acquire issues
// a fence of at least FenceFloor(server now), so that a fence counter lost
// with the store's data (a restart without persistence, a failover to a
// replica that lagged, a restored snapshot) resumes above every fence
// issued before, as long as the server clock has not gone back by more
// than the time since the last acquire. Stores issue max(last fence + 1,
// FenceFloor(now)).
const FencesPerMillisecond = 100

// FenceFloor returns the least fence an acquire at server time now may
// issue: now in Unix milliseconds times FencesPerMillisecond. It fits the
// 15-digit fence until the year 2255.
func FenceFloor(now time.Time) fencing.Token {
	ms := max(now.UnixMilli(), 0)
	return fencing.Token(ms) * FencesPerMillisecond
}
