package redislease

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

var (
	_ fleet.Store          = (*Store)(nil)
	_ fleet.BatchPublisher = (*Store)(nil)
)

// Publish sends m on the control channel (<prefix>:control).
func (s *Store) Publish(ctx context.Context, m fleet.Message) error {
	const op = "publish"
	raw, err := json.Marshal(m)
	if err != nil {
		return internalErr(op, "", err)
	}
	err = s.client.Do(ctx, s.client.B().Publish().Channel(controlChannel(s.prefix)).Message(string(raw)).Build()).Error()
	if err != nil {
		return wrapErr(ctx, op, "", err)
	}
	return nil
}

// PublishBatch sends each of msgs on the control channel, in order, in
// one round trip (pipelined PUBLISH commands). A message's kind must be
// set and must not be fleet.MessageResync, which only Subscribe delivers.
// See fleet.BatchPublisher.
func (s *Store) PublishBatch(ctx context.Context, msgs []fleet.Message) error {
	const op = "publish"
	for i, m := range msgs {
		if m.Kind == "" || m.Kind == fleet.MessageResync {
			return opErr(op, "", fmt.Errorf("%w: message %d: kind must be set and not %q", lease.ErrInvalidArgument, i, fleet.MessageResync))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(msgs))
	for i, m := range msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			return internalErr(op, "", err)
		}
		cmds[i] = s.client.B().Publish().Channel(controlChannel(s.prefix)).Message(string(raw)).Build()
	}
	for _, resp := range s.client.DoMulti(ctx, cmds...) {
		if err := resp.Error(); err != nil {
			return wrapErr(ctx, op, "", err)
		}
	}
	return nil
}

// Subscribe calls fn with every Message on the control channel until stop
// is called. See fleet.Store. A subscription that drops (a reconnect, a
// failover) is made again with backoff, and fn then receives a
// MessageResync. Messages that are not the control plane's JSON are
// dropped. Subscribe returns once the first subscription is confirmed, or
// its error, or ctx's when ctx ends first; ctx does not bound the
// subscription itself.
func (s *Store) Subscribe(ctx context.Context, fn func(fleet.Message)) (func(), error) {
	if fn == nil {
		return nil, opErr("subscribe", "", fmt.Errorf("%w: fn must not be nil", lease.ErrInvalidArgument))
	}
	waitCtx := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	confirmed := make(chan error, 1)
	var once sync.Once
	confirm := func(err error) { once.Do(func() { confirmed <- err }) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.subscribeLoop(ctx, fn, confirm)
	}()
	stop := func() {
		cancel()
		<-done
	}
	select {
	case err := <-confirmed:
		if err != nil {
			stop()
			return nil, err
		}
		return stop, nil
	case <-waitCtx.Done():
		stop()
		return nil, wrapErr(waitCtx, "subscribe", "", context.Cause(waitCtx))
	}
}

// subscribeLoop holds the subscription until ctx ends, making it again
// with backoff when it drops.
func (s *Store) subscribeLoop(ctx context.Context, fn func(fleet.Message), confirm func(error)) {
	channel := controlChannel(s.prefix)
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	var resync atomic.Bool // the first subscription was confirmed: later ones are resyncs
	var lasted atomic.Bool // the last subscription was confirmed: start the backoff again
	for ctx.Err() == nil {
		hooked := rueidis.WithOnSubscriptionHook(ctx, func(sub rueidis.PubSubSubscription) {
			if sub.Kind != "subscribe" {
				return
			}
			confirm(nil)
			lasted.Store(true)
			if resync.Swap(true) {
				fn(fleet.Message{Kind: fleet.MessageResync})
			}
		})
		// A connection of its own: a subscribed connection serves nothing
		// else on RESP2, and a subscription sharing a pipe with the leases
		// must not hold their commands up when the connection breaks.
		dc, release := s.client.Dedicate()
		err := dc.Receive(hooked, dc.B().Subscribe().Channel(channel).Build(), func(msg rueidis.PubSubMessage) {
			var m fleet.Message
			if json.Unmarshal([]byte(msg.Message), &m) != nil || m.Kind == "" || m.Kind == fleet.MessageResync {
				return
			}
			fn(m)
		})
		release()
		if ctx.Err() != nil {
			confirm(nil)
			return
		}
		if !resync.Load() {
			// The first subscription failed: say so, rather than wait.
			confirm(wrapErr(ctx, "subscribe", "", err))
			return
		}
		s.log.Warn("control channel subscription dropped; subscribing again", "error", err)
		if !pauseBeforeResubscribe(ctx, b, &lasted) {
			return
		}
	}
}
