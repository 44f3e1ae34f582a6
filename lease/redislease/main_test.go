package redislease

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain checks for leaked goroutines. Every rueidis client is closed by
// its test's cleanup, which stops the client's background goroutines. Two
// rueidis goroutines outlive Close by design: after a failed dial,
// (*call).DelayDo sleeps out its reconnect back-off before it exits (the
// connection-refused tests start one; ignored), and after a cluster
// topology refresh, (*clusterClient)._refresh sleeps 5s before it closes
// the dropped connections (the cluster tests start one; waited for).
//
// The tests that start their own servers run in parallel, up to four per
// CPU: they wait for TTLs and servers far more than they compute
// (testutil.RaiseParallel).
func TestMain(m *testing.M) {
	testutil.MustRaiseParallel(4)
	testutil.VerifyTestMain(m)
}

// server is one redis-server and a client on it, for one top-level test.
type server struct {
	redis  *testutil.Redis
	client rueidis.Client
}

func startServer(t *testing.T, args ...string) server {
	t.Helper()
	r := testutil.StartRedis(t, args...)
	return server{redis: r, client: r.Client(t)}
}

var prefixSeq atomic.Int64

// uniquePrefix returns a key prefix no other test in this process uses.
func uniquePrefix() string {
	return fmt.Sprintf("test%d", prefixSeq.Add(1))
}

// store returns a Store on the server under a unique prefix.
func (s server) store(t *testing.T, opts ...Option) *Store {
	t.Helper()
	st, err := New(s.client, append([]Option{WithPrefix(uniquePrefix())}, opts...)...)
	require.NoError(t, err)
	return st
}
