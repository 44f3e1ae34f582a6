package memory

import (
	"context"
	"fmt"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

var (
	_ lease.BatchAcquirer  = (*Store)(nil)
	_ lease.RoundReader    = (*Store)(nil)
	_ fleet.BatchReleaser  = (*Store)(nil)
	_ fleet.BatchPublisher = (*Store)(nil)
)

// AcquireBatch makes the acquires of reqs one after the other, each as
// Acquire does, and writes their answers to results. See
// lease.BatchAcquirer.
func (s *Store) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, results []lease.AcquireResult) {
	for i, r := range reqs {
		l, err := s.Acquire(ctx, r.Key, r.TTL, r.Options...)
		results[i] = lease.AcquireResult{Lease: l, Err: err}
	}
}

// ReleaseWithStatusBatch makes the releases of leases one after the
// other, each as ReleaseWithStatus does, and writes their answers to
// triggers and errs. See fleet.BatchReleaser.
func (s *Store) ReleaseWithStatusBatch(ctx context.Context, leases []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	for i, l := range leases {
		triggers[i], errs[i] = s.ReleaseWithStatus(ctx, l, sts[i])
	}
}

// LastRounds sets rounds[i] to the last round recorded for keys[i], 0 if
// none. See lease.RoundReader.
func (s *Store) LastRounds(ctx context.Context, keys []string, rounds []int64) error {
	const op = "last rounds"
	if len(rounds) < len(keys) {
		return opError(op, fmt.Errorf("%w: rounds must be as long as keys", lease.ErrInvalidArgument))
	}
	norm := make([]string, len(keys))
	for i, k := range keys {
		n, err := lease.NormalizeKey(k)
		if err != nil {
			return opError(op, err)
		}
		norm[i] = n
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range norm {
		rounds[i] = 0
		if ks := s.keys[k]; ks != nil {
			rounds[i] = ks.round
		}
	}
	return nil
}

// LastRuns sets spans[i] to the span of the last run recorded for keys[i]
// by ReleaseWithStatus, zero if none. See lease.RoundReader.
func (s *Store) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	const op = "last runs"
	if len(spans) < len(keys) {
		return opError(op, fmt.Errorf("%w: spans must be as long as keys", lease.ErrInvalidArgument))
	}
	norm := make([]string, len(keys))
	for i, k := range keys {
		n, err := lease.NormalizeKey(k)
		if err != nil {
			return opError(op, err)
		}
		norm[i] = n
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for i, k := range norm {
		spans[i] = lease.RunSpan{}
		ks := s.keys[k]
		switch {
		case ks == nil:
		case live(ks.cur, now): // the run in progress, not recorded yet
			spans[i] = lease.RunSpan{Start: ks.cur.acquiredAt, End: ks.cur.expiresAt}
		case ks.status != nil:
			spans[i] = lease.RunSpan{Start: ks.status.Started, End: ks.status.Started.Add(ks.status.Duration)}
		}
	}
	return nil
}
