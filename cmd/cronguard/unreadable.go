package main

import (
	"errors"
	"fmt"

	"github.com/cronguard/cronguard/fleet"
)

// incompleteRead splits the error of an Inspector read (Replicas, Jobs,
// Job): one that wraps a *fleet.UnreadableError came with what the
// readable registry entries say, which the command shows; it returns
// that error as incomplete, for the command to return once it has shown
// what it read (so the listing ends with an error naming the replicas
// left out, and exit 1), and any other error as failed.
func incompleteRead(err error) (unreadable *fleet.UnreadableError, incomplete, failed error) {
	if err == nil {
		return nil, nil, nil
	}
	if !errors.As(err, &unreadable) {
		return nil, nil, err
	}
	what := fmt.Sprintf("the registry entries of %d live replicas", len(unreadable.Replicas))
	if len(unreadable.Replicas) == 1 {
		what = "the registry entry of 1 live replica"
	}
	return unreadable, fmt.Errorf("incomplete: %s could not be read, left out: %w", what, err), nil
}

// unreadableIDs returns the IDs of the replicas left out, for --json (an
// empty list when none).
func unreadableIDs(u *fleet.UnreadableError) []string {
	if u == nil {
		return []string{}
	}
	return u.Replicas
}
