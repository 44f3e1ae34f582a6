package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// maxFence is the largest fence a Store issues; it is the bound of the Redis
// store's 15-digit fence as well (the fence floor reaches it in 2255).
const maxFence fencing.Token = 900_000_000_000_000

// Store is an in-process lease.Store. The zero value is not usable: call New.
// A Store is safe for concurrent use.
type Store struct {
	clock        clockwork.Clock
	historyLimit int // runs kept per key (WithHistoryLimit)

	mu       sync.Mutex
	keys     map[string]*keyState   // normalized key -> state; entries are never deleted
	ids      map[string]*record     // lease ID -> record, kept until its retention ends
	pauses   map[string]fleet.Pause // normalized key -> its pause, while paused
	triggers triggerQueues          // normalized key -> queued triggers
	registry registry               // the replicas' entries

	sweepAt int // len(ids) at which Acquire next drops records past retention

	channel    channel                  // the control channel's subscriptions
	watchers   watchers                 // the watches of released keys and semaphores (notify.go)
	semaphores map[string]*semaphore    // semaphore name -> its holders and fence (semaphore.go)
	queues     map[string][]place       // normalized key -> its fair waiters, oldest first (fair.go)
	index      map[indexEntry]time.Time // open and running occurrences -> when due (completion.go)
}

// keyState is what the store keeps per key. Like the Redis store's fence
// counter, round record and status, it is never deleted.
type keyState struct {
	name   string        // the normalized key
	fence  fencing.Token // last fence issued for the key
	round  int64         // highest round recorded for the key; 0 if none
	cur    *record       // the key's latest lease; may be expired or nil
	status *fleet.Status // the last run recorded by ReleaseWithStatus; nil if none
	// history holds the runs recorded by ReleaseWithStatus, oldest first;
	// its last historyLimit entries are the key's history (history.go).
	history []fleet.RunRecord
	// completion is the completion record of the last round acquired with
	// lease.WithAttempts (completion.go); nil if none.
	completion *completion
}

// record is one lease as the store sees it. Times are milliseconds, like a
// server's.
type record struct {
	id, key, owner string
	fence          fencing.Token
	acquiredAt     time.Time
	expiresAt      time.Time
}

// New returns an empty Store.
func New(opts ...Option) (*Store, error) {
	s := &Store{
		clock:        clockwork.NewRealClock(),
		historyLimit: fleet.DefaultHistoryLimit,
		keys:         make(map[string]*keyState),
		ids:          make(map[string]*record),
		pauses:       make(map[string]fleet.Pause),
		triggers:     triggerQueues{queues: make(map[string][]trigger), sweepAt: minSweep},
		registry:     registry{entries: make(map[string]*replicaEntry)},
		sweepAt:      minSweep,
		channel:      channel{subs: make(map[*subscription]struct{})},

		semaphores: make(map[string]*semaphore),
		queues:     make(map[string][]place),
		index:      make(map[indexEntry]time.Time),
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("memory: %w: option must not be nil", lease.ErrInvalidArgument)
		}
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

var (
	_ lease.Store = (*Store)(nil)
	_ fleet.Store = (*Store)(nil)
)

// now returns the store's clock truncated to milliseconds, the resolution of
// server time.
func (s *Store) now() time.Time {
	return time.UnixMilli(s.clock.Now().UnixMilli())
}

// live reports whether r is live at now: ExpiresAt > now - ExpiryTolerance.
func live(r *record, now time.Time) bool {
	return r != nil && r.expiresAt.After(now.Add(-lease.ExpiryTolerance))
}

// retained reports whether r is still kept at now, live or not.
func retained(r *record, now time.Time) bool {
	return r.expiresAt.After(now.Add(-lease.ExpiryTolerance - lease.ExpiredRetention))
}

// Acquire implements lease.Store. Checks run in this order: a pause of the
// key when lease.WithPauseCheck is given (lease.ErrPaused; a round newer
// than the recorded one and within the skew bound is recorded as handled),
// a round not newer than
// the recorded one (lease.ErrRoundClaimed), a live lease on the key
// (*lease.LockedError), a time round too far ahead of the store's clock
// (lease.ErrClockSkew); only then is the lease taken, the fence incremented
// and the round recorded. Apart from a paused round, a failed acquire
// records nothing.
//
// With lease.WithTrigger the acquire checks for a pause when
// lease.WithPauseCheck is given (lease.ErrPaused, the triggers stay
// queued), then for a live lease (*lease.LockedError, the triggers stay
// queued), then consumes the key's oldest live trigger, dropping expired
// ones (lease.ErrNoTrigger when there is none), as lease/redislease does.
// It claims the round of the run's occurrence: the store's time in Unix
// ms, or the recorded round + 1 when that is later (Lease.Round,
// Lease.PrevRound), so a later scheduled round at or before it is refused.
//
// LockedError.Remaining is the time until the holder's lease stops being
// live if it is not extended: ExpiresAt + lease.ExpiryTolerance - now.
func (s *Store) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	const op = "acquire"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, opError(op, err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return nil, opError(op, err)
	}
	o, err := lease.ResolveAcquireOptions(opts)
	if err != nil {
		return nil, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	sent := s.clock.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ks := s.keys[key]
	if ks == nil {
		ks = &keyState{name: key}
		s.keys[key] = ks
	}
	if o.Trigger {
		return s.acquireTrigger(key, ks, ttl, o.Owner, o.PauseCheck, now, sent)
	}
	if o.PauseCheck {
		if p, paused := s.pauses[key]; paused {
			if o.Resume > 0 {
				return nil, opError(op, lease.ErrPaused)
			}
			if o.Round > ks.round && (o.MaxSkew == 0 || o.Round <= now.Add(o.MaxSkew).UnixMilli()) {
				// Handled, unless the clock runs too fast; the refusal
				// that records the round tells the one before it.
				prev := ks.round
				ks.round = o.Round
				return nil, opError(op, &lease.PausedError{PrevRound: prev, PausedAt: p.At})
			}
			return nil, opError(op, lease.ErrPaused)
		}
	}
	if o.Resume > 0 {
		return s.acquireResume(key, ks, ttl, o, now, sent)
	}
	if o.Round > 0 && o.Round <= ks.round {
		return nil, opError(op, fmt.Errorf("%w: round %d, last recorded %d", lease.ErrRoundClaimed, o.Round, ks.round))
	}
	if live(ks.cur, now) {
		return nil, &lease.LockedError{Remaining: ks.cur.expiresAt.Add(lease.ExpiryTolerance).Sub(now)}
	}
	if o.MaxSkew > 0 && o.Round > now.Add(o.MaxSkew).UnixMilli() {
		return nil, opError(op, fmt.Errorf("%w: round %d is %s ahead of server time, max skew %s",
			lease.ErrClockSkew, o.Round, time.UnixMilli(o.Round).Sub(now), o.MaxSkew))
	}
	if ks.fence >= maxFence {
		return nil, opError(op, errFenceOverflow)
	}

	r := s.take(key, ks, ttl, o.Owner, now)
	var prev int64
	if o.Round > 0 {
		prev, ks.round = ks.round, o.Round
	}
	l := r.lease(ttl, sent)
	l.Round, l.PrevRound = o.Round, prev
	if o.Attempts.Max > 0 {
		l.Superseded = s.recordAttempts(ks, o.Round, o.Attempts, now)
		l.Attempts = lease.Attempts{Max: o.Attempts.Max, Deadline: ks.completion.deadline}
	}
	return lease.Attach(s, l), nil
}

// errQueuedOptions is the cause of a queued acquire given options it
// does not take.
var errQueuedOptions = fmt.Errorf("%w: a queued acquire claims no round, honours no pause and runs no trigger", lease.ErrInvalidArgument)

// errFenceOverflow is the cause of an acquire refused because the key's
// fence counter reached maxFence.
var errFenceOverflow = fmt.Errorf("%w: fence counter overflow", lease.ErrInternal)

// take gives key to a new lease of ttl at now: a fresh ID, the next fence.
// The caller holds s.mu and has checked that the key is free and its fence
// counter below maxFence.
func (s *Store) take(key string, ks *keyState, ttl time.Duration, owner string, now time.Time) *record {
	id := leasekit.NewID()
	for s.ids[id] != nil { // 128 random bits: never in practice
		id = leasekit.NewID()
	}
	ks.fence = max(ks.fence+1, lease.FenceFloor(now))
	r := &record{
		id:         id,
		key:        key,
		owner:      owner,
		fence:      ks.fence,
		acquiredAt: now,
		expiresAt:  now.Add(ttl),
	}
	ks.cur = r
	s.ids[id] = r
	s.sweep(now)
	return r
}

// lease returns the Lease that r's acquire hands out, not yet attached.
func (r *record) lease(ttl time.Duration, sent time.Time) *lease.Lease {
	return &lease.Lease{
		Key:        r.key,
		ID:         r.id,
		Fence:      r.fence,
		Owner:      r.owner,
		TTL:        ttl,
		AcquiredAt: r.acquiredAt,
		ExpiresAt:  r.expiresAt,
		Attempt:    1,
		Deadline:   lease.LocalDeadline(sent, ttl),
	}
}

// minSweep is the smallest ID index size at which Acquire sweeps.
const minSweep = 1024

// sweep drops records past their retention once the ID index has doubled
// since the last sweep, so the index stays proportional to the leases of
// the last ExpiredRetention at amortized constant cost.
func (s *Store) sweep(now time.Time) {
	if len(s.ids) < s.sweepAt {
		return
	}
	for id, r := range s.ids {
		if !retained(r, now) {
			delete(s.ids, id)
		}
	}
	s.sweepAt = max(2*len(s.ids), minSweep)
}

// held returns the record that id holds, or the reason it holds none. The
// order of checks matches the Redis store: unknown ID (or past retention)
// -> ReasonNotFound; key taken by another ID -> ReasonNotOwner; lease no
// longer live -> ReasonExpired.
func (s *Store) held(id string, now time.Time) (*record, lease.NotHeldReason) {
	r := s.ids[id]
	if r == nil {
		return nil, lease.ReasonNotFound
	}
	if !retained(r, now) {
		delete(s.ids, id)
		return nil, lease.ReasonNotFound
	}
	if s.keys[r.key].cur != r {
		return nil, lease.ReasonNotOwner
	}
	if !live(r, now) {
		return nil, lease.ReasonExpired
	}
	return r, 0
}

// Extend implements lease.Store: the new expiry is now + ttl on the store's
// clock.
func (s *Store) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	const op = "extend"
	if err := leasekit.ValidateID(id); err != nil {
		return time.Time{}, opError(op, err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return time.Time{}, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return time.Time{}, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r, reason := s.held(id, now)
	if r == nil {
		return time.Time{}, &lease.NotHeldError{Op: op, Reason: reason}
	}
	r.expiresAt = now.Add(ttl)
	return r.expiresAt, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, id string) error {
	const op = "release"
	if err := leasekit.ValidateID(id); err != nil {
		return opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, reason := s.held(id, s.now())
	if r == nil {
		return &lease.NotHeldError{Op: op, Reason: reason}
	}
	s.release(r)
	return nil
}

// release ends r, a held lease, and wakes the key's watchers. The caller
// holds s.mu.
func (s *Store) release(r *record) {
	s.keys[r.key].cur = nil
	delete(s.ids, r.id)
	s.watchers.notify(watched{name: r.key})
}

// IsLocked implements lease.Store.
func (s *Store) IsLocked(ctx context.Context, key string) (bool, error) {
	const op = "is locked"
	r, err := s.liveByKey(ctx, op, key)
	if err != nil {
		return false, err
	}
	return r != nil, nil
}

// Lookup implements lease.Store.
func (s *Store) Lookup(ctx context.Context, key string) (lease.Info, error) {
	const op = "lookup"
	r, err := s.liveByKey(ctx, op, key)
	if err != nil {
		return lease.Info{}, err
	}
	if r == nil {
		return lease.Info{}, opError(op, lease.ErrNotFound)
	}
	return info(r), nil
}

// LookupID implements lease.Store.
func (s *Store) LookupID(ctx context.Context, id string) (lease.Info, error) {
	const op = "lookup id"
	if err := leasekit.ValidateID(id); err != nil {
		return lease.Info{}, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return lease.Info{}, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, _ := s.held(id, s.now())
	if r == nil {
		return lease.Info{}, opError(op, lease.ErrNotFound)
	}
	return info(r), nil
}

// liveByKey returns the live record on key, or nil.
func (s *Store) liveByKey(ctx context.Context, op, key string) (*record, error) {
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[key]
	if ks == nil || !live(ks.cur, s.now()) {
		return nil, nil
	}
	return ks.cur, nil
}

// info returns the public view of r. The key hash is that of the storage
// key the Redis store would use with its default prefix.
func info(r *record) lease.Info {
	sk, err := leasekit.StorageKey(leasekit.DefaultPrefix, r.key, leasekit.KeyBudget, leasekit.KeyReserve)
	if err != nil { // cannot happen for a key of at most lease.MaxKeyBytes
		sk = r.key
	}
	return lease.Info{
		KeyHash:    leasekit.Hash(sk),
		IDHash:     leasekit.Hash(r.id),
		Fence:      r.fence,
		Owner:      r.owner,
		AcquiredAt: r.acquiredAt,
		ExpiresAt:  r.expiresAt,
	}
}

// ctxError maps a done context to lease.ErrAborted (canceled) or
// lease.ErrTimeout (deadline exceeded), keeping the context's error.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", lease.ErrTimeout, context.Cause(ctx))
	default:
		return fmt.Errorf("%w: %w", lease.ErrAborted, context.Cause(ctx))
	}
}

// opError names the operation in err.
func opError(op string, err error) error {
	return fmt.Errorf("memory: %s: %w", op, err)
}
