package redislease

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// SetPause pauses key fleet-wide: acquires with lease.WithPauseCheck fail
// with lease.ErrPaused until ClearPause. See fleet.Store. p.By must pass
// lease.ValidateOwner; p.Note must be valid UTF-8 of at most
// fleet.MaxPauseNoteBytes (newlines allowed); p.At is set to the server's time.
func (s *Store) SetPause(ctx context.Context, key string, p fleet.Pause) error {
	const op = "pause"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return err
	}
	if err := lease.ValidateOwner(p.By); err != nil {
		return opErr(op, "", fmt.Errorf("by: %w", err))
	}
	if len(p.Note) > fleet.MaxPauseNoteBytes || !utf8.ValidString(p.Note) {
		return opErr(op, "", fmt.Errorf("%w: note must be valid UTF-8 of at most %d bytes", lease.ErrInvalidArgument, fleet.MaxPauseNoteBytes))
	}
	resp := pauseSetScript.Exec(ctx, s.client, []string{ks.pause(s.prefix)}, []string{p.By + "\n" + p.Note})
	if err := resp.Error(); err != nil {
		return wrapErr(ctx, op, what, err)
	}
	return nil
}

// ClearPause resumes key and reports whether it was paused.
func (s *Store) ClearPause(ctx context.Context, key string) (bool, error) {
	const op = "resume"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return false, err
	}
	n, err := s.client.Do(ctx, s.client.B().Del().Key(ks.pause(s.prefix)).Build()).AsInt64()
	if err != nil {
		return false, wrapErr(ctx, op, what, err)
	}
	return n == 1, nil
}

// PauseOf returns key's pause, and false if it is not paused.
func (s *Store) PauseOf(ctx context.Context, key string) (fleet.Pause, bool, error) {
	const op = "pause"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return fleet.Pause{}, false, err
	}
	v, err := s.client.Do(ctx, s.client.B().Get().Key(ks.pause(s.prefix)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return fleet.Pause{}, false, nil
	}
	if err != nil {
		return fleet.Pause{}, false, wrapErr(ctx, op, what, err)
	}
	p, err := parsePause(v)
	if err != nil {
		return fleet.Pause{}, false, internalErr(op, what, err)
	}
	return p, true, nil
}

// parsePause decodes a pause key's value: "<atMs>\n<by>\n<note>".
func parsePause(v string) (fleet.Pause, error) {
	at, rest, ok1 := strings.Cut(v, "\n")
	by, note, ok2 := strings.Cut(rest, "\n")
	ms, err := strconv.ParseInt(at, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return fleet.Pause{}, fmt.Errorf("%w: pause must be <atMs>\\n<by>\\n<note>", lease.ErrInternal)
	}
	return fleet.Pause{By: by, Note: note, At: time.UnixMilli(ms)}, nil
}
