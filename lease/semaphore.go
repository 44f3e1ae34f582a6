package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// MaxSemaphoreLimit is the largest number of holders a semaphore admits.
const MaxSemaphoreLimit = 10000

// SemaphoreStore is an optional interface of a Store that keeps counting
// semaphores: a semaphore is a name with at most limit live holders at a
// time. Each holder is a Lease (Key is the semaphore's name) with its own
// ID, TTL and a fencing token from the semaphore's own fence counter,
// strictly greater than every token issued before for that semaphore.
// Liveness is a lease's: a holder is live while ExpiresAt > server now -
// ExpiryTolerance, and holders that stopped being live are dropped by the
// next acquire. lease/redislease and lease/memory implement it; use it through
// Semaphore.
//
// A semaphore's name is validated as a key (NormalizeKey) and lives apart
// from leases: a semaphore and a lease may share a name. Every holder of a
// semaphore must use the same limit: each acquire compares the number of
// live holders with its own.
type SemaphoreStore interface {
	// AcquireSemaphore makes one attempt to become a holder of the
	// semaphore name for ttl, if fewer than limit holders are live. When
	// limit are, it fails with a *LockedError whose Remaining is the time
	// until the first of them stops being live unless it is extended.
	AcquireSemaphore(ctx context.Context, name string, limit int, ttl time.Duration) (*Lease, error)
	// ExtendSemaphore sets the expiry of the holder id of name to server
	// now + ttl and returns it. It fails with a *NotHeldError: ReasonExpired
	// for a holder that stopped being live and was not yet dropped,
	// ReasonNotFound otherwise.
	ExtendSemaphore(ctx context.Context, name, id string, ttl time.Duration) (time.Time, error)
	// ReleaseSemaphore removes the holder id of name, and wakes the
	// semaphore's watches. It fails as ExtendSemaphore does.
	ReleaseSemaphore(ctx context.Context, name, id string) error
	// SemaphoreHeld returns the number of live holders of name.
	SemaphoreHeld(ctx context.Context, name string) (int, error)
	// WatchSemaphore is Notifier.Watch for the releases of name's holders.
	// A store that cannot notify returns an error; waiters then poll.
	WatchSemaphore(ctx context.Context, name string) (Watch, error)
}

// Semaphore is a counting semaphore on a SemaphoreStore: at most Limit
// holders of its name at a time, across every process that shares the
// store. Holders are Leases: Extend and Release them (or keep them alive
// with heartbeat, through Store), and guard their writes with their
// fences. A Semaphore is safe for concurrent use.
type Semaphore struct {
	store SemaphoreStore
	name  string
	limit int
	view  *semaphoreLeases
}

// NewSemaphore returns the semaphore name of limit holders kept in store.
// It does no I/O. It fails with ErrInvalidArgument when store keeps no
// semaphores (is not a SemaphoreStore), name breaks the key rules
// (NormalizeKey), or limit is not between 1 and MaxSemaphoreLimit.
func NewSemaphore(store Store, name string, limit int) (*Semaphore, error) {
	if store == nil {
		return nil, invalid("semaphore: store must not be nil")
	}
	ss, ok := store.(SemaphoreStore)
	if !ok {
		return nil, invalid("semaphore: the store keeps no semaphores (it is not a lease.SemaphoreStore)")
	}
	n, err := NormalizeKey(name)
	if err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	if err := ValidateSemaphoreLimit(limit); err != nil {
		return nil, err
	}
	s := &Semaphore{store: ss, name: n, limit: limit}
	s.view = &semaphoreLeases{sem: s, clock: ClockOf(store)}
	return s, nil
}

// ValidateSemaphoreLimit checks that limit is between 1 and
// MaxSemaphoreLimit.
func ValidateSemaphoreLimit(limit int) error {
	if limit < 1 || limit > MaxSemaphoreLimit {
		return invalid("semaphore limit must be between 1 and %d, got %d", MaxSemaphoreLimit, limit)
	}
	return nil
}

// Name returns the semaphore's name, NFC-normalized.
func (s *Semaphore) Name() string { return s.name }

// Limit returns how many holders the semaphore admits at a time.
func (s *Semaphore) Limit() int { return s.limit }

// TryAcquire makes one attempt to become a holder for ttl. It fails with a
// *LockedError when Limit holders are live (see SemaphoreStore). The Lease
// is attached to Store, so its Extend and Release act on the semaphore.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration) (*Lease, error) {
	l, err := s.store.AcquireSemaphore(ctx, s.name, s.limit, ttl)
	if err != nil {
		return nil, err
	}
	return Attach(s.view, l), nil
}

// Acquire becomes a holder for ttl, waiting while Limit holders are live,
// exactly as Lock waits for a key: it wakes when a holder releases (the
// store's WatchSemaphore) or the first holder's lease runs out, and polls
// with backoff when the store cannot notify. Lock's WithMaxWait,
// WithBackoff and WithLockClock apply; WithAcquireOptions and
// WithFairness do not (ErrInvalidArgument). Its errors are Lock's.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lease, error) {
	c, err := resolveLock(ctx, s.view, opts)
	if err != nil {
		return nil, err
	}
	if len(c.acquire) > 0 {
		return nil, invalid("semaphore: acquire options do not apply to a semaphore")
	}
	if c.fair {
		return nil, invalid("semaphore: WithFairness does not apply to a semaphore")
	}
	return waitFor(ctx, c, waitPlan{
		attempt: func(ctx context.Context) (*Lease, error) { return s.TryAcquire(ctx, ttl) },
		watch:   func(ctx context.Context) (Watch, error) { return s.store.WatchSemaphore(ctx, s.name) },
	})
}

// Held returns the number of live holders.
func (s *Semaphore) Held(ctx context.Context) (int, error) {
	return s.store.SemaphoreHeld(ctx, s.name)
}

// Store returns the semaphore as a Store of its holders, for code that
// keeps a Lease alive through a Store, such as heartbeat.Start: its
// Extend and Release act on the semaphore's holders by ID, Acquire of the
// semaphore's name is TryAcquire, and IsLocked reports whether Limit
// holders are live. It measures deadlines on the underlying store's clock.
// Lookup and LookupID fail with ErrInvalidArgument: the store keeps no
// record of a holder beyond its expiry.
func (s *Semaphore) Store() Store { return s.view }

// semaphoreLeases is Semaphore.Store.
type semaphoreLeases struct {
	sem   *Semaphore
	clock clockwork.Clock
}

var _ ClockedStore = (*semaphoreLeases)(nil)

func (v *semaphoreLeases) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...AcquireOption) (*Lease, error) {
	if n, err := NormalizeKey(key); err != nil || n != v.sem.name {
		return nil, invalid("semaphore %q: acquire of another name (%q)", v.sem.name, key)
	}
	if len(opts) > 0 {
		return nil, invalid("semaphore: acquire options do not apply to a semaphore")
	}
	return v.sem.TryAcquire(ctx, ttl)
}

func (v *semaphoreLeases) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	return v.sem.store.ExtendSemaphore(ctx, v.sem.name, id, ttl)
}

func (v *semaphoreLeases) Release(ctx context.Context, id string) error {
	return v.sem.store.ReleaseSemaphore(ctx, v.sem.name, id)
}

func (v *semaphoreLeases) IsLocked(ctx context.Context, key string) (bool, error) {
	if n, err := NormalizeKey(key); err != nil || n != v.sem.name {
		return false, invalid("semaphore %q: is locked of another name (%q)", v.sem.name, key)
	}
	held, err := v.sem.Held(ctx)
	return held >= v.sem.limit, err
}

// errSemaphoreLookup is the cause of Lookup and LookupID on a semaphore.
var errSemaphoreLookup = errors.New("semaphore holders cannot be looked up; use Semaphore.Held")

func (v *semaphoreLeases) Lookup(context.Context, string) (Info, error) {
	return Info{}, fmt.Errorf("%w: %w", ErrInvalidArgument, errSemaphoreLookup)
}

func (v *semaphoreLeases) LookupID(context.Context, string) (Info, error) {
	return Info{}, fmt.Errorf("%w: %w", ErrInvalidArgument, errSemaphoreLookup)
}

func (v *semaphoreLeases) Clock() clockwork.Clock { return v.clock }
