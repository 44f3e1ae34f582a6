// Package dbtest starts the databases cronguard's tests write to: a fresh
// PostgreSQL cluster per test (StartPostgres), opened with the pgx
// database/sql driver.
//
// It lives in a module of its own, with the tests that need a SQL driver
// (the fencing package's behaviour on PostgreSQL and SQLite, in
// dbtest/fencing; the scheduler's completion on a redis-server and
// PostgreSQL, with replicas killed and stopped, in dbtest/completion), so
// that neither pgx nor the SQLite driver is in the
// dependency graph of a service that imports cronguard.
//
// StartPostgres takes the server binaries from PATH or from the Debian
// layout (/usr/lib/postgresql/<version>/bin) and fails the test, saying how
// to install them, when there are none; ./scripts/test installs them as
// root on Debian. Under root the server runs as the "postgres" user, as
// PostgreSQL requires. Durability is off (fsync=off): tests do not need
// the data to survive a crash of the machine.
package dbtest
