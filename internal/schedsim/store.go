package schedsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// The simulated store: one in-process lease/memory Store (the "server"),
// which a wipe replaces by an empty one, as a FLUSHALL or a restart without
// persistence would; an outage makes every call fail as unavailable. Each
// replica, and the operator, reach it through a view of their own, which a
// partition (or a crash) severs.

var (
	errOutage    = fmt.Errorf("%w: simulated store outage", lease.ErrUnavailable)
	errPartition = fmt.Errorf("%w: simulated partition: this replica cannot reach the store", lease.ErrUnavailable)
)

// server is the store as the fleet shares it.
type server struct {
	rec *recorder

	mu    sync.Mutex // guards cur, epoch, down; held around every recorded lease operation
	cur   *memory.Store
	epoch int
	down  bool

	subsMu sync.Mutex // guards subs; held while a wipe moves them
	subs   map[*subscription]struct{}
}

// subscription is one Subscribe through a view, kept across wipes: the
// control channel is a connection's, not the data's. A message published
// while its view is severed is lost; when the view heals, the
// subscription is restored and delivers a fleet.MessageResync first, as a
// Redis subscriber's does after its connection dropped (fleet.Store).
type subscription struct {
	view *view
	raw  func(fleet.Message) // the subscriber's fn
	fn   func(fleet.Message) // raw, deaf while the view is severed
	stop func()              // the current underlying subscription's
	lost atomic.Bool         // a message was lost while severed
}

func newServer(rec *recorder) (*server, error) {
	st, err := memory.New()
	if err != nil {
		return nil, err
	}
	return &server{rec: rec, cur: st, subs: make(map[*subscription]struct{})}, nil
}

// store returns the current store, or errOutage.
func (s *server) store() (*memory.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errOutage
	}
	return s.cur, nil
}

func (s *server) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// wipe replaces the store's data by nothing: leases, fence counters, rounds,
// pauses, triggers, the registry. The control channel's subscriptions stay.
func (s *server) wipe() error {
	st, err := memory.New()
	if err != nil {
		return err
	}
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.mu.Lock()
	s.cur = st
	s.epoch++
	s.mu.Unlock()
	for sub := range s.subs {
		sub.stop()
		stop, err := st.Subscribe(context.Background(), sub.fn)
		if err != nil {
			return err
		}
		sub.stop = stop
	}
	return nil
}

func (s *server) subscribe(v *view, fn func(fleet.Message)) (func(), error) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	sub := &subscription{view: v, raw: fn}
	sub.fn = func(m fleet.Message) {
		if v.severed.Load() {
			sub.lost.Store(true)
			return
		}
		fn(m)
	}
	stop, err := st.Subscribe(context.Background(), sub.fn)
	if err != nil {
		return nil, err
	}
	sub.stop = stop
	s.subs[sub] = struct{}{}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.subsMu.Lock()
			defer s.subsMu.Unlock()
			sub.stop()
			delete(s.subs, sub)
		})
	}, nil
}

// restore restores the subscriptions of view v that lost messages while
// it was severed: each one's underlying subscription is replaced, and its
// subscriber receives a fleet.MessageResync in between, in order.
func (s *server) restore(v *view) error {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.mu.Lock()
	st := s.cur
	s.mu.Unlock()
	for sub := range s.subs {
		if sub.view != v || !sub.lost.Swap(false) {
			continue
		}
		sub.stop()
		sub.raw(fleet.Message{Kind: fleet.MessageResync})
		stop, err := st.Subscribe(context.Background(), sub.fn)
		if err != nil {
			return err
		}
		sub.stop = stop
	}
	return nil
}

// view is one client's way to the server: a replica's or the operator's.
// It is a fleet.Store, a lease.Notifier, a lease.SemaphoreStore and a
// lease.ClockedStore, as lease/memory's Store is.
type view struct {
	srv     *server
	client  string // the replica's instance ID, or "operator"
	severed atomic.Bool
}

var (
	_ fleet.Store          = (*view)(nil)
	_ lease.Notifier       = (*view)(nil)
	_ lease.SemaphoreStore = (*view)(nil)
	_ lease.ClockedStore   = (*view)(nil)
	_ lease.BatchAcquirer  = (*view)(nil)
	_ fleet.BatchReleaser  = (*view)(nil)
	_ lease.RoundReader    = (*view)(nil)
)

func (v *view) store() (*memory.Store, error) {
	if v.severed.Load() {
		return nil, errPartition
	}
	return v.srv.store()
}

// Clock implements lease.ClockedStore: the server's clock is the bubble's.
func (v *view) Clock() clockwork.Clock { return clockwork.NewRealClock() }

// Acquire implements lease.Store, and records what it won.
func (v *view) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if v.severed.Load() {
		return nil, errPartition
	}
	v.srv.mu.Lock()
	defer v.srv.mu.Unlock()
	if v.srv.down {
		return nil, errOutage
	}
	l, err := v.srv.cur.Acquire(ctx, key, ttl, opts...)
	if err != nil {
		o, _ := lease.ResolveAcquireOptions(opts)
		if o.PauseCheck && errors.Is(err, lease.ErrPaused) {
			v.srv.rec.pausedRound(v.client, key, o.Round)
		}
		return nil, err
	}
	v.srv.rec.acquired(v.client, v.srv.epoch, l)
	return lease.Attach(v, l), nil
}

// AcquireBatch implements lease.BatchAcquirer: the acquires one by one,
// each as Acquire makes it.
func (v *view) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	for i, r := range reqs {
		res[i].Lease, res[i].Err = v.Acquire(ctx, r.Key, r.TTL, r.Options...)
	}
}

// LastRounds implements lease.RoundReader.
func (v *view) LastRounds(ctx context.Context, keys []string, rounds []int64) error {
	if v.severed.Load() {
		return errPartition
	}
	v.srv.mu.Lock()
	defer v.srv.mu.Unlock()
	if v.srv.down {
		return errOutage
	}
	return v.srv.cur.LastRounds(ctx, keys, rounds)
}

// LastRuns implements lease.RoundReader.
func (v *view) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	if v.severed.Load() {
		return errPartition
	}
	v.srv.mu.Lock()
	defer v.srv.mu.Unlock()
	if v.srv.down {
		return errOutage
	}
	return v.srv.cur.LastRuns(ctx, keys, spans)
}

// Extend implements lease.Store, and records the new expiry.
func (v *view) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	if v.severed.Load() {
		return time.Time{}, errPartition
	}
	v.srv.mu.Lock()
	defer v.srv.mu.Unlock()
	if v.srv.down {
		return time.Time{}, errOutage
	}
	exp, err := v.srv.cur.Extend(ctx, id, ttl)
	if err == nil {
		v.srv.rec.extended(id, exp)
	}
	return exp, err
}

// Release implements lease.Store, and records the release.
func (v *view) Release(ctx context.Context, id string) error {
	if v.severed.Load() {
		return errPartition
	}
	v.srv.mu.Lock()
	defer v.srv.mu.Unlock()
	if v.srv.down {
		return errOutage
	}
	err := v.srv.cur.Release(ctx, id)
	if err == nil {
		v.srv.rec.released(id)
	}
	return err
}

// ReleaseWithStatus implements fleet.Store, and records the release.
func (v *view) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	if v.severed.Load() {
		return 0, errPartition
	}
	v.srv.mu.Lock()
	defer v.srv.mu.Unlock()
	if v.srv.down {
		return 0, errOutage
	}
	n, err := v.srv.cur.ReleaseWithStatus(ctx, l, st)
	if err == nil {
		v.srv.rec.released(l.ID)
	}
	return n, err
}

// ReleaseWithStatusBatch implements fleet.BatchReleaser: the releases one
// by one, each as ReleaseWithStatus makes it, so that the replicas' runs
// end through the scheduler's release batcher (and its wait for the
// claims in flight) as they do on lease/redislease.
func (v *view) ReleaseWithStatusBatch(ctx context.Context, ls []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	for i, l := range ls {
		triggers[i], errs[i] = v.ReleaseWithStatus(ctx, l, sts[i])
	}
}

// ForceRelease implements fleet.Store, and records the release.
func (v *view) ForceRelease(ctx context.Context, key string) (lease.Info, error) {
	st, err := v.store()
	if err != nil {
		return lease.Info{}, err
	}
	return st.ForceRelease(ctx, key)
}

// IsLocked implements lease.Store.
func (v *view) IsLocked(ctx context.Context, key string) (bool, error) {
	st, err := v.store()
	if err != nil {
		return false, err
	}
	return st.IsLocked(ctx, key)
}

// Lookup implements lease.Store.
func (v *view) Lookup(ctx context.Context, key string) (lease.Info, error) {
	st, err := v.store()
	if err != nil {
		return lease.Info{}, err
	}
	return st.Lookup(ctx, key)
}

// LookupID implements lease.Store.
func (v *view) LookupID(ctx context.Context, id string) (lease.Info, error) {
	st, err := v.store()
	if err != nil {
		return lease.Info{}, err
	}
	return st.LookupID(ctx, id)
}

// Watch implements lease.Notifier. A watch made before a wipe hears no
// release after it; waiters then wake at the holder's TTL, as they do when
// a subscription drops.
func (v *view) Watch(ctx context.Context, key string) (lease.Watch, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	return st.Watch(ctx, key)
}

// AcquireSemaphore implements lease.SemaphoreStore.
func (v *view) AcquireSemaphore(ctx context.Context, name string, limit int, ttl time.Duration) (*lease.Lease, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	l, err := st.AcquireSemaphore(ctx, name, limit, ttl)
	if err != nil {
		return nil, err
	}
	return lease.Attach(v, l), nil
}

// ExtendSemaphore implements lease.SemaphoreStore.
func (v *view) ExtendSemaphore(ctx context.Context, name, id string, ttl time.Duration) (time.Time, error) {
	st, err := v.store()
	if err != nil {
		return time.Time{}, err
	}
	return st.ExtendSemaphore(ctx, name, id, ttl)
}

// ReleaseSemaphore implements lease.SemaphoreStore.
func (v *view) ReleaseSemaphore(ctx context.Context, name, id string) error {
	st, err := v.store()
	if err != nil {
		return err
	}
	return st.ReleaseSemaphore(ctx, name, id)
}

// SemaphoreHeld implements lease.SemaphoreStore.
func (v *view) SemaphoreHeld(ctx context.Context, name string) (int, error) {
	st, err := v.store()
	if err != nil {
		return 0, err
	}
	return st.SemaphoreHeld(ctx, name)
}

// WatchSemaphore implements lease.SemaphoreStore.
func (v *view) WatchSemaphore(ctx context.Context, name string) (lease.Watch, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	return st.WatchSemaphore(ctx, name)
}

// PublishReplica implements fleet.Store.
func (v *view) PublishReplica(ctx context.Context, r fleet.Replica, ttl time.Duration) ([]fleet.Conflict, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	return st.PublishReplica(ctx, r, ttl)
}

// RefreshReplica implements fleet.Store.
func (v *view) RefreshReplica(ctx context.Context, id string, ttl time.Duration) (int64, bool, error) {
	st, err := v.store()
	if err != nil {
		return 0, false, err
	}
	return st.RefreshReplica(ctx, id, ttl)
}

// DropReplica implements fleet.Store.
func (v *view) DropReplica(ctx context.Context, id string) error {
	st, err := v.store()
	if err != nil {
		return err
	}
	return st.DropReplica(ctx, id)
}

// Replicas implements fleet.Store.
func (v *view) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	return st.Replicas(ctx)
}

// Conflicts implements fleet.Store.
func (v *view) Conflicts(ctx context.Context) ([]fleet.Conflict, error) {
	st, err := v.store()
	if err != nil {
		return nil, err
	}
	return st.Conflicts(ctx)
}

// LastStatus implements fleet.Store.
func (v *view) LastStatus(ctx context.Context, key string) (fleet.Status, bool, error) {
	st, err := v.store()
	if err != nil {
		return fleet.Status{}, false, err
	}
	return st.LastStatus(ctx, key)
}

// History implements fleet.Store.
func (v *view) History(ctx context.Context, key string, offset, limit int) ([]fleet.RunRecord, int, error) {
	st, err := v.store()
	if err != nil {
		return nil, 0, err
	}
	return st.History(ctx, key, offset, limit)
}

// SetPause implements fleet.Store.
func (v *view) SetPause(ctx context.Context, key string, p fleet.Pause) error {
	st, err := v.store()
	if err != nil {
		return err
	}
	return st.SetPause(ctx, key, p)
}

// ClearPause implements fleet.Store.
func (v *view) ClearPause(ctx context.Context, key string) (bool, error) {
	st, err := v.store()
	if err != nil {
		return false, err
	}
	return st.ClearPause(ctx, key)
}

// PauseOf implements fleet.Store.
func (v *view) PauseOf(ctx context.Context, key string) (fleet.Pause, bool, error) {
	st, err := v.store()
	if err != nil {
		return fleet.Pause{}, false, err
	}
	return st.PauseOf(ctx, key)
}

// AddTrigger implements fleet.Store.
func (v *view) AddTrigger(ctx context.Context, key, by string, ttl time.Duration) (fleet.Trigger, error) {
	st, err := v.store()
	if err != nil {
		return fleet.Trigger{}, err
	}
	return st.AddTrigger(ctx, key, by, ttl)
}

// PendingTriggers implements fleet.Store.
func (v *view) PendingTriggers(ctx context.Context, key string) (int, error) {
	st, err := v.store()
	if err != nil {
		return 0, err
	}
	return st.PendingTriggers(ctx, key)
}

// JobState implements fleet.Store.
func (v *view) JobState(ctx context.Context, key string) (fleet.JobState, error) {
	st, err := v.store()
	if err != nil {
		return fleet.JobState{}, err
	}
	return st.JobState(ctx, key)
}

// Publish implements fleet.Store.
func (v *view) Publish(ctx context.Context, m fleet.Message) error {
	st, err := v.store()
	if err != nil {
		return err
	}
	return st.Publish(ctx, m)
}

// Subscribe implements fleet.Store. A severed view hears nothing; healed,
// it hears a fleet.MessageResync if it lost a message (server.restore).
func (v *view) Subscribe(_ context.Context, fn func(fleet.Message)) (func(), error) {
	if v.severed.Load() {
		return nil, errPartition
	}
	return v.srv.subscribe(v, fn)
}
