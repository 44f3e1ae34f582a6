package fencing

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of them, or
// the error of the database driver (wrapped with %w), so callers branch with
// errors.Is. The one exception is AdvanceOnce finding, after a refusal, a
// fence row that no longer explains it (only possible outside a
// transaction): its message says so.
var (
	// ErrStale: a token greater than the one offered was already recorded
	// for the resource, or a conditional update touched no row. The writer
	// is no longer the owner: roll the transaction back and stop.
	ErrStale = errors.New("fencing: stale token")
	// ErrDuplicate: AdvanceOnce found this occurrence, or a later one,
	// already written for the resource by another run. The occurrence's
	// effect is committed already (or the resource has moved past it):
	// roll the transaction back and do not retry.
	ErrDuplicate = errors.New("fencing: duplicate occurrence")
	// ErrInvalidArgument: a table name, dialect, resource, token,
	// occurrence or other argument broke a rule; the message names the
	// rule. No statement was sent to the database.
	ErrInvalidArgument = errors.New("fencing: invalid argument")
	// ErrNoToken: AdvanceFromContext was given a context that carries no
	// fencing token (see NewContext). No statement was sent.
	ErrNoToken = errors.New("fencing: no token in context")
	// ErrNoOccurrence: AdvanceOnceFromContext was given a context that
	// carries no occurrence (see NewOccurrenceContext). No statement was
	// sent.
	ErrNoOccurrence = errors.New("fencing: no occurrence in context")
	// ErrNotMigrated: the fence table has no occurrence column, which
	// AdvanceOnce needs: it was made before the column existed. Run
	// Table.Migrate (or Create) once; the error also wraps the database's.
	ErrNotMigrated = errors.New("fencing: fence table lacks the occurrence column")
)

// invalid returns an ErrInvalidArgument error naming the broken rule.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
