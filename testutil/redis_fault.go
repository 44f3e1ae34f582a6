package testutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// redisShutdownTimeout bounds how long Restart waits for redis-server to
// exit after SIGTERM before it kills it.
const redisShutdownTimeout = 10 * time.Second

// PID returns the process ID of the running redis-server, or 0 after Stop.
// It changes on Restart.
func (r *Redis) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Pause stops the server process with SIGSTOP: connections stay open and
// the kernel keeps accepting new ones, but nothing is answered until
// Resume, as when a server stalls (a long fork, a VM pause, a GC-like
// freeze). Keys' TTLs keep running on the server's clock meanwhile. The
// test fails if the server is not running.
func (r *Redis) Pause() {
	r.t.Helper()
	r.signal(syscall.SIGSTOP, "Pause")
}

// Resume continues a server stopped by Pause with SIGCONT; it answers the
// requests that queued up meanwhile. Resuming a running server does
// nothing. The test fails if the server is not running.
func (r *Redis) Resume() {
	r.t.Helper()
	r.signal(syscall.SIGCONT, "Resume")
}

func (r *Redis) signal(sig syscall.Signal, op string) {
	r.t.Helper()
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		r.t.Fatalf("testutil: Redis.%s: redis-server on %s is not running", op, r.Addr)
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("testutil: Redis.%s: signal redis-server: %v", op, err)
	}
}

// Restart shuts the server down gracefully (SIGTERM, which flushes the
// append-only file; after 10s it is killed) and starts it again with the
// same arguments, port and directory, returning once it answers PING.
// Clients' connections break and must reconnect. What survives is what
// the configuration persisted: start the server with
// StartRedis(t, "--appendonly", "yes", "--appendfsync", "always") for
// every acknowledged write to survive; with the defaults nothing does. A
// paused server is resumed first. The test fails if the server is not
// running or does not come back.
func (r *Redis) Restart() {
	r.t.Helper()
	r.RestartWith(nil)
}

// RestartWith is Restart with change called on the server's directory
// (Dir) while the server is down, so that a test can remove or replace its
// files: delete the append-only directory to restart it empty, as after a
// crash without persistence, or put back an older copy of it (CopyAOF), as
// after a restore from a snapshot. change may be nil.
func (r *Redis) RestartWith(change func(dir string)) {
	r.t.Helper()
	r.restart("Restart", change, false)
}

// Crash kills the server with SIGKILL, as a crash or an OOM kill would,
// and starts it again with the same arguments, port and directory,
// returning once it answers PING. Unlike Restart, requests the server had
// received but not answered (a paused server's, say) are never run and
// never answered: their clients see the connection break and cannot know
// the outcome. What survives is what was on disk: with "--appendfsync
// always", every acknowledged write. The test fails if the server is not
// running or does not come back.
func (r *Redis) Crash() {
	r.t.Helper()
	r.restart("Crash", nil, true)
}

func (r *Redis) restart(op string, change func(dir string), crash bool) {
	r.t.Helper()
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		r.t.Fatalf("testutil: Redis.%s: redis-server on %s is not running", op, r.Addr)
		return
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if crash {
		_ = cmd.Process.Kill() // SIGKILL ends a paused (SIGSTOP) process too
	} else {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	timer := time.NewTimer(redisShutdownTimeout)
	select {
	case <-done:
		timer.Stop()
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
	}
	if change != nil {
		change(r.Dir)
	}
	if err := r.start(); err != nil {
		r.t.Fatalf("testutil: Redis.%s: %v", op, err)
	}
}

// AOFDir is the name of the append-only directory redis-server (7.0 and
// later) keeps under Dir when started with --appendonly yes.
const AOFDir = "appendonlydir"

// CopyAOF copies the server's append-only directory to dst (created), as
// it is on disk now: with --appendfsync always, every acknowledged write.
// A later RestartWith that puts it back rolls the data back to this point.
func (r *Redis) CopyAOF(dst string) {
	r.t.Helper()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(r.Dir, AOFDir))); err != nil {
		r.t.Fatalf("testutil: Redis.CopyAOF: %v", err)
	}
}

// RestoreAOF replaces the append-only directory in dir with the copy in
// src; use it as RestartWith's change.
func RestoreAOF(t testing.TB, src string) func(dir string) {
	return func(dir string) {
		aof := filepath.Join(dir, AOFDir)
		if err := os.RemoveAll(aof); err != nil {
			t.Errorf("testutil: RestoreAOF: %v", err)
			return
		}
		if err := os.CopyFS(aof, os.DirFS(src)); err != nil {
			t.Errorf("testutil: RestoreAOF: %v", err)
		}
	}
}

// WipeAOF removes the append-only directory in dir, so that the server
// starts empty; use it as RestartWith's change.
func WipeAOF(t testing.TB) func(dir string) {
	return func(dir string) {
		if err := os.RemoveAll(filepath.Join(dir, AOFDir)); err != nil {
			t.Errorf("testutil: WipeAOF: %v", err)
		}
	}
}
