package main

import (
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every command, and cronguard itself, answers --help on stdout with exit
// 0, without touching Redis.
func TestRun_Help(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Usage:\n  cronguard [global flags] COMMAND [flags] [NAME]"},
		{[]string{"-h"}, "Exit codes:"},
		{[]string{"help"}, "Commands:"},
		{[]string{"help", "json"}, `"holder": null | {"owner", "replica", "fence", "leaseHash"`},
		{[]string{"help", "trigger"}, "Usage: cronguard trigger NAME"},
		{[]string{"replicas", "--help"}, "Usage: cronguard replicas"},
		{[]string{"jobs", "--help"}, "Usage: cronguard jobs"},
		{[]string{"job", "--help"}, "Usage: cronguard job NAME"},
		{[]string{"job", "report", "-h"}, "Usage: cronguard job NAME"},
		{[]string{"history", "--help"}, "Usage: cronguard history NAME [--limit N] [--offset N]"},
		{[]string{"pause", "--help"}, "Usage: cronguard pause NAME --note TEXT"},
		{[]string{"resume", "--help"}, "Usage: cronguard resume NAME"},
		{[]string{"trigger", "--help"}, "--timeout D"},
		{[]string{"release", "--help"}, "It is unsafe unless the job's writes are fenced"},
		{[]string{"--redis", "redis://nowhere.invalid:1", "jobs", "--help"}, "Usage: cronguard jobs"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := cli(t, nil, c.args...)
			assert.Equal(t, exitOK, r.code)
			assert.Contains(t, r.stdout, c.want)
			assert.Empty(t, r.stderr)
		})
	}
}

// Usage errors exit 2 with one line on stderr that says what is wrong,
// before any connection to Redis (the URL here leads nowhere).
func TestRun_UsageErrors(t *testing.T) {
	const nowhere = "redis://127.0.0.1:1"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"NoCommand", nil, "cronguard: missing command: one of replicas, jobs, job, history, pause, resume, trigger, release, serve (see cronguard --help)"},
		{"UnknownCommand", []string{"status"}, `cronguard: unknown command "status": one of replicas, jobs, job, history, pause, resume, trigger, release, serve`},
		{"UnknownGlobalFlag", []string{"--verbose", "jobs"}, "cronguard: flag provided but not defined: -verbose (see cronguard --help)"},
		{"UnknownFlag", []string{"jobs", "--all"}, "cronguard: jobs: flag provided but not defined: -all (see cronguard jobs --help)"},
		{"MissingName", []string{"job"}, "cronguard: job: missing the job's NAME (see cronguard job --help)"},
		{"ExtraName", []string{"job", "a", "b"}, "cronguard: job: one job NAME expected, got 2 arguments (a b)"},
		{"ArgumentToJobs", []string{"jobs", "report"}, `cronguard: jobs: takes no argument, got "report"`},
		{"PauseWithoutNote", []string{"pause", "report"}, "cronguard: pause: --note is required"},
		{"PauseBlankNote", []string{"pause", "report", "--note", "  "}, "cronguard: pause: --note is required"},
		{"ReleaseWithoutForce", []string{"release", "report"}, "cronguard: release: refused without --force: the holder is not stopped and may still be running"},
		{"TimeoutWithoutWait", []string{"trigger", "report", "--timeout", "5s"}, "cronguard: trigger: --timeout is how long --wait waits: give --wait too"},
		{"NegativeTimeout", []string{"trigger", "report", "--wait", "--timeout", "-1s"}, "--timeout must be positive, got -1s"},
		{"BadTTL", []string{"trigger", "report", "--ttl", "25h"}, "--ttl must be a whole number of milliseconds from 1ms to 24h0m0s, got 25h0m0s"},
		{"BadDuration", []string{"trigger", "report", "--wait", "--timeout", "soon"}, `invalid value "soon" for flag -timeout`},
		{"BadBool", []string{"--json=maybe", "jobs"}, `invalid boolean value "maybe" for -json`},
		{"HistoryZeroLimit", []string{"history", "report", "--limit", "0"}, "cronguard: history: --limit must be at least 1, got 0"},
		{"HistoryNegativeOffset", []string{"history", "report", "--offset", "-1"}, "cronguard: history: --offset must not be negative, got -1"},
		{"HelpUnknownTopic", []string{"help", "status"}, `cronguard: help: unknown topic "status"`},
		{"BadPrefix", []string{"--prefix", "a{b}", "jobs"}, `cronguard: --prefix "a{b}": key prefix must not contain braces`},
		{"ReservedPrefix", []string{"--prefix", "app:fence", "jobs"}, `reserved segment "fence"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, nil, append([]string{"--redis", nowhere}, c.args...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, c.want)
			assert.Empty(t, r.stdout)
		})
	}
}

// A bad --redis URL is a usage error whose message never shows the
// password.
func TestRun_BadRedisURL(t *testing.T) {
	cases := []struct {
		name, url, want string
	}{
		{"Unparsable", "redis://admin:s3cr3t-pw@local host:6379", "cronguard: --redis: not a valid URL (want redis://[user:password@]host:port[/db], or rediss://... for TLS)"},
		{"ControlCharacter", "redis://admin:s3cr3t-pw@host\x7f:6379", "--redis: not a valid URL"},
		{"Scheme", "http://admin:s3cr3t-pw@localhost:6379", `cronguard: --redis http://admin:xxxxx@localhost:6379: scheme must be redis or rediss, got "http"`},
		{"NoScheme", "localhost:6379", `scheme must be redis or rediss, got "localhost"`},
		{"NoHost", "redis://admin:s3cr3t-pw@/0", "cronguard: --redis redis://admin:xxxxx@/0: no host"},
		{"BadDB", "redis://admin:s3cr3t-pw@localhost:6379/zero", `cronguard: --redis redis://admin:xxxxx@localhost:6379/zero: invalid database number: "zero"`},
		{"BadPath", "redis://admin:s3cr3t-pw@localhost:6379/0/1", "invalid URL path: /0/1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, nil, "--redis", c.url, "jobs")
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, c.want)
			assert.NotContains(t, r.stderr, "s3cr3t-pw", "the password is never printed")
		})
	}
}

// Without Redis every command fails with exit 1 and one line naming the
// server, without its password.
func TestRun_NoRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	url := "redis://admin:s3cr3t-pw@" + addr
	for _, args := range [][]string{{"replicas"}, {"jobs", "--json"}, {"job", "report"}, {"pause", "report", "--note", "x"},
		{"resume", "report"}, {"trigger", "report", "--wait"}, {"release", "report", "--force"}} {
		t.Run(args[0], func(t *testing.T) {
			r := cli(t, nil, append([]string{"--redis", url}, args...)...)
			assert.Equal(t, exitFailed, r.code)
			assert.Contains(t, r.stderr, "cronguard: cannot connect to Redis at redis://admin:xxxxx@"+addr+": ")
			assert.Contains(t, r.stderr, "connection refused")
			assert.NotContains(t, r.stderr, "s3cr3t-pw")
			assert.Empty(t, r.stdout)
		})
	}
}

// The Redis URL comes from --redis, else $CRONGUARD_REDIS_URL, else
// redis://localhost:6379.
func TestRedisURL_Precedence(t *testing.T) {
	vars := map[string]string{envRedisURL: "redis://from-env:1"}
	e := env{getenv: func(k string) string { return vars[k] }}
	assert.Equal(t, "redis://flag:1", redisURL(globals{redisURL: "redis://flag:1"}, e))
	assert.Equal(t, "redis://from-env:1", redisURL(globals{}, e))
	assert.Equal(t, defaultRedisURL, redisURL(globals{}, env{getenv: func(string) string { return "" }}))

	// The environment's URL is the one used: its error names it.
	r := cli(t, map[string]string{envRedisURL: "redis://admin:pw@127.0.0.1:1/x"}, "jobs")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "redis://admin:xxxxx@127.0.0.1:1/x: invalid database number")
}

func TestClientOptions_TLSAndDatabase(t *testing.T) {
	opt, display, err := clientOptions("rediss://ops:pw@redis.example:6380/3")
	require.NoError(t, err)
	require.NotNil(t, opt.TLSConfig, "rediss:// is TLS")
	assert.Equal(t, "redis.example", opt.TLSConfig.ServerName)
	assert.Equal(t, []string{"redis.example:6380"}, opt.InitAddress)
	assert.Equal(t, "ops", opt.Username)
	assert.Equal(t, "pw", opt.Password)
	assert.Equal(t, 3, opt.SelectDB)
	assert.True(t, opt.DisableCache)
	assert.Equal(t, "rediss://ops:xxxxx@redis.example:6380/3", display)
}

func TestSpan(t *testing.T) {
	cases := map[string]string{
		"0s": "0ms", "850ms": "850ms", "4.25s": "4.2s", "-1.5s": "1.5s", "12.9s": "12s", "5m12s": "5m12s",
		"3h4m5s": "3h04m", "50h": "2d02h",
	}
	for in, want := range cases {
		d, err := parseDuration(in)
		require.NoError(t, err)
		assert.Equal(t, want, span(d), in)
	}
}

func TestClean_ControlCharacters(t *testing.T) {
	assert.Equal(t, "a b  c d", clean("a\nb\x1b\tc\rd"))
	assert.Equal(t, "a b c", oneLine("a\n\n b\t\tc "))
}

// cronguard help json names every field the JSON output has.
func TestJSONHelp_DocumentsEveryField(t *testing.T) {
	for _, v := range []any{replicasJSON{}, replicaJSON{}, jobsJSON{}, jobJSON{}, registrationJSON{}, holderJSON{}, runJSON{},
		pauseJSON{}, pausedJSON{}, resumedJSON{}, triggerJSON{}, triggeredJSON{}, releasedJSON{}, releaseJSON{},
		historyJSON{}, runRecordJSON{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			tag := typ.Field(i).Tag.Get("json")
			require.NotEmpty(t, tag, "%s.%s has a JSON name", typ.Name(), typ.Field(i).Name)
			assert.Contains(t, jsonHelp, `"`+tag+`"`, "%s.%s", typ.Name(), typ.Field(i).Name)
		}
	}
}
