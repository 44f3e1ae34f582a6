package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// MaxPendingMessages is how many messages a subscription holds for its fn
// before it drops new ones: a subscriber that falls this far behind loses
// messages, and receives a fleet.MessageResync after the ones it was still
// holding, as a Redis subscriber does when its connection drops.
const MaxPendingMessages = 1024

// channel is the control channel: the Store's subscriptions.
type channel struct {
	mu   sync.Mutex
	subs map[*subscription]struct{}
}

// subscription is one Subscribe call: a goroutine that calls fn with the
// messages published to it, in order.
type subscription struct {
	fn   func(fleet.Message)
	wake chan struct{} // capacity 1: messages are pending
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the goroutine has returned
	once sync.Once     // closes quit

	mu      sync.Mutex
	pending []fleet.Message // published, not yet taken by the goroutine
	lost    bool            // messages were dropped since the last take
}

// publish hands m to every subscription. It never blocks on a subscriber.
func (c *channel) publish(m fleet.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for sub := range c.subs {
		sub.offer(m)
	}
}

// offer queues m for the subscription, or drops it when MaxPendingMessages
// are pending.
func (sub *subscription) offer(m fleet.Message) {
	sub.mu.Lock()
	if len(sub.pending) < MaxPendingMessages {
		sub.pending = append(sub.pending, m)
	} else {
		sub.lost = true
	}
	sub.mu.Unlock()
	select {
	case sub.wake <- struct{}{}:
	default: // already woken
	}
}

// take returns the pending messages and whether some were dropped, and
// empties the queue.
func (sub *subscription) take() ([]fleet.Message, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	batch, lost := sub.pending, sub.lost
	sub.pending, sub.lost = nil, false
	return batch, lost
}

// run calls fn with the messages as they come, until quit is closed: it
// stops between two calls, leaving the rest undelivered.
func (sub *subscription) run() {
	defer close(sub.done)
	for {
		select {
		case <-sub.quit:
			return
		case <-sub.wake:
		}
		batch, lost := sub.take()
		if lost {
			batch = append(batch, fleet.Message{Kind: fleet.MessageResync})
		}
		for _, m := range batch {
			select {
			case <-sub.quit:
				return
			default:
			}
			sub.fn(m)
		}
	}
}

// Publish sends m on the control channel: every subscription of this
// Store that exists when Publish is called receives it, in the order of
// the Publish calls. It never blocks on a subscriber. m.Kind must be set
// and must not be fleet.MessageResync, which only Subscribe delivers (a
// Redis subscriber drops such messages).
func (s *Store) Publish(ctx context.Context, m fleet.Message) error {
	const op = "publish"
	if err := checkMessage(m); err != nil {
		return opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.channel.publish(m)
	return nil
}

// PublishBatch publishes each of msgs as Publish does, in order; an
// invalid message fails the call before any is published. See
// fleet.BatchPublisher.
func (s *Store) PublishBatch(ctx context.Context, msgs []fleet.Message) error {
	const op = "publish"
	for i, m := range msgs {
		if err := checkMessage(m); err != nil {
			return opError(op, fmt.Errorf("message %d: %w", i, err))
		}
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	for _, m := range msgs {
		s.channel.publish(m)
	}
	return nil
}

// checkMessage rejects a message without a kind, or of kind
// fleet.MessageResync, which only Subscribe delivers.
func checkMessage(m fleet.Message) error {
	if m.Kind == "" || m.Kind == fleet.MessageResync {
		return fmt.Errorf("%w: message kind must be set and not %q", lease.ErrInvalidArgument, fleet.MessageResync)
	}
	return nil
}

// Subscribe calls fn with every Message published on this Store (Publish,
// AddTrigger) until stop is called. See fleet.Store. fn is called from one
// goroutine that the subscription owns, in publish order; it must not call
// stop. stop ends the subscription, waits for fn's last call to return and
// for the goroutine to end; it may be called more than once. Messages not
// yet delivered when stop is called are dropped. The subscription lasts
// until stop, whatever becomes of ctx. An in-process subscription never
// drops, so fn receives a fleet.MessageResync only when it fell
// MaxPendingMessages behind and messages were lost.
func (s *Store) Subscribe(ctx context.Context, fn func(fleet.Message)) (stop func(), err error) {
	const op = "subscribe"
	if fn == nil {
		return nil, opError(op, fmt.Errorf("%w: fn must not be nil", lease.ErrInvalidArgument))
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	sub := &subscription{
		fn:   fn,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	s.channel.mu.Lock()
	s.channel.subs[sub] = struct{}{}
	s.channel.mu.Unlock()
	go sub.run()

	return func() {
		sub.once.Do(func() {
			s.channel.mu.Lock()
			delete(s.channel.subs, sub)
			s.channel.mu.Unlock()
			close(sub.quit)
		})
		<-sub.done
	}, nil
}
