package lease

import "context"

// Notifier is an optional interface of a Store that tells waiters when a
// key was released, so that Lock wakes on the release instead of polling.
// lease/redislease implements it with sharded pub/sub in the key's slot,
// lease/memory in process. A Store without it is polled (see Lock).
type Notifier interface {
	// Watch starts watching the releases of key and returns once they are
	// being delivered: every release (and roll-back) of a lease on key
	// that the store performs after Watch returned sends a value on the
	// Watch's channel. It fails when the store cannot deliver them (for
	// Redis: SSUBSCRIBE refused by the ACL, or a server older than 7.0); the
	// waiter then polls. Watch validates key like Acquire.
	Watch(ctx context.Context, key string) (Watch, error)
}

// Watch is one waiter's registration for the releases of a key (or of a
// semaphore's slots), from Notifier.Watch or SemaphoreStore.WatchSemaphore.
// Watches of one key within a process share one subscription; a Watch
// itself starts no goroutine.
type Watch interface {
	// C returns the channel that receives a value after a release. It
	// holds at most one value: releases that come while one is pending
	// are folded into it. A value may also come without a release (the
	// subscription dropped or came back): a waiter looks at the key again
	// whenever it receives one.
	C() <-chan struct{}
	// Live reports whether releases are being delivered now. A Watch stops
	// being live when its subscription drops and is live again once it is
	// made again; C receives a value at both moments. While it is not
	// live, a waiter polls.
	Live() bool
	// Stop ends the Watch; the subscription ends with the last Watch of
	// its key. It may be called more than once, and returns once the
	// subscription it ended is gone.
	Stop()
}
