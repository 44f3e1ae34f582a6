package memory

import (
	"fmt"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// Option configures a Store.
type Option func(*Store) error

// WithClock sets the clock that is the store's "server time": it decides
// expiry, stamps AcquiredAt and ExpiresAt, bounds time rounds, and sets each
// Lease's local Deadline. Default: clockwork.NewRealClock(). A
// clockwork.FakeClock lets tests drive expiry with Advance.
func WithClock(c clockwork.Clock) Option {
	return func(s *Store) error {
		if c == nil {
			return fmt.Errorf("memory: WithClock: %w: clock must not be nil", lease.ErrInvalidArgument)
		}
		s.clock = c
		return nil
	}
}

// Clock returns the store's clock (WithClock; default the real clock), on
// which it measures expiry and Lease.Deadline. It makes the Store a
// lease.ClockedStore.
func (s *Store) Clock() clockwork.Clock { return s.clock }

// WithHistoryLimit sets how many runs of each key the store keeps in its
// history (fleet.Store.History), from 1 to fleet.MaxHistoryLimit.
// Default: fleet.DefaultHistoryLimit (100).
func WithHistoryLimit(n int) Option {
	return func(s *Store) error {
		if n < 1 || n > fleet.MaxHistoryLimit {
			return fmt.Errorf("memory: WithHistoryLimit: %w: n must be from 1 to %d, got %d", lease.ErrInvalidArgument, fleet.MaxHistoryLimit, n)
		}
		s.historyLimit = n
		return nil
	}
}

// HistoryLimit returns how many runs of each key the store keeps
// (WithHistoryLimit).
func (s *Store) HistoryLimit() int { return s.historyLimit }
