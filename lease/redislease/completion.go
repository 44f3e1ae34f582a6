package redislease

import (
	"context"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// errNoCompletion is the cause of the completion calls until this store
// keeps completion records.
var errNoCompletion = fmt.Errorf("%w: completion records are not kept by this store yet", lease.ErrInternal)

// IndexOccurrence adds or moves key's occurrence round in the index of
// open and running occurrences. See fleet.Store.
func (s *Store) IndexOccurrence(ctx context.Context, key string, round int64, deadline, at time.Time) error {
	return opErr("index occurrence", "", errNoCompletion)
}

// DueOccurrences returns up to limit due index entries. See fleet.Store.
func (s *Store) DueOccurrences(ctx context.Context, limit int) ([]fleet.Due, error) {
	return nil, opErr("due occurrences", "", errNoCompletion)
}

// UnindexOccurrence removes one entry from the index. See fleet.Store.
func (s *Store) UnindexOccurrence(ctx context.Context, key string, round int64, deadline time.Time) error {
	return opErr("unindex occurrence", "", errNoCompletion)
}

// GiveUp marks key's occurrence round given up. See fleet.Store.
func (s *Store) GiveUp(ctx context.Context, key string, round int64) (bool, error) {
	return false, opErr("give up", "", errNoCompletion)
}
