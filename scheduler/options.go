package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/internal/cronexpr"
	"github.com/cronguard/cronguard/lease"
)

// Defaults.
const (
	// DefaultTTL is a job lease's time to live unless WithTTL says otherwise.
	// The heartbeat renews it every DefaultTTL/3 while the job runs.
	DefaultTTL = 30 * time.Second
	// MinTTL is the shortest TTL WithTTL accepts.
	MinTTL = 10 * time.Millisecond
	// JobKeyPrefix is prepended to a job's name to form its lease key: job
	// "invoices" has the key "job:invoices" in the store. Jobs of separate
	// fleets sharing one Redis are kept apart by the store's prefix
	// (redislease.WithPrefix), not by the job key.
	JobKeyPrefix = "job:"
	// MaxInstanceIDLen is the longest instance ID accepted, in bytes.
	MaxInstanceIDLen = 128
	// DefaultAcquireConcurrency is how many lease acquire calls a Scheduler
	// has at the store at once unless WithAcquireConcurrency says
	// otherwise.
	DefaultAcquireConcurrency = 256
	// MaxCleanup bounds the context of a Release after a run (and of each
	// acquire): min(ttl, MaxCleanup).
	MaxCleanup = 5 * time.Second
)

// Option configures a Scheduler; see New.
type Option func(*config) error

type config struct {
	logger     *slog.Logger
	location   *time.Location
	instanceID string
	observers  []func(Event)
	middleware []Middleware

	registryRefresh time.Duration // < 0: no control plane
	clock           clockwork.Clock

	acquireConcurrency int
	claimLead          time.Duration // claim_ahead.go
}

func defaultConfig() config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return config{
		logger:     slog.Default(),
		location:   time.UTC,
		instanceID: host + "/" + strconv.Itoa(os.Getpid()),
		clock:      clockwork.NewRealClock(),

		acquireConcurrency: DefaultAcquireConcurrency,
		registryRefresh:    DefaultRegistryRefresh,
	}
}

func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// WithLogger sets the logger. Default: slog.Default(), so that errors (a
// broken clock, a panicking job, an unreachable store) are visible. Skips
// are logged at debug level, runs at info, failures at error. Lease IDs
// appear only in short form. It must not be nil; use a logger with a
// discarding handler to silence the scheduler.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalidOption("WithLogger: logger must not be nil")
		}
		c.logger = l
		return nil
	}
}

// WithLocation sets the time zone in which cron expressions are read.
// Default: UTC. Every replica must use the same location (or zone-prefixed
// expressions), or they will not agree on occurrences; the location's name
// is part of each cron job's fingerprint, so replicas that differ report a
// conflict. It must not be nil, and must not be time.Local (or any location
// named "Local"): that is the zone of whichever machine a replica runs on,
// so replicas in New York and Berlin would run "0 2 * * *" six hours apart
// under one name. Load the zone by its IANA name instead, for example
// time.LoadLocation("Europe/Berlin").
func WithLocation(loc *time.Location) Option {
	return func(c *config) error {
		switch {
		case loc == nil:
			return invalidOption("WithLocation: location must not be nil")
		case cronexpr.IsLocal(loc):
			return invalidOption("WithLocation: location %q is the zone of the machine it runs on, which replicas may not share: load an IANA zone by name, such as time.LoadLocation(\"Europe/Berlin\")", loc)
		}
		c.location = loc
		return nil
	}
}

// WithInstanceID names this replica in logs, events and (unless WithOwner
// says otherwise) the lease owner label "<instance>/<job>". Default:
// "<hostname>/<pid>". It must be non-empty, at most MaxInstanceIDLen
// bytes, and a valid owner label (lease.ValidateOwner: valid UTF-8, no
// control characters), since it becomes part of one.
func WithInstanceID(id string) Option {
	return func(c *config) error {
		switch {
		case id == "":
			return invalidOption("WithInstanceID: id must not be empty")
		case len(id) > MaxInstanceIDLen:
			return invalidOption("WithInstanceID: id must be at most %d bytes, got %d", MaxInstanceIDLen, len(id))
		}
		if err := lease.ValidateOwner(id); err != nil {
			return fmt.Errorf("%w: WithInstanceID: %w", ErrInvalidArgument, err)
		}
		c.instanceID = id
		return nil
	}
}

// WithObserver adds a function called with every Event (run started,
// skipped and why, succeeded, failed, panicked, timed out, cancelled, lease
// lost, renewed, released, acquire retrying and failed, missed). Observers
// are called in the order they were added, synchronously from the
// scheduler's goroutines, possibly concurrently: each must be safe for
// concurrent use, fast, and must not block or call back into the
// Scheduler (except Stats and JobStats). Default: none. It must not be nil.
func WithObserver(fn func(Event)) Option {
	return func(c *config) error {
		if fn == nil {
			return invalidOption("WithObserver: observer must not be nil")
		}
		c.observers = append(c.observers, fn)
		return nil
	}
}

// Middleware wraps a job's function: it receives the function the
// scheduler would call (the job's own, or the next middleware) and returns
// the one to call instead. It sees the run's context (RunFromContext,
// fencing.FromContext) and can put values into it for the job, such as a
// trace span whose children are the job's own spans. A middleware must call
// next at most once, return what it returns, and let a panic go on (after
// recording it, if it recovers it must panic again): the scheduler reports
// the outcome.
type Middleware func(next func(context.Context) error) func(context.Context) error

// WithMiddleware adds middleware around every job's function. The first
// middleware added is the outermost. Middleware is applied when a job is
// registered. Default: none. None may be nil.
func WithMiddleware(mw ...Middleware) Option {
	return func(c *config) error {
		for _, m := range mw {
			if m == nil {
				return invalidOption("WithMiddleware: middleware must not be nil")
			}
		}
		c.middleware = append(c.middleware, mw...)
		return nil
	}
}

// wrap returns fn inside the scheduler's middleware, outermost first.
func (s *Scheduler) wrap(fn func(context.Context) error) func(context.Context) error {
	for i := len(s.cfg.middleware) - 1; i >= 0; i-- {
		fn = s.cfg.middleware[i](fn)
	}
	return fn
}

// WithClock sets the clock that drives the schedules, the retries within an
// occurrence and the catch-up window. Default: the real clock. Tests pass a
// fake or skewed clock. Run deadlines (WithTimeout) are on the real clock,
// and each run's heartbeat measures on the lease store's clock (see
// lease.ClockedStore), the clock its lease's deadline was measured on. It
// must not be nil.
func WithClock(clock clockwork.Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return invalidOption("WithClock: clock must not be nil")
		}
		c.clock = clock
		return nil
	}
}

// WithRegistryRefresh sets how often this replica refreshes its entry in
// the fleet's registry (package fleet), when the lease store keeps one (as
// lease/redislease and lease/memory do). The entry lapses three periods after
// the last refresh, so a replica that dies leaves the registry within
// 3*d (one that stops leaves at Shutdown). Default: DefaultRegistryRefresh
// (5s). d must be at least 100ms and a whole number of milliseconds.
func WithRegistryRefresh(d time.Duration) Option {
	return func(c *config) error {
		if d < 100*time.Millisecond || d%time.Millisecond != 0 {
			return invalidOption("WithRegistryRefresh: period must be a whole number of milliseconds, at least 100ms, got %s", d)
		}
		c.registryRefresh = d
		return nil
	}
}

// WithoutControlPlane keeps this replica out of the fleet's control plane
// even when the lease store offers one: no registry entry, no triggers, no
// run status, and no completion: an interrupted run is reported
// interrupted and its occurrence is not resumed, a failure is not retried
// (WithAttempts, WithRetry need the control plane's store). Pauses are
// still honoured: they are checked by the lease acquire itself.
func WithoutControlPlane() Option {
	return func(c *config) error {
		c.registryRefresh = -1
		return nil
	}
}

// WithAcquireConcurrency sets how many lease acquire calls the Scheduler
// has at the store at once, each made by one of its acquire workers (at
// most one per registered job). With a store that makes many acquires in
// one call (lease.BatchAcquirer, as redislease is), a call carries up to
// 64 of the claims queued together, so the claims of a firing group of
// 10,000 jobs go out at once, in some 160 calls (fewer on a replica that
// is preferred for only part of them); with another store, a call is one
// acquire. Firings never wait for a worker: they queue, one entry per job
// at most, and a slow store delays a job's acquire without delaying gocron
// or other jobs' firings. Default: DefaultAcquireConcurrency (256). It
// must be between 1 and 65536. Raise it when many jobs share a schedule,
// the store takes one acquire per call and its round trip is long: n
// acquires in flight complete about n / round-trip per second.
func WithAcquireConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 65536 {
			return invalidOption("WithAcquireConcurrency: n must be between 1 and 65536, got %d", n)
		}
		c.acquireConcurrency = n
		return nil
	}
}

// JobOption configures one job; see Register.
type JobOption func(*jobConfig) error

type jobConfig struct {
	ttl            time.Duration
	timeout        time.Duration
	catchUp        time.Duration
	owner          string // WithOwner; "": the replica's ID and the job's name (Scheduler.ownerOf)
	errorClassOnly bool
	overlap        OverlapPolicy     // WithOverlap
	limitSpec      *concurrencyLimit // WithConcurrencyLimit; nil: none
	attempts       int               // WithAttempts, WithRetry
	retry          *retryPolicy      // WithRetry; nil: failures are not retried
	attemptWindow  time.Duration     // WithAttemptWindow; 0: until the next occurrence
}

// WithTTL sets the job lease's time to live. Default: DefaultTTL (30s).
// It must be a whole number of milliseconds between MinTTL and
// lease.MaxTTL. The lease is renewed every ttl/3 while the job runs; a job
// that outlives its replica (a crash, a job that ignores its context at
// shutdown) blocks its next occurrences for up to ttl.
func WithTTL(ttl time.Duration) JobOption {
	return func(c *jobConfig) error {
		if err := lease.ValidateTTL(ttl); err != nil {
			return fmt.Errorf("%w: WithTTL: %w", ErrInvalidArgument, err)
		}
		if ttl < MinTTL {
			return invalidOption("WithTTL: ttl must be at least %s, got %s", MinTTL, ttl)
		}
		c.ttl = ttl
		return nil
	}
}

// WithTimeout bounds each run: the run's context has a deadline d after the
// run starts (ctx.Deadline, so that database and HTTP clients bound their
// I/O by it), and at the deadline it is cancelled with cause ErrTimeout,
// an EventCancelled and a warning report it, and the lease is no longer
// renewed, so a job that ignores the cancellation holds the lease for at
// most one more TTL (then fencing rejects its writes) instead of blocking
// the job everywhere. A run that returns after its deadline is reported as
// timed out (EventTimedOut), whatever it returns. The deadline is on the
// real clock, like every context deadline, not on WithClock's clock.
// Default: no timeout, and a run holds its lease for as long as it runs.
// It must be positive.
func WithTimeout(d time.Duration) JobOption {
	return func(c *jobConfig) error {
		if d <= 0 {
			return invalidOption("WithTimeout: timeout must be positive, got %s", d)
		}
		c.timeout = d
		return nil
	}
}

// WithCatchUp makes the job catch up an occurrence that ran nowhere, once,
// late, if it is at most window old: when the scheduler starts (or the job
// is registered after Start), and when a run of the job ends after later
// occurrences came due while it ran, the scheduler claims the job's latest
// occurrence at or before now. The claim is a normal round claim: it wins
// only if no replica claimed that occurrence or a later one (a triggered
// run that started after it came due claimed a later one), so a
// catch-up runs once however many replicas try, never runs an occurrence
// that ran, and never one older than window. The run's Run.CatchUp is
// set. The window also bounds the retries within an occurrence (a store
// outage): they stop window after it, if that comes before the next
// occurrence.
//
// Default: off. Turn it on for jobs whose every occurrence matters and
// that run rarely, such as nightly or hourly jobs (a deploy that restarts
// every replica across 02:00 then still runs the nightly job, late); leave
// it off for high-frequency jobs, where the next occurrence comes soon
// anyway. Occurrences older than the latest one are never caught up:
// rounds only move forward, and the ledger reports them (EventMissed).
// window must be positive.
func WithCatchUp(window time.Duration) JobOption {
	return func(c *jobConfig) error {
		if window <= 0 {
			return invalidOption("WithCatchUp: window must be positive, got %s", window)
		}
		c.catchUp = window
		return nil
	}
}

// WithErrorClassOnly makes the job's run status (package fleet, shown by
// inspect and the cronguard CLI) keep only the class of a failed run's
// error (for example "deadline_exceeded", "fencing_stale", "error"), not
// its text. By default the text is kept, cut to one line and
// fleet.MaxErrorBytes with what looks like credentials in URLs removed
// (fleet.SanitizeError); use this for jobs whose errors may carry personal
// data or secrets in other forms. Logs and events still carry the error.
func WithErrorClassOnly() JobOption {
	return func(c *jobConfig) error {
		c.errorClassOnly = true
		return nil
	}
}

// WithOwner sets the holder label stored with the job's lease (shown by
// lease Lookup and the cronguard command; not a proof of ownership), as
// lease.WithOwner does for one acquire. Default: "<instance ID>/<job
// name>". It must pass lease.ValidateOwner (valid UTF-8, at most
// lease.MaxOwnerLen bytes, no control characters); "" keeps the default.
func WithOwner(label string) JobOption {
	return func(c *jobConfig) error {
		if err := lease.ValidateOwner(label); err != nil {
			return fmt.Errorf("%w: WithOwner: %w", ErrInvalidArgument, err)
		}
		c.owner = label
		return nil
	}
}
