package memory_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/fleet/fleettest"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// TestStore_FleetConformance runs the control plane's suite on a fake
// clock. The clock starts at the real time: the registry test checks that
// an entry's Expires is within an hour of time.Now.
func TestStore_FleetConformance(t *testing.T) {
	fleettest.Run(t, func(t *testing.T) fleettest.Env {
		clock := clockwork.NewFakeClock()
		s, err := memory.New(memory.WithClock(clock))
		require.NoError(t, err)
		return fleettest.Env{Store: s, Wait: clock.Advance}
	})
}

func TestStore_FleetConformance_RealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps on the real clock for about 1s")
	}
	fleettest.Run(t, func(t *testing.T) fleettest.Env {
		s, err := memory.New()
		require.NoError(t, err)
		return fleettest.Env{Store: s, Wait: time.Sleep}
	})
}

// TestStore_Acquire_PausedRoundNeverLowered checks that a paused acquire
// records its round only when it is newer than the recorded one.
func TestStore_Acquire_PausedRoundNeverLowered(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	l, err := s.Acquire(ctx, "k", time.Second, lease.WithRound(50))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, s.SetPause(ctx, "k", fleet.Pause{By: "ops"}))

	_, err = s.Acquire(ctx, "k", time.Second, lease.WithPauseCheck(), lease.WithRound(10))
	require.ErrorIs(t, err, lease.ErrPaused, "paused comes before claimed")
	_, err = s.Acquire(ctx, "k", time.Second, lease.WithPauseCheck())
	require.ErrorIs(t, err, lease.ErrPaused, "an acquire without a round is paused too")
	assert.True(t, strings.HasPrefix(err.Error(), "memory: acquire: "), err.Error())

	_, err = s.ClearPause(ctx, "k")
	require.NoError(t, err)
	l, err = s.Acquire(ctx, "k", time.Second, lease.WithRound(51))
	require.NoError(t, err)
	assert.Equal(t, int64(50), l.PrevRound, "the older paused round recorded nothing")
}

// TestStore_Acquire_PausedWhileHeld checks that a pause answers before a
// live lease: every replica hears paused, the holder's run goes on.
func TestStore_Acquire_PausedWhileHeld(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	holder, err := s.Acquire(ctx, "k", time.Second, lease.WithRound(1))
	require.NoError(t, err)
	require.NoError(t, s.SetPause(ctx, "k", fleet.Pause{By: "ops"}))
	_, err = s.Acquire(ctx, "k", time.Second, lease.WithPauseCheck(), lease.WithRound(2))
	require.ErrorIs(t, err, lease.ErrPaused)
	_, err = holder.Extend(ctx, time.Second)
	require.NoError(t, err, "a pause does not end a held lease")
}

// TestStore_Acquire_TriggerHonoursPauseOnlyWhenAsked: a trigger acquire
// with lease.WithPauseCheck (the scheduler's) is refused while the key is
// paused and keeps the trigger; one without it runs the trigger, as
// lease/redislease's does.
func TestStore_Acquire_TriggerHonoursPauseOnlyWhenAsked(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	require.NoError(t, s.SetPause(ctx, "k", fleet.Pause{By: "ops"}))
	tr, err := s.AddTrigger(ctx, "k", "ops", time.Minute)
	require.NoError(t, err)
	_, err = s.Acquire(ctx, "k", time.Second, lease.WithTrigger(), lease.WithPauseCheck())
	require.ErrorIs(t, err, lease.ErrPaused)
	l, err := s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, tr.ID, l.Trigger)
}

// TestStore_Acquire_TriggerOnHeldKey checks that a trigger acquire on a
// held key consumes nothing and says when the key is free, and that the
// trigger runs once the holder's lease stops being live.
func TestStore_Acquire_TriggerOnHeldKey(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	holder, err := s.Acquire(ctx, "k", 2*time.Second)
	require.NoError(t, err)
	tr, err := s.AddTrigger(ctx, "k", "ops", time.Minute)
	require.NoError(t, err)

	_, err = s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
	var le *lease.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 2*time.Second+lease.ExpiryTolerance, le.Remaining)
	n, err := s.PendingTriggers(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the trigger was not consumed")

	clock.Advance(2*time.Second + lease.ExpiryTolerance)
	l, err := s.Acquire(ctx, "k", time.Second, lease.WithTrigger(), lease.WithOwner("r2/k"))
	require.NoError(t, err, "an expired holder does not block the trigger")
	assert.Equal(t, tr.ID, l.Trigger)
	assert.Equal(t, "r2/k", l.Owner)
	assert.Greater(t, l.Fence, holder.Fence)
	assert.Zero(t, l.PrevRound)
}

// TestStore_Acquire_TriggerSkipsExpired checks that the oldest live
// trigger runs and the expired ones before it are dropped.
func TestStore_Acquire_TriggerSkipsExpired(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	_, err := s.AddTrigger(ctx, "k", "ops", 100*time.Millisecond)
	require.NoError(t, err)
	live, err := s.AddTrigger(ctx, "k", "ops", time.Minute)
	require.NoError(t, err)
	_, err = s.AddTrigger(ctx, "k", "ops", 100*time.Millisecond)
	require.NoError(t, err)
	clock.Advance(100 * time.Millisecond) // live while Expires > now

	l, err := s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
	require.NoError(t, err)
	assert.Equal(t, live.ID, l.Trigger)
	require.NoError(t, l.Release(ctx))
	_, err = s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
	require.ErrorIs(t, err, lease.ErrNoTrigger)
}

// TestStore_AddTrigger_Many queues many triggers on one key and on many
// keys; each is consumed once, oldest first.
func TestStore_AddTrigger_Many(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	const n = 3000
	ids := make([]string, n)
	seen := map[string]bool{}
	for i := range ids {
		tr, err := s.AddTrigger(ctx, "k", "ops", time.Hour)
		require.NoError(t, err)
		require.False(t, seen[tr.ID], "trigger IDs are unique")
		seen[tr.ID] = true
		ids[i] = tr.ID
		_, err = s.AddTrigger(ctx, "short"+time.Duration(i).String(), "ops", time.Millisecond)
		require.NoError(t, err)
	}
	clock.Advance(time.Millisecond)
	got, err := s.PendingTriggers(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, n, got)
	for i := range ids {
		l, err := s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
		require.NoError(t, err)
		require.Equal(t, ids[i], l.Trigger, "trigger %d", i)
		require.NoError(t, l.Release(ctx))
	}
	_, err = s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
	require.ErrorIs(t, err, lease.ErrNoTrigger)
	got, err = s.PendingTriggers(ctx, "short0s")
	require.NoError(t, err)
	assert.Zero(t, got)
}

func TestStore_AddTrigger_TTLBounds(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{
		{time.Millisecond, true},
		{fleet.MaxTriggerTTL, true},
		{fleet.MaxTriggerTTL + time.Millisecond, false},
		{-time.Second, false},
		{1500 * time.Microsecond, false},
	} {
		tr, err := s.AddTrigger(ctx, "k", "ops", tc.ttl)
		if tc.ok {
			require.NoError(t, err, tc.ttl)
			assert.Equal(t, tc.ttl, tr.Expires.Sub(tr.At), tc.ttl)
			continue
		}
		require.ErrorIs(t, err, lease.ErrInvalidArgument, tc.ttl)
		assert.Contains(t, err.Error(), "trigger ttl must be")
	}
}

func TestStore_AddTrigger_NormalizesKey(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	tr, err := s.AddTrigger(ctx, "cafe\u0301", "ops", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "caf\u00e9", tr.Key)
	n, err := s.PendingTriggers(ctx, "caf\u00e9")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestStore_ReleaseWithStatus_Stored checks what a status keeps: times and
// duration to the millisecond, the error sanitized, the trigger.
func TestStore_ReleaseWithStatus_Stored(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	_, err := s.AddTrigger(ctx, "k", "ops", time.Minute)
	require.NoError(t, err)
	l, err := s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
	require.NoError(t, err)
	_, err = s.AddTrigger(ctx, "k", "ops", 10*time.Millisecond)
	require.NoError(t, err)
	_, err = s.AddTrigger(ctx, "k", "ops", time.Minute)
	require.NoError(t, err)
	clock.Advance(10 * time.Millisecond)

	occ := time.Date(2025, 3, 1, 12, 0, 0, 123_456_789, time.UTC)
	n, err := s.ReleaseWithStatus(ctx, l, fleet.Status{Occurrence: occ, Owner: "r1/k", Fence: l.Fence, Started: l.AcquiredAt,
		Duration: 1500*time.Millisecond + 999*time.Microsecond, Outcome: "succeeded", Error: "token=abc\tfailed", Trigger: l.Trigger})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the live trigger waits")

	st, found, err := s.LastStatus(ctx, "k")
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, st.Occurrence.Equal(occ.Truncate(time.Millisecond)))
	assert.Equal(t, 1500*time.Millisecond, st.Duration)
	assert.Equal(t, "token=*** failed", st.Error)
	assert.Equal(t, l.Trigger, st.Trigger)
	assert.Equal(t, l.Fence, st.Fence)
}

// TestStore_ReleaseWithStatus_EditedKey checks that a lease whose Key is
// not its ID's releases the lease its ID names and records no status on
// either key, as lease/redislease does.
func TestStore_ReleaseWithStatus_EditedKey(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	l, err := s.Acquire(ctx, "a", time.Second)
	require.NoError(t, err)
	edited := *l
	edited.Key = "b"
	n, err := s.ReleaseWithStatus(ctx, &edited, fleet.Status{Outcome: "succeeded"})
	require.NoError(t, err)
	assert.Zero(t, n)
	locked, err := s.IsLocked(ctx, "a")
	require.NoError(t, err)
	assert.False(t, locked, "the ID's lease was released")
	for _, k := range []string{"a", "b"} {
		_, found, err := s.LastStatus(ctx, k)
		require.NoError(t, err)
		assert.False(t, found, k)
	}
}

func TestStore_ReleaseWithStatus_NotHeld(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	l, err := s.Acquire(ctx, "k", time.Second)
	require.NoError(t, err)
	clock.Advance(time.Second + lease.ExpiryTolerance)
	_, err = s.ReleaseWithStatus(ctx, l, fleet.Status{Outcome: "succeeded"})
	var nh *lease.NotHeldError
	require.ErrorAs(t, err, &nh)
	assert.Equal(t, lease.ReasonExpired, nh.Reason)
	_, found, err := s.LastStatus(ctx, "k")
	require.NoError(t, err)
	assert.False(t, found, "an expired lease records nothing")

	_, err = s.ReleaseWithStatus(ctx, nil, fleet.Status{})
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	_, err = s.ReleaseWithStatus(ctx, &lease.Lease{Key: "k", ID: "short"}, fleet.Status{})
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
}

// TestStore_Fleet_ContextDone checks that every control-plane method
// refuses a done context before doing anything.
func TestStore_Fleet_ContextDone(t *testing.T) {
	s, _ := newStore(t)
	l, err := s.Acquire(t.Context(), "k", time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ops := map[string]func() error{
		"SetPause":          func() error { return s.SetPause(ctx, "k", fleet.Pause{}) },
		"ClearPause":        func() error { _, err := s.ClearPause(ctx, "k"); return err },
		"PauseOf":           func() error { _, _, err := s.PauseOf(ctx, "k"); return err },
		"AddTrigger":        func() error { _, err := s.AddTrigger(ctx, "k", "", time.Second); return err },
		"PendingTriggers":   func() error { _, err := s.PendingTriggers(ctx, "k"); return err },
		"ReleaseWithStatus": func() error { _, err := s.ReleaseWithStatus(ctx, l, fleet.Status{}); return err },
		"LastStatus":        func() error { _, _, err := s.LastStatus(ctx, "k"); return err },
		"PublishReplica":    func() error { _, err := s.PublishReplica(ctx, fleet.Replica{ID: "r"}, time.Second); return err },
		"RefreshReplica":    func() error { _, _, err := s.RefreshReplica(ctx, "r", time.Second); return err },
		"DropReplica":       func() error { return s.DropReplica(ctx, "r") },
		"Replicas":          func() error { _, err := s.Replicas(ctx); return err },
		"Conflicts":         func() error { _, err := s.Conflicts(ctx); return err },
		"Publish":           func() error { return s.Publish(ctx, fleet.Message{Kind: fleet.MessageDone}) },
		"Subscribe":         func() error { _, err := s.Subscribe(ctx, func(fleet.Message) {}); return err },
	}
	for name, op := range ops {
		err := op()
		require.ErrorIs(t, err, lease.ErrAborted, name)
		assert.True(t, strings.HasPrefix(err.Error(), "memory: "), "%s: %v", name, err)
	}
	locked, err := s.IsLocked(t.Context(), "k")
	require.NoError(t, err)
	assert.True(t, locked, "the aborted ReleaseWithStatus released nothing")
	n, err := s.PendingTriggers(t.Context(), "k")
	require.NoError(t, err)
	assert.Zero(t, n, "the aborted AddTrigger queued nothing")
}

// TestStore_Fleet_Synctest runs pause, triggers and the registry on the
// real clock inside a synctest bubble, where time passes only when every
// goroutine waits.
func TestStore_Fleet_Synctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s, err := memory.New()
		require.NoError(t, err)
		got := make(chan fleet.Message, 4)
		stop, err := s.Subscribe(ctx, func(m fleet.Message) { got <- m })
		require.NoError(t, err)
		defer stop()

		tr, err := s.AddTrigger(ctx, "k", "ops", time.Second)
		require.NoError(t, err)
		assert.Equal(t, fleet.Message{Kind: fleet.MessageTrigger, Key: "k", Trigger: tr.ID}, <-got)
		_, err = s.PublishReplica(ctx, fleet.Replica{ID: "r1"}, time.Second)
		require.NoError(t, err)

		time.Sleep(time.Second)
		n, err := s.PendingTriggers(ctx, "k")
		require.NoError(t, err)
		assert.Zero(t, n, "the trigger expired on the bubble's clock")
		all, err := s.Replicas(ctx)
		require.NoError(t, err)
		assert.Empty(t, all, "the entry lapsed")

		require.NoError(t, s.SetPause(ctx, "k", fleet.Pause{By: "ops"}))
		p, _, err := s.PauseOf(ctx, "k")
		require.NoError(t, err)
		assert.True(t, p.At.Equal(time.Now().Truncate(time.Millisecond)), "stamped with the bubble's time")
	})
}

// TestStore_Acquire_TriggersConcurrently checks that concurrent trigger
// acquires run every trigger exactly once.
func TestStore_Acquire_TriggersConcurrently(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	const n = 200
	want := map[string]bool{}
	for range n {
		tr, err := s.AddTrigger(ctx, "k", "ops", time.Minute)
		require.NoError(t, err)
		want[tr.ID] = true
	}
	var mu sync.Mutex
	ran := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				l, err := s.Acquire(ctx, "k", time.Second, lease.WithTrigger())
				if errors.Is(err, lease.ErrNoTrigger) {
					return
				}
				if errors.Is(err, lease.ErrLocked) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				ran[l.Trigger]++
				mu.Unlock()
				_, err = s.ReleaseWithStatus(ctx, l, fleet.Status{Outcome: "succeeded", Trigger: l.Trigger})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.Len(t, ran, n)
	for id, runs := range ran {
		assert.True(t, want[id], id)
		assert.Equal(t, 1, runs, id)
	}
}
