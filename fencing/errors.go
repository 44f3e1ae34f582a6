package fencing

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of them, or
// the error of the database driver (wrapped with %w), so callers branch with
// errors.Is.
var (
	// ErrStale: a token greater than the one offered was already recorded
	// for the resource, or a conditional update touched no row. The writer
	// is no longer the owner: roll the transaction back and stop.
	ErrStale = errors.New("fencing: stale token")
	// ErrInvalidArgument: a table name, dialect, resource, token or other
	// argument broke a rule; the message names the rule. No statement was
	// sent to the database.
	ErrInvalidArgument = errors.New("fencing: invalid argument")
	// ErrNoToken: AdvanceFromContext was given a context that carries no
	// fencing token (see NewContext). No statement was sent.
	ErrNoToken = errors.New("fencing: no token in context")
)

// invalid returns an ErrInvalidArgument error naming the broken rule.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
