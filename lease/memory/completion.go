package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// The states of a completion record, as lease/redislease stores them.
const (
	stateRunning = 'r' // an attempt holds or held the lease (no live lease: its holder died)
	stateOpen    = 'o' // released open
	stateDone    = 'd' // done
	stateGivenUp = 'g' // given up
)

// completion is a key's completion record: the state of the occurrence
// its last round acquire with lease.WithAttempts claimed. Like the round
// record, it is never deleted.
type completion struct {
	round     int64
	attempt   int
	state     byte
	notBefore time.Time // the next attempt may start at or after it
	deadline  time.Time // no attempt starts at or after it
	max       int       // attempts in total
}

// open reports whether c's occurrence may still be attempted, as far as its
// state goes: released open, or running with no live lease on its key.
func (c *completion) open(ks *keyState, now time.Time) bool {
	return c.state == stateOpen || c.state == stateRunning && !live(ks.cur, now)
}

// exhausted reports whether c's occurrence has no attempt left at now.
func (c *completion) exhausted(now time.Time) bool {
	return c.attempt >= c.max || !now.Before(c.deadline)
}

// indexEntry is one member of the index of open and running occurrences.
type indexEntry struct {
	key        string
	round      int64
	deadlineMs int64
}

// member is e as lease/redislease names it in its sorted set; ties of At
// are ordered by it, as Redis orders them.
func (e indexEntry) member() string {
	return strconv.FormatInt(e.round, 10) + ":" + strconv.FormatInt(e.deadlineMs, 10) + ":" + e.key
}

// deadHolder is the error of the "interrupted" history entry a store
// records for an attempt whose holder died: no replica recorded its end.
const deadHolder = "its replica stopped renewing the lease and never released it (it died or lost the store)"

// recordDead pushes the "interrupted" entry of c's attempt when it was left
// running by a holder that died (no live lease, never released). The
// caller holds s.mu.
func (s *Store) recordDead(ks *keyState, c *completion, now time.Time) {
	if c.state != stateRunning || live(ks.cur, now) {
		return
	}
	ks.record(fleet.RunRecord{
		Occurrence: time.UnixMilli(c.round),
		Attempt:    max(c.attempt, 1),
		Started:    now,
		Ended:      now,
		Outcome:    fleet.OutcomeInterrupted,
		Error:      deadHolder,
	}, s.historyLimit)
}

// giveUp marks c given up and pushes a "given_up" entry on the key's
// history. The caller holds s.mu and has checked that c was open or
// running.
func (s *Store) giveUp(ks *keyState, c *completion, replica string, now time.Time) {
	c.state = stateGivenUp
	ks.record(fleet.RunRecord{
		Occurrence: time.UnixMilli(c.round),
		Attempt:    max(c.attempt, 1),
		Replica:    replica,
		Started:    now,
		Ended:      now,
		Outcome:    fleet.OutcomeGivenUp,
	}, s.historyLimit)
	delete(s.index, indexEntry{ks.name, c.round, c.deadline.UnixMilli()})
}

// supersede gives up the occurrence of ks's completion record, if it is
// older than round and still open or running, and returns it: an acquire
// that claimed round, under s.mu, superseded it (a resume needs the round
// record to be its round). The acquire found the key free, so a running
// attempt's holder died.
func (s *Store) supersede(ks *keyState, round int64, now time.Time) *lease.Superseded {
	c := ks.completion
	if c == nil || c.round >= round || c.state != stateOpen && c.state != stateRunning {
		return nil
	}
	s.giveUp(ks, c, "", now)
	return &lease.Superseded{Round: c.round, Attempt: c.attempt}
}

// recordAttempts writes the completion record of a round acquire with
// lease.WithAttempts that succeeded, under s.mu, and returns the earlier
// occurrence it superseded, if any.
func (s *Store) recordAttempts(ks *keyState, round int64, a lease.Attempts, now time.Time) *lease.Superseded {
	sup := s.supersede(ks, round, now)
	ks.completion = &completion{
		round:    round,
		attempt:  1,
		state:    stateRunning,
		deadline: time.UnixMilli(a.Deadline.UnixMilli()),
		max:      a.Max,
	}
	return sup
}

// acquireResume is Acquire with lease.WithResume, under s.mu, after the
// pause check.
func (s *Store) acquireResume(key string, ks *keyState, ttl time.Duration, o lease.AcquireOptions, now, sent time.Time) (*lease.Lease, error) {
	const op = "acquire"
	c := ks.completion
	if ks.round < o.Resume || c == nil || c.round != o.Resume || c.state == stateDone || c.state == stateGivenUp {
		return nil, opError(op, fmt.Errorf("%w: round %d has no open occurrence to resume", lease.ErrRoundClaimed, o.Resume))
	}
	// A later round recorded while the occurrence was open (a round refused
	// as paused, or claimed without attempts) superseded it: it can never
	// be claimed again, so it is given up here rather than left open.
	superseded := ks.round > o.Resume
	if live(ks.cur, now) {
		return nil, &lease.LockedError{Remaining: ks.cur.expiresAt.Add(lease.ExpiryTolerance).Sub(now)}
	}
	s.recordDead(ks, c, now)
	if superseded || c.exhausted(now) {
		s.giveUp(ks, c, "", now)
		return nil, opError(op, &lease.GivenUpError{Round: c.round, Attempt: c.attempt, First: true, Superseded: superseded})
	}
	if now.Before(c.notBefore) {
		return nil, opError(op, &lease.NotDueError{Remaining: c.notBefore.Sub(now)})
	}
	if ks.fence >= maxFence {
		return nil, opError(op, errFenceOverflow)
	}
	r := s.take(key, ks, ttl, o.Owner, now)
	c.attempt++
	c.state = stateRunning
	l := r.lease(ttl, sent)
	l.Round, l.PrevRound, l.Attempt = c.round, c.round, c.attempt
	l.Attempts = lease.Attempts{Max: c.max, Deadline: c.deadline}
	return lease.Attach(s, l), nil
}

// closeRecord applies a release's close to the completion record of l, the
// lease just released from ks (acquired with lease.WithAttempts), under
// s.mu: done, open (with the next attempt not before now + RetryAfter) or
// given up, and keeps the index.
func (s *Store) closeRecord(ks *keyState, l *lease.Lease, st fleet.Status, now time.Time) {
	c := ks.completion
	if c == nil || c.round != l.Round || c.attempt != l.Attempt || c.state != stateRunning {
		return // not this attempt's record (cannot happen while it held the lease)
	}
	e := indexEntry{ks.name, c.round, c.deadline.UnixMilli()}
	switch st.Close {
	case fleet.CloseOpen:
		c.state = stateOpen
		c.notBefore = now.Add(st.RetryAfter.Truncate(time.Millisecond))
		s.index[e] = c.notBefore
	case fleet.CloseGivenUp:
		s.giveUp(ks, c, st.Replica, st.Started.Add(st.Duration).Truncate(time.Millisecond))
	default:
		c.state = stateDone
		delete(s.index, e)
	}
}

// validateClose checks a status's close before any I/O.
func validateClose(st fleet.Status) error {
	if st.Close < fleet.CloseDone || st.Close > fleet.CloseGivenUp {
		return fmt.Errorf("%w: status close must be CloseDone, CloseOpen or CloseGivenUp, got %s", lease.ErrInvalidArgument, st.Close)
	}
	if st.RetryAfter < 0 {
		return fmt.Errorf("%w: status retry after must not be negative, got %s", lease.ErrInvalidArgument, st.RetryAfter)
	}
	return nil
}

// validateOccurrence checks an index entry's arguments before any I/O and
// returns the normalized key.
func validateOccurrence(key string, round int64, deadline time.Time) (string, error) {
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return "", err
	}
	if round <= 0 {
		return "", fmt.Errorf("%w: round must be positive, got %d", lease.ErrInvalidArgument, round)
	}
	if deadline.IsZero() || deadline.UnixMilli() <= 0 {
		return "", fmt.Errorf("%w: occurrence deadline must be after the Unix epoch", lease.ErrInvalidArgument)
	}
	return key, nil
}

// IndexOccurrence adds or moves key's occurrence round in the index of
// open and running occurrences, due at at. See fleet.Store.
func (s *Store) IndexOccurrence(ctx context.Context, key string, round int64, deadline, at time.Time) error {
	const op = "index occurrence"
	key, err := validateOccurrence(key, round, deadline)
	if err != nil {
		return opError(op, err)
	}
	if at.IsZero() {
		return opError(op, fmt.Errorf("%w: index time must be set", lease.ErrInvalidArgument))
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index[indexEntry{key, round, deadline.UnixMilli()}] = time.UnixMilli(at.UnixMilli())
	return nil
}

// UnindexOccurrence removes one entry from the index. See fleet.Store.
func (s *Store) UnindexOccurrence(ctx context.Context, key string, round int64, deadline time.Time) error {
	const op = "unindex occurrence"
	key, err := validateOccurrence(key, round, deadline)
	if err != nil {
		return opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.index, indexEntry{key, round, deadline.UnixMilli()})
	return nil
}

// DueOccurrences returns up to limit index entries due at the store's now,
// oldest first (ties in the order of lease/redislease's members). See
// fleet.Store.
func (s *Store) DueOccurrences(ctx context.Context, limit int) ([]fleet.Due, error) {
	const op = "due occurrences"
	if limit <= 0 {
		return nil, opError(op, fmt.Errorf("%w: limit must be positive, got %d", lease.ErrInvalidArgument, limit))
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	type due struct {
		e  indexEntry
		at time.Time
	}
	var all []due
	for e, at := range s.index {
		if !at.After(now) {
			all = append(all, due{e, at})
		}
	}
	slices.SortFunc(all, func(a, b due) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.e.member(), b.e.member()))
	})
	out := make([]fleet.Due, 0, min(limit, len(all)))
	for _, d := range all[:min(limit, len(all))] {
		out = append(out, fleet.Due{Key: d.e.key, Round: d.e.round, Deadline: time.UnixMilli(d.e.deadlineMs), At: d.at})
	}
	return out, nil
}

// GiveUp marks key's occurrence round given up when it is open (or
// running with no live lease) and out of attempts or time. See
// fleet.Store.
func (s *Store) GiveUp(ctx context.Context, key string, round int64) (bool, error) {
	const op = "give up"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return false, opError(op, err)
	}
	if round <= 0 {
		return false, opError(op, fmt.Errorf("%w: round must be positive, got %d", lease.ErrInvalidArgument, round))
	}
	if err := ctxError(ctx); err != nil {
		return false, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ks := s.keys[key]
	if ks == nil || ks.completion == nil || ks.completion.round != round {
		return false, nil
	}
	c := ks.completion
	if c.state == stateDone || c.state == stateGivenUp {
		delete(s.index, indexEntry{key, round, c.deadline.UnixMilli()})
		return false, nil
	}
	if !c.open(ks, now) || !c.exhausted(now) {
		return false, nil
	}
	s.recordDead(ks, c, now)
	s.giveUp(ks, c, "", now)
	return true, nil
}
