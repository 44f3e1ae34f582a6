package redislease

import (
	"context"
	"time"

	"github.com/cronguard/cronguard/fleet"
)

var _ fleet.ServerClock = (*Store)(nil)

// ServerTime returns the Redis server's time (one TIME command). See
// fleet.ServerClock.
func (s *Store) ServerTime(ctx context.Context) (time.Time, error) {
	const op = "time"
	t, err := serverTime(s.client.Do(ctx, s.client.B().Time().Build()))
	if err != nil {
		return time.Time{}, wrapErr(ctx, op, "", err)
	}
	return t, nil
}
