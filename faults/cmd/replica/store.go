package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// recordingStore is a fleet.Store that records every Acquire, Extend and
// Release (ReleaseWithStatus too), with their outcome, server times and
// send times, and every GiveUp that marked an occurrence given up, in the
// history. The scheduler and its heartbeats call it for every lease
// operation; the rest of the control plane goes to the inner store
// unrecorded.
type recordingStore struct {
	fleet.Store
	hist   *history.Writer
	prefix string // the scheduler's key prefix, stripped to name the job

	mu     sync.Mutex
	leases map[string]history.Event // by full lease ID: Job, Occurrence, Fence, Lease
}

func newRecordingStore(inner fleet.Store, hist *history.Writer, prefix string) *recordingStore {
	return &recordingStore{Store: inner, hist: hist, prefix: prefix, leases: map[string]history.Event{}}
}

func (s *recordingStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	o, _ := lease.ResolveAcquireOptions(opts) // the inner store reports a bad option
	ev := history.Event{Job: strings.TrimPrefix(key, s.prefix), Occurrence: o.Round}
	if o.Resume > 0 {
		ev.Occurrence = o.Resume // the next attempt of that round
	}
	ev.Sent = history.Mono()
	l, err := s.Store.Acquire(ctx, key, ttl, opts...)
	if err != nil {
		ev.Kind, ev.Reason, ev.Err = history.AcquireError, acquireReason(err), err.Error()
		var gu *lease.GivenUpError
		if errors.As(err, &gu) {
			ev.Attempt, ev.First = gu.Attempt, gu.First
		}
		s.write(ev)
		return nil, err
	}
	ev.Kind, ev.Fence, ev.Lease = history.Acquire, uint64(l.Fence), lease.ShortID(l.ID)
	ev.AcquiredAt, ev.ExpiresAt = l.AcquiredAt.UnixMilli(), l.ExpiresAt.UnixMilli()
	ev.Attempt = l.Attempt
	if l.Superseded != nil {
		ev.Superseded = l.Superseded.Round
	}
	s.mu.Lock()
	s.leases[l.ID] = history.Event{Job: ev.Job, Occurrence: ev.Occurrence, Fence: ev.Fence, Lease: ev.Lease, Attempt: ev.Attempt}
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
	return s.release(id, "", func() error { return s.Store.Release(ctx, id) })
}

// ReleaseWithStatus records the release as Release does, with what it did
// to the occurrence's completion record when the lease has one.
func (s *recordingStore) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	var n int
	closed := ""
	if l.Attempts.Max > 0 {
		closed = st.Close.String()
	}
	err := s.release(l.ID, closed, func() error {
		var err error
		n, err = s.Store.ReleaseWithStatus(ctx, l, st)
		return err
	})
	return n, err
}

// GiveUp records the occurrence given up when this call marked it.
func (s *recordingStore) GiveUp(ctx context.Context, key string, round int64) (bool, error) {
	first, err := s.Store.GiveUp(ctx, key, round)
	if first {
		s.write(history.Event{Kind: history.GiveUpMarked, Job: strings.TrimPrefix(key, s.prefix), Occurrence: round})
	}
	return first, err
}

// release runs do, the release of lease id closing its occurrence as
// closed (history.CloseDone, ...; "" without a completion record), and
// records it.
func (s *recordingStore) release(id, closed string, do func() error) error {
	ev := s.lease(id)
	ev.Sent, ev.SentWall, ev.Close = history.Mono(), history.Wall(), closed
	err := do()
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
	case errors.Is(err, lease.ErrGivenUp):
		return history.AcquireGivenUp
	case errors.Is(err, lease.ErrNotDue):
		return history.AcquireNotDue
	case errors.Is(err, lease.ErrInvalidArgument):
		return history.AcquireInvalid
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
