package redislease

import (
	"fmt"
	"log/slog"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// config is the resolved form of a list of Option values.
type config struct {
	prefix string
	logger *slog.Logger
	clock  clockwork.Clock
	ack    replicaAck // WithReplicaAck (wait.go); zero: off

	historyLimit int // WithHistoryLimit
}

// Option configures a Store. Options validate their input; New returns the
// first error.
type Option func(*config) error

// DefaultPrefix is the key prefix of a Store given no WithPrefix: every
// key and channel it uses starts with "cronguard:".
const DefaultPrefix = leasekit.DefaultPrefix

// WithPrefix sets the prefix of every Redis key the Store uses (default
// leasekit.DefaultPrefix, "cronguard"). Trailing colons are stripped. The
// prefix must follow leasekit.NormalizePrefix's rules: non-empty, at most 128
// bytes, no braces, whitespace or control characters, and no reserved last
// segment ("fence", "round", "id", "pause", "trigger", "status",
// "history", "fleet", "sem", "queue").
func WithPrefix(prefix string) Option {
	return func(c *config) error {
		p, err := leasekit.NormalizePrefix(prefix)
		if err != nil {
			return opErr("WithPrefix", "", err)
		}
		c.prefix = p
		return nil
	}
}

// WithLogger sets the logger for warnings (a server setting that puts the
// guarantees at risk, a fence counter nearing its limit, an acquire whose
// outcome was unknown and was rolled back, a force-release). Default:
// slog.Default(), as the scheduler's. Raw keys and IDs are never logged
// above debug level.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return opErr("WithLogger", "", fmt.Errorf("%w: logger must not be nil", lease.ErrInvalidArgument))
		}
		c.logger = logger
		return nil
	}
}

// WithClock sets the local clock used for Lease.Deadline (default
// clockwork.NewRealClock()). Expiry itself is always judged by the Redis
// server's clock.
func WithClock(clock clockwork.Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return opErr("WithClock", "", fmt.Errorf("%w: clock must not be nil", lease.ErrInvalidArgument))
		}
		c.clock = clock
		return nil
	}
}

func resolve(opts []Option) (config, error) {
	c := config{
		prefix: DefaultPrefix,
		logger: slog.Default(),
		clock:  clockwork.NewRealClock(),

		historyLimit: fleet.DefaultHistoryLimit,
	}
	for _, opt := range opts {
		if opt == nil {
			return c, opErr("New", "", fmt.Errorf("%w: nil option", lease.ErrInvalidArgument))
		}
		if err := opt(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithHistoryLimit sets how many runs of each job the Store keeps in the
// job's history (fleet.Store.History), from 1 to fleet.MaxHistoryLimit.
// Default: fleet.DefaultHistoryLimit (100). The history is a list in the
// job's slot, P:history:{G}, trimmed by the release that records each
// run: back to n entries once it holds more than n + max(n/4, 8) (the
// slack saves a command on most releases), so it holds at most that many;
// History returns the newest n. A run record is about 200 bytes, so 100
// runs of 1,000 jobs take some 20 MB of Redis memory, 25 MB at most with
// the slack. Every Store that writes a fleet's history should use the
// same limit: a release trims to its own.
func WithHistoryLimit(n int) Option {
	return func(c *config) error {
		if n < 1 || n > fleet.MaxHistoryLimit {
			return opErr("WithHistoryLimit", "", fmt.Errorf("%w: n must be from 1 to %d, got %d", lease.ErrInvalidArgument, fleet.MaxHistoryLimit, n))
		}
		c.historyLimit = n
		return nil
	}
}

// HistoryLimit returns how many runs of each job the Store keeps
// (WithHistoryLimit).
func (s *Store) HistoryLimit() int { return s.historyLimit }

// Clock returns the clock the Store measures Lease.Deadline on (WithClock;
// default the real clock). It makes the Store a lease.ClockedStore.
func (s *Store) Clock() clockwork.Clock { return s.clock }
