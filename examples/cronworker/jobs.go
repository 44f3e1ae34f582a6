package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/scheduler"
)

// The jobs every replica registers. Each run writes one fenced row.
const (
	// reportJob runs on a cron schedule with a seconds field.
	reportJob  = "report"
	reportCron = "*/5 * * * * *"

	// tickJob runs every second, on the grid aligned to the Unix epoch.
	tickJob      = "tick"
	tickInterval = time.Second
	tickTTL      = 2 * time.Second

	// rebuildJob outlives its lease's TTL: it works for rebuildWork while
	// its lease lasts rebuildTTL, and the heartbeat renews the lease every
	// rebuildTTL/3 so that no other replica takes it over meanwhile.
	rebuildJob      = "rebuild"
	rebuildInterval = 10 * time.Second
	rebuildTTL      = 2 * time.Second
	rebuildWork     = 5 * time.Second
)

// register registers the jobs on r's scheduler.
func (r *replica) register() error {
	jobs := []struct {
		name     string
		schedule scheduler.Schedule
		fn       func(context.Context) error
		opts     []scheduler.JobOption
	}{
		{reportJob, scheduler.Cron(reportCron), r.report, nil}, // default TTL
		{tickJob, scheduler.Every(tickInterval), r.tick, []scheduler.JobOption{scheduler.WithTTL(tickTTL)}},
		{rebuildJob, scheduler.Every(rebuildInterval), r.rebuild, []scheduler.JobOption{scheduler.WithTTL(rebuildTTL)}},
	}
	for _, j := range jobs {
		if err := r.sched.Register(j.name, j.schedule, j.fn, j.opts...); err != nil {
			return err
		}
	}
	return nil
}

// report is a short job: it writes its row.
func (r *replica) report(ctx context.Context) error {
	return r.record(ctx, reportJob)
}

// tick is a short job, except for the run that -stall freezes.
func (r *replica) tick(ctx context.Context) error {
	run, _ := scheduler.RunFromContext(ctx)
	if r.stall.claim(time.Now(), run.Occurrence) {
		ctx = r.freezeRun(ctx)
	}
	return r.record(ctx, tickJob)
}

// rebuild works in one-second steps for rebuildWork, stopping as soon as
// its context is done (lease lost, shutdown), then writes its row.
func (r *replica) rebuild(ctx context.Context) error {
	step := time.NewTicker(time.Second)
	defer step.Stop()
	for done := time.Duration(0); done < rebuildWork; done += time.Second {
		select {
		case <-ctx.Done():
			return fmt.Errorf("rebuild stopped after %s: %w", done, context.Cause(ctx))
		case <-step.C:
		}
	}
	return r.record(ctx, rebuildJob)
}

// freezeRun is the -stall scenario (see stall.go): it freezes the replica's
// link to Redis and sleeps through its own cancellation, then returns a
// context that is never cancelled, as a job that ignores its context
// effectively has. It keeps the run's values, fencing token included.
func (r *replica) freezeRun(ctx context.Context) context.Context {
	run, _ := scheduler.RunFromContext(ctx)
	r.log.Warn("-stall: freezing this replica's link to Redis; the run ignores its context",
		slog.String("job", run.Job), slog.String("fence", run.Fence.String()), logattr.Duration("for", stallFor))
	thaw := r.store.freeze()
	pause := time.NewTimer(stallFor)
	<-pause.C // deliberately not watching ctx
	thaw()
	r.log.Warn("-stall: awake; writing as if the lease were still held",
		slog.String("job", run.Job), slog.Any("ctx_cause", context.Cause(ctx)))
	return context.WithoutCancel(ctx)
}

// record writes the run's row, fenced with the run's token.
func (r *replica) record(ctx context.Context, job string) error {
	run, ok := scheduler.RunFromContext(ctx)
	if !ok {
		return errors.New("cronworker: job context carries no scheduler.Run")
	}
	err := writeRun(ctx, r.db, r.fences, job, run.Occurrence, r.name, run.Fence)
	if errors.Is(err, fencing.ErrStale) {
		r.stale.Add(1)
		r.log.Warn("fencing rejected a stale write: a newer lease holder has written",
			slog.String("job", job), slog.Time("occurrence", run.Occurrence), slog.String("fence", run.Fence.String()))
	}
	return err
}
