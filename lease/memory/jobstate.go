package memory

import (
	"context"
	"log/slog"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// JobState reads what the store holds about key, under one lock. See
// fleet.Store.
func (s *Store) JobState(ctx context.Context, key string) (fleet.JobState, error) {
	const op = "job state"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return fleet.JobState{}, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return fleet.JobState{}, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := fleet.JobState{Now: now, Triggers: len(s.triggers.live(key, now))}
	if ks := s.keys[key]; ks != nil {
		st.LastRound = ks.round
		if live(ks.cur, now) {
			in := info(ks.cur)
			st.Holder = &in
		}
		if ks.status != nil {
			status := *ks.status
			st.Status = &status
		}
	}
	if p, paused := s.pauses[key]; paused {
		st.Pause = &p
	}
	return st, nil
}

// ForceRelease deletes the live lease on key whoever holds it. See
// fleet.Store. It is logged at warn on slog.Default, naming the holder's
// owner label and short lease ID.
func (s *Store) ForceRelease(ctx context.Context, key string) (lease.Info, error) {
	const op = "force release"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return lease.Info{}, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return lease.Info{}, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[key]
	if ks == nil || !live(ks.cur, s.now()) {
		return lease.Info{}, opError(op, lease.ErrNotFound)
	}
	r := ks.cur
	s.release(r)
	slog.Warn("lease force-released by an operator; its holder may still be running",
		"owner", r.owner, "lease", lease.ShortID(r.id), "fence", r.fence)
	return info(r), nil
}
