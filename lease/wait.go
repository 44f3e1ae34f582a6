package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// waitPlan is what Lock (and Semaphore.Acquire) wait with: how to try, how
// to learn of releases, and how often to try at least.
type waitPlan struct {
	// attempt makes one attempt; ErrLocked means "wait and try again".
	attempt func(ctx context.Context) (*Lease, error)
	// watch watches the releases of what attempt tries to take; nil when
	// the store cannot notify (then waitFor polls).
	watch func(ctx context.Context) (Watch, error)
	// refresh, when positive, bounds every wait: a queued waiter attempts
	// at least this often, which keeps its queue entry alive.
	refresh time.Duration
}

// waitFor attempts p until it succeeds, fails with anything but ErrLocked,
// the max wait of c passes, or ctx ends. Between attempts it sleeps until
// a release is notified or the holder's lease runs out (while a watch is
// live), else for the next backoff (see Lock). It starts no goroutine.
func waitFor(ctx context.Context, c *lockConfig, p waitPlan) (*Lease, error) {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     c.initial,
		RandomizationFactor: lockBackoffJitter,
		Multiplier:          lockBackoffMultiplier,
		MaxInterval:         c.maxBackoff,
		MaxElapsedTime:      0, // the max wait is enforced here, with a last attempt at the end
		Stop:                backoff.Stop,
		Clock:               c.clock,
	}
	b.Reset()
	bo := backoff.WithContext(b, ctx)
	deadline := c.clock.Now().Add(c.maxWait)

	var w Watch
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	watchable := p.watch != nil
	for attempt := 1; ; attempt++ {
		l, err := p.attempt(ctx)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrLocked) {
			return nil, err
		}
		if watchable {
			// Watch once, after the first refusal (a free key costs no
			// subscription), then try again at once: a release between the
			// refusal and the watch would otherwise go unnoticed.
			watchable = false
			if nw, werr := p.watch(ctx); werr == nil {
				w = nw
				continue
			}
			if ctx.Err() != nil {
				return nil, lockContextError(ctx, attempt, err)
			}
			// The store logs why; Lock polls.
		}
		var le *LockedError
		errors.As(err, &le)
		var wait time.Duration
		if w != nil && w.Live() && le != nil && le.Remaining > 0 {
			wait = max(le.Remaining, lockMinWait) // a release wakes us sooner
		} else {
			wait = bo.NextBackOff()
			if wait == backoff.Stop {
				return nil, lockContextError(ctx, attempt, err)
			}
			if le != nil && le.Remaining > 0 && le.Remaining < wait {
				wait = max(le.Remaining, lockMinWait)
			}
		}
		if p.refresh > 0 {
			wait = min(wait, p.refresh)
		}
		left := deadline.Sub(c.clock.Now())
		if left <= 0 {
			return nil, fmt.Errorf("%w: lock: key still locked after %s and %d attempts: %w",
				ErrAcquireTimeout, c.maxWait, attempt, err)
		}
		wait = min(wait, left)

		var wake <-chan struct{} // nil without a watch: never ready
		if w != nil {
			wake = w.C()
		}
		timer := c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, lockContextError(ctx, attempt, err)
		case <-wake:
			timer.Stop()
		case <-timer.Chan():
		}
	}
}
