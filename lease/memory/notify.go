package memory

import (
	"context"
	"sync"

	"github.com/cronguard/cronguard/lease"
)

var _ lease.Notifier = (*Store)(nil)

// watched names what a watch waits for: a lease key, or a semaphore.
type watched struct {
	semaphore bool
	name      string // normalized key or semaphore name
}

// watchers are the Store's watches, by what they wait for.
type watchers struct {
	mu    sync.Mutex
	byKey map[watched]map[*watch]struct{}
}

// watch is one lease.Watch on the Store. It is always live: releases are
// delivered in process, never lost.
type watch struct {
	c    chan struct{} // capacity 1: a release is pending
	of   *watchers
	what watched
	once sync.Once
}

// C implements lease.Watch.
func (w *watch) C() <-chan struct{} { return w.c }

// Live implements lease.Watch: an in-process watch is always live.
func (w *watch) Live() bool { return true }

// Stop implements lease.Watch.
func (w *watch) Stop() {
	w.once.Do(func() {
		w.of.mu.Lock()
		defer w.of.mu.Unlock()
		set := w.of.byKey[w.what]
		delete(set, w)
		if len(set) == 0 {
			delete(w.of.byKey, w.what)
		}
	})
}

// add registers a watch of what.
func (ws *watchers) add(what watched) *watch {
	w := &watch{c: make(chan struct{}, 1), of: ws, what: what}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byKey == nil {
		ws.byKey = make(map[watched]map[*watch]struct{})
	}
	set := ws.byKey[what]
	if set == nil {
		set = make(map[*watch]struct{})
		ws.byKey[what] = set
	}
	set[w] = struct{}{}
	return w
}

// notify wakes every watch of what. It never blocks.
func (ws *watchers) notify(what watched) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.byKey[what] {
		select {
		case w.c <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

// Watch implements lease.Notifier: the returned Watch receives a value
// after every release of a lease on key by this Store (Release,
// ReleaseWithStatus, ForceRelease) and every departure from key's queue
// (LeaveQueue). The expiry of a lease is not notified: a waiter wakes at
// the holder's LockedError.Remaining. The Watch is always live.
func (s *Store) Watch(ctx context.Context, key string) (lease.Watch, error) {
	const op = "watch"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, opError(op, err)
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	return s.watchers.add(watched{name: key}), nil
}
