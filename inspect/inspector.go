package inspect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// DefaultConcurrency is how many job state reads Jobs keeps in flight at
// once unless WithConcurrency says otherwise.
const DefaultConcurrency = 16

// MaxConcurrency bounds WithConcurrency.
const MaxConcurrency = 256

// Inspector reads and steers a fleet of schedulers through the store they
// share. It is safe for concurrent use; it holds no connection of its own
// and starts no goroutine that outlives a call.
type Inspector struct {
	store       fleet.Store
	log         *slog.Logger
	concurrency int
}

// Option configures an Inspector. Options validate their input; New
// returns the first error.
type Option func(*config) error

type config struct {
	log         *slog.Logger
	concurrency int
}

// WithLogger sets the logger that records the commands that change the
// fleet (pause, resume, trigger at info, force-release at warn), with who
// asked. Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalid("WithLogger", "logger must not be nil")
		}
		c.log = l
		return nil
	}
}

// WithConcurrency sets how many job state reads Jobs keeps in flight at
// once, from 1 to MaxConcurrency. Default: DefaultConcurrency (16).
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxConcurrency {
			return invalid("WithConcurrency", "n must be from 1 to %d, got %d", MaxConcurrency, n)
		}
		c.concurrency = n
		return nil
	}
}

// New returns an Inspector of the fleet whose control plane store keeps
// (lease/redislease, lease/memory). It does no I/O.
func New(store fleet.Store, opts ...Option) (*Inspector, error) {
	if store == nil {
		return nil, invalid("New", "store must not be nil")
	}
	c := config{log: slog.Default(), concurrency: DefaultConcurrency}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("New", "option must not be nil")
		}
		if err := opt(&c); err != nil {
			return nil, err
		}
	}
	return &Inspector{store: store, log: c.log, concurrency: c.concurrency}, nil
}

// Replicas returns the live replicas' registry entries, sorted by ID: one
// store read (lease/redislease: TIME and ZRANGE in one round trip, one
// MGET of the entries, then one MGET of the job lists they name; replicas
// that name one list share its Jobs slice, which callers only read). An
// entry lives three refresh periods after its
// replica's last refresh (scheduler.WithRegistryRefresh, 5s by default),
// so a replica that died is listed for up to 15s; one that shut down
// cleanly is gone at once.
//
// Entries it cannot read (written by a later version of cronguard, or by
// hand) do not hide the others: it returns the readable ones with an
// error that wraps a *fleet.UnreadableError naming the replicas left out
// (errors.As), so that a caller can show what it has and warn. Jobs and
// Job do the same. Any other error comes with no replicas.
func (in *Inspector) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	rs, unreadable, err := in.readRegistry(ctx)
	switch {
	case err != nil:
		return nil, fmt.Errorf("inspect: replicas: %w", err)
	case unreadable != nil:
		return rs, fmt.Errorf("inspect: replicas: %w", unreadable)
	}
	return rs, nil
}

// readRegistry reads the live replicas: the readable ones, with the
// entries that could not be read (unreadable, nil when every entry was
// read), or err, with nothing read.
func (in *Inspector) readRegistry(ctx context.Context) (rs []fleet.Replica, unreadable *fleet.UnreadableError, err error) {
	rs, err = in.store.Replicas(ctx)
	if err == nil {
		return rs, nil, nil
	}
	if errors.As(err, &unreadable) {
		return rs, unreadable, nil
	}
	return nil, nil, err
}

// registrations returns every live replica's registration of each job,
// by job name, in replica ID order, and the names sorted.
func registrations(replicas []fleet.Replica) (map[string][]Registration, []string) {
	replicas = slices.Clone(replicas)
	slices.SortFunc(replicas, func(a, b fleet.Replica) int { return strings.Compare(a.ID, b.ID) })
	by := map[string][]Registration{}
	var names []string
	for _, r := range replicas {
		for _, j := range r.Jobs {
			if _, seen := by[j.Name]; !seen {
				names = append(names, j.Name)
			}
			by[j.Name] = append(by[j.Name], Registration{Replica: r.ID, Job: j})
		}
	}
	slices.Sort(names)
	return by, names
}

// resolve finds name among the live replicas' jobs: its registrations
// and the replicas read, or ErrUnknownJob. unreadable is not nil when some
// registry entries could not be read (the job's registrations are then
// the readable replicas'); an unknown job's error names them, as they may
// be the ones that have it.
func (in *Inspector) resolve(ctx context.Context, op, name string) (regs []Registration, replicas []fleet.Replica, unreadable *fleet.UnreadableError, err error) {
	if err := checkName(op, name); err != nil {
		return nil, nil, nil, err
	}
	replicas, unreadable, err = in.readRegistry(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	by, _ := registrations(replicas)
	if len(by[name]) == 0 {
		if unreadable != nil {
			return nil, nil, nil, fmt.Errorf("%w: %s %q: no live replica whose registry entry could be read has registered it (%d live replicas read; left out: %w)",
				ErrUnknownJob, op, name, len(replicas), unreadable)
		}
		return nil, nil, nil, fmt.Errorf("%w: %s %q: no live replica has registered it (%d live replicas)", ErrUnknownJob, op, name, len(replicas))
	}
	return by[name], replicas, unreadable, nil
}

// checkName checks a job name: non-empty valid UTF-8, as every job name a
// scheduler registers is.
func checkName(op, name string) error {
	if name == "" || !utf8.ValidString(name) {
		return invalid(op, "job name must be non-empty valid UTF-8")
	}
	return nil
}

// checkBy checks who is asking: non-empty, and a valid holder label
// (lease.ValidateOwner), which is what the store keeps it as.
func checkBy(op, by string) error {
	if by == "" {
		return invalid(op, "by must name who asks (an operator, a tool), got an empty string")
	}
	if err := lease.ValidateOwner(by); err != nil {
		return fmt.Errorf("inspect: %s: by: %w", op, err)
	}
	return nil
}

// invalid returns an error of op wrapping lease.ErrInvalidArgument that
// names the rule broken.
func invalid(op, format string, args ...any) error {
	return fmt.Errorf("inspect: %s: %w: %s", op, lease.ErrInvalidArgument, fmt.Sprintf(format, args...))
}
