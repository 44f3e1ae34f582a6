package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// ClusterNodeTimeout is the cluster-node-timeout of the nodes StartCluster
// starts, in milliseconds.
const ClusterNodeTimeout = 2000

// clusterReadyTimeout bounds how long StartCluster waits for the cluster to
// form and report cluster_state:ok on every node.
const clusterReadyTimeout = 30 * time.Second

// Cluster is a Redis Cluster of primaries only (no replicas), started for a
// test on loopback.
type Cluster struct {
	// Addrs are the host:port addresses of the primaries, in the order they
	// were given to redis-cli --cluster create (which assigns the slot
	// ranges in that order).
	Addrs []string
	// Nodes are the servers behind Addrs, in the same order.
	Nodes []*Redis
}

// StartCluster starts primaries redis-server processes in cluster mode
// (cluster-node-timeout ClusterNodeTimeout ms), each on a free loopback port
// with its own cluster-bus port and temporary directory, joins them with
// redis-cli --cluster create (no replicas), and waits until every node
// reports cluster_state:ok and knows every other node. All processes are
// stopped when the test ends. Redis Cluster needs at least 3 primaries.
//
// The test fails at once, saying how to install it, if redis-server or
// redis-cli is missing.
func StartCluster(t testing.TB, primaries int) *Cluster {
	t.Helper()
	if primaries < 3 {
		t.Fatalf("testutil: StartCluster: a cluster needs at least 3 primaries, got %d", primaries)
	}
	cli := cliBinary(t)
	c := &Cluster{}
	for range primaries {
		// The client port and the cluster-bus port must differ: two
		// calls of FreePort can return the same port.
		ports, err := freePorts(2)
		if err != nil {
			t.Fatalf("testutil: free port: %v", err)
		}
		n := startRedisOn(t, ports[0],
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(ClusterNodeTimeout),
			"--cluster-port", strconv.Itoa(ports[1]),
		)
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("testutil: %s --cluster create %s: %v\n%s", filepath.Base(cli), strings.Join(c.Addrs, " "), err, tail(string(out), 2000))
	}
	if err := c.waitReady(ctx); err != nil {
		t.Fatalf("testutil: cluster %s did not become ready: %v", strings.Join(c.Addrs, " "), err)
	}
	return c
}

// waitReady polls every node until it reports cluster_state:ok and lists
// all the nodes as connected.
func (c *Cluster) waitReady(ctx context.Context) error {
	for _, addr := range c.Addrs {
		err := poll(ctx, func() error {
			info, err := redisCLI(ctx, addr, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster_state is not ok:\n%s", addr, info)
			}
			nodes, err := redisCLI(ctx, addr, "CLUSTER", "NODES")
			if err != nil {
				return err
			}
			if got := strings.Count(nodes, " connected"); got != len(c.Addrs) {
				return fmt.Errorf("%s: sees %d connected nodes, want %d:\n%s", addr, got, len(c.Addrs), nodes)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Client returns a rueidis cluster client seeded with every node's address,
// with client-side caching disabled, closed when the test ends.
func (c *Cluster) Client(t testing.TB) rueidis.Client {
	t.Helper()
	cl, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  append([]string(nil), c.Addrs...),
		DisableCache: true,
	})
	if err != nil {
		t.Fatalf("testutil: cluster client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// NodeClient returns a rueidis client bound to the single node addr (no
// cluster routing, so commands see only that node's keys), with client-side
// caching disabled, closed when the test ends.
func (c *Cluster) NodeClient(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	cl, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{addr},
		DisableCache:      true,
		ForceSingleClient: true,
	})
	if err != nil {
		t.Fatalf("testutil: cluster node client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// SlotRanges returns the inclusive slot ranges the primary at addr serves.
func (c *Cluster) SlotRanges(t testing.TB, addr string) [][2]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ranges, err := c.slotRanges(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	return ranges
}

// NodeOf returns the address of the primary that serves the slot of the
// given Redis key (as CLUSTER KEYSLOT computes it, hash tags included).
func (c *Cluster) NodeOf(t testing.TB, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := redisCLI(ctx, c.Addrs[0], "CLUSTER", "KEYSLOT", key)
	if err != nil {
		t.Fatalf("testutil: CLUSTER KEYSLOT: %v", err)
	}
	slot, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("testutil: CLUSTER KEYSLOT %q replied %q", key, out)
	}
	for _, addr := range c.Addrs {
		ranges, err := c.slotRanges(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ranges {
			if slot >= r[0] && slot <= r[1] {
				return addr
			}
		}
	}
	t.Fatalf("testutil: no node serves slot %d", slot)
	return ""
}

// slotRanges returns the slot ranges addr serves, from its own line of
// CLUSTER NODES ("myself").
func (c *Cluster) slotRanges(ctx context.Context, addr string) ([][2]int, error) {
	out, err := redisCLI(ctx, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 || !strings.Contains(fields[2], "myself") {
			continue
		}
		var ranges [][2]int
		for _, f := range fields[8:] {
			lo, hi, isRange := strings.Cut(f, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil {
				continue // an importing/migrating marker, not a slot range
			}
			ranges = append(ranges, [2]int{a, b})
		}
		return ranges, nil
	}
	return nil, fmt.Errorf("testutil: %s: no myself line in CLUSTER NODES:\n%s", addr, out)
}

// redisCLI runs one command through the command-line client ServerEnv
// chooses (redis-cli by default) against addr and returns its raw output.
// A Redis error reply is returned as an error.
func redisCLI(ctx context.Context, addr string, args ...string) (string, error) {
	srv, err := chosenServer()
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	full := append([]string{"-h", host, "-p", port}, args...)
	out, err := exec.CommandContext(ctx, srv.cli, full...).CombinedOutput()
	s := string(out)
	name := filepath.Base(srv.cli)
	if err != nil {
		return s, fmt.Errorf("%s %s: %w: %s", name, strings.Join(full, " "), err, s)
	}
	if strings.HasPrefix(s, "ERR") || strings.HasPrefix(s, "(error)") {
		return s, fmt.Errorf("%s %s: %s", name, strings.Join(full, " "), strings.TrimSpace(s))
	}
	return s, nil
}

// poll calls check every 50ms until it returns nil or ctx is done, and then
// returns check's last error.
func poll(ctx context.Context, check func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}
