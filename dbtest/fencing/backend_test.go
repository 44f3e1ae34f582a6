package fencing_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/cronguard/cronguard/dbtest"
	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/testutil"
)

// TestMain is goleak.VerifyTestMain with one step between the tests and the
// leak check: the package's shared PostgreSQL server is stopped first (its
// process waiter is a goroutine that lives as long as the server).
func TestMain(m *testing.M) {
	code := m.Run()
	sharedPG.stop()
	if code == 0 {
		if err := goleak.Find(testutil.LeakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// backend is a real database every behaviour test runs against.
type backend struct {
	name    string
	dialect fencing.Dialect
	// open returns a fresh, empty database, closed when t ends.
	open func(t *testing.T) *sql.DB
	// newDatabase makes a fresh, empty database and returns the driver
	// name and DSN that open it, for tests that open it several times
	// (replicas of one service, each with its own pool).
	newDatabase func(t *testing.T) (driver, dsn string)
	// schema is a schema that exists in every database open returns, for
	// schema-qualified table names.
	schema string
	// rebind turns a statement written with ? placeholders into the
	// backend's form.
	rebind func(q string) string
}

// backends returns PostgreSQL and SQLite.
func backends() []backend {
	return []backend{
		{
			name: "postgres", dialect: fencing.Postgres, open: openPostgres, newDatabase: newPostgresDatabase,
			schema: "app", rebind: dollarPlaceholders,
		},
		{
			name: "sqlite", dialect: fencing.SQLite, open: openSQLite, newDatabase: newSQLiteDatabase,
			schema: "main", rebind: func(q string) string { return q },
		},
	}
}

// forEachBackend runs f as a subtest per backend, with a fresh database and
// the fence table "fences" already created in it.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend, db *sql.DB, table *fencing.Table)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			table, err := fencing.NewTable("fences", b.dialect)
			require.NoError(t, err)
			require.NoError(t, table.Create(t.Context(), db))
			f(t, b, db, table)
		})
	}
}

// openSQLite opens a new SQLite database (see newSQLiteDatabase).
func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	return openDSN(t, newSQLiteDatabase)
}

// openDSN opens the database newDatabase makes, closed when t ends.
func openDSN(t *testing.T, newDatabase func(t *testing.T) (driver, dsn string)) *sql.DB {
	t.Helper()
	driver, dsn := newDatabase(t)
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.PingContext(t.Context()))
	return db
}

// newSQLiteDatabase returns the DSN of a new SQLite database file in t's
// temp dir, opened as the package documentation advises: WAL mode, write
// transactions starting as BEGIN IMMEDIATE and waiting up to 5s for the
// write lock, so that concurrent writers take turns.
func newSQLiteDatabase(t *testing.T) (driver, dsn string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fences.db")
	return "sqlite", "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate"
}

var pgDatabases atomic.Int64

// openPostgres creates a new database (with schema "app") on the package's
// shared PostgreSQL server and connects to it.
func openPostgres(t *testing.T) *sql.DB {
	t.Helper()
	return openDSN(t, newPostgresDatabase)
}

// newPostgresDatabase creates a new database (with schema "app") on the
// package's shared PostgreSQL server and returns its DSN.
func newPostgresDatabase(t *testing.T) (driver, dsn string) {
	t.Helper()
	pg := sharedPG.get(t)
	admin := pg.DB(t)
	name := fmt.Sprintf("fencing_%d", pgDatabases.Add(1))
	_, err := admin.ExecContext(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	require.NoError(t, admin.Close())

	u, err := url.Parse(pg.DSN)
	require.NoError(t, err)
	u.Path = "/" + name
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	_, err = db.ExecContext(t.Context(), "CREATE SCHEMA app")
	require.NoError(t, err)
	return "pgx", u.String()
}

// dollarPlaceholders rewrites the n-th ? of q as $n.
func dollarPlaceholders(q string) string {
	out := make([]byte, 0, len(q)+8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			out = fmt.Appendf(out, "$%d", n)
			continue
		}
		out = append(out, q[i])
	}
	return string(out)
}

// sharedPG is one PostgreSQL server for the whole package, started by the
// first test that needs it and stopped by TestMain: initdb and start-up take
// seconds, a fresh database on a running server a fraction of one.
var sharedPG postgresServer

type postgresServer struct {
	once sync.Once
	tb   packageTB
	pg   *dbtest.Postgres
}

// get returns the shared server, starting it on first use. A failure to
// start fails t (and every later caller) with testutil's message.
func (s *postgresServer) get(t *testing.T) *dbtest.Postgres {
	t.Helper()
	s.once.Do(func() {
		// StartPostgres ends its goroutine (runtime.Goexit, through
		// packageTB.Fatal) on failure, so it runs on one of its own.
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.pg = dbtest.StartPostgres(&s.tb)
		}()
		<-done
	})
	if s.pg == nil {
		t.Fatalf("shared postgres did not start: %s", s.tb.failure())
	}
	return s.pg
}

func (s *postgresServer) stop() { s.tb.runCleanups() }

// packageTB is the testing.TB the shared server is started with: it lives
// for the whole package run instead of one test. It implements the methods
// dbtest.StartPostgres calls; the embedded nil TB is never used.
type packageTB struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
	msg      string
}

func (p *packageTB) Helper()      {}
func (p *packageTB) Name() string { return "fencing-shared-postgres" }
func (p *packageTB) Cleanup(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, f)
}
func (p *packageTB) Logf(format string, args ...any) {}
func (p *packageTB) Log(args ...any)                 {}
func (p *packageTB) Fatal(args ...any)               { p.fail(fmt.Sprint(args...)) }
func (p *packageTB) Fatalf(format string, args ...any) {
	p.fail(fmt.Sprintf(format, args...))
}
func (p *packageTB) fail(msg string) {
	p.mu.Lock()
	p.msg = msg
	p.mu.Unlock()
	runtime.Goexit()
}
func (p *packageTB) failure() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.msg
}

// runCleanups runs the registered clean-ups, last first.
func (p *packageTB) runCleanups() {
	p.mu.Lock()
	fs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
