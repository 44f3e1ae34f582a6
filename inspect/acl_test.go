package inspect_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// schedulerLeaseCommands are the lease user's grants (docs/redis-acl.md,
// "Leases alone"; proven by lease/redislease's TestStore_ACL), and
// schedulerFleetCommands what a scheduler adds for the pause check and the
// control plane ("Schedulers"); schedulerWaitCommands are the lease user's
// sharded pub/sub grants, with which releases wake waiters.
var (
	schedulerLeaseCommands = []string{"+evalsha", "+eval", "+time", "+get", "+mget", "+set", "+mset", "+del", "+pexpire"}
	schedulerFleetCommands = []string{"+incr", "+lpop", "+llen", "+lrange", "+lpush", "+ltrim", "+zadd", "+zrem", "+zremrangebyscore", "+zrangebyscore", "+zrange", "+publish", "+subscribe"}
	schedulerWaitCommands  = []string{"+spublish", "+ssubscribe", "+sunsubscribe"}
)

// schedulerACL returns the ACL SETUSER rules (after the user name) of a
// scheduler user under prefix, with the channel or without.
func schedulerACL(prefix string, channel bool, commands []string) []string {
	rules := []string{"on", ">secret", "resetkeys", "~" + prefix + ":*", "resetchannels"}
	if channel {
		rules = append(rules, "&"+prefix+":*")
	}
	rules = append(rules, "-@all")
	return append(rules, commands...)
}

// harmlessDenials are what the scheduler works without (see
// docs/redis-acl.md): rueidis's cluster probe at connect and clean-up of a
// connection that subscribed, and the store's check of the server's
// persistence and eviction settings.
var harmlessDenials = []string{"cluster|slots", "unsubscribe", "punsubscribe", "sunsubscribe", "discard", "config|get"}

// TestScheduler_ACL runs a scheduler replica as a Redis user with exactly
// the documented grants, through everything a scheduler does with Redis;
// and, without each grant a scheduler adds to the lease user's, shows that
// Redis refuses it something.
func TestScheduler_ACL(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t)
	full := slices.Concat(schedulerLeaseCommands, schedulerFleetCommands, []string{"+ping"}, schedulerWaitCommands)

	t.Run("DocumentedLine", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join("..", "docs", "redis-acl.md"))
		require.NoError(t, err)
		want := "ACL SETUSER cronguard " + strings.Join(schedulerACL("cronguard", true, full), " ")
		assert.Contains(t, string(doc), want, "docs/redis-acl.md states the line this test proves")
	})

	t.Run("Documented", func(t *testing.T) {
		user := "cg-sched"
		testutil.SetACLUser(t, f.admin, user, schedulerACL(f.prefix, true, full)...)
		aclScenario(t, f, user, nil)
		assert.Empty(t, testutil.ACLDenials(t, f.admin, user, harmlessDenials...), "Redis refused the scheduler nothing")
	})

	missing := slices.Clone(schedulerFleetCommands)
	missing = append(missing, "&channel")
	for _, gone := range missing {
		t.Run("Missing"+strings.ToUpper(strings.TrimLeft(gone, "+&")), func(t *testing.T) {
			t.Parallel()
			// A fleet of its own: alone in it, the replica reads the index
			// of open occurrences every second (ZRANGEBYSCORE), where in
			// a fleet of the 15 replicas of these subtests it would read it
			// every 7s, unless it were one of the two readers.
			f := newLiveFleet(t)
			user := "cg-sched-no-" + strings.TrimLeft(gone, "+&")
			channel := gone != "&channel"
			cmds := slices.DeleteFunc(slices.Clone(full), func(c string) bool { return c == gone })
			testutil.SetACLUser(t, f.admin, user, schedulerACL(f.prefix, channel, cmds)...)
			object := strings.TrimPrefix(gone, "+")
			if !channel {
				object = f.prefix + ":control"
			}
			refused := func() bool { return slices.Contains(testutil.ACLDenials(t, f.admin, user), object) }
			aclScenario(t, f, user, refused)
			waitUntil(t, "Redis refuses "+object+" to "+user, refused)
		})
	}
}

// aclScenario runs a replica as user through a scheduled run, a paused
// occurrence, a trigger, a trigger found after a restored subscription,
// and a shutdown. With refused nil (strict), every step must work and the
// scheduler must log no warning. Otherwise the user lacks a grant, and
// refused tells whether Redis has refused what the grant allows: each step
// is given a bounded time, or until refused holds, and the scenario goes
// on until refused holds or every step was tried (the test then waits for
// the refusal, as without the grant something must be refused).
func aclScenario(t *testing.T, f *liveFleet, user string, refused func() bool) {
	t.Helper()
	ctx := t.Context()
	strict := refused == nil
	// step waits for what, and reports whether the scenario goes on: not
	// once Redis has refused what the missing grant allows.
	step := func(what string, done func() bool) bool {
		t.Helper()
		if strict {
			waitUntil(t, what, done)
			return true
		}
		deadline := time.Now().Add(3 * time.Second)
		for !done() && time.Now().Before(deadline) {
			if refused() {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return !refused()
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{f.redis.Addr}, DisableCache: true,
		Username: user, Password: "secret"})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	store, err := redislease.New(client, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	warnings := &syncBuffer{}
	job := "acl-" + user
	// The job's history already holds its limit and the slack (100 + 25
	// runs): the first run's release trims it, so LTRIM is called, as it
	// is once in every 26 releases of a job that has run long enough.
	run := `{"occurrence":1700000000000,"owner":"old","replica":"old","attempt":1,"fence":1,"startedAt":1700000000000,"durationMs":1,"outcome":"succeeded"}`
	history := f.prefix + ":history:{job:" + job + "}"
	require.NoError(t, f.admin.Do(ctx, f.admin.B().Rpush().Key(history).Element(slices.Repeat([]string{run}, store.HistoryLimit()+25)...).Build()).Error())
	s, err := scheduler.New(store, scheduler.WithInstanceID(user), scheduler.WithRegistryRefresh(liveRefresh),
		scheduler.WithObserver(f.events.add),
		scheduler.WithLogger(slog.New(slog.NewTextHandler(warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	require.NoError(t, s.Register(job, scheduler.Every(time.Second), func(ctx context.Context) error { return nil }))
	require.NoError(t, s.Start())
	stopped := false
	shutdown := func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(sctx); strict {
			require.NoError(t, err)
		}
	}
	t.Cleanup(shutdown)
	has := func(keep func(scheduler.Event) bool) func() bool {
		return func() bool { return len(f.events.match(keep)) > 0 }
	}
	key := "job:" + job

	if !step("registered", func() bool {
		rs, err := f.in.Replicas(ctx)
		return err == nil && slices.ContainsFunc(rs, func(r fleet.Replica) bool { return r.ID == user })
	}) {
		return
	}
	if !step("subscribed", func() bool {
		n, err := f.admin.Do(ctx, f.admin.B().PubsubNumsub().Channel(f.prefix+":control").Build()).AsIntMap()
		return err == nil && n[f.prefix+":control"] > 0
	}) {
		return
	}
	if !step("a scheduled run released", has(func(e scheduler.Event) bool {
		return e.Job == job && e.Kind == scheduler.EventReleased && e.Trigger == ""
	})) {
		return
	}
	require.NoError(t, f.store.SetPause(ctx, key, fleet.Pause{By: "test", Note: "acl"}))
	if !step("an occurrence skipped as paused", has(func(e scheduler.Event) bool {
		return e.Job == job && e.Kind == scheduler.EventSkipped && e.Reason == scheduler.SkipPaused
	})) {
		return
	}
	_, err = f.store.ClearPause(ctx, key)
	require.NoError(t, err)
	if strict {
		res, err := f.in.Trigger(ctx, job, "test", inspect.WithWait(waitBound))
		require.NoError(t, err)
		require.True(t, res.Succeeded(), "the trigger ran, and its end was announced")
	} else {
		_, _ = f.store.AddTrigger(ctx, key, "test", time.Minute)
		if !step("a triggered run released", has(func(e scheduler.Event) bool {
			return e.Job == job && e.Kind == scheduler.EventReleased && e.Trigger != ""
		})) {
			return
		}
	}

	// A trigger queued without an announcement is found after the
	// subscription is restored.
	now := f.storeNow(t)
	id := "resync-" + user
	entry := fmt.Sprintf("%d|%d|%s", now.Add(time.Minute).UnixMilli(), now.UnixMilli(), id)
	queue := f.prefix + ":trigger:{" + key + "}"
	require.NoError(t, f.admin.Do(ctx, f.admin.B().Rpush().Key(queue).Element(entry).Build()).Error())
	_ = f.admin.Do(ctx, f.admin.B().ClientKill().TypePubsub().User(user).Build()).Error() // none when it never subscribed
	if !step("the queued trigger run after the resync", has(func(e scheduler.Event) bool {
		return e.Job == job && e.Kind == scheduler.EventStarted && e.Trigger == id
	})) {
		return
	}

	// What the replica does while it runs and is not a step of its own
	// (it reads the index of open occurrences every second when alone in
	// its fleet) has had a few seconds to be refused before it shuts down.
	if !strict && !step("refused while it runs", refused) {
		return
	}
	shutdown()
	step("dropped from the registry", func() bool {
		rs, err := f.in.Replicas(ctx)
		return err == nil && !slices.ContainsFunc(rs, func(r fleet.Replica) bool { return r.ID == user })
	})
	if strict {
		assert.Empty(t, warnings.String(), "the scheduler logged no warning")
		assert.Empty(t, f.events.match(func(e scheduler.Event) bool {
			return e.Instance == user && (e.Kind == scheduler.EventAcquireFailed || e.Kind == scheduler.EventAcquireRetrying)
		}))
	}
}
