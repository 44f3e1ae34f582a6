package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Lock defaults. The backoff between attempts starts at
// DefaultLockBackoffInitial, doubles up to
// DefaultLockBackoffMax, and each wait is randomized by ±50%.
const (
	DefaultLockMaxWait        = 5 * time.Second        // how long Lock waits in all
	DefaultLockBackoffInitial = 100 * time.Millisecond // first wait between attempts
	DefaultLockBackoffMax     = 2 * time.Second        // longest wait between attempts
	lockBackoffMultiplier     = 2.0                    // growth of the wait per attempt
	lockBackoffJitter         = 0.5                    // randomization factor of each wait
)

// lockMinWait is the shortest wait between two attempts, even when the
// holder reports less time left: Lock never spins.
const lockMinWait = 5 * time.Millisecond

// LockOption configures Lock. Options are checked before the first attempt;
// a bad one makes Lock fail with ErrInvalidArgument.
type LockOption func(*lockConfig) error

type lockConfig struct {
	maxWait             time.Duration
	initial, maxBackoff time.Duration
	acquire             []AcquireOption
	clock               clockwork.Clock
	fair                bool          // WithFairness
	entryTTL            time.Duration // WithQueueEntryTTL; 0: DefaultQueueEntryTTL
}

// WithMaxWait bounds how long Lock waits for a locked key, measured from the
// call; the last attempt is made when it has passed. d must be positive.
// Default: DefaultLockMaxWait (5s). The context's deadline bounds Lock too.
func WithMaxWait(d time.Duration) LockOption {
	return func(c *lockConfig) error {
		if d <= 0 {
			return invalid("lock: max wait must be positive, got %s", d)
		}
		c.maxWait = d
		return nil
	}
}

// WithBackoff sets the first and the longest wait between attempts. The wait
// doubles from initial up to maxInterval, each randomized by ±50%. initial must be
// at least 1ms and maxInterval at least initial. Defaults: DefaultLockBackoffInitial
// (100ms) and DefaultLockBackoffMax (2s).
func WithBackoff(initial, maxInterval time.Duration) LockOption {
	return func(c *lockConfig) error {
		if initial < time.Millisecond {
			return invalid("lock: initial backoff must be at least 1ms, got %s", initial)
		}
		if maxInterval < initial {
			return invalid("lock: max backoff %s must be at least the initial backoff %s", maxInterval, initial)
		}
		c.initial, c.maxBackoff = initial, maxInterval
		return nil
	}
}

// WithAcquireOptions passes opts to every Store.Acquire attempt of Lock
// (for example WithOwner). They are validated once, up front. Default: none.
func WithAcquireOptions(opts ...AcquireOption) LockOption {
	return func(c *lockConfig) error {
		if _, err := ResolveAcquireOptions(opts); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		c.acquire = append(c.acquire, opts...)
		return nil
	}
}

// WithLockClock sets the clock Lock waits on and measures its max wait with.
// Default: clockwork.NewRealClock(). Tests pass the fake clock their Store
// uses.
func WithLockClock(clock clockwork.Clock) LockOption {
	return func(c *lockConfig) error {
		if clock == nil {
			return invalid("lock: clock must not be nil")
		}
		c.clock = clock
		return nil
	}
}

// Lock acquires the lease on key, waiting while another lease holds it.
//
// It calls store.Acquire and, as long as the key is locked (ErrLocked),
// waits and tries again. Any other error, including ErrRoundClaimed and
// ErrInvalidArgument, is returned at once. How it waits depends on the
// store:
//
//   - When the store is a Notifier (lease/redislease, lease/memory), Lock
//     watches the key after its first failed attempt, tries once more (a
//     release may have come in between), and then sleeps until the key is
//     released (a notification) or the holder's lease runs out
//     (LockedError.Remaining), whichever comes first: a release is noticed
//     at once, an expiry when it happens, and a holder that keeps
//     extending costs one attempt per renewal period. Watches of one key
//     share one subscription per Store.
//   - Otherwise, or while notifications are unavailable (the store's Watch
//     failed, or its subscription dropped), Lock polls with exponential
//     backoff and jitter between attempts (see WithBackoff). When the
//     holder reports how long its lease has left and that is shorter than
//     the next backoff, Lock waits only that long (but at least 5ms), so it
//     takes over an expiring lease promptly; a lease released early is
//     noticed at the next attempt.
//
// With WithFairness, waiters are served in arrival order through a queue
// the store keeps (a FairStore); each waiter also attempts at least every
// third of its queue entry's TTL, to keep its place.
//
// Lock makes its last attempt when the max wait (WithMaxWait, default 5s)
// has passed and then fails with an error wrapping ErrAcquireTimeout and
// the last ErrLocked. If ctx ends first, the error wraps the context's
// error and the last ErrLocked, and also ErrAcquireTimeout for a deadline or
// ErrAborted for a cancellation. Lock blocks until it returns; it starts no
// goroutine of its own (a store may run one per watched key, shared by
// all of that key's waiters in the process).
func Lock(ctx context.Context, store Store, key string, ttl time.Duration, opts ...LockOption) (*Lease, error) {
	c, err := resolveLock(ctx, store, opts)
	if err != nil {
		return nil, err
	}
	if c.fair {
		return lockFair(ctx, store, key, ttl, c)
	}
	p := waitPlan{
		attempt: func(ctx context.Context) (*Lease, error) { return store.Acquire(ctx, key, ttl, c.acquire...) },
	}
	if n, ok := store.(Notifier); ok {
		p.watch = func(ctx context.Context) (Watch, error) { return n.Watch(ctx, key) }
	}
	return waitFor(ctx, c, p)
}

// resolveLock checks Lock's arguments and applies its options.
func resolveLock(ctx context.Context, store Store, opts []LockOption) (*lockConfig, error) {
	c := &lockConfig{
		maxWait:    DefaultLockMaxWait,
		initial:    DefaultLockBackoffInitial,
		maxBackoff: DefaultLockBackoffMax,
		clock:      clockwork.NewRealClock(),
	}
	if ctx == nil {
		return nil, invalid("lock: context must not be nil")
	}
	if store == nil {
		return nil, invalid("lock: store must not be nil")
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("lock: option must not be nil")
		}
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// lockContextError is Lock's error when ctx ends while the key is locked.
func lockContextError(ctx context.Context, attempts int, locked error) error {
	cause := context.Cause(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: lock: context deadline passed after %d attempts: %w: %w", ErrAcquireTimeout, attempts, cause, locked)
	}
	return fmt.Errorf("%w: lock: context canceled after %d attempts: %w: %w", ErrAborted, attempts, cause, locked)
}
