package main

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cronguard/cronguard/faults"
	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/scheduler"
)

// worker runs the jobs' bodies: sleep, then a fenced write.
type worker struct {
	hist *history.Writer
	db   *sql.DB
	name string

	mu  sync.Mutex
	rng *rand.Rand
}

func (w *worker) between(r [2]time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return r[0] + time.Duration(w.rng.Int64N(int64(r[1]-r[0])+1))
}

func (w *worker) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.Float64() < p
}

// fn is the job function of spec.
func (w *worker) fn(spec faults.JobSpec) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		run, _ := scheduler.RunFromContext(ctx)
		base := history.Event{Job: spec.Name, Occurrence: run.Occurrence.UnixMilli(),
			Fence: uint64(run.Fence), Lease: lease.ShortID(run.LeaseID)}
		start := base
		start.Attempt = run.Attempt
		w.record(start, history.RunStart, nil)
		stopWatch := context.AfterFunc(ctx, func() {
			ev := base
			ev.Cause = causeOf(context.Cause(ctx))
			w.record(ev, history.CtxDone, nil)
		})
		err := w.body(ctx, spec, base)
		stopWatch()
		w.record(base, history.RunEnd, err)
		return err
	}
}

func (w *worker) body(ctx context.Context, spec faults.JobSpec, base history.Event) error {
	d := w.between(spec.Short)
	if w.chance(spec.LongP) {
		d = w.between(spec.Long)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	if spec.Stubborn {
		// A stale holder in the making: it ignores its context, finishes
		// its work, keeps going a while longer if the context ended, and
		// writes with a context that is not the run's.
		<-timer.C
		if ctx.Err() != nil {
			time.Sleep(w.between(spec.StubbornFor)) // simulated work, not synchronization
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return w.write(wctx, spec, base)
	}
	select {
	case <-timer.C:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if w.chance(spec.FailP) {
		return errFailed
	}
	if err := w.write(ctx, spec, base); err != nil {
		return err
	}
	if w.chance(spec.FailAfterWriteP) {
		return errFailedAfterWrite
	}
	return nil
}

// The failures a job with FailP or FailAfterWriteP returns.
var (
	errFailed           = errors.New("replica: the job failed (injected)")
	errFailedAfterWrite = errors.New("replica: the job failed after its write committed (injected)")
)

// write records the run's fence and occurrence for the job's resource
// (fencing.AdvanceOnceFromContext: refused if a greater token or this
// occurrence was recorded) and inserts the write row, in one transaction.
func (w *worker) write(ctx context.Context, spec faults.JobSpec, base history.Event) (err error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		w.record(base, history.WriteError, err)
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// The token and the occurrence come from the run's context (the
	// stubborn job's write context keeps its values).
	if err = fencing.AdvanceOnceFromContext(ctx, tx, spec.Name); err != nil {
		ev, kind := base, history.WriteError
		switch {
		case errors.Is(err, fencing.ErrStale):
			kind, ev.Reason = history.WriteRejected, history.RejectStale
		case errors.Is(err, fencing.ErrDuplicate):
			kind, ev.Reason = history.WriteRejected, history.RejectDuplicate
		}
		w.record(ev, kind, err)
		return err
	}
	var id int64
	err = tx.QueryRowContext(ctx,
		history.InsertWrite,
		w.name, spec.Name, base.Occurrence, int64(base.Fence), base.Lease).Scan(&id)
	if err != nil {
		w.record(base, history.WriteError, err)
		return err
	}
	if err = tx.Commit(); err != nil {
		w.record(base, history.WriteError, err)
		return err
	}
	ev := base
	ev.WriteID = id
	w.record(ev, history.WriteAccepted, nil)
	return nil
}

func (w *worker) record(ev history.Event, kind history.Kind, err error) {
	ev.Kind = kind
	if err != nil {
		ev.Err = err.Error()
	}
	_ = w.hist.Write(ev)
}

// causeOf names a run context's cancellation cause.
func causeOf(err error) string {
	switch {
	case errors.Is(err, heartbeat.ErrLeaseLost):
		return history.CauseLost
	case errors.Is(err, heartbeat.ErrLeaseUnconfirmed):
		return history.CauseUnconfirmed
	case errors.Is(err, scheduler.ErrShutdown):
		return history.CauseShutdown
	case errors.Is(err, scheduler.ErrTimeout):
		return history.CauseTimeout
	default:
		return history.CauseOther
	}
}
