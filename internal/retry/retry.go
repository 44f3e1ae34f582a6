// Package retry retries store operations that failed with a transient
// error, with exponential backoff and jitter (backoff/v4), within the
// caller's context. The lease store's roll-back of an ambiguous acquire and
// the scheduler's release after a run use it.
package retry

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cronguard/cronguard/lease"
)

// Backoff between attempts: from Initial, doubling up to Max, each wait
// randomized by ±50%.
const (
	Initial = 20 * time.Millisecond
	Max     = 500 * time.Millisecond
)

// Transient reports whether err is worth another attempt: the store was
// unavailable (a reset connection, a failover, LOADING) or an attempt timed
// out on the network, while the caller's context is still live.
func Transient(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (errors.Is(err, lease.ErrUnavailable) || errors.Is(err, lease.ErrTimeout))
}

// Do calls op until it returns nil, returns an error that is not
// Transient, or ctx ends; it returns the number of attempts and op's last
// error. Bound ctx: Do waits between attempts and never gives up on its
// own. notify, if not nil, is called after each failed attempt that will be
// retried, with the error and the wait before the next attempt.
func Do(ctx context.Context, op func(context.Context) error, notify func(err error, wait time.Duration)) (int, error) {
	// The first try builds no backoff: nearly every call succeeds at once.
	attempts := 1
	last := op(ctx)
	if last == nil || !Transient(ctx, last) {
		return attempts, last
	}
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(Initial),
		backoff.WithMaxInterval(Max),
		backoff.WithMaxElapsedTime(0), // ctx bounds the retries
	)
	replay := true
	err := backoff.RetryNotify(func() error {
		if replay { // the first try's failure: notified and waited for as any other
			replay = false
			return last
		}
		attempts++
		last = op(ctx)
		if last == nil || Transient(ctx, last) {
			return last
		}
		return backoff.Permanent(last)
	}, backoff.WithContext(b, ctx), func(err error, wait time.Duration) {
		if notify != nil {
			notify(err, wait)
		}
	})
	if err == nil {
		return attempts, nil
	}
	return attempts, last
}
