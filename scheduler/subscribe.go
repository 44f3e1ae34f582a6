package scheduler

import (
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The control channel's subscription, held by the control loop. Once
// made, the store keeps it: one that drops is made again there, with
// backoff, and the loop hears fleet.MessageResync. One that could not be
// made (the store unreachable as the replica starts, say) is tried again
// by the loop, at its polls of the fleet's index (every resumePoll),
// spaced by a backoff up to subscribeMaxWait, and at each registry
// refresh: a trigger queued while no replica that has its job was
// subscribed is announced to none, and is found only by the look for
// waiting triggers that follows a subscription. Tried again only at the
// refresh (30s, say), the trigger could lapse before the look.

// subscribeMaxWait is the longest wait between two tries of a
// subscription that failed.
const subscribeMaxWait = 2 * time.Second

// subscribe makes the control channel's subscription when it is missing.
// A new subscription has missed whatever was announced before it
// (triggers queued while this replica was down, or while it could not
// subscribe; announcements that another replica joined or left since this
// one read the registry), so it is followed by a read of the registry and
// a look for waiting triggers (batched reads of the jobs' queues), at start
// and after a failed subscription only.
func (cp *controlPlane) subscribe() {
	if cp.unsub != nil {
		return
	}
	ctx, cancel := cp.opContext()
	defer cancel()
	unsub, err := cp.store.Subscribe(ctx, cp.onMessage)
	if err != nil {
		cp.subscribeFailed(err)
		return
	}
	if cp.subscribing != nil {
		cp.s.log.Info("subscribed to the control channel again")
		cp.subscribing = nil
	}
	cp.unsub = unsub
	cp.readFleet() // the announcements of registry changes made before it
	cp.lookForTriggers()
}

// subscribeFailed sets when the subscription is tried again after a
// failure: warned once until it is made.
func (cp *controlPlane) subscribeFailed(err error) {
	if cp.subscribing == nil {
		cp.subscribing = backoff.NewExponentialBackOff(backoff.WithInitialInterval(resumePoll),
			backoff.WithMaxInterval(subscribeMaxWait), backoff.WithMaxElapsedTime(0))
		cp.s.log.Warn("could not subscribe to the control channel; trying again every few seconds, and triggers queued meanwhile run once it is made",
			slog.Any("error", err))
	} else {
		cp.s.log.Debug("could not subscribe to the control channel", slog.Any("error", err))
	}
	cp.subscribeAt = cp.s.cfg.clock.Now().Add(cp.subscribing.NextBackOff())
}

// subscribeIfDue tries the subscription again when one failed and its
// wait has passed.
func (cp *controlPlane) subscribeIfDue() {
	if cp.unsub == nil && cp.subscribing != nil && !cp.s.cfg.clock.Now().Before(cp.subscribeAt) {
		cp.subscribe()
	}
}
