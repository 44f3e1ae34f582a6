package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// ReleaseWithStatus releases l as Release(ctx, l.ID) does and, when l still
// held its key, records st as the key's last run in the same step. It
// returns how many live triggers wait for the key. See fleet.Store.
//
// st is kept as lease/redislease keeps it: times and the duration to the
// millisecond, st.Error sanitized (fleet.SanitizeError). A Lease whose Key
// is not the key its ID holds (a copy someone edited) releases the lease
// its ID names and records nothing, as lease/redislease does.
func (s *Store) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	const op = "release"
	if l == nil {
		return 0, opError(op, fmt.Errorf("%w: lease must not be nil", lease.ErrInvalidArgument))
	}
	if err := leasekit.ValidateID(l.ID); err != nil {
		return 0, opError(op, err)
	}
	if err := validateClose(st); err != nil {
		return 0, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return 0, opError(op, err)
	}
	key, keyErr := lease.NormalizeKey(l.Key)
	rec := storedStatus(st)

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r, reason := s.held(l.ID, now)
	if r == nil {
		return 0, &lease.NotHeldError{Op: op, Reason: reason}
	}
	s.release(r)
	if keyErr != nil || r.key != key {
		return 0, nil
	}
	ks := s.keys[key]
	ks.status = &rec
	ks.record(rec.Record(), s.historyLimit)
	if l.Attempts.Max > 0 {
		s.closeRecord(ks, l, st, now)
	}
	return len(s.triggers.live(key, now)), nil
}

// storedStatus returns st as the store keeps it: what lease/redislease's JSON
// record keeps of it.
func storedStatus(st fleet.Status) fleet.Status {
	return fleet.Status{
		Occurrence: time.UnixMilli(st.Occurrence.UnixMilli()),
		Owner:      st.Owner,
		Replica:    st.Replica,
		Attempt:    st.Attempt,
		Fence:      st.Fence,
		Started:    time.UnixMilli(st.Started.UnixMilli()),
		Duration:   st.Duration.Truncate(time.Millisecond),
		Outcome:    st.Outcome,
		Error:      fleet.SanitizeError(st.Error),
		Trigger:    st.Trigger,
		Missed:     st.Missed,
	}
}

// LastStatus returns the last run recorded for key, and false if none.
func (s *Store) LastStatus(ctx context.Context, key string) (fleet.Status, bool, error) {
	const op = "status"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return fleet.Status{}, false, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return fleet.Status{}, false, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[key]
	if ks == nil || ks.status == nil {
		return fleet.Status{}, false, nil
	}
	return *ks.status, true, nil
}
