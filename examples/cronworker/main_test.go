package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain checks that a run leaves no goroutine behind: the replicas'
// schedulers, heartbeats, Redis clients and the embedded Redis are all
// stopped and waited for.
func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// summaryCount returns the number on the summary line that starts with label.
func summaryCount(t *testing.T, out, label string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `: (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "summary line %q missing in:\n%s", label, out)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// duplicateRows counts, straight from the database, the rows written for a
// job and occurrence that already had one.
func duplicateRows(t *testing.T, path string) (dups, rows int) {
	t.Helper()
	db, err := openDB(path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM runs`).Scan(&rows))
	err = db.QueryRowContext(t.Context(), `SELECT COALESCE(SUM(n - 1), 0) FROM
		(SELECT COUNT(*) AS n FROM runs GROUP BY job, occurrence_ms)`).Scan(&dups)
	require.NoError(t, err)
	return dups, rows
}

func TestRun_Default_OnceEachAndGracefulExit(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	var out, logs syncBuffer

	code := run(t.Context(), []string{"-for", "5s", "-db", dbPath}, &out, &logs)

	require.Equal(t, exitOK, code, "stdout:\n%s\nlogs:\n%s", out.String(), logs.String())
	assert.Equal(t, 0, summaryCount(t, out.String(), "duplicates"))
	assert.Equal(t, 0, summaryCount(t, out.String(), "stale writes rejected"))
	assert.Equal(t, 0, summaryCount(t, out.String(), "leases held after shutdown"))
	assert.Regexp(t, `(?m)^tick +\d+ `, out.String(), "the tick job ran")
	assert.NotContains(t, out.String(), "metrics:", "no metrics endpoint without -metrics")
	dups, rows := duplicateRows(t, dbPath)
	assert.Zero(t, dups, "rows for one job and occurrence written twice")
	assert.GreaterOrEqual(t, rows, 3, "about one tick per second for 5s")
	assert.Contains(t, logs.String(), "job lease released")
	assert.Contains(t, logs.String(), "all replicas shut down")
	for _, r := range []string{"replica-1", "replica-2", "replica-3"} {
		assert.Contains(t, logs.String(), "scheduler shut down replica="+r)
	}
}

func TestRun_Stall_StaleWriteRejected(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	var out, logs syncBuffer

	code := run(t.Context(), []string{"-stall", "-for", "10s", "-db", dbPath}, &out, &logs)

	require.Equal(t, exitOK, code, "stdout:\n%s\nlogs:\n%s", out.String(), logs.String())
	assert.GreaterOrEqual(t, summaryCount(t, out.String(), "stale writes rejected"), 1,
		"the frozen run's late write is refused by fencing")
	assert.Equal(t, 0, summaryCount(t, out.String(), "duplicates"))
	assert.Equal(t, 0, summaryCount(t, out.String(), "leases held after shutdown"))
	dups, _ := duplicateRows(t, dbPath)
	assert.Zero(t, dups)
	assert.Contains(t, logs.String(), "fencing rejected a stale write")
	assert.Contains(t, logs.String(), "heartbeat: lease renewal unconfirmed", "the frozen run's context was cancelled")
}

func TestRun_Flags_Invalid(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"replicas zero", []string{"-replicas", "0"}, "-replicas must be between 1 and 16, got 0"},
		{"replicas too many", []string{"-replicas", "17"}, "-replicas must be between 1 and 16, got 17"},
		{"for too short", []string{"-for", "10ms"}, "-for must be at least 1s, got 10ms"},
		{"stall one replica", []string{"-stall", "-replicas", "1", "-for", "20s"}, "-stall needs at least 2 replicas"},
		{"stall with -redis defaults to one replica", []string{"-stall", "-redis", "redis://127.0.0.1:1"}, "-stall needs at least 2 replicas"},
		{"stall too short", []string{"-stall", "-for", "5s"}, "-stall needs -for of at least 10s"},
		{"positional argument", []string{"extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"-nope"}, "flag provided but not defined: -nope"},
		{"bad duration", []string{"-for", "soon"}, `invalid value "soon" for flag -for`},
		{"metrics without a port", []string{"-metrics", "9464"}, `-metrics must be host:port or :port (e.g. :9464), got "9464"`},
		{"metrics with a bad port", []string{"-metrics", ":http"}, `-metrics must be host:port or :port (e.g. :9464), got ":http"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs syncBuffer
			code := run(t.Context(), tt.args, &out, &errs)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errs.String(), tt.want)
			assert.Empty(t, out.String(), "nothing runs")
		})
	}
}

func TestRun_Flags_BadRedisURL(t *testing.T) {
	var out, errs syncBuffer
	code := run(t.Context(), []string{"-redis", "http://localhost:6379", "-db", filepath.Join(t.TempDir(), "x.db")}, &out, &errs)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errs.String(), "-redis: redis: invalid URL scheme: http")
}

func TestRun_Help_ExitsZero(t *testing.T) {
	var out, errs syncBuffer
	assert.Equal(t, exitOK, run(t.Context(), []string{"-h"}, &out, &errs))
	assert.Contains(t, errs.String(), "-stall")
}

func TestRun_DBWithOldFences_Refused(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	db, err := sql.Open("sqlite", dbPath)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `CREATE TABLE cronguard_fences (resource TEXT NOT NULL PRIMARY KEY, token BIGINT NOT NULL CHECK (token > 0));
		INSERT INTO cronguard_fences VALUES ('cronworker/tick', 7)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	var out, errs syncBuffer

	code := run(t.Context(), []string{"-db", dbPath}, &out, &errs)

	assert.Equal(t, exitFail, code)
	assert.Contains(t, errs.String(), "already holds fence tokens from an earlier run")
}

// TestMain_SIGINT_ShutsDownGracefully builds the command and stops it with
// SIGINT, as Ctrl-C would.
func TestMain_SIGINT_ShutsDownGracefully(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "cronworker")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "-for", "1m", "-db", filepath.Join(t.TempDir(), "runs.db"))
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// Wait for a run to complete, then interrupt.
	logs := bufio.NewScanner(stderr)
	var logText strings.Builder
	ran := false
	for logs.Scan() {
		logText.WriteString(logs.Text() + "\n")
		if strings.Contains(logs.Text(), "job lease released") {
			ran = true
			break
		}
	}
	require.True(t, ran, "no run completed:\n%s", logText.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	rest, err := io.ReadAll(stderr)
	require.NoError(t, err)
	logText.Write(rest)
	waitErr := cmd.Wait()

	require.NoError(t, waitErr, "exit code 0 expected; logs:\n%s", logText.String())
	assert.Contains(t, logText.String(), "signal received; shutting down")
	assert.Contains(t, logText.String(), "all replicas shut down")
	assert.Equal(t, 0, summaryCount(t, out.String(), "duplicates"))
	assert.Equal(t, 0, summaryCount(t, out.String(), "leases held after shutdown"))
}

func TestStall_ClaimsOneRunAfterStallAfterAndNeverASharedOccurrence(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s := newStall(true, start)
	early := start.Add(stallAfter - time.Millisecond)
	assert.False(t, s.claim(early, early.Truncate(time.Second)), "too early")
	shared := start.Add(5 * time.Second) // the report job's occurrence too
	assert.False(t, s.claim(shared, shared), "an occurrence shared with report")
	own := start.Add(6 * time.Second)
	assert.True(t, s.claim(own, own), "the first eligible run stalls")
	later := start.Add(7 * time.Second)
	assert.False(t, s.claim(later, later), "only one run stalls")
	assert.False(t, newStall(false, start).claim(own, own), "disabled")
}
