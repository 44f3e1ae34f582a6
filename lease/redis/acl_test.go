package redis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/leasetest"
)

// aclCommands are the commands a cronguard user needs on a standalone or
// Sentinel-managed Redis (docs/redis-acl.md): EVALSHA and EVAL run the
// scripts; the scripts call TIME, GET, SET, DEL, PEXPIRE and INCR;
// PING is rueidis's keep-alive (its refusal is harmless but fills ACL LOG).
var aclCommands = []string{"+evalsha", "+eval", "+time", "+get", "+set", "+del", "+pexpire", "+incr", "+incrby", "+ping"}

// aclRules returns the ACL SETUSER arguments after the user name for a user
// with password secret, access to keys matching keyPattern, no channels,
// and exactly the given commands.
func aclRules(keyPattern string, commands []string) []string {
	return append([]string{"on", ">secret", "resetkeys", keyPattern, "resetchannels", "-@all"}, commands...)
}

// TestStore_ACL runs the Store as a Redis user that has only the
// permissions docs/redis-acl.md lists.
func TestStore_ACL(t *testing.T) {
	srv := startServer(t)
	admin := srv.client

	t.Run("DocumentedLine", func(t *testing.T) {
		doc, err := readACLDoc()
		require.NoError(t, err)
		want := "ACL SETUSER cronguard " + strings.Join(aclRules("~cronguard:*", aclCommands), " ")
		assert.Contains(t, doc, want, "docs/redis-acl.md states the line this test proves")
	})

	t.Run("ConformanceAsMinimalUser", func(t *testing.T) {
		client := aclUser(t, admin, srv.redis.Addr, "cronguard", aclRules("~cronguard:*", aclCommands))
		leasetest.Run(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix("cronguard:"+uniquePrefix()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
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
		assert.Contains(t, err.Error(), "keys")
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
	ctx := t.Context()
	require.NoError(t, admin.Do(ctx, admin.B().AclDeluser().Username(name).Build()).Error())
	require.NoError(t, admin.Do(ctx, admin.B().AclSetuser().Username(name).Rule(rules...).Build()).Error())
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
