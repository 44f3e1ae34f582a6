package redislease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/lease"
)

var _ lease.Notifier = (*Store)(nil)

// Release notifications. Every script that deletes a lease (release,
// keyed release, release with status, roll-back) publishes on the sharded
// channel named after the lease's data key, P:{G}: SPUBLISH, in the key's
// slot, so it works on Redis Cluster. A waiter (lease.Lock) watches that
// channel with SSUBSCRIBE. The Store keeps one subscription per channel,
// shared by all of its watches of the key, held by one goroutine that ends
// (SUNSUBSCRIBE) with the last watch.
const (
	// unsubscribeTimeout bounds the SUNSUBSCRIBE sent when the last watch
	// of a channel stops.
	unsubscribeTimeout = time.Second
	// refusedRetry is how long Watch fails at once, without asking the
	// server, after the server refused SSUBSCRIBE (an ACL without it, a
	// server older than 7.0); then it asks again.
	refusedRetry = time.Minute
)

// notifications are a Store's subscriptions to the channels its waiters
// watch.
type notifications struct {
	client rueidis.Client
	log    *slog.Logger

	mu       sync.Mutex
	subs     map[string]*subscription // channel -> its live subscription
	stopping map[string]chan struct{} // channel -> done of a subscription ending

	refusedMu sync.Mutex
	refused   error     // the server refused SSUBSCRIBE; nil: never or long ago
	refusedAt time.Time // when (real clock)
	warned    bool      // the refusal was logged at warn (once per Store)
}

func newNotifications(client rueidis.Client, log *slog.Logger) *notifications {
	return &notifications{
		client:   client,
		log:      log,
		subs:     make(map[string]*subscription),
		stopping: make(map[string]chan struct{}),
	}
}

// subscription is the Store's SSUBSCRIBE to one channel, and its watches.
type subscription struct {
	n       *notifications
	channel string
	what    string // log-safe name of the watched key

	mu      sync.Mutex
	watches map[*watch]struct{}

	live      atomic.Bool   // confirmed and not dropped since
	confirmed atomic.Bool   // the first SSUBSCRIBE was confirmed
	ready     chan struct{} // closed once the first SSUBSCRIBE is confirmed or failed
	readyOnce sync.Once
	err       error // why the first SSUBSCRIBE failed; read after ready

	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
}

// watch is one lease.Watch on a subscription.
type watch struct {
	sub  *subscription
	c    chan struct{} // capacity 1
	once sync.Once
}

// C implements lease.Watch.
func (w *watch) C() <-chan struct{} { return w.c }

// Live implements lease.Watch.
func (w *watch) Live() bool { return w.sub.live.Load() }

// Stop implements lease.Watch. The last watch of a channel ends its
// subscription and waits for it (a SUNSUBSCRIBE, bounded by
// unsubscribeTimeout).
func (w *watch) Stop() { w.once.Do(func() { w.sub.n.unwatch(w) }) }

// Watch implements lease.Notifier: it subscribes to the releases of key
// (or joins the Store's subscription to them) and returns once the
// subscription is confirmed. It fails with lease.ErrAuth when the server
// refuses SSUBSCRIBE for the ACL (it needs +ssubscribe +sunsubscribe and
// the channel pattern &<prefix>:*), with lease.ErrInternal on a server
// without sharded pub/sub (older than 7.0), and with lease.ErrUnavailable
// or lease.ErrTimeout when it cannot be reached. A refusal is logged once
// at warn and remembered for a minute, during which Watch fails without
// asking; waiters poll meanwhile. A subscription that drops later is made
// again with backoff (logged at debug); its watches are not live
// meanwhile.
func (s *Store) Watch(ctx context.Context, key string) (lease.Watch, error) {
	const op = "watch"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return nil, err
	}
	return s.notes.watch(ctx, op, ks.data, what)
}

// watch registers a watch of channel, starting its subscription if it has
// none, and waits until the subscription is confirmed.
func (n *notifications) watch(ctx context.Context, op, channel, what string) (lease.Watch, error) {
	if err := n.refusal(); err != nil {
		return nil, opErr(op, what, err)
	}
	for {
		n.mu.Lock()
		if done, ok := n.stopping[channel]; ok {
			// The last watch is unsubscribing: wait, so that its
			// SUNSUBSCRIBE does not end the new subscription.
			n.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return nil, wrapErr(ctx, op, what, context.Cause(ctx))
			}
		}
		sub := n.subs[channel]
		if sub == nil {
			sub = n.subscribe(channel, what)
			n.subs[channel] = sub
		}
		w := &watch{sub: sub, c: make(chan struct{}, 1)}
		sub.mu.Lock()
		sub.watches[w] = struct{}{}
		sub.mu.Unlock()
		n.mu.Unlock()

		select {
		case <-sub.ready:
		case <-ctx.Done():
			w.Stop()
			return nil, wrapErr(ctx, op, what, context.Cause(ctx))
		}
		if sub.err != nil {
			w.Stop()
			return nil, wrapErr(ctx, op, what, sub.err)
		}
		return w, nil
	}
}

// subscribe starts the subscription to channel. n.mu is held.
func (n *notifications) subscribe(channel, what string) *subscription {
	ctx, cancel := context.WithCancel(context.Background())
	sub := &subscription{
		n:       n,
		channel: channel,
		what:    what,
		watches: make(map[*watch]struct{}),
		ready:   make(chan struct{}),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go sub.run(ctx)
	return sub
}

// unwatch removes w; the last watch of a channel ends its subscription and
// waits for it.
func (n *notifications) unwatch(w *watch) {
	sub := w.sub
	n.mu.Lock()
	sub.mu.Lock()
	delete(sub.watches, w)
	last := len(sub.watches) == 0
	sub.mu.Unlock()
	if last && n.subs[sub.channel] == sub {
		delete(n.subs, sub.channel)
		n.stopping[sub.channel] = sub.done
	} else {
		last = false
	}
	n.mu.Unlock()
	if !last {
		return
	}
	sub.cancel()
	<-sub.done
	n.mu.Lock()
	if n.stopping[sub.channel] == sub.done {
		delete(n.stopping, sub.channel)
	}
	n.mu.Unlock()
}

// wake sends a value to every watch of the subscription. It never blocks.
func (sub *subscription) wake() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for w := range sub.watches {
		select {
		case w.c <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

// confirm ends the wait for the first SSUBSCRIBE: err is nil when it was
// confirmed.
func (sub *subscription) confirm(err error) {
	sub.readyOnce.Do(func() {
		sub.err = err
		close(sub.ready)
	})
}

// run holds the subscription until ctx ends, making it again with backoff
// when it drops. Every message on the channel wakes the watches; so does a
// drop (they poll until it is back) and a subscription made again (a
// release may have come in between).
func (sub *subscription) run(ctx context.Context) {
	defer close(sub.done)
	c := sub.n.client
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond),
		backoff.WithMaxInterval(2*time.Second), backoff.WithMaxElapsedTime(0))
	var lasted atomic.Bool // a subscription was confirmed since the last backoff: start it again
	for {
		hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
			if s.Kind != "ssubscribe" || s.Channel != sub.channel {
				return
			}
			sub.live.Store(true)
			if sub.confirmed.Swap(true) {
				sub.wake() // back after a drop: look at the key again
			}
			sub.confirm(nil)
			lasted.Store(true)
		})
		// rueidis may make the subscription again by itself after a broken
		// connection (before Receive returns): the hook above marks it live
		// again. The return hook runs on the subscription's connection
		// whenever it ends there.
		hooked = rueidis.WithOnReceiveReturnHook(hooked, func(err error, cc rueidis.CommandClient) error {
			if sub.live.Swap(false) {
				sub.wake() // dropped: the watches poll until it is back
			}
			if ctx.Err() != nil {
				uctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
				defer cancel()
				_ = cc.Do(uctx, cc.B().Sunsubscribe().Channel(sub.channel).Build()).Error()
			}
			return err
		})
		err := c.Receive(hooked, c.B().Ssubscribe().Channel(sub.channel).Build(), func(rueidis.PubSubMessage) { sub.wake() })
		if ctx.Err() != nil {
			sub.confirm(ctx.Err())
			return
		}
		if !sub.confirmed.Load() {
			// The first SSUBSCRIBE failed: the watches poll.
			sub.n.refuse(err, sub.what)
			sub.confirm(subscribeErr(err))
			return
		}
		sub.n.log.Debug("release notifications dropped; subscribing again", "key", sub.what, "error", err)
		if !pauseBeforeResubscribe(ctx, b, &lasted) {
			return
		}
	}
}

// pauseBeforeResubscribe waits the backoff's next interval before a
// dropped subscription is made again (starting the backoff over when the
// last subscription was confirmed), or until ctx ends; it reports whether
// to go on.
func pauseBeforeResubscribe(ctx context.Context, b backoff.BackOff, lasted *atomic.Bool) bool {
	if lasted.Swap(false) {
		b.Reset()
	}
	timer := time.NewTimer(b.NextBackOff())
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// errSubscriptionEnded is the cause when the server ended a first
// subscription before confirming it (a slot that moved).
var errSubscriptionEnded = errors.New("subscription ended before it was confirmed")

func subscribeErr(err error) error {
	if err == nil {
		return errSubscriptionEnded
	}
	return err
}

// refuse remembers a refusal of SSUBSCRIBE by the server (an error reply:
// the ACL, or a server without the command) and logs the first one at
// warn; other failures are logged at debug.
func (n *notifications) refuse(err error, what string) {
	var re *rueidis.RedisError
	if err == nil || !errors.As(err, &re) {
		n.log.Debug("release notifications unavailable for now; waiters poll", "key", what, "error", err)
		return
	}
	n.refusedMu.Lock()
	defer n.refusedMu.Unlock()
	n.refused, n.refusedAt = err, time.Now()
	if n.warned {
		n.log.Debug("release notifications refused by the server; waiters poll", "error", err)
		return
	}
	n.warned = true
	n.log.Warn("release notifications refused by the server; waiters poll with backoff instead "+
		"(they need Redis 7 and the ACL grants +ssubscribe +sunsubscribe and the channels &<prefix>:*)", "error", err)
}

// refusal returns the server's refusal of SSUBSCRIBE if it came less than
// refusedRetry ago, else nil.
func (n *notifications) refusal() error {
	n.refusedMu.Lock()
	defer n.refusedMu.Unlock()
	if n.refused == nil || time.Since(n.refusedAt) > refusedRetry {
		return nil
	}
	return fmt.Errorf("%w: %w", classify(context.Background(), n.refused), n.refused)
}
