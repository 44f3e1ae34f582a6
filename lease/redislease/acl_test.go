package redislease

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/leasetest"
	"github.com/cronguard/cronguard/testutil"
)

// aclCommands are the commands a cronguard user needs on a standalone or
// Sentinel-managed Redis (docs/redis-acl.md): EVALSHA and EVAL run the
// scripts; the scripts call TIME, GET, MGET, SET, MSET, DEL and PEXPIRE
// (an acquire reads its keys with one MGET and writes the fence counter
// and round record with one MSET); PING is rueidis's keep-alive (its
// refusal is harmless but fills ACL LOG).
var aclCommands = []string{"+evalsha", "+eval", "+time", "+get", "+mget", "+set", "+mset", "+del", "+pexpire", "+ping"}

// aclWaitCommands are what waiters need to be woken by releases rather
// than poll: the release scripts SPUBLISH, waiters SSUBSCRIBE and
// SUNSUBSCRIBE, on channels under the prefix. Without them everything
// works, and waiters poll.
var aclWaitCommands = []string{"+spublish", "+ssubscribe", "+sunsubscribe"}

// aclSemaphoreCommands are what semaphores (lease.Semaphore, the
// scheduler's concurrency limits) add: their scripts keep holders in a
// sorted set whose expiry they lengthen.
var aclSemaphoreCommands = []string{"+zadd", "+zrem", "+zscore", "+zcard", "+zcount", "+zrange", "+zremrangebyscore", "+pttl"}

// aclFairCommands are what fair waiters (lease.WithFairness) add: their
// scripts keep a key's queue in a list and a hash of expiries.
var aclFairCommands = []string{"+exists", "+hset", "+hget", "+hdel", "+rpush", "+lpop", "+lindex", "+lrem", "+llen", "+pttl"}

// aclCompletionCommands are what completion records (lease.WithAttempts,
// lease.WithResume, and fleet's index of open occurrences) add: the
// "given_up" history entry, the run's status with its count of triggers,
// and the index, a sorted set read by due.lua.
var aclCompletionCommands = []string{"+lpush", "+ltrim", "+llen", "+zadd", "+zrem", "+zrangebyscore"}

// aclRules returns the ACL SETUSER arguments after the user name for a user
// with password secret, access to keys matching keyPattern, no channels,
// and exactly the given commands.
func aclRules(keyPattern string, commands []string) []string {
	return append([]string{"on", ">secret", "resetkeys", keyPattern, "resetchannels", "-@all"}, commands...)
}

// aclWaitRules are aclRules with the channels matching channelPattern and
// the wait commands as well: the documented user.
func aclWaitRules(keyPattern, channelPattern string, commands []string) []string {
	return append([]string{"on", ">secret", "resetkeys", keyPattern, "resetchannels", channelPattern, "-@all"},
		append(slices.Clone(commands), aclWaitCommands...)...)
}

// TestStore_ACL runs the Store as a Redis user that has only the
// permissions docs/redis-acl.md lists.
func TestStore_ACL(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	admin := srv.client

	t.Run("DocumentedLine", func(t *testing.T) {
		doc, err := readACLDoc()
		require.NoError(t, err)
		want := "ACL SETUSER cronguard " + strings.Join(aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands), " ")
		assert.Contains(t, doc, want, "docs/redis-acl.md states the line this test proves")
	})

	t.Run("ConformanceAsMinimalUser", func(t *testing.T) {
		client := aclUser(t, admin, srv.redis.Addr, "cronguard", aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands))
		leasetest.Run(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})

	t.Run("NotifiedAsMinimalUser", func(t *testing.T) {
		client := aclUser(t, admin, srv.redis.Addr, "cg-wait", aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands))
		st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(quietLogger()))
		require.NoError(t, err)
		testACLWaiter(t, st, true)
	})

	// Without the wait grants (or without the channels) every operation
	// still works; a release publishes nothing, Watch fails with ErrAuth,
	// and Lock polls.
	for name, rules := range map[string][]string{
		"WithoutPubSub":   aclRules("~cronguard:*", aclCommands),
		"WithoutChannels": aclWaitRules("~cronguard:*", "&other:*", aclCommands),
	} {
		t.Run(name, func(t *testing.T) {
			client := aclUser(t, admin, srv.redis.Addr, "cg-"+strings.ToLower(name), rules)
			logs := &logLines{}
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(slog.New(logs)))
			require.NoError(t, err)
			require.NoError(t, leaseLife(t.Context(), st), "releases work without the wait grants")
			_, err = st.Watch(t.Context(), "report")
			require.ErrorIs(t, err, lease.ErrAuth)
			testACLWaiter(t, st, false)
			testACLWaiter(t, st, false)
			assert.Equal(t, 1, logs.count(slog.LevelWarn, "release notifications refused by the server"),
				"the refusal is logged once at warn")
		})
	}

	t.Run("SemaphoresAsDocumentedUser", func(t *testing.T) {
		doc, err := readACLDoc()
		require.NoError(t, err)
		assert.Contains(t, doc, strings.Join(aclSemaphoreCommands, " "), "docs/redis-acl.md lists the semaphore grants")
		client := aclUser(t, admin, srv.redis.Addr, "cg-sem",
			append(aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands), aclSemaphoreCommands...))
		leasetest.RunSemaphore(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(quietLogger()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})

	t.Run("CompletionAsDocumentedUser", func(t *testing.T) {
		doc, err := readACLDoc()
		require.NoError(t, err)
		assert.Contains(t, doc, strings.Join(aclCompletionCommands, " "), "docs/redis-acl.md lists the completion records' grants")
		client := aclUser(t, admin, srv.redis.Addr, "cg-completion",
			append(aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands), aclCompletionCommands...))
		leasetest.RunCompletion(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(quietLogger()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
		ctx := t.Context()
		st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(quietLogger()))
		require.NoError(t, err)
		l, err := st.Acquire(ctx, "job", time.Second, lease.WithRound(1),
			lease.WithAttempts(lease.Attempts{Max: 2, Deadline: time.Now().Add(time.Hour)}))
		require.NoError(t, err)
		_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{Close: fleet.CloseOpen})
		require.NoError(t, err)
		due, err := st.DueOccurrences(ctx, 10)
		require.NoError(t, err)
		assert.Len(t, due, 1, "the index is written and read")
		ok, err := st.GiveUp(ctx, "job", 1)
		require.NoError(t, err)
		assert.False(t, ok)
		require.NoError(t, st.UnindexOccurrence(ctx, "job", 1, l.Attempts.Deadline))
	})

	t.Run("FairAsDocumentedUser", func(t *testing.T) {
		doc, err := readACLDoc()
		require.NoError(t, err)
		assert.Contains(t, doc, strings.Join(aclFairCommands, " "), "docs/redis-acl.md lists the fair queue's grants")
		client := aclUser(t, admin, srv.redis.Addr, "cg-fair",
			append(aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands), aclFairCommands...))
		leasetest.RunFair(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(quietLogger()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})

	t.Run("SemaphoresNeedTheirGrants", func(t *testing.T) {
		client := aclUser(t, admin, srv.redis.Addr, "cg-nosem", aclWaitRules("~cronguard:*", "&cronguard:*", aclCommands))
		st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithLogger(quietLogger()))
		require.NoError(t, err)
		_, err = st.AcquireSemaphore(t.Context(), "exports", 2, time.Second)
		require.ErrorIs(t, err, lease.ErrAuth)
	})

	t.Run("WithReplicaAckNeedsWait", func(t *testing.T) {
		client := aclUser(t, admin, srv.redis.Addr, "cg-nowait", aclRules("~cronguard:*", aclCommands))
		st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()), WithReplicaAck(1, 100*time.Millisecond))
		require.NoError(t, err)
		_, err = st.Acquire(t.Context(), "report", time.Second)
		require.ErrorIs(t, err, lease.ErrAuth, "WAIT refused")
		assert.Contains(t, err.Error(), "'wait' command")
		locked, err := st.IsLocked(t.Context(), "report")
		require.NoError(t, err)
		assert.False(t, locked, "the unacknowledged lease was released")
	})

	// Each permission is needed: without it some operation of a lease's
	// life fails with ErrAuth, and a refused EVAL/EVALSHA names the command.
	for _, missing := range aclCommands {
		if missing == "+ping" {
			continue // keep-alive only; rueidis ignores a refused PING
		}
		t.Run("Missing"+strings.ToUpper(missing[1:]), func(t *testing.T) {
			cmds := slices.DeleteFunc(slices.Clone(aclCommands), func(c string) bool { return c == missing })
			name := "cg-no-" + missing[1:]
			client := aclUser(t, admin, srv.redis.Addr, name, aclRules("~cronguard:*", cmds))
			// The script cache is shared by all users: flush it, as a
			// restart would, so that EVAL (after NOSCRIPT) is needed too.
			require.NoError(t, admin.Do(t.Context(), admin.B().ScriptFlush().Build()).Error())
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()))
			require.NoError(t, err)
			err = leaseLife(t.Context(), st)
			require.ErrorIs(t, err, lease.ErrAuth, "without %s", missing)
			if missing == "+evalsha" || missing == "+eval" {
				assert.Contains(t, err.Error(), "NOPERM")
				assert.Contains(t, err.Error(), fmt.Sprintf("'%s' command", missing[1:]))
			}
		})
	}

	t.Run("MissingKeyAccess", func(t *testing.T) {
		client := aclUser(t, admin, srv.redis.Addr, "cg-other-keys", aclRules("~other:*", aclCommands))
		st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()))
		require.NoError(t, err)
		_, err = st.Acquire(t.Context(), "report", time.Second)
		require.ErrorIs(t, err, lease.ErrAuth)
		assert.Contains(t, err.Error(), "NOPERM")
		// Redis 7: "... access one of the keys ..."; Valkey 8: "... access a key".
		assert.Contains(t, err.Error(), "key")
	})

	t.Run("WrongPassword", func(t *testing.T) {
		aclUser(t, admin, srv.redis.Addr, "cg-pass", aclRules("~cronguard:*", aclCommands))
		_, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.redis.Addr}, DisableCache: true, Username: "cg-pass", Password: "wrong",
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "WRONGPASS")
	})
}

// testACLWaiter has a Lock wait for a held key that is then released; the
// waiter gets it either way, woken by the release when notified is true,
// else by polling (the Lock's clock is real: its backoff starts at 100ms).
// A frozen Lock clock would make a polling waiter wait forever; so a
// notified waiter runs on one, which proves its wake was the release's.
func testACLWaiter(t *testing.T, st *Store, notified bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	key := "waited/" + uniquePrefix()
	holder, err := st.Acquire(ctx, key, time.Minute)
	require.NoError(t, err)
	var clock clockwork.Clock = clockwork.NewRealClock()
	if notified {
		clock = clockwork.NewFakeClock()
	}
	got := make(chan error, 1)
	go func() {
		l, err := lease.Lock(ctx, st, key, time.Second, lease.WithLockClock(clock), lease.WithMaxWait(time.Minute))
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	if fake, ok := clock.(*clockwork.FakeClock); ok {
		require.NoError(t, fake.BlockUntilContext(ctx, 1), "the waiter watches")
	}
	require.NoError(t, holder.Release(ctx))
	require.NoError(t, <-got)
}

// logLines is a slog handler that keeps every record's level and message.
type logLines struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (h *logLines) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	return nil
}
func (h *logLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logLines) WithGroup(string) slog.Handler      { return h }

// count returns how many records of level have a message starting with msg.
func (h *logLines) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level == level && strings.HasPrefix(r.Message, msg) {
			n++
		}
	}
	return n
}

// leaseLife runs every kind of script a lease's life uses (the ID and the
// keyed forms of extend and release) and returns the first error.
func leaseLife(ctx context.Context, st *Store) error {
	l, err := st.Acquire(ctx, "report", 2*time.Second, lease.WithRound(1))
	if err != nil {
		return err
	}
	steps := []func() error{
		func() error { _, err := st.IsLocked(ctx, "report"); return err },
		func() error { _, err := st.Lookup(ctx, "report"); return err },
		func() error { _, err := st.LookupID(ctx, l.ID); return err },
		func() error { _, err := st.Extend(ctx, l.ID, 3*time.Second); return err },
		func() error { _, err := l.Extend(ctx, 3*time.Second); return err },
		func() error { return l.Release(ctx) },
		func() error { l, err = st.Acquire(ctx, "report", 2*time.Second, lease.WithRound(2)); return err },
		func() error { return st.Release(ctx, l.ID) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// aclUser creates (or replaces) the user name with rules through admin and
// returns a client logged in as that user, with client-side caching off
// (tracking would need CLIENT TRACKING).
func aclUser(t *testing.T, admin rueidis.Client, addr, name string, rules []string) rueidis.Client {
	t.Helper()
	testutil.SetACLUser(t, admin, name, rules...)
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{addr},
		DisableCache: true,
		Username:     name,
		Password:     "secret",
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// readACLDoc returns docs/redis-acl.md.
func readACLDoc() (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "redis-acl.md"))
	return string(b), err
}
