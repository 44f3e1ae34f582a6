// Package testutil starts the real services cronguard's tests need and
// injects faults between them and their clients. It is imported only by
// tests and examples.
//
// Services, each on a free 127.0.0.1 port with its own temporary directory,
// stopped when the test ends:
//
//   - StartRedis runs a redis-server. (*Redis).Pause and Resume freeze and
//     thaw the process (SIGSTOP/SIGCONT); Restart stops it gracefully and
//     starts it again on the same port and directory, so with
//     "--appendonly yes --appendfsync always" acknowledged writes survive.
//   - StartCluster, StartSentinel and StartTLSRedis run a Redis Cluster, a
//     primary with a replica and three sentinels, and a TLS-only
//     redis-server, for the topology tests of lease/redislease.
//
// The server: redis-server and redis-cli by default; with
// CRONGUARD_TEST_SERVER=valkey (ServerEnv) every helper starts valkey-server
// and uses valkey-cli instead, and a path names another build to run.
//
// Faults: NewProxy puts a TCP proxy in front of any address. Cut closes
// connections and refuses new ones, Blackhole silently drops every byte,
// SetLatency delays every chunk, and Restore undoes all three.
//
// Guarantees: every process and goroutine started here is stopped and
// waited for by t.Cleanup (server processes also get SIGKILL if the test
// binary dies); a missing binary fails the test at once with a message
// saying how to install it (./scripts/test installs them on Debian/Ubuntu).
//
// PostgreSQL for the tests that write through a SQL driver is started by
// the dbtest module (github.com/cronguard/cronguard/dbtest), which keeps
// the driver out of this module's dependencies.
//
// Not guaranteed: the ports come from FreePort, so another process can take
// one between choosing and binding it (the start then fails loudly rather
// than connecting to a stranger); the servers are configured for speed, not
// durability (no RDB snapshots in Redis); and a
// fault takes effect for bytes read after the call returns, not for a
// chunk already in flight.
package testutil
