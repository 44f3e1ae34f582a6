package testutil

import (
	"context"
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

// SentinelMasterName is the name the sentinels started by StartSentinel
// monitor the primary under.
const SentinelMasterName = "mymaster"

// Sentinel timing of the sentinels StartSentinel starts, in milliseconds.
const (
	SentinelDownAfter       = 1000 // sentinel down-after-milliseconds
	SentinelFailoverTimeout = 5000 // sentinel failover-timeout
)

// sentinelReadyTimeout bounds StartSentinel's wait for the topology to form
// and Failover's wait for a failover to complete.
const sentinelReadyTimeout = 30 * time.Second

// Sentinel is a Sentinel-managed Redis deployment started for a test: one
// primary, one replica and three sentinels (quorum 2), all on loopback.
type Sentinel struct {
	// MasterName is the name the sentinels monitor the primary under
	// (SentinelMasterName).
	MasterName string
	// SentinelAddrs are the host:port addresses of the three sentinels.
	SentinelAddrs []string
	// Primary and Replica are the data servers in their current roles.
	// Failover swaps them.
	Primary, Replica *Redis

	mu sync.Mutex
}

// StartSentinel starts a primary, a replica of it (--replicaof) and three
// sentinels that monitor the primary as SentinelMasterName with quorum 2,
// down-after-milliseconds SentinelDownAfter and failover-timeout
// SentinelFailoverTimeout. It returns once the replica's link to the
// primary is up and every sentinel knows the replica and the two other
// sentinels, so that a failover can start at once. Everything is stopped
// when the test ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	cliBinary(t)
	s := &Sentinel{MasterName: SentinelMasterName}
	// No diskless-sync delay: a full sync starts at once instead of after
	// the default 5s wait for more replicas (both servers become primaries).
	noDelay := []string{"--repl-diskless-sync-delay", "0"}
	s.Primary = StartRedis(t, noDelay...)
	host, port, _ := net.SplitHostPort(s.Primary.Addr)
	s.Replica = StartRedis(t, append(noDelay, "--replicaof", host, port)...)
	for range 3 {
		s.SentinelAddrs = append(s.SentinelAddrs, startSentinelProcess(t, s.Primary.Addr))
	}

	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	if err := s.waitReplicating(ctx, s.Primary.Addr, s.Replica.Addr); err != nil {
		t.Fatalf("testutil: sentinel topology: %v", err)
	}
	if err := s.waitSentinelsAgree(ctx, s.Primary.Addr, s.Replica.Addr); err != nil {
		t.Fatalf("testutil: sentinel topology: %v", err)
	}
	return s
}

// startSentinelProcess writes a sentinel configuration file monitoring
// primary and starts redis-server --sentinel with it. It returns the
// sentinel's address.
func startSentinelProcess(t testing.TB, primary string) string {
	t.Helper()
	dir := t.TempDir()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("testutil: free port: %v", err)
	}
	host, primaryPort, _ := net.SplitHostPort(primary)
	conf := strings.Join([]string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"protected-mode no",
		"dir " + dir,
		"logfile " + filepath.Join(dir, "sentinel.log"),
		fmt.Sprintf("sentinel monitor %s %s %s 2", SentinelMasterName, host, primaryPort),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMasterName, SentinelDownAfter),
		fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMasterName, SentinelFailoverTimeout),
		"",
	}, "\n")
	confFile := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatalf("testutil: write sentinel config: %v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	startServer(t, dir, "sentinel.log", []string{confFile, "--sentinel"}, func() error { return ping(addr) })
	return addr
}

// startServer starts the server binary ServerEnv chooses (redis-server by
// default) with args in dir, waits until ready
// returns nil (at most 10s), and kills the process when the test ends. The
// test fails with the tail of dir/logName if the server never gets ready.
func startServer(t testing.TB, dir, logName string, args []string, ready func() error) {
	t.Helper()
	bin := serverBinary(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("testutil: start %s: %v", bin, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := poll(ctx, ready); err != nil {
		stop()
		log, _ := os.ReadFile(filepath.Join(dir, logName))
		t.Fatalf("testutil: %s %s did not get ready: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(string(log), 2000))
	}
	t.Cleanup(stop)
}

// waitReplicating waits until replica reports its link to primary up and
// primary lists replica as online.
func (s *Sentinel) waitReplicating(ctx context.Context, primary, replica string) error {
	_, replicaPort, _ := net.SplitHostPort(replica)
	return poll(ctx, func() error {
		info, err := redisCLI(ctx, replica, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s: link to primary is not up", replica)
		}
		info, err = redisCLI(ctx, primary, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "port="+replicaPort+",state=online") {
			return fmt.Errorf("primary %s does not list replica %s as online:\n%s", primary, replica, info)
		}
		return nil
	})
}

// waitSentinelsAgree waits until every sentinel names primary as the
// master, knows replica as a healthy replica, and knows the other
// sentinels.
func (s *Sentinel) waitSentinelsAgree(ctx context.Context, primary, replica string) error {
	_, replicaPort, _ := net.SplitHostPort(replica)
	for _, addr := range s.SentinelAddrs {
		err := poll(ctx, func() error {
			got, err := s.masterAddr(ctx, addr)
			if err != nil {
				return err
			}
			if got != primary {
				return fmt.Errorf("sentinel %s names %s as master, want %s", addr, got, primary)
			}
			out, err := redisCLI(ctx, addr, "SENTINEL", "REPLICAS", s.MasterName)
			if err != nil {
				return err
			}
			if !replicaListed(out, replicaPort) {
				return fmt.Errorf("sentinel %s does not know replica %s as healthy:\n%s", addr, replica, out)
			}
			out, err = redisCLI(ctx, addr, "SENTINEL", "SENTINELS", s.MasterName)
			if err != nil {
				return err
			}
			if n := countLines(out, "name"); n != len(s.SentinelAddrs)-1 {
				return fmt.Errorf("sentinel %s knows %d other sentinels, want %d", addr, n, len(s.SentinelAddrs)-1)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// replicaListed reports whether the raw redis-cli output of SENTINEL
// REPLICAS lists a replica on port whose flags are exactly "slave" (not
// down, not disconnected).
func replicaListed(out, port string) bool {
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] != "name" || lines[i+1] != "127.0.0.1:"+port {
			continue
		}
		for j := i + 2; j+1 < len(lines) && lines[j] != "name"; j++ {
			if lines[j] == "flags" {
				return lines[j+1] == "slave"
			}
		}
	}
	return false
}

func countLines(out, want string) int {
	n := 0
	for line := range strings.SplitSeq(out, "\n") {
		if line == want {
			n++
		}
	}
	return n
}

// masterAddr asks the sentinel at addr for the master's address.
func (s *Sentinel) masterAddr(ctx context.Context, addr string) (string, error) {
	out, err := redisCLI(ctx, addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterName)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME replied %q", addr, out)
	}
	return net.JoinHostPort(f[0], f[1]), nil
}

// Client returns a rueidis client that discovers the primary through the
// sentinels (and follows failovers), with client-side caching disabled,
// closed when the test ends.
func (s *Sentinel) Client(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  append([]string(nil), s.SentinelAddrs...),
		DisableCache: true,
		Sentinel:     rueidis.SentinelOption{MasterSet: s.MasterName},
	})
	if err != nil {
		t.Fatalf("testutil: sentinel client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// PauseReplica freezes the current replica's process with SIGSTOP, so it
// stays connected but acknowledges nothing, and returns a function that
// resumes it (SIGCONT). The replica is also resumed when the test ends.
func (s *Sentinel) PauseReplica(t testing.TB) (resume func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := redisCLI(ctx, s.Replica.Addr, "INFO", "server")
	if err != nil {
		t.Fatalf("testutil: pause replica: %v", err)
	}
	pid := 0
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatalf("testutil: pause replica: no process_id in INFO server")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("testutil: pause replica: %v", err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// Failover forces a failover with SENTINEL FAILOVER and waits until every
// sentinel names the former replica as the master and that server reports
// the master role. It then makes the former primary a replica of the new
// one (REPLICAOF, as the sentinels would do a few seconds later
// themselves), waits until it replicates and the sentinels know it as a
// healthy replica, and swaps Primary and Replica. After Failover returns
// the deployment is again one primary with one live replica.
func (s *Sentinel) Failover(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	oldPrimary, newPrimary := s.Primary.Addr, s.Replica.Addr

	err := poll(ctx, func() error { // NOGOODSLAVE while a sentinel's view is stale
		out, err := redisCLI(ctx, s.SentinelAddrs[0], "SENTINEL", "FAILOVER", s.MasterName)
		if err == nil && strings.TrimSpace(out) != "OK" {
			err = fmt.Errorf("SENTINEL FAILOVER replied %q", out)
		}
		return err
	})
	if err != nil {
		t.Fatalf("testutil: sentinel failover: %v", err)
	}
	err = poll(ctx, func() error {
		role, err := redisCLI(ctx, newPrimary, "ROLE")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(role, "master") {
			return fmt.Errorf("%s still has role %q", newPrimary, strings.SplitN(role, "\n", 2)[0])
		}
		for _, addr := range s.SentinelAddrs {
			got, err := s.masterAddr(ctx, addr)
			if err != nil {
				return err
			}
			if got != newPrimary {
				return fmt.Errorf("sentinel %s still names %s as master", addr, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("testutil: sentinel failover to %s: %v", newPrimary, err)
	}

	host, port, _ := net.SplitHostPort(newPrimary)
	if _, err := redisCLI(ctx, oldPrimary, "REPLICAOF", host, port); err != nil {
		t.Fatalf("testutil: sentinel failover: demote %s: %v", oldPrimary, err)
	}
	if err := s.waitReplicating(ctx, newPrimary, oldPrimary); err != nil {
		t.Fatalf("testutil: sentinel failover: %v", err)
	}
	if err := s.waitSentinelsAgree(ctx, newPrimary, oldPrimary); err != nil {
		t.Fatalf("testutil: sentinel failover: %v", err)
	}
	s.Primary, s.Replica = s.Replica, s.Primary
}
