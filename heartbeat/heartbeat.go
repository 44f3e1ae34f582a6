package heartbeat

import (
	"context"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Stop ends a heartbeat's renewals, cancels its context with ErrStopped
// (unless it is already cancelled) and waits for its goroutine to return,
// including an Extend call in flight (which ends with its context). It
// returns the loss cause the context was cancelled with (an error wrapping
// ErrLeaseLost or ErrLeaseUnconfirmed) or nil when the heartbeat ended
// without a loss (a clean stop, or cancellation of the parent context).
//
// Stop is idempotent and safe to call from any goroutine except the
// observer's; every call returns the same value. It does not release the
// lease: do that afterwards, with a fresh context bounded in time.
type Stop func() error

// Start keeps l alive by extending it through store every interval (TTL/3
// by default) and returns a context that is a child of parent and ends when
// the lease can no longer be trusted, with a cause that says why
// (context.Cause):
//
//   - an error wrapping ErrLeaseLost and the store's error when an Extend
//     reports lease.ErrNotHeld (definitive, at once);
//   - an error wrapping ErrLeaseUnconfirmed (and the last store error, if
//     any) when no renewal was confirmed before the local deadline minus the
//     stop margin (TTL/6 by default). Transient errors are retried with
//     exponential backoff until then. The cut-off is a timer: it fires even
//     while an Extend call hangs.
//
// The local deadline starts at l.Deadline and each confirmed Extend moves it
// to lease.LocalDeadline(sent, l.TTL), where sent is the heartbeat clock's
// time just before that Extend was sent. The server's clock (ExpiresAt) is
// never consulted.
//
// The caller must call the returned Stop when the work is done, as with a
// context's cancel function; the heartbeat's goroutine runs until Stop, a
// loss or the cancellation of parent. Start returns ErrInvalidArgument or
// ErrInvalidOption (and nil context and Stop) when its input breaks a rule;
// it does no I/O itself.
func Start(parent context.Context, store lease.Store, l *lease.Lease, opts ...Option) (context.Context, Stop, error) {
	switch {
	case parent == nil:
		return nil, nil, invalidArgument("parent context must not be nil")
	case store == nil:
		return nil, nil, invalidArgument("store must not be nil")
	case l == nil:
		return nil, nil, invalidArgument("lease must not be nil")
	}
	if err := leasekit.ValidateID(l.ID); err != nil {
		return nil, nil, invalidArgument("lease: %v", err)
	}
	if err := lease.ValidateTTL(l.TTL); err != nil {
		return nil, nil, invalidArgument("lease: %v", err)
	}
	if l.Deadline.IsZero() {
		return nil, nil, invalidArgument("lease deadline must be set (use a lease returned by Store.Acquire)")
	}
	cfg, err := newConfig(store, l.TTL, opts)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(parent)
	h := &heartbeat{
		cfg:    cfg,
		store:  store,
		lease:  *l,
		parent: parent,
		ctx:    ctx,
		cancel: cancel,
		stopc:  make(chan struct{}),
		donec:  make(chan struct{}),
	}
	// The goroutine starts when the first renewal is due (one interval
	// after the acquire was sent, which the lease's deadline tells:
	// Deadline = sent + ttl - drift): most runs end before it, and a
	// heartbeat stopped before then costs one timer, not a goroutine and
	// its timers. Nothing can be lost before it: the cut-off (deadline -
	// stop margin) comes after the first renewal, as newConfig checks.
	first := l.Deadline.Add(-(l.TTL - leasekit.Drift(l.TTL))).Add(cfg.interval)
	h.start = cfg.clock.AfterFunc(max(first.Sub(cfg.clock.Now()), 0), h.run)
	return ctx, h.stop, nil
}

// heartbeat is the state shared by Start's goroutine and Stop.
type heartbeat struct {
	cfg    config
	store  lease.Store
	lease  lease.Lease // a copy: the caller may reuse theirs
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc

	start    clockwork.Timer // starts run when the first renewal is due
	stopOnce sync.Once
	stopc    chan struct{} // closed by stop
	donec    chan struct{} // closed when run returns, or by stop if run never started
	cause    error         // the loss cause; written by run before donec closes
}

func (h *heartbeat) stop() error {
	h.stopOnce.Do(func() {
		close(h.stopc)
		h.cancel(ErrStopped)
		if h.start.Stop() {
			// Stopped before the first renewal was due: run never
			// starts, and its last event is reported here.
			h.emit(Event{Kind: EventStopped, ExpiresAt: h.lease.ExpiresAt, Deadline: h.lease.Deadline})
			close(h.donec)
		}
	})
	<-h.donec
	return h.cause
}
