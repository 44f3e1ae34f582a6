package schedsim

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/fleet"
)

// IndexOccurrence implements fleet.Store.
func (v *view) IndexOccurrence(ctx context.Context, key string, round int64, deadline, at time.Time) error {
	st, err := v.store()
	if err != nil {
		return err
	}
	return st.IndexOccurrence(ctx, key, round, deadline, at)
}

// DueOccurrences implements fleet.Store.
func (v *view) DueOccurrences(ctx context.Context, limit int) ([]fleet.Due, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	return st.DueOccurrences(ctx, limit)
}

// UnindexOccurrence implements fleet.Store.
func (v *view) UnindexOccurrence(ctx context.Context, key string, round int64, deadline time.Time) error {
	st, err := v.store()
	if err != nil {
		return err
	}
	return st.UnindexOccurrence(ctx, key, round, deadline)
}

// GiveUp implements fleet.Store.
func (v *view) GiveUp(ctx context.Context, key string, round int64) (bool, error) {
	st, err := v.store()
	if err != nil {
		return false, err
	}
	return st.GiveUp(ctx, key, round)
}
