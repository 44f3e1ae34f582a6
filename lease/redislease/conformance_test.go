package redislease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet/fleettest"
	"github.com/cronguard/cronguard/lease/leasetest"
)

// TestStore_Conformance runs the shared lease.Store contract against a
// real redis-server, one unique prefix per subtest.
func TestStore_Conformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	leasetest.Run(t, func(t *testing.T) leasetest.Env {
		return leasetest.Env{Store: srv.store(t), Wait: time.Sleep}
	})
}

// TestStore_CompletionConformance runs the completion records' contract
// against a real redis-server, one unique prefix per subtest.
func TestStore_CompletionConformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	leasetest.RunCompletion(t, func(t *testing.T) leasetest.Env {
		return leasetest.Env{Store: srv.store(t), Wait: time.Sleep}
	})
}

// TestStore_SemaphoreConformance runs the semaphore contract against a
// real redis-server, one unique prefix per subtest.
func TestStore_SemaphoreConformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	leasetest.RunSemaphore(t, func(t *testing.T) leasetest.Env {
		return leasetest.Env{Store: srv.store(t), Wait: time.Sleep}
	})
}

// TestStore_FairConformance runs the fair queue's contract against a real
// redis-server, one unique prefix per subtest.
func TestStore_FairConformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	leasetest.RunFair(t, func(t *testing.T) leasetest.Env {
		return leasetest.Env{Store: srv.store(t), Wait: time.Sleep}
	})
}

// TestStore_FleetConformance runs the control plane's suite against the
// Redis store, each subtest under its own prefix.
func TestStore_FleetConformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	fleettest.Run(t, func(t *testing.T) fleettest.Env {
		st, err := New(srv.client, WithPrefix(uniquePrefix()))
		require.NoError(t, err)
		return fleettest.Env{Store: st, Wait: time.Sleep}
	})
}

// TestStore_BatchConformance runs the batch acquire and round read
// contract against a real redis-server, one unique prefix per subtest.
func TestStore_BatchConformance(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	leasetest.RunBatch(t, func(t *testing.T) leasetest.Env {
		return leasetest.Env{Store: srv.store(t), Wait: time.Sleep}
	})
}
