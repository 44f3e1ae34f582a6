package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ServerEnv names the environment variable that chooses the server every
// helper of this package starts (StartRedis, StartTLSRedis, StartCluster,
// StartSentinel) and the command-line client they use:
//
//   - unset, empty or "redis": redis-server and redis-cli (the default);
//   - "valkey": valkey-server and valkey-cli;
//   - a path to a server binary (it contains a "/"): that binary, and the
//     client next to it, named as the server with "-server" replaced by
//     "-cli" (for example /opt/valkey/bin/valkey-server and
//     /opt/valkey/bin/valkey-cli).
//
// ./scripts/test runs the Redis store's and the scheduler's tests a second
// time with CRONGUARD_TEST_SERVER=valkey.
const ServerEnv = "CRONGUARD_TEST_SERVER"

// Hints printed when a chosen binary cannot be found.
const (
	installRedisHint    = "redis-server not found in PATH: install it (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis) or run ./scripts/test, which installs it"
	installRedisCLIHint = "redis-cli not found in PATH: install it (Debian/Ubuntu: sudo apt-get install -y redis-tools; macOS: brew install redis) or run ./scripts/test, which installs it"
	installValkeyHint   = "valkey-server not found in PATH (" + ServerEnv + "=valkey): install it (Debian 13 or newer, Ubuntu releases that package it: sudo apt-get install -y valkey-server; Debian 12: from bookworm-backports, sudo apt-get install -y -t bookworm-backports valkey-server; macOS: brew install valkey) or run ./scripts/test as root, which installs it where it is packaged; or unset " + ServerEnv + " to test against redis-server"
	installValkeyCLI    = "valkey-cli not found in PATH (" + ServerEnv + "=valkey): it comes with valkey-server (Debian/Ubuntu package valkey-tools; macOS: brew install valkey)"
)

// server is the server binary and command-line client chosen by ServerEnv.
type server struct {
	// bin and cli are the commands to run: names looked up in PATH, or
	// paths.
	bin, cli string
	// binHint and cliHint say how to install bin and cli.
	binHint, cliHint string
}

// chosenServer reads ServerEnv. It fails on a value that is neither a
// known server name nor a path.
func chosenServer() (server, error) {
	v := os.Getenv(ServerEnv)
	switch {
	case v == "" || v == "redis":
		return server{bin: "redis-server", cli: "redis-cli", binHint: installRedisHint, cliHint: installRedisCLIHint}, nil
	case v == "valkey":
		return server{bin: "valkey-server", cli: "valkey-cli", binHint: installValkeyHint, cliHint: installValkeyCLI}, nil
	case strings.Contains(v, "/"):
		dir, base := filepath.Split(v)
		cli := filepath.Join(dir, strings.TrimSuffix(base, "-server")+"-cli")
		return server{
			bin:     v,
			cli:     cli,
			binHint: fmt.Sprintf("%s=%s: no executable server binary at that path", ServerEnv, v),
			cliHint: fmt.Sprintf("%s=%s: no executable client at %s (the server's name with -server replaced by -cli)", ServerEnv, v, cli),
		}, nil
	default:
		return server{}, fmt.Errorf("testutil: %s=%q: want redis, valkey or a path to a server binary", ServerEnv, v)
	}
}

// serverTests, when set (SelectServerTests), is the pattern every test
// of this test binary that starts a server must match by its top-level
// name.
var serverTests *regexp.Regexp

// SelectServerTests declares, from a package's TestMain, that the tests of
// the package that start a server are those whose top-level name matches
// pattern, so that a run on another server can select them alone with
// go test -run pattern (./scripts/test's Valkey step does so for the
// scheduler, whose other tests use an in-memory store and gain nothing
// from a second run). Every helper that starts a server then fails a test
// whose name does not match, saying so: such a test would drop out of
// those runs unnoticed.
func SelectServerTests(pattern string) {
	serverTests = regexp.MustCompile(pattern)
}

// checkServerTest fails t if SelectServerTests was called and t's
// top-level name does not match its pattern.
func checkServerTest(t testing.TB) {
	t.Helper()
	if serverTests == nil {
		return
	}
	top, _, _ := strings.Cut(t.Name(), "/")
	if !serverTests.MatchString(top) {
		t.Fatalf("testutil: %s starts a server, but its name does not match %q, by which this package's tests that start one are selected for the runs on other servers (scripts/test's Valkey step): rename it", top, serverTests)
	}
}

// serverBinary returns the server binary chosen by ServerEnv. The test
// fails at once, saying how to install it, if it cannot be found.
func serverBinary(t testing.TB) string {
	t.Helper()
	checkServerTest(t)
	s, err := chosenServer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath(s.bin); err != nil {
		t.Fatal(s.binHint)
	}
	return s.bin
}

// cliBinary returns the command-line client chosen by ServerEnv. The test
// fails at once, saying how to install it, if it cannot be found.
func cliBinary(t testing.TB) string {
	t.Helper()
	s, err := chosenServer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath(s.cli); err != nil {
		t.Fatal(s.cliHint)
	}
	return s.cli
}
