package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/lease"
)

// recordingStore is a lease.Store that records every Acquire, Extend and
// Release, with their outcome, server times and send times, in the history.
// The scheduler and its heartbeats call it for every lease operation.
type recordingStore struct {
	lease.Store
	hist   *history.Writer
	prefix string // the scheduler's key prefix, stripped to name the job

	mu     sync.Mutex
	leases map[string]history.Event // by full lease ID: Job, Occurrence, Fence, Lease
}

func newRecordingStore(inner lease.Store, hist *history.Writer, prefix string) *recordingStore {
	return &recordingStore{Store: inner, hist: hist, prefix: prefix, leases: map[string]history.Event{}}
}

func (s *recordingStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	o, _ := lease.ResolveAcquireOptions(opts) // the inner store reports a bad option
	ev := history.Event{Job: strings.TrimPrefix(key, s.prefix), Occurrence: o.Round}
	ev.Sent = history.Mono()
	l, err := s.Store.Acquire(ctx, key, ttl, opts...)
	if err != nil {
		ev.Kind, ev.Reason, ev.Err = history.AcquireError, acquireReason(err), err.Error()
		s.write(ev)
		return nil, err
	}
	ev.Kind, ev.Fence, ev.Lease = history.Acquire, uint64(l.Fence), lease.ShortID(l.ID)
	ev.AcquiredAt, ev.ExpiresAt = l.AcquiredAt.UnixMilli(), l.ExpiresAt.UnixMilli()
	s.mu.Lock()
	s.leases[l.ID] = history.Event{Job: ev.Job, Occurrence: ev.Occurrence, Fence: ev.Fence, Lease: ev.Lease}
	s.mu.Unlock()
	s.write(ev)
	return lease.Attach(s, l), nil
}

func (s *recordingStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	ev := s.lease(id)
	ev.Sent = history.Mono()
	exp, err := s.Store.Extend(ctx, id, ttl)
	if err != nil {
		ev.Kind, ev.Reason, ev.Err = history.ExtendError, outcomeReason(err), err.Error()
	} else {
		ev.Kind, ev.ExpiresAt = history.Extend, exp.UnixMilli()
	}
	s.write(ev)
	return exp, err
}

func (s *recordingStore) Release(ctx context.Context, id string) error {
	ev := s.lease(id)
	ev.Sent, ev.SentWall = history.Mono(), history.Wall()
	err := s.Store.Release(ctx, id)
	if err != nil {
		ev.Kind, ev.Reason, ev.Err = history.ReleaseError, outcomeReason(err), err.Error()
	} else {
		ev.Kind = history.Release
	}
	if ev.Reason != history.OutcomeUnknown {
		// Done with the lease. After an unknown outcome the scheduler
		// retries the release: keep naming its job.
		s.mu.Lock()
		delete(s.leases, id)
		s.mu.Unlock()
	}
	s.write(ev)
	return err
}

func (s *recordingStore) lease(id string) history.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev, ok := s.leases[id]; ok {
		return ev
	}
	return history.Event{Lease: lease.ShortID(id)}
}

func (s *recordingStore) write(ev history.Event) {
	_ = s.hist.Write(ev) // a lost line shows as a gap the checker reports
}

// acquireReason names why an acquire failed.
func acquireReason(err error) string {
	switch {
	case errors.Is(err, lease.ErrLocked):
		return "locked"
	case errors.Is(err, lease.ErrRoundClaimed):
		return "claimed"
	case errors.Is(err, lease.ErrClockSkew):
		return "skew"
	default:
		return "error"
	}
}

// outcomeReason classes a failed extend or release: "not_held" when the
// server said the lease was not held (it did nothing), else "unknown": the
// reply was lost or unreadable, so the request may have run.
func outcomeReason(err error) string {
	if errors.Is(err, lease.ErrNotHeld) {
		return history.OutcomeNotHeld
	}
	return history.OutcomeUnknown
}
