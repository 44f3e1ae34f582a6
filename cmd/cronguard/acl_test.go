package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// The grants of the command's two users (docs/redis-acl.md, "The cronguard
// command"): the read-only user's, and what the operator's adds. The
// operator's opsWakeCommands let release --force wake the key's waiters;
// without them the release works and waiters poll, so no command fails.
var (
	readCommands    = []string{"+evalsha", "+eval", "+time", "+get", "+lrange", "+llen", "+zrange", "+mget"}
	opsCommands     = []string{"+set", "+del", "+rpush", "+pttl", "+pexpire", "+publish", "+subscribe"}
	opsWakeCommands = []string{"+spublish"}
)

// aclRules returns the ACL SETUSER rules (after the user name) for a user
// under prefix, with its channels (<prefix>:*: the control channel, and the
// keys' release channels) or without.
func aclRules(prefix string, channel bool, commands []string) []string {
	rules := []string{"on", ">secret", "resetkeys", "~" + prefix + ":*", "resetchannels"}
	if channel {
		rules = append(rules, "&"+prefix+":*")
	}
	rules = append(rules, "-@all")
	return append(rules, commands...)
}

func readRules(prefix string) []string {
	return aclRules(prefix, false, append(slices.Clone(readCommands), "+ping"))
}

func opsGrants() []string {
	return slices.Concat(readCommands, opsCommands, []string{"+ping"}, opsWakeCommands)
}

// harmlessDenials are what rueidis sends and works without (see
// docs/redis-acl.md).
var harmlessDenials = []string{"cluster|slots", "unsubscribe", "punsubscribe", "sunsubscribe", "discard"}

// TestCLI_ACL runs every command as the documented read-only and operator
// users: the reads work for both, the changes only for the operator, Redis
// refuses neither anything it needs, and without any one grant some
// command fails with exit 1.
func TestCLI_ACL(t *testing.T) {
	f := newTestFleet(t)
	rebuild := newGate(t)
	for _, id := range []string{"replica-1", "replica-2"} {
		f.start(t, id, exampleJobs(rebuild))
	}
	f.waitReplicas(t, "replica-1", "replica-2")
	rebuild.waitStarted(t)
	admin, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	as := func(user string) func(t *testing.T, args ...string) result {
		return func(t *testing.T, args ...string) result {
			t.Helper()
			return cli(t, nil, append([]string{"--redis", "redis://" + user + ":secret@" + f.redis.Addr, "--prefix", f.prefix}, args...)...)
		}
	}
	reads := [][]string{{"replicas"}, {"replicas", "--json"}, {"jobs"}, {"jobs", "--json"}, {"job", "rebuild"}, {"job", "rebuild", "--json"},
		{"history", "rebuild"}, {"history", "rebuild", "--json"}}
	// changes runs the commands that change the fleet and returns the first
	// failure's result, or a zero result. release needs a live lease: one
	// is taken first, as a stuck holder's.
	changes := func(t *testing.T, cg func(t *testing.T, args ...string) result) result {
		t.Helper()
		_, err := admin.Acquire(t.Context(), "job:flaky", time.Minute, lease.WithOwner("stuck/flaky"))
		require.NoError(t, err)
		for _, args := range [][]string{
			{"pause", "report", "--note", "acl"}, {"resume", "report"},
			{"trigger", "tick", "--wait", "--timeout", "20s"}, {"release", "flaky", "--force"},
		} {
			if r := cg(t, args...); r.code != exitOK {
				_ = f.admin.Do(t.Context(), f.admin.B().Del().Key(f.prefix+":pause:{job:report}").Build())
				_, _ = admin.ForceRelease(t.Context(), "job:flaky")
				return r
			}
		}
		return result{}
	}

	t.Run("DocumentedLines", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "redis-acl.md"))
		require.NoError(t, err)
		doc := string(b)
		assert.Contains(t, doc, "ACL SETUSER cronguard-read "+strings.Join(readRules("cronguard"), " "))
		assert.Contains(t, doc, "ACL SETUSER cronguard-ops "+strings.Join(aclRules("cronguard", true, opsGrants()), " "))
	})

	t.Run("ReadOnlyUser", func(t *testing.T) {
		testutil.SetACLUser(t, f.admin, "cg-read", readRules(f.prefix)...)
		cg := as("cg-read")
		for _, args := range reads {
			r := cg(t, args...)
			assert.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		}
		assert.Empty(t, testutil.ACLDenials(t, f.admin, "cg-read", harmlessDenials...), "Redis refused the reads nothing")

		for _, args := range [][]string{{"pause", "report", "--note", "x"}, {"resume", "report"}, {"trigger", "report"}, {"release", "rebuild", "--force"}} {
			r := cg(t, args...)
			assert.Equal(t, exitFailed, r.code, "%v", args)
			assert.Contains(t, r.stderr, "not authorized", "%v", args)
		}
		r := f.cli(t, "job", "report", "--json")
		var j jobJSON
		decode(t, r.stdout, &j)
		assert.Nil(t, j.Paused, "the read-only user changed nothing")
		assert.Zero(t, j.PendingTriggers)
		r = f.cli(t, "job", "rebuild", "--json")
		j = jobJSON{}
		decode(t, r.stdout, &j)
		assert.NotNil(t, j.Holder, "rebuild's lease is still held")
	})

	t.Run("OperatorUser", func(t *testing.T) {
		testutil.SetACLUser(t, f.admin, "cg-ops", aclRules(f.prefix, true, opsGrants())...)
		cg := as("cg-ops")
		for _, args := range reads {
			r := cg(t, args...)
			assert.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		}
		r := changes(t, cg)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Empty(t, testutil.ACLDenials(t, f.admin, "cg-ops", harmlessDenials...), "Redis refused the operator nothing")
	})

	// Without any one grant, some command fails, and Redis says it refused
	// exactly that. Sequential: the missing EVAL needs the script cache
	// flushed just before.
	missing := append(append(slices.Clone(readCommands), opsCommands...), "&channel")
	for _, gone := range missing {
		t.Run("Missing"+strings.ToUpper(strings.TrimLeft(gone, "+&")), func(t *testing.T) {
			user := "cg-no-" + strings.TrimLeft(gone, "+&")
			channel := gone != "&channel"
			grants := slices.DeleteFunc(opsGrants(), func(c string) bool { return c == gone })
			testutil.SetACLUser(t, f.admin, user, aclRules(f.prefix, channel, grants)...)
			require.NoError(t, f.admin.Do(t.Context(), f.admin.B().ScriptFlush().Build()).Error())
			cg := as(user)
			failed := false
			for _, args := range reads {
				if r := cg(t, args...); r.code != exitOK {
					assert.Equal(t, exitFailed, r.code)
					assert.Contains(t, r.stderr, "not authorized")
					failed = true
					break
				}
			}
			if !failed {
				r := changes(t, cg)
				assert.Equal(t, exitFailed, r.code, "some command fails without %s", gone)
				assert.Contains(t, r.stderr, "not authorized")
			}
			object := strings.TrimPrefix(gone, "+")
			if !channel {
				object = f.prefix + ":control"
			}
			assert.Contains(t, testutil.ACLDenials(t, f.admin, user), object, "Redis refused %s", object)
		})
	}
}
