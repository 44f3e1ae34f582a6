// Package heartbeat keeps a lease alive while work runs under it, and turns
// the lease into a context that ends the moment the lease can no longer be
// trusted.
//
//	ctx, stop, err := heartbeat.Start(ctx, store, l)
//	if err != nil { ... }
//	work(ctx) // must return soon after ctx is done
//	if err := stop(); err != nil {
//		// the lease was lost or could not be confirmed: err wraps
//		// ErrLeaseLost or ErrLeaseUnconfirmed, and the store's error
//	}
//	// release l with a fresh, bounded context
//
// # How it works
//
// A goroutine extends the lease every interval (TTL/3 by default). It starts
// when the first renewal is due, one interval after the acquire was sent: a
// heartbeat stopped before then (most short runs) costs one timer and no
// goroutine, and nothing can be lost before it, since the cut-off comes
// later. It keeps a
// local deadline: l.Deadline at first, then, after each confirmed Extend,
// the local time just before that Extend was sent plus the TTL minus
// (TTL/100 + 2ms, lease.LocalDeadline). The server's clock is never compared with the local one;
// the local clock is used only as a stopwatch. A transient store error
// (anything but lease.ErrNotHeld: unavailable, timeout, ...) is retried with
// exponential backoff, each retry reported as EventRetrying and logged at
// Warn. The context is cancelled (context.WithCancelCause) with
//
//   - ErrLeaseLost as soon as the store says the lease is not held, and
//   - ErrLeaseUnconfirmed when the local deadline minus the stop margin
//     (TTL/6 by default) passes without a confirmed renewal. A timer
//     enforces this cut-off, so an Extend that hangs on a dead connection
//     does not delay it.
//
// Stop ends renewals, cancels the context with ErrStopped and waits for the
// goroutine (or, stopped before the first renewal, keeps it from starting);
// cancelling the parent context also ends renewals, and neither
// counts as a loss.
//
// # What it guarantees
//
// The context is done before the lease can expire on the server, and so
// before any other holder can acquire it, provided that
//
//   - the local clock and the server's clock run at rates that differ by
//     less than the allowance TTL/100 + 2ms over one TTL
//     (wall-clock steps do not matter: the Store measures with the
//     monotonic clock), and
//   - the server keeps a lease live for lease.ExpiryTolerance past its
//     expiry, which covers small steps of the server's own clock.
//
// Any delay between sending an Extend and the server applying it (network,
// a paused server) only makes the local deadline earlier than the server's
// expiry, never later.
//
// # What it does not guarantee
//
// A context is a request to stop, not a means of stopping: a goroutine that
// ignores its context, or is itself paused (GC, SIGSTOP, a VM migration)
// past the cut-off, keeps running after the lease has expired, and another
// holder may be running at the same time. Writes that must not come from a
// stale holder need the lease's fencing token (package fencing). The stop
// margin is the time the work has to notice the cancellation and stop; set
// it with WithStopMargin to what your work needs.
//
// Heartbeat does not release the lease; do that after Stop returns, with a
// fresh context bounded in time.
package heartbeat
