package memory

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// SetPause pauses key fleet-wide: acquires with lease.WithPauseCheck fail
// with lease.ErrPaused until ClearPause. See fleet.Store. p.By must pass
// lease.ValidateOwner; p.Note must be valid UTF-8 of at most
// fleet.MaxPauseNoteBytes (newlines allowed); p.At is set to the store's time. A
// second call replaces the pause.
func (s *Store) SetPause(ctx context.Context, key string, p fleet.Pause) error {
	const op = "pause"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return opError(op, err)
	}
	if err := lease.ValidateOwner(p.By); err != nil {
		return opError(op, fmt.Errorf("by: %w", err))
	}
	if len(p.Note) > fleet.MaxPauseNoteBytes || !utf8.ValidString(p.Note) {
		return opError(op, fmt.Errorf("%w: note must be valid UTF-8 of at most %d bytes", lease.ErrInvalidArgument, fleet.MaxPauseNoteBytes))
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses[key] = fleet.Pause{By: p.By, Note: p.Note, At: s.now()}
	return nil
}

// ClearPause resumes key and reports whether it was paused.
func (s *Store) ClearPause(ctx context.Context, key string) (bool, error) {
	const op = "resume"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return false, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return false, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, paused := s.pauses[key]
	delete(s.pauses, key)
	return paused, nil
}

// PauseOf returns key's pause, and false if it is not paused.
func (s *Store) PauseOf(ctx context.Context, key string) (fleet.Pause, bool, error) {
	const op = "pause"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return fleet.Pause{}, false, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return fleet.Pause{}, false, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, paused := s.pauses[key]
	return p, paused, nil
}
