package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/cronguard/cronguard/testutil"
)

// installPostgresHint is printed when initdb or postgres cannot be found.
const installPostgresHint = "PostgreSQL server binaries (initdb, postgres) not found in PATH or /usr/lib/postgresql/*/bin: install them (Debian/Ubuntu: sudo apt-get install -y postgresql; macOS: brew install postgresql) or run ./scripts/test, which installs them"

// postgresUser is the account initdb and postgres run as when the test runs
// as root, because PostgreSQL refuses to run as root.
const postgresUser = "postgres"

// Startup and shutdown bounds for the PostgreSQL server.
const (
	postgresStartTimeout = 30 * time.Second
	postgresStopTimeout  = 10 * time.Second
)

// Postgres is a PostgreSQL server started for a test: a fresh cluster with
// trust authentication, superuser "postgres" and database "postgres",
// listening on a free loopback port.
type Postgres struct {
	// DSN connects to the "postgres" database as the "postgres" superuser
	// over TCP without a password or TLS, for the "pgx" driver.
	DSN string
	// Dir is the directory holding the cluster (Dir/data), the server's
	// Unix socket and its log (Dir/postgres.log). It is removed at cleanup.
	Dir string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited and been waited for
}

// StartPostgres initialises a new PostgreSQL cluster in a temporary
// directory, starts a server for it on a free loopback port, waits until it
// accepts connections and stops it (fast shutdown) when the test ends.
// Durability is switched off (fsync=off) for speed: the data does not
// survive a crash of the machine, which tests do not need.
//
// The binaries are taken from PATH, else from the highest version in
// /usr/lib/postgresql/*/bin (the Debian layout). When the test runs as root,
// the server runs as the "postgres" user, which must exist. The test fails
// at once, saying what to install, if anything is missing.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cred, err := postgresCredential()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := postgresBaseDir(cred)
	if err != nil {
		t.Fatal(err)
	}
	p := &Postgres{Dir: dir}
	t.Cleanup(func() {
		p.Stop()
		_ = os.RemoveAll(dir)
	})

	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"),
		"-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("dbtest: initdb in %s: %v\n%s", data, err, tail(string(out), 2000))
	}

	port, err := testutil.FreePort()
	if err != nil {
		t.Fatalf("dbtest: free port: %v", err)
	}
	p.DSN = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable",
		net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))

	logPath := filepath.Join(dir, "postgres.log")
	if err := p.start(bin, data, dir, port, logPath, cred); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *Postgres) start(bin, data, sockDir string, port int, logPath string, cred *syscall.Credential) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("dbtest: postgres log: %w", err)
	}
	defer logFile.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data,
		"-k", sockDir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
	)
	cmd.Dir = sockDir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("dbtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()

	if err := waitPostgres(p.DSN, data, done, postgresStartTimeout); err != nil {
		p.Stop()
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("dbtest: postgres on port %d did not accept connections: %w\n%s", port, err, tail(string(log), 2000))
	}
	return nil
}

// Stop shuts the server down (fast shutdown: open transactions are rolled
// back, clients are disconnected) and waits for it to exit, killing it if
// it takes longer than 10s. It is safe to call twice.
func (p *Postgres) Stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(postgresStopTimeout):
		_ = cmd.Process.Kill()
		<-done
	}
}

// DB returns a *sql.DB for the server using the "pgx" driver, closed when
// the test t ends.
func (p *Postgres) DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", p.DSN)
	if err != nil {
		t.Fatalf("dbtest: open postgres: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// waitPostgres pings dsn until the server answers, the process exits
// (done is closed) or timeout passes. It then checks that the server that
// answered is the one serving data: another server may have taken the port
// between FreePort and bind.
func waitPostgres(dsn, data string, done <-chan struct{}, timeout time.Duration) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pingCtx, pingCancel := context.WithTimeout(ctx, 2*time.Second)
		err = db.PingContext(pingCtx)
		pingCancel()
		if err == nil {
			return checkDataDirectory(ctx, db, data)
		}
		select {
		case <-done:
			return fmt.Errorf("server exited: %w", err)
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// checkDataDirectory fails unless the server behind db serves data.
func checkDataDirectory(ctx context.Context, db *sql.DB, data string) error {
	var got string
	if err := db.QueryRowContext(ctx, "SHOW data_directory").Scan(&got); err != nil {
		return fmt.Errorf("SHOW data_directory: %w", err)
	}
	if filepath.Clean(got) != filepath.Clean(data) {
		return fmt.Errorf("the port is served by another server (data directory %s, want %s)", got, data)
	}
	return nil
}

// postgresBinDir returns the directory holding initdb and postgres.
func postgresBinDir() (string, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(initdb)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Highest major version first ("15" > "9.6" numerically, not as strings).
	sort.Slice(dirs, func(i, j int) bool {
		return versionOf(dirs[i]) > versionOf(dirs[j])
	})
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errors.New(installPostgresHint)
}

// versionOf parses the <version> of /usr/lib/postgresql/<version>/bin as a
// number, or -1.
func versionOf(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// postgresCredential returns the credential to run PostgreSQL with: nil
// (the current user) unless we are root, then the "postgres" user.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(postgresUser)
	if err != nil {
		return nil, fmt.Errorf("dbtest: PostgreSQL refuses to run as root and user %q does not exist (%v): run the tests as a non-root user, or create it (Debian/Ubuntu: apt-get install -y postgresql creates it)", postgresUser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("dbtest: user %q has uid %q: %w", postgresUser, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("dbtest: user %q has gid %q: %w", postgresUser, u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// postgresBaseDir creates a private directory for one cluster, owned by the
// user the server runs as. It lives under os.TempDir, not t.TempDir: the
// parents of t.TempDir are private to the test's user (mode 0700), so the
// postgres user could not reach a directory below them.
func postgresBaseDir(cred *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", "cronguard-pg-")
	if err != nil {
		return "", fmt.Errorf("dbtest: postgres dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("dbtest: chown postgres dir to %s: %w", postgresUser, err)
		}
		if err := checkTraversable(filepath.Dir(dir)); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("dbtest: chmod postgres dir: %w", err)
	}
	return dir, nil
}

// checkTraversable reports a clear error when other users cannot reach
// dir, the parent of the cluster directory (for example TMPDIR set to a
// private directory).
func checkTraversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("dbtest: postgres dir: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("dbtest: the %s user cannot enter %s (mode %v): point TMPDIR at a directory others can traverse, such as /tmp", postgresUser, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// tail returns the last n bytes of s, for quoting the end of a server log.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
