package testutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Redis is a redis-server process started for a test.
type Redis struct {
	// Addr is host:port on loopback.
	Addr string
	// Dir is the server's working directory (AOF and RDB files live here).
	Dir string

	t    testing.TB
	bin  string // the server binary ServerEnv chose
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedis starts a redis-server on a free loopback port in a temporary
// directory and stops it when the test ends. Extra args are passed to
// redis-server as configuration (for example "--appendonly", "yes"). The
// test fails at once, saying how to install it, if redis-server is missing.
//
// ServerEnv chooses another server: CRONGUARD_TEST_SERVER=valkey starts
// valkey-server with the same arguments.
//
// FreePort's port may be taken by another process (another test's server
// or proxy) before the server binds it; StartRedis then starts the server
// again on another port, up to portAttempts ports in all.
func StartRedis(t testing.TB, args ...string) *Redis {
	t.Helper()
	bin := serverBinary(t)
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatalf("testutil: free port: %v", err)
		}
		r, err := launch(t, bin, port, args)
		if err == nil {
			return r
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			t.Fatal(err)
		}
		t.Logf("%v; starting it on another port", err)
	}
}

// portAttempts bounds the ports StartRedis tries. Tests that start
// servers and proxies at once make a taken port likely enough to see: on
// Linux, with 16 goroutines each holding a port of its own meanwhile, 2
// of 1,392 ports FreePort returned were taken 30ms later.
const portAttempts = 5

// errPortTaken marks a server that did not get its port: another process
// had it.
var errPortTaken = errors.New("the port was taken by another process")

// startRedisOn is StartRedis on a port the caller chose.
func startRedisOn(t testing.TB, port int, args ...string) *Redis {
	t.Helper()
	r, err := launch(t, serverBinary(t), port, args)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// launch starts server binary bin on port, in a new temporary directory,
// and stops it when the test ends.
func launch(t testing.TB, bin string, port int, args []string) (*Redis, error) {
	r := &Redis{t: t, Dir: t.TempDir(), bin: bin, args: args, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := r.start(); err != nil {
		return nil, err
	}
	t.Cleanup(r.Stop)
	return r, nil
}

func (r *Redis) start() error {
	_, port, _ := net.SplitHostPort(r.Addr)
	args := append([]string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--dir", r.Dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--logfile", filepath.Join(r.Dir, "redis.log"),
	}, r.args...)
	cmd := exec.Command(r.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testutil: start %s: %w", r.bin, err)
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	if err := waitRedis(r.Addr, 10*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log, _ := os.ReadFile(filepath.Join(r.Dir, "redis.log"))
		if strings.Contains(string(log), "Address already in use") {
			err = fmt.Errorf("%w: %w", err, errPortTaken)
		}
		return fmt.Errorf("testutil: %s on %s did not answer: %w\n%s", filepath.Base(r.bin), r.Addr, err, tail(string(log), 2000))
	}
	// Another server may have taken the port between FreePort and bind.
	if pid, err := redisServerPID(r.Addr); err != nil || pid != cmd.Process.Pid {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		r.mu.Lock()
		r.cmd = nil
		r.mu.Unlock()
		if err == nil {
			err = errPortTaken
		}
		return fmt.Errorf("testutil: %s is answered by another process (pid %d), not the %s started (pid %d): %w", r.Addr, pid, filepath.Base(r.bin), cmd.Process.Pid, err)
	}
	return nil
}

// redisServerPID asks the server on addr for its process ID (INFO server).
func redisServerPID(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
}

// Stop kills the server (SIGKILL: nothing is flushed, see Restart for a
// graceful stop) and waits for it. It is safe to call twice; StartRedis
// registers it with t.Cleanup.
func (r *Redis) Stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill() // SIGKILL ends a paused (SIGSTOP) process too
	_ = cmd.Wait()
}

// Client returns a rueidis client connected to the server, with client-side
// caching disabled, closed when the test ends.
func (r *Redis) Client(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{r.Addr},
		DisableCache: true,
	})
	if err != nil {
		t.Fatalf("testutil: redis client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. Two calls of FreePort can return the same port (the kernel
// may hand a just-closed port out again); freePorts holds every port open
// until it has all n.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitRedis polls addr with PING until it answers PONG or timeout passes.
func waitRedis(addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		last = ping(addr)
		if last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return pingOver(c)
}

// pingOver sends PING on c, expects PONG within a second, and closes c.
func pingOver(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("unexpected reply %q", buf[:n])
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
