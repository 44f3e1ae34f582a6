package redis

import (
	"testing"
	"time"

	"github.com/cronguard/cronguard/lease/leasetest"
)

// TestStore_Conformance runs the shared lease.Store contract against a
// real redis-server, one unique prefix per subtest.
func TestStore_Conformance(t *testing.T) {
	srv := startServer(t)
	leasetest.Run(t, func(t *testing.T) leasetest.Env {
		return leasetest.Env{Store: srv.store(t), Wait: time.Sleep}
	})
}
