package redislease

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// acquireTrigger is Acquire with lease.WithTrigger: take the lease only to
// run a queued trigger, consuming it, and claim the run's round
// (acquire_trigger.lua): server time, or the millisecond after the
// recorded round when that is not before it. An occurrence whose
// completion record is still open (or running, its holder gone) can never
// be resumed after that round: the script marks it given up and the lease
// reports it (Lease.Superseded), with its "given_up" history entry pushed
// after, as for a round acquire with attempts. With lease.WithPauseCheck a
// paused key refuses it (lease.ErrPaused) and keeps its triggers.
func (s *Store) acquireTrigger(ctx context.Context, ks keyset, ik, id string, ttl time.Duration, nkey, owner, ownerJSON string, pauseCheck bool) (*lease.Lease, error) {
	const op = "acquire"
	keys, args := acquireKeysArgs(ks, ik, "", id, ttl, nkey, ownerJSON, lease.AcquireOptions{})
	keys = []string{keys[0], keys[1], keys[2], ks.trigger(s.prefix), ks.round, ks.attempt(s.prefix)}
	if pauseCheck {
		keys = append(keys, ks.pause(s.prefix))
	}
	args = args[:5]
	sent := s.clock.Now()
	var arr []rueidis.RedisMessage
	var code int64
	for {
		resp := acquireTriggerScript.Exec(ctx, s.client, keys, args)
		if err := resp.Error(); err != nil {
			name := keyName(ks)
			if outcomeUnknown(ctx, err) {
				// The trigger, if it was consumed, is lost with the
				// roll-back (triggers are at most once), and the round it
				// claimed stays claimed (its value is unknown here): a
				// scheduled occurrence at or before it is refused, as
				// after a trigger that ran.
				s.rollback(ctx, ks, ik, id, 0, 0, ttl, name)
			}
			return nil, wrapErr(ctx, op, name, err)
		}
		var err error
		if arr, err = resp.ToArray(); err != nil || len(arr) == 0 {
			return nil, internalErr(op, keyName(ks), fmt.Errorf("%w: %v", errBadReply, err))
		}
		if code, err = arr[0].AsInt64(); err != nil {
			return nil, internalErr(op, keyName(ks), fmt.Errorf("%w: %w", errBadReply, err))
		}
		if code != codeExpiredDropped {
			break
		}
		// 1000 expired triggers dropped, more entries wait: go on.
	}
	switch {
	case code == 0 && len(arr) == 2:
		rem, _ := arr[1].AsInt64()
		return nil, opErr(op, keyName(ks), &lease.LockedError{Remaining: time.Duration(rem) * time.Millisecond})
	case code == codePaused:
		return nil, opErr(op, keyName(ks), lease.ErrPaused)
	case code == codeNoTrigger:
		return nil, opErr(op, keyName(ks), lease.ErrNoTrigger)
	case code == codeUnreadable:
		return nil, internalErr(op, keyName(ks), errUnreadable)
	case code != 1 || len(arr) != 8 && len(arr) != 10:
		return nil, internalErr(op, keyName(ks), fmt.Errorf("%w: code %d, %d elements", errBadReply, code, len(arr)))
	}
	var v [10]int64
	for _, i := range []int{1, 2, 3, 5, 6, 7, 8, 9} {
		if i >= len(arr) {
			break
		}
		var err error
		if v[i], err = arr[i].AsInt64(); err != nil {
			return nil, internalErr(op, keyName(ks), fmt.Errorf("%w: %w", errBadReply, err))
		}
	}
	trigger, err := arr[4].ToString()
	if err != nil {
		return nil, internalErr(op, keyName(ks), fmt.Errorf("%w: %w", errBadReply, err))
	}
	fence, err := checkFence(v[1])
	if err != nil {
		s.rollback(ctx, ks, ik, id, v[6], 0, ttl, keyName(ks))
		return nil, internalErr(op, keyName(ks), err)
	}
	l := &lease.Lease{
		Key:        nkey,
		ID:         id,
		Fence:      fence,
		Owner:      owner,
		TTL:        ttl,
		AcquiredAt: time.UnixMilli(v[3]),
		ExpiresAt:  time.UnixMilli(v[2]),
		Round:      v[6],
		PrevRound:  v[7],
		Trigger:    trigger,
		Attempt:    1,
		Deadline:   lease.LocalDeadline(sent, ttl),
	}
	if len(arr) == 10 {
		l.Superseded = &lease.Superseded{Round: v[8], Attempt: int(v[9])}
		s.pushGivenUp(ctx, ks, keyName(ks), v[8], int(v[9]), l.AcquiredAt)
	}
	return lease.Attach(s, l), nil
}

// AddTrigger queues a trigger for key, living ttl unless consumed, and
// announces it on the control channel. See fleet.Store. ttl must be a
// positive whole number of milliseconds up to fleet.MaxTriggerTTL; by must pass
// lease.ValidateOwner.
func (s *Store) AddTrigger(ctx context.Context, key, by string, ttl time.Duration) (fleet.Trigger, error) {
	const op = "trigger"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return fleet.Trigger{}, err
	}
	if err := lease.ValidateTTL(ttl); err != nil || ttl > fleet.MaxTriggerTTL {
		return fleet.Trigger{}, opErr(op, "", fmt.Errorf("%w: trigger ttl must be a whole number of milliseconds from 1ms to %s, got %s", lease.ErrInvalidArgument, fleet.MaxTriggerTTL, ttl))
	}
	if err := lease.ValidateOwner(by); err != nil {
		return fleet.Trigger{}, opErr(op, "", fmt.Errorf("by: %w", err))
	}
	id := newTriggerID()
	r, err := intsReply(triggerAddScript.Exec(ctx, s.client, []string{ks.trigger(s.prefix)}, []string{id, strconv.FormatInt(ttl.Milliseconds(), 10)}))
	if err != nil {
		return fleet.Trigger{}, wrapErr(ctx, op, what, err)
	}
	if r.n != 2 {
		return fleet.Trigger{}, internalErr(op, what, r.bad())
	}
	nkey, _ := lease.NormalizeKey(key) // valid: keysForOp checked it
	t := fleet.Trigger{ID: id, Key: nkey, By: by, At: time.UnixMilli(r.v[0]), Expires: time.UnixMilli(r.v[1])}
	if err := s.Publish(ctx, fleet.Message{Kind: fleet.MessageTrigger, Key: t.Key, Trigger: id}); err != nil {
		return t, err
	}
	return t, nil
}

// PendingTriggers returns how many live triggers wait for key.
func (s *Store) PendingTriggers(ctx context.Context, key string) (int, error) {
	const op = "triggers"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return 0, err
	}
	res := s.client.DoMulti(ctx,
		s.client.B().Time().Build(),
		s.client.B().Lrange().Key(ks.trigger(s.prefix)).Start(0).Stop(-1).Build())
	now, err := serverTime(res[0])
	if err != nil {
		return 0, wrapErr(ctx, op, what, err)
	}
	entries, err := res[1].AsStrSlice()
	if err != nil {
		return 0, wrapErr(ctx, op, what, err)
	}
	return liveTriggers(entries, now.UnixMilli()), nil
}

// PendingTriggersBatch sets counts[i] to the number of live triggers
// waiting for keys[i] (fleet.TriggerCounter): one TIME and one LRANGE per
// key, pipelined in one round trip, read-only (no script). The keys may
// lie in any slots: on a cluster, rueidis sends each command to its
// key's node. A key whose trigger queue holds another type than a list
// counts 0 and is named in a *lease.UnreadableKeysError, returned once
// every other key is counted.
func (s *Store) PendingTriggersBatch(ctx context.Context, keys []string, counts []int) error {
	const op = "triggers"
	if len(counts) < len(keys) {
		return opErr(op, "", fmt.Errorf("%w: counts must be as long as keys", lease.ErrInvalidArgument))
	}
	if len(keys) == 0 {
		return nil
	}
	cmds := append(make(rueidis.Commands, 0, len(keys)+1), s.client.B().Time().Build())
	cmds, err := s.keyReads(op, keys, cmds, func(ks keyset) rueidis.Completed {
		return s.client.B().Lrange().Key(ks.trigger(s.prefix)).Start(0).Stop(-1).Build()
	})
	if err != nil {
		return err
	}
	res := s.client.DoMulti(ctx, cmds...)
	now, err := serverTime(res[0])
	if err != nil {
		return wrapErr(ctx, op, "", err)
	}
	var bad unreadKeys
	for i, r := range res[1:] {
		counts[i] = 0
		entries, err := r.AsStrSlice()
		switch {
		case wrongType(err):
			bad.add(i, internalErr(op, "", err))
		case err != nil:
			return wrapErr(ctx, op, "", err)
		default:
			counts[i] = liveTriggers(entries, now.UnixMilli())
		}
	}
	return bad.err()
}

// liveTriggers counts the entries of a trigger queue
// ("<expiresAtMs>|<queuedAtMs>|<id>") that have not expired at nowMs.
func liveTriggers(entries []string, nowMs int64) int {
	n := 0
	for _, e := range entries {
		exp, _, ok := strings.Cut(e, "|")
		if ms, err := strconv.ParseInt(exp, 10, 64); ok && err == nil && ms > nowMs {
			n++
		}
	}
	return n
}

// newTriggerID returns a fresh trigger ID: 12 random bytes, base64url.
func newTriggerID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// serverTime reads a TIME reply.
func serverTime(r rueidis.RedisResult) (time.Time, error) {
	parts, err := r.AsIntSlice()
	if err != nil {
		return time.Time{}, err
	}
	if len(parts) != 2 {
		return time.Time{}, fmt.Errorf("%w: TIME answered %d parts", errBadReply, len(parts))
	}
	return time.Unix(parts[0], parts[1]*1000), nil
}
