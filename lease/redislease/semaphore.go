package redislease

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

var _ lease.SemaphoreStore = (*Store)(nil)

// The semaphore scripts.
var (
	semaphoreAcquireScript = rueidis.NewLuaScript(luascripts.SemaphoreAcquire)
	semaphoreExtendScript  = rueidis.NewLuaScript(luascripts.SemaphoreExtend)
	semaphoreReleaseScript = rueidis.NewLuaScript(luascripts.SemaphoreRelease)
	semaphoreHeldScript    = rueidis.NewLuaScript(luascripts.SemaphoreHeld)
)

// A semaphore's keys. Its name gives a storage key and hash tag S as a
// lease key does (keysFor), so both keys are in one slot:
//
//	P:sem:{S}          holders: sorted set, holder ID -> expiresAtMs (server);
//	                   also the sharded channel its releases are published on
//	P:sem:{S}:fence    fence counter, never expires
type semaphoreKeys struct {
	holders, fence string
	slot           int
	what           string // log-safe name: "semaphore#" and a hash prefix
}

// semaphoreKeysFor validates name and derives the semaphore's keys.
func (s *Store) semaphoreKeysFor(op, name string) (semaphoreKeys, error) {
	n, err := lease.NormalizeKey(name)
	if err != nil {
		return semaphoreKeys{}, opErr(op, "", fmt.Errorf("semaphore: %w", err))
	}
	k, g, err := tagOf(s.prefix, n)
	if err != nil {
		return semaphoreKeys{}, opErr(op, "", fmt.Errorf("semaphore: %w", err))
	}
	holders := tagged(s.prefix, "sem", g)
	return semaphoreKeys{
		holders: holders,
		fence:   holders + ":fence",
		slot:    keySlot(g),
		what:    "semaphore#" + leasekit.Hash(k)[:8],
	}, nil
}

// AcquireSemaphore makes one attempt to become a holder of the semaphore
// name for ttl, if fewer than limit holders are live (one script: drop the
// holders no longer live, count, add). See lease.SemaphoreStore. The
// holder's fence comes from the semaphore's own counter, with the fence
// floor of leases. The Lease's Deadline is measured from just before the
// request was sent. An acquire whose outcome is unknown (see Acquire) is
// rolled back: the holder, if it was added, is removed.
func (s *Store) AcquireSemaphore(ctx context.Context, name string, limit int, ttl time.Duration) (*lease.Lease, error) {
	const op = "acquire semaphore"
	sk, err := s.semaphoreKeysFor(op, name)
	if err != nil {
		return nil, err
	}
	if err := lease.ValidateSemaphoreLimit(limit); err != nil {
		return nil, opErr(op, "", err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return nil, opErr(op, "", err)
	}
	nname, _ := lease.NormalizeKey(name)
	id := newID(sk.slot)
	sent := s.clock.Now()
	resp := semaphoreAcquireScript.Exec(ctx, s.client, []string{sk.holders, sk.fence},
		[]string{id, strconv.FormatInt(ttl.Milliseconds(), 10), strconv.Itoa(limit)})
	if err := resp.Error(); err != nil {
		if outcomeUnknown(ctx, err) {
			s.dropHolder(ctx, sk, id, ttl)
		}
		return nil, wrapErr(ctx, op, sk.what, err)
	}
	r, err := intsReply(resp)
	if err != nil {
		return nil, internalErr(op, sk.what, err)
	}
	switch {
	case r.n == 2 && r.v[0] == 0:
		return nil, opErr(op, sk.what, &lease.LockedError{Remaining: time.Duration(r.v[1]) * time.Millisecond})
	case r.n != 4 || r.v[0] != 1:
		return nil, internalErr(op, sk.what, r.bad())
	}
	fence, err := checkFence(r.v[1])
	if err != nil {
		s.dropHolder(ctx, sk, id, ttl)
		return nil, internalErr(op, sk.what, err)
	}
	s.warnFence(sk.what, fence, time.UnixMilli(r.v[3]))
	return &lease.Lease{
		Key:        nname,
		ID:         id,
		Fence:      fence,
		TTL:        ttl,
		AcquiredAt: time.UnixMilli(r.v[3]),
		ExpiresAt:  time.UnixMilli(r.v[2]),
		Attempt:    1,
		Deadline:   lease.LocalDeadline(sent, ttl),
	}, nil
}

// dropHolder removes holder id from a semaphore after an acquire whose
// outcome is unknown, with a fresh context bounded by min(ttl,
// rollbackTimeout), and logs what happened.
func (s *Store) dropHolder(ctx context.Context, sk semaphoreKeys, id string, ttl time.Duration) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(ttl, rollbackTimeout))
	defer cancel()
	err := semaphoreReleaseScript.Exec(rctx, s.client, []string{sk.holders}, []string{id}).Error()
	if err != nil {
		s.log.Warn("could not roll back a semaphore acquire whose outcome was unknown; the slot may stay taken until the ttl passes",
			"semaphore", sk.what, "holder", lease.ShortID(id), "error", err)
		return
	}
	s.log.Debug("rolled back a semaphore acquire whose outcome was unknown", "semaphore", sk.what, "holder", lease.ShortID(id))
}

// ExtendSemaphore sets the expiry of holder id of the semaphore name to
// server now + ttl. See lease.SemaphoreStore.
func (s *Store) ExtendSemaphore(ctx context.Context, name, id string, ttl time.Duration) (time.Time, error) {
	const op = "extend"
	sk, err := s.semaphoreKeysFor(op, name)
	if err != nil {
		return time.Time{}, err
	}
	if err := leasekit.ValidateID(id); err != nil {
		return time.Time{}, opErr(op, "", err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return time.Time{}, opErr(op, "", err)
	}
	resp := semaphoreExtendScript.Exec(ctx, s.client, []string{sk.holders}, []string{id, strconv.FormatInt(ttl.Milliseconds(), 10)})
	exp, code, err := readExtend(ctx, op, id, resp)
	if err != nil || code == codeDone {
		return exp, err
	}
	return time.Time{}, notHeldCode(op, id, code)
}

// ReleaseSemaphore removes holder id of the semaphore name and wakes the
// semaphore's waiters. See lease.SemaphoreStore.
func (s *Store) ReleaseSemaphore(ctx context.Context, name, id string) error {
	const op = "release"
	sk, err := s.semaphoreKeysFor(op, name)
	if err != nil {
		return err
	}
	if err := leasekit.ValidateID(id); err != nil {
		return opErr(op, "", err)
	}
	code, err := readRelease(ctx, op, id, semaphoreReleaseScript.Exec(ctx, s.client, []string{sk.holders}, []string{id}))
	if err != nil || code == codeDone {
		return err
	}
	return notHeldCode(op, id, code)
}

// SemaphoreHeld returns the number of live holders of the semaphore name.
func (s *Store) SemaphoreHeld(ctx context.Context, name string) (int, error) {
	const op = "semaphore held"
	sk, err := s.semaphoreKeysFor(op, name)
	if err != nil {
		return 0, err
	}
	n, err := semaphoreHeldScript.Exec(ctx, s.client, []string{sk.holders}, nil).AsInt64()
	if err != nil {
		return 0, wrapErr(ctx, op, sk.what, err)
	}
	return int(n), nil
}

// WatchSemaphore is Watch for the releases of the semaphore name's
// holders: it subscribes to the sharded channel named after its holders
// key. See Watch for its errors.
func (s *Store) WatchSemaphore(ctx context.Context, name string) (lease.Watch, error) {
	const op = "watch semaphore"
	sk, err := s.semaphoreKeysFor(op, name)
	if err != nil {
		return nil, err
	}
	return s.notes.watch(ctx, op, sk.holders, sk.what)
}
