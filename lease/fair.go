package lease

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/internal/leasekit"
)

// Queue defaults (WithFairness).
const (
	// DefaultQueueEntryTTL is how long a waiter's place in a key's queue
	// lasts unless the waiter refreshes it, which it does with every
	// attempt, at least every third of it. A waiter that dies leaves the
	// queue that long after its last attempt at most.
	DefaultQueueEntryTTL = 3 * time.Second
	// MinQueueEntryTTL is the shortest entry TTL WithQueueEntryTTL accepts.
	MinQueueEntryTTL = 30 * time.Millisecond
)

// queueLeaveTimeout bounds the LeaveQueue of a fair Lock that gives up.
const queueLeaveTimeout = 2 * time.Second

// FairStore is an optional interface of a Store that queues waiters: Lock
// with WithFairness needs it. lease/redislease and lease/memory implement it.
//
// A key's queue holds tickets in arrival order, each with an expiry that
// its waiter refreshes with every attempt; a ticket whose expiry passed is
// dropped, so a waiter that died leaves the queue by itself. While the
// queue holds a live ticket, AcquireQueued grants the key only to the
// oldest one. The lease it grants is an ordinary lease (the same fences
// and liveness), released like any other. Store.Acquire does not look at
// the queue: fairness holds among the waiters that ask for it.
type FairStore interface {
	// AcquireQueued makes one attempt to take the lease on key for ttl as
	// the waiter named ticket (an ID, as NewID makes). It puts ticket at
	// the end of key's queue if it is not in it, and sets its entry to
	// expire entryTTL from now (server time); then, if key is free and
	// ticket is the oldest live ticket, takes the lease and removes the
	// ticket, in the same atomic step. Otherwise it fails with a
	// *LockedError whose Remaining is the time left to the holder's lease
	// or, when the key is free, to the expiry of the ticket ahead (the head
	// of the queue must act by then or drop out). opts may carry WithOwner
	// only: a queued acquire claims no round, honours no pause and runs no
	// trigger (ErrInvalidArgument).
	AcquireQueued(ctx context.Context, key string, ttl time.Duration, ticket string, entryTTL time.Duration, opts ...AcquireOption) (*Lease, error)
	// LeaveQueue removes ticket from key's queue and, when it was at the
	// head, wakes the key's watches so that the next waiter looks again.
	// Leaving a queue one is not in is not an error.
	LeaveQueue(ctx context.Context, key, ticket string) error
}

// WithFairness makes Lock serve the waiters of a key in arrival order: the
// store (a FairStore; ErrInvalidArgument otherwise) keeps a queue per key,
// and grants the key only to the oldest live waiter. Each waiter's place
// expires unless it attempts again within the entry TTL
// (WithQueueEntryTTL), so a waiter that dies leaves the queue by itself; a
// waiter that gives up (its context ends, its max wait passes) leaves at
// once. Mutual exclusion, fences and rounds are those of any lease: a fair
// Lock takes an ordinary lease. It claims no round, honours no pause and
// runs no trigger: WithAcquireOptions may carry WithOwner only. Waiters
// that do not ask for fairness (Store.Acquire, a Lock without it) are not
// queued and may take a key that is free for a moment between a release
// and the head's acquire: use WithFairness for every waiter of a key that
// needs it.
func WithFairness() LockOption {
	return func(c *lockConfig) error {
		c.fair = true
		return nil
	}
}

// WithQueueEntryTTL sets how long a fair waiter's place in the queue
// lasts between two of its attempts (see WithFairness); the waiter
// attempts at least every third of it. d must be a whole number of
// milliseconds between MinQueueEntryTTL and MaxTTL. Default:
// DefaultQueueEntryTTL (3s). It has no effect without WithFairness.
func WithQueueEntryTTL(d time.Duration) LockOption {
	return func(c *lockConfig) error {
		if d < MinQueueEntryTTL || d > MaxTTL || d%time.Millisecond != 0 {
			return invalid("lock: queue entry ttl must be a whole number of milliseconds between %s and %s, got %s", MinQueueEntryTTL, MaxTTL, d)
		}
		c.entryTTL = d
		return nil
	}
}

// lockFair is Lock with WithFairness.
func lockFair(ctx context.Context, store Store, key string, ttl time.Duration, c *lockConfig) (*Lease, error) {
	fs, ok := store.(FairStore)
	if !ok {
		return nil, invalid("lock: WithFairness needs a store that queues waiters (a lease.FairStore)")
	}
	o, err := ResolveAcquireOptions(c.acquire)
	if err != nil {
		return nil, err
	}
	if o.Round != 0 || o.PauseCheck || o.Trigger {
		return nil, invalid("lock: a fair lock claims no round, honours no pause and runs no trigger: WithAcquireOptions may carry WithOwner only")
	}
	entryTTL := c.entryTTL
	if entryTTL == 0 {
		entryTTL = DefaultQueueEntryTTL
	}
	ticket := leasekit.NewID()
	p := waitPlan{
		attempt: func(ctx context.Context) (*Lease, error) {
			return fs.AcquireQueued(ctx, key, ttl, ticket, entryTTL, c.acquire...)
		},
		refresh: entryTTL / 3,
	}
	if n, ok := store.(Notifier); ok {
		p.watch = func(ctx context.Context) (Watch, error) { return n.Watch(ctx, key) }
	}
	l, err := waitFor(ctx, c, p)
	if err != nil {
		// Leave at once rather than when the entry expires, with a context
		// of its own: ctx may be the reason for leaving.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(entryTTL, queueLeaveTimeout))
		_ = fs.LeaveQueue(lctx, key, ticket) // best effort: the entry expires anyway
		cancel()
		return nil, err
	}
	return l, nil
}
