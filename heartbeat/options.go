package heartbeat

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Defaults, as fractions of the lease's TTL.
const (
	// DefaultIntervalDivisor: renewals fire every TTL/DefaultIntervalDivisor
	// unless WithInterval says otherwise.
	DefaultIntervalDivisor = 3
	// DefaultStopMarginDivisor: the context is cancelled TTL/DefaultStopMarginDivisor
	// before the local deadline unless WithStopMargin says otherwise.
	DefaultStopMarginDivisor = 6
)

// Option configures Start. Options are applied in order; each one checks its
// own input and Start checks how they fit together and with the lease's TTL.
type Option func(*config) error

type config struct {
	interval    time.Duration // 0: TTL/DefaultIntervalDivisor
	intervalSet bool
	margin      time.Duration
	marginSet   bool
	clock       clockwork.Clock
	logger      *slog.Logger
	observer    func(Event)
}

// WithInterval sets the time between renewals. Default: the lease's TTL / 3.
// It must be positive and leave room before the cut-off:
// interval < TTL - (TTL/100 + 2ms) - stop margin.
func WithInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalidOption("interval must be positive, got %s", d)
		}
		c.interval, c.intervalSet = d, true
		return nil
	}
}

// WithStopMargin sets how long before the lease's local deadline the
// context is cancelled when no renewal has been confirmed: the time left to
// the work to notice and stop before the lease may expire on the server.
// Default: the lease's TTL / 6. It must not be negative.
func WithStopMargin(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalidOption("stop margin must not be negative, got %s", d)
		}
		c.margin, c.marginSet = d, true
		return nil
	}
}

// WithClock sets the clock that drives renewals and the cut-off. It must be
// the clock the Store used to compute the lease's Deadline, or the cut-off
// moves by the difference between the two. Default: the store's own clock
// when it is a lease.ClockedStore (lease/redislease and lease/memory are), else
// clockwork.NewRealClock(); leave it unset unless the store has none.
func WithClock(clock clockwork.Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return invalidOption("clock must not be nil")
		}
		c.clock = clock
		return nil
	}
}

// WithLogger sets the logger. Extensions and the end of the heartbeat log at
// Debug, retries at Warn (with the error), a loss at Error (with the cause).
// Logs carry the short lease ID (lease.ShortID) and the fence; the key only
// at Debug. Default: slog.Default() at the time of Start.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return invalidOption("logger must not be nil")
		}
		c.logger = logger
		return nil
	}
}

// WithObserver sets a function called with every Event, synchronously on
// the heartbeat's goroutine, before the matching log line (EventStopped of
// a heartbeat stopped before its first renewal, on the goroutine that
// calls Stop). It must return quickly and must not call the Stop function
// (Stop waits for that goroutine). Default: none.
func WithObserver(fn func(Event)) Option {
	return func(c *config) error {
		if fn == nil {
			return invalidOption("observer must not be nil")
		}
		c.observer = fn
		return nil
	}
}

// newConfig applies opts and checks them against the lease's TTL. The
// clock defaults to the one store measured the lease's Deadline on.
func newConfig(store lease.Store, ttl time.Duration, opts []Option) (config, error) {
	var c config
	for _, opt := range opts {
		if opt == nil {
			return c, invalidOption("option must not be nil")
		}
		if err := opt(&c); err != nil {
			return c, err
		}
	}
	if c.clock == nil {
		c.clock = lease.ClockOf(store)
	}
	if !c.intervalSet {
		c.interval = ttl / DefaultIntervalDivisor
	}
	if !c.marginSet {
		c.margin = ttl / DefaultStopMarginDivisor
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.interval <= 0 {
		return c, invalidOption("interval must be positive, got %s (ttl %s)", c.interval, ttl)
	}
	if room := ttl - leasekit.Drift(ttl) - c.margin; c.interval >= room {
		return c, invalidOption("interval must be less than ttl - drift - stop margin (%s - %s - %s = %s), got %s",
			ttl, leasekit.Drift(ttl), c.margin, room, c.interval)
	}
	return c, nil
}

func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

func invalidArgument(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
