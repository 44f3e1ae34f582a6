package main

import (
	"context"
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
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// The grants of the command's two users (docs/redis-acl.md, "The cronguard
// command"): the read-only user's, plain reads and no script, and what the
// operator's adds, scripts first. The operator's opsWakeCommands let
// release --force wake the key's waiters; without them the release works
// and waiters poll, so no command fails.
var (
	readCommands      = []string{"+time", "+get", "+lrange", "+llen", "+zrange", "+mget"}
	opsScriptCommands = []string{"+evalsha", "+eval"}
	opsCommands       = []string{"+set", "+del", "+rpush", "+pttl", "+pexpire", "+publish", "+subscribe"}
	opsWakeCommands   = []string{"+spublish"}
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
	return slices.Concat(opsScriptCommands, readCommands, opsCommands, []string{"+ping"}, opsWakeCommands)
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
		assertRunsNoScript(t, userClient(t, f.redis.Addr, "cg-read"))

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
	missing := slices.Concat(readCommands, opsScriptCommands, opsCommands, []string{"&channel"})
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

// TestCLI_ACL_ReadOnlyUserRunsNoScript holds the read-only line to what
// "read-only" promises. A script runs until it returns or SCRIPT KILL
// ends it, and meanwhile Redis answers every other client BUSY: a user
// who may run any script can stall every replica's heartbeat. So the
// read-only user must be refused every way of running one (EVAL, EVALSHA,
// their _RO forms, FCALL, FUNCTION, SCRIPT), and another client's GET must
// go on working while it tries.
func TestCLI_ACL_ReadOnlyUserRunsNoScript(t *testing.T) {
	// lua-time-limit: a running script makes Redis answer BUSY after 50ms
	// (not the default 5s), so a script the line lets through shows at once.
	srv := testutil.StartRedis(t, "--lua-time-limit", "50")
	admin := srv.Client(t)
	ctx := t.Context()
	t.Cleanup(func() { // ends a script the line let through, whatever failed
		_ = admin.Do(context.Background(), admin.B().ScriptKill().Build()).Error()
	})
	testutil.SetACLUser(t, admin, "cg-read", readRules("cronguard")...)
	reader := userClient(t, srv.Addr, "cg-read")
	require.NoError(t, admin.Do(ctx, admin.B().Set().Key("cronguard:heartbeat").Value("1").Build()).Error())

	looped := make(chan error, 1)
	go func() {
		looped <- reader.Do(ctx, reader.B().Eval().Script("while true do end").Numkeys(0).Build()).Error()
	}()
	select {
	case err := <-looped:
		assertNoPerm(t, err, "eval")
	case <-time.After(2 * time.Second): // a bound for the failure only: the refusal comes at once
		getCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		getErr := admin.Do(getCtx, admin.B().Get().Key("cronguard:heartbeat").Build()).Error()
		require.NoError(t, admin.Do(ctx, admin.B().ScriptKill().Build()).Error())
		<-looped
		t.Fatalf("the read-only user runs a script that never ends; meanwhile another client's GET got: %v", getErr)
	}
	got, err := admin.Do(ctx, admin.B().Get().Key("cronguard:heartbeat").Build()).ToString()
	require.NoError(t, err, "another client's GET is answered")
	assert.Equal(t, "1", got)

	assertRunsNoScript(t, reader)
}

// assertRunsNoScript asserts that Redis refuses reader every way of running a
// script (harmless ones: they would return at once if let through).
func assertRunsNoScript(t *testing.T, reader rueidis.Client) {
	t.Helper()
	const sha = "0000000000000000000000000000000000000000"
	for name, cmd := range map[string]rueidis.Completed{
		"eval":          reader.B().Eval().Script("return 1").Numkeys(0).Build(),
		"eval_ro":       reader.B().EvalRo().Script("return 1").Numkeys(0).Build(),
		"evalsha":       reader.B().Evalsha().Sha1(sha).Numkeys(0).Build(),
		"evalsha_ro":    reader.B().EvalshaRo().Sha1(sha).Numkeys(0).Build(),
		"fcall":         reader.B().Fcall().Function("f").Numkeys(0).Build(),
		"fcall_ro":      reader.B().FcallRo().Function("f").Numkeys(0).Build(),
		"function|load": reader.B().FunctionLoad().FunctionCode("#!lua name=cg\nredis.register_function('f', function() return 1 end)").Build(),
		"script|load":   reader.B().ScriptLoad().Script("return 1").Build(),
		"script|kill":   reader.B().ScriptKill().Build(),
	} {
		assertNoPerm(t, reader.Do(t.Context(), cmd).Error(), name)
	}
}

// userClient returns a client of the server at addr as user (password
// "secret"), closed when t ends.
func userClient(t *testing.T, addr, user string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr}, Username: user, Password: "secret", DisableCache: true,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// assertNoPerm asserts that err is Redis refusing the user command.
func assertNoPerm(t *testing.T, err error, command string) {
	t.Helper()
	if assert.Error(t, err, "%s must be refused", command) {
		assert.Contains(t, err.Error(), "NOPERM", "%s must be refused by the ACL", command)
	}
}
