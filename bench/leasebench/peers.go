package leasebench

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// RedisLock is bsm/redislock on a go-redis v9 client with its default pool.
type RedisLock struct {
	rdb   *goredis.Client
	locks *redislock.Client
}

// NewRedisLock connects the bsm/redislock contender to addr.
func NewRedisLock(addr string) *RedisLock {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	return &RedisLock{rdb: rdb, locks: redislock.New(rdb)}
}

// Name implements Contender.
func (r *RedisLock) Name() string { return "bsm/redislock" }

// CanExtend implements Contender.
func (r *RedisLock) CanExtend() bool { return true }

// Close implements Contender.
func (r *RedisLock) Close() { _ = r.rdb.Close() }

// Acquire implements Contender.
func (r *RedisLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	l, err := r.locks.Obtain(ctx, key, ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, ErrContended
	}
	if err != nil {
		return nil, err
	}
	return redisLockHeld{l}, nil
}

type redisLockHeld struct{ l *redislock.Lock }

func (h redisLockHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }
func (h redisLockHeld) Extend(ctx context.Context, ttl time.Duration) error {
	return h.l.Refresh(ctx, ttl, nil)
}

// Redsync is go-redsync/redsync v4 with a single go-redis v9 pool (default
// pool size), one try per acquire.
type Redsync struct {
	rdb *goredis.Client
	rs  *redsync.Redsync
}

// NewRedsync connects the go-redsync contender to addr.
func NewRedsync(addr string) *Redsync {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	return &Redsync{rdb: rdb, rs: redsync.New(redsyncgoredis.NewPool(rdb))}
}

// Name implements Contender.
func (r *Redsync) Name() string { return "go-redsync" }

// CanExtend implements Contender.
func (r *Redsync) CanExtend() bool { return true }

// Close implements Contender.
func (r *Redsync) Close() { _ = r.rdb.Close() }

// Acquire implements Contender.
func (r *Redsync) Acquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	m := r.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	err := m.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
		return nil, ErrContended
	}
	if err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

type redsyncHeld struct{ m *redsync.Mutex }

func (h redsyncHeld) Release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		return ErrContended
	}
	return err
}

// Extend ignores ttl: a redsync mutex always extends by its own expiry,
// which the benchmark sets to the same ttl.
func (h redsyncHeld) Extend(ctx context.Context, _ time.Duration) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		return ErrContended
	}
	return err
}

// RueidisLock is rueidislock in single-key mode (KeyMajority 1, one key per
// lock on one Redis), client-side caching off, TryWithContext to acquire and
// the returned cancel to release. Its validity is fixed per locker (it
// extends locks itself in the background), so it has no extend call.
type RueidisLock struct {
	locker rueidislock.Locker
}

// NewRueidisLock connects the rueidislock contender to addr; validity is the
// lock TTL.
func NewRueidisLock(addr string, validity time.Duration) (*RueidisLock, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true},
		KeyMajority:  1,
		KeyValidity:  validity,
		// The default 20ms per-attempt timeout fails attempts on a loaded
		// 2-core machine; give it the same patience the other clients have.
		TryNextAfter: 2 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return &RueidisLock{locker: l}, nil
}

// Name implements Contender.
func (r *RueidisLock) Name() string { return "rueidislock" }

// CanExtend implements Contender.
func (r *RueidisLock) CanExtend() bool { return false }

// Close implements Contender.
func (r *RueidisLock) Close() { r.locker.Close() }

// Acquire implements Contender. ttl is ignored: the locker's validity
// applies.
func (r *RueidisLock) Acquire(ctx context.Context, key string, _ time.Duration) (Held, error) {
	_, cancel, err := r.locker.TryWithContext(ctx, key)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return nil, ErrContended
	}
	if err != nil {
		return nil, err
	}
	return rueidisLockHeld{cancel}, nil
}

type rueidisLockHeld struct{ cancel context.CancelFunc }

// Release cancels the lock's context; rueidislock deletes the key and waits
// for that before cancel returns.
func (h rueidisLockHeld) Release(context.Context) error { h.cancel(); return nil }

func (h rueidisLockHeld) Extend(context.Context, time.Duration) error { return ErrNoExtend }
