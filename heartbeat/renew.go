package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cronguard/cronguard/internal/logattr"
	"github.com/cronguard/cronguard/lease"
)

// extendResult is what one Extend call reports back to run.
type extendResult struct {
	sent      time.Time // clock time just before the call
	expiresAt time.Time
	err       error
}

// boundedContext is the context of one Extend call: cancelled by run at the
// cut-off (through the heartbeat context), and reporting the cut-off as its
// deadline so that a store can bound its I/O.
type boundedContext struct {
	context.Context
	deadline time.Time
}

func (c boundedContext) Deadline() (time.Time, bool) { return c.deadline, true }

// run is the heartbeat's goroutine, started by Start's timer when the
// first renewal is due. It is the only writer of h.cause and the only
// caller of Store.Extend; at most one Extend is in flight, on a goroutine
// of its own that run waits for before returning.
func (h *heartbeat) run() {
	defer close(h.donec)
	var (
		clock     = h.cfg.clock
		ttl       = h.lease.TTL
		deadline  = h.lease.Deadline
		expiresAt = h.lease.ExpiresAt
		attempt   int   // failed attempts since the last confirmed Extend
		lastErr   error // the last store error since then
		results   = make(chan extendResult, 1)
		inflight  bool
		cause     error
	)
	// The backoff is made at the first failed renewal: most runs end
	// before their first renewal is due, and never need one.
	var retry *backoff.ExponentialBackOff
	newRetry := func() *backoff.ExponentialBackOff {
		return backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(max(h.cfg.interval/16, time.Millisecond)),
			backoff.WithMaxInterval(max(h.cfg.interval/2, time.Millisecond)),
			backoff.WithMaxElapsedTime(0), // the cut-off timer ends retries
			backoff.WithClockProvider(clock),
		)
	}

	cutoffAt := func() time.Time { return deadline.Add(-h.cfg.margin) }
	cutoff := clock.NewTimer(cutoffAt().Sub(clock.Now()))
	defer cutoff.Stop()
	// Start runs this when the first renewal is due.
	renew := clock.NewTimer(0)
	defer renew.Stop()

loop:
	for {
		select {
		case <-h.stopc:
			break loop
		case <-h.parent.Done():
			break loop
		case <-cutoff.Chan():
			switch {
			case lastErr != nil:
				cause = fmt.Errorf("%w: no renewal confirmed before %s (local deadline - stop margin): %w",
					ErrLeaseUnconfirmed, cutoffAt().Format(time.RFC3339Nano), lastErr)
			case inflight:
				cause = fmt.Errorf("%w: no renewal confirmed before %s (local deadline - stop margin): extend still in flight",
					ErrLeaseUnconfirmed, cutoffAt().Format(time.RFC3339Nano))
			default:
				cause = fmt.Errorf("%w: local deadline - stop margin (%s) passed before a renewal was due",
					ErrLeaseUnconfirmed, cutoffAt().Format(time.RFC3339Nano))
			}
			break loop
		case <-renew.Chan():
			if h.ctx.Err() != nil {
				// Stop or the parent ended the heartbeat as the renewal
				// came due (or before run started): nothing to renew.
				break loop
			}
			inflight = true
			sent := clock.Now()
			ctx := boundedContext{Context: h.ctx, deadline: cutoffAt()}
			go func() {
				exp, err := lease.Extend(ctx, h.store, &h.lease, ttl) // keyed when the store has it
				results <- extendResult{sent: sent, expiresAt: exp, err: err}
			}()
		case r := <-results:
			inflight = false
			if h.ctx.Err() != nil {
				// Stop or the parent ended the heartbeat and so this
				// Extend's context: its error says nothing about the lease.
				break loop
			}
			switch {
			case r.err == nil:
				deadline = lease.LocalDeadline(r.sent, ttl)
				expiresAt = r.expiresAt
				// Report before re-arming the timers: the timers are set
				// from absolute times, so a slow observer shifts nothing,
				// and a fake clock's waiters mean the event is out.
				h.emit(Event{Kind: EventRenewed, ExpiresAt: expiresAt, Deadline: deadline, Try: attempt + 1,
					Latency: clock.Since(r.sent)})
				if !cutoff.Stop() {
					select { // drop a cut-off that fired while this result was on its way
					case <-cutoff.Chan():
					default:
					}
				}
				cutoff.Reset(cutoffAt().Sub(clock.Now()))
				renew.Reset(max(r.sent.Add(h.cfg.interval).Sub(clock.Now()), 0))
				attempt, lastErr = 0, nil
				retry = nil
			case errors.Is(r.err, lease.ErrNotHeld):
				cause = fmt.Errorf("%w: %w", ErrLeaseLost, r.err)
				break loop
			default:
				attempt++
				lastErr = r.err
				// Back off, but keep attempts coming before the cut-off.
				if retry == nil {
					retry = newRetry()
				}
				wait := min(retry.NextBackOff(), max(cutoffAt().Sub(clock.Now())/2, time.Millisecond))
				h.emit(Event{Kind: EventRetrying, ExpiresAt: expiresAt, Deadline: deadline, Try: attempt, Err: r.err},
					logattr.Duration("retry_in", wait))
				renew.Reset(wait)
			}
		}
	}

	if cause != nil {
		h.cancel(cause)
		// Stop or the parent may have cancelled first; report a loss only
		// if it is what the context says.
		if context.Cause(h.ctx) == cause {
			h.cause = cause
			h.emit(Event{Kind: EventLost, ExpiresAt: expiresAt, Deadline: deadline, Try: attempt, Err: cause,
				Remaining: deadline.Sub(clock.Now())})
		}
	}
	if inflight {
		// The heartbeat context is done by now (loss, Stop or parent), and
		// so is the Extend's context.
		<-results
	}
	h.emit(Event{Kind: EventStopped, ExpiresAt: expiresAt, Deadline: deadline, Try: attempt, Err: h.cause})
}

// emit passes e to the observer and logs it.
func (h *heartbeat) emit(e Event, extra ...slog.Attr) {
	e.Key = h.lease.Key
	e.ShortLeaseID = lease.ShortID(h.lease.ID)
	e.Fence = h.lease.Fence
	if h.cfg.observer != nil {
		h.cfg.observer(e)
	}
	level, msg := logLevel(e.Kind)
	// Every run's heartbeat ends with EventStopped, logged at debug: the
	// attributes are built only for a logger that keeps the record.
	if h.cfg.logger.Enabled(h.parent, level) {
		h.log(level, msg, e, extra)
	}
}

// logLevel returns the level and message an event of kind k is logged
// with.
func logLevel(k EventKind) (slog.Level, string) {
	switch k {
	case EventRenewed:
		return slog.LevelDebug, "heartbeat: lease extended"
	case EventRetrying:
		return slog.LevelWarn, "heartbeat: extend failed, retrying"
	case EventLost:
		return slog.LevelError, "heartbeat: lease lost"
	default:
		return slog.LevelDebug, "heartbeat: stopped"
	}
}

// log writes event e at level with msg, and extra.
func (h *heartbeat) log(level slog.Level, msg string, e Event, extra []slog.Attr) {
	attrs := []slog.Attr{
		slog.String("lease", e.ShortLeaseID),
		slog.Any("fence", e.Fence),
	}
	switch e.Kind {
	case EventRenewed:
		attrs = append(attrs, slog.Int("try", e.Try))
	case EventRetrying:
		attrs = append(attrs, slog.Int("try", e.Try), slog.Any("error", e.Err))
	case EventLost:
		attrs = append(attrs, slog.Any("cause", e.Err))
	case EventStopped:
		if e.Err != nil {
			attrs = append(attrs, slog.Any("cause", e.Err))
		}
	}
	if level < slog.LevelInfo {
		attrs = append(attrs, slog.String("key", e.Key))
	}
	attrs = append(attrs, extra...)
	h.cfg.logger.LogAttrs(context.WithoutCancel(h.parent), level, msg, attrs...)
}
