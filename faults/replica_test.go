package faults

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/testutil"
)

// readyTimeout bounds how long a (re)started replica may take to print
// its ready line.
const readyTimeout = 60 * time.Second

// buildReplica builds faults/cmd/replica into a temporary directory.
func buildReplica(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "replica")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/cronguard/cronguard/faults/cmd/replica")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build replica:\n%s", out)
	return bin
}

// replica is one replica process slot: restarted after a kill under the
// same name, history file and proxy.
type replica struct {
	name   string
	bin    string
	dir    string
	dsn    string
	seed   int64
	proxy  *testutil.Proxy
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited and been waited for
	readyc chan struct{} // closed when cmd printed its ready line
	starts int
}

// start starts the replica process and returns at once; await ready.
func (r *replica) start(t *testing.T) {
	t.Helper()
	r.starts++
	logf, err := os.OpenFile(filepath.Join(r.dir, r.name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	cmd := exec.Command(r.bin,
		"-name", r.name,
		"-redis", r.proxy.Addr,
		"-dsn", r.dsn,
		"-history", filepath.Join(r.dir, r.name+".jsonl"),
		"-seed", strconv.FormatInt(r.seed*1000+int64(r.starts), 10))
	cmd.Stderr = logf
	// Nothing outlives the test: the kernel kills the replica when the
	// thread that started it exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r.cmd, r.done, r.readyc = cmd, make(chan struct{}), make(chan struct{})
	done, readyc := r.done, r.readyc
	go func() {
		defer close(done)
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		ready := false
		for sc.Scan() {
			if !ready && sc.Text() == "ready" {
				ready = true
				close(readyc)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
}

// awaitReady waits for the ready line; it fails the test if the process
// exits first or takes too long.
func (r *replica) awaitReady(t *testing.T) {
	t.Helper()
	select {
	case <-r.readyc:
	case <-r.done:
		t.Fatalf("replica %s exited before it was ready (see %s.log)", r.name, r.name)
	case <-time.After(readyTimeout):
		t.Fatalf("replica %s not ready after %s", r.name, readyTimeout)
	}
}

// signal sends sig to the running process.
func (r *replica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(sig), "signal %s to %s", sig, r.name)
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Kill()
	<-r.done
}

// stop asks the replica to shut down (SIGCONT, then SIGTERM) and waits for
// it until ctx is done, then kills it.
func (r *replica) stop(ctx context.Context) {
	if r.cmd == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-ctx.Done():
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}
