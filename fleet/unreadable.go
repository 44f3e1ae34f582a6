package fleet

import (
	"fmt"
	"strings"
)

// UnreadableError reports live registry entries that a store could not
// read: an entry, or the job list it names, that is not in a form this
// version reads (written by hand, by a tool, or by a later version that
// changed it). Store.Replicas, Store.Conflicts and Store.PublishReplica
// return it together with what they could read, so that one such entry
// does not hide the rest of the fleet: a replica builds its view of the
// fleet from the others and leaves the unreadable ones out, and the
// inspect package, the cronguard command and the console show the others
// with a warning that names the replicas left out.
//
// Err is the first entry's error and wraps lease.ErrInternal.
type UnreadableError struct {
	// Replicas are the IDs of the replicas whose entries could not be
	// read, sorted.
	Replicas []string
	// Err is why the first of them could not be read.
	Err error
}

// Error names the first unreadable entry and how many more there are.
func (e *UnreadableError) Error() string {
	if len(e.Replicas) <= 1 {
		return e.Err.Error()
	}
	more := e.Replicas[1:]
	named := strings.Join(more[:min(len(more), maxNamedUnreadable)], ", ")
	if len(more) > maxNamedUnreadable {
		named += ", ..."
	}
	return fmt.Sprintf("%v (and the entries of %d more replicas: %s)", e.Err, len(more), named)
}

// maxNamedUnreadable is how many more unreadable replicas an
// UnreadableError's message names after the first.
const maxNamedUnreadable = 8

// Unwrap returns Err.
func (e *UnreadableError) Unwrap() error { return e.Err }
