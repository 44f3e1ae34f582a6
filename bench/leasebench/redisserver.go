package leasebench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// Server is a redis-server process started for a benchmark run.
type Server struct {
	// Addr is host:port on loopback.
	Addr string
	dir  string
	cmd  *exec.Cmd
}

// StartServer starts redis-server on a free loopback port with persistence
// off (--save "" --appendonly no) and waits until it answers PING.
func StartServer() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("leasebench: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "leasebench-redis-")
	if err != nil {
		return nil, fmt.Errorf("leasebench: temp dir: %w", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	s.cmd = exec.Command("redis-server",
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	// Setsid: the server runs in its own session, so on Linux with
	// autogroup scheduling (the default) it gets its own CPU share, as a
	// server on its own host or in its own container would. In this
	// process's group, the benchmark's goroutines would starve it on a
	// small machine, and starve it more the more work each contender asks
	// of Redis.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("leasebench: start redis-server (install it: apt-get install -y redis-server): %w", err)
	}
	if err := waitPing(s.Addr, 10*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop kills the server, waits for it and removes its directory.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

func waitPing(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err == nil {
			err = c.Do(context.Background(), c.B().Ping().Build()).Error()
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leasebench: redis-server on %s did not answer: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
