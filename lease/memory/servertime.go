package memory

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/fleet"
)

var _ fleet.ServerClock = (*Store)(nil)

// ServerTime returns the store's time: its clock's (WithClock). See
// fleet.ServerClock.
func (s *Store) ServerTime(ctx context.Context) (time.Time, error) {
	if err := ctxError(ctx); err != nil {
		return time.Time{}, opError("time", err)
	}
	return s.now(), nil
}
