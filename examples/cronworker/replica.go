package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// replica is one copy of the service: its own Redis client, lease store,
// scheduler and database handle, as a separate process would have.
type replica struct {
	name   string
	log    *slog.Logger
	client rueidis.Client
	store  *freezableStore
	sched  *scheduler.Scheduler
	db     *sql.DB
	fences *fencing.Table
	stall  *stall

	stale atomic.Uint64 // fenced writes rejected with fencing.ErrStale
}

// replicaConfig is what newReplica needs.
type replicaConfig struct {
	name   string
	log    *slog.Logger // the replica attribute is added here and by the scheduler
	redis  *redisServer
	dbPath string
	fences *fencing.Table
	stall  *stall
	// scheduler holds more scheduler options (otelcronguard's, with
	// -metrics).
	schedulerOpts []scheduler.Option
}

// newReplica connects the replica to Redis and the database and registers
// its jobs. It starts nothing; on error it closes what it opened.
func newReplica(cfg replicaConfig) (_ *replica, err error) {
	// The scheduler names the replica in its records (WithInstanceID); the
	// store's and the example's own records get the same attribute here.
	log := cfg.log.With(slog.String("replica", cfg.name))
	r := &replica{name: cfg.name, log: log, fences: cfg.fences, stall: cfg.stall}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.client, err = cfg.redis.client(); err != nil {
		return nil, err
	}
	st, err := redislease.New(r.client, redislease.WithLogger(log))
	if err != nil {
		return nil, err
	}
	r.store = &freezableStore{Store: st}
	if r.db, err = openDB(cfg.dbPath); err != nil {
		return nil, err
	}
	opts := append([]scheduler.Option{
		scheduler.WithLogger(cfg.log),
		scheduler.WithInstanceID(cfg.name),
		scheduler.WithObserver(r.observe),
	}, cfg.schedulerOpts...)
	r.sched, err = scheduler.New(r.store, opts...)
	if err != nil {
		return nil, err
	}
	if err := r.register(); err != nil {
		return nil, err
	}
	return r, nil
}

// observe logs the releases at info level (the scheduler logs them at
// debug), so the log shows each lease handed back after its run and at
// shutdown.
func (r *replica) observe(e scheduler.Event) {
	if e.Kind == scheduler.EventReleased {
		r.log.Info("job lease released", slog.String("job", e.Job),
			slog.String("lease", e.ShortLeaseID), slog.String("fence", e.Fence.String()))
	}
}

// start starts the replica's scheduler.
func (r *replica) start() error { return r.sched.Start() }

// shutdown stops the scheduler: running jobs are cancelled and waited for
// until ctx is done, and their leases released.
func (r *replica) shutdown(ctx context.Context) error {
	if r.sched == nil {
		return nil
	}
	return r.sched.Shutdown(ctx)
}

// close closes the replica's database handle and Redis client. Call it
// after shutdown.
func (r *replica) close() {
	if r.db != nil {
		if err := r.db.Close(); err != nil {
			r.log.Warn("closing the database", slog.Any("error", err))
		}
	}
	if r.client != nil {
		r.client.Close()
	}
}

// leaseHeld reports who holds job's lease now ("" when nobody does).
func (r *replica) leaseHeld(ctx context.Context, job string) (owner string, err error) {
	info, err := r.store.Lookup(ctx, scheduler.JobKeyPrefix+job)
	switch {
	case errors.Is(err, lease.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("look up the %s lease: %w", job, err)
	case info.Owner == "":
		return "(no label)", nil
	default:
		return info.Owner, nil
	}
}
