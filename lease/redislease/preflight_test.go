package redislease

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/testutil"
)

// preflightLog runs the first acquire of a store on srv (through client c)
// and returns the store's log.
func preflightLog(t *testing.T, srv *testutil.Redis, user string) string {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := srv.Client(t)
	if user != "" {
		c = aclUser(t, srv.Client(t), srv.Addr, user, aclRules("~cronguard:*", aclCommands))
	}
	st, err := New(c, WithLogger(log), WithPrefix("cronguard:"+uniquePrefix()))
	require.NoError(t, err)
	for range 2 {
		l, err := st.Acquire(t.Context(), "k", time.Second)
		require.NoError(t, err, "the check never fails an operation")
		require.NoError(t, l.Release(t.Context()))
	}
	return buf.String()
}

func TestStore_Preflight(t *testing.T) {
	t.Parallel()
	t.Run("no AOF", func(t *testing.T) {
		logs := preflightLog(t, testutil.StartRedis(t), "")
		assert.Contains(t, logs, "level=WARN")
		assert.Contains(t, logs, "setting=appendonly")
		assert.NotContains(t, logs, "maxmemory-policy")
		assert.Equal(t, 1, bytes.Count([]byte(logs), []byte("setting=appendonly")), "checked once")
	})
	t.Run("evicting policy", func(t *testing.T) {
		logs := preflightLog(t, testutil.StartRedis(t, "--appendonly", "yes", "--maxmemory-policy", "allkeys-lru"), "")
		assert.Contains(t, logs, "setting=maxmemory-policy value=allkeys-lru")
		assert.NotContains(t, logs, "setting=appendonly")
	})
	t.Run("safe settings", func(t *testing.T) {
		logs := preflightLog(t, testutil.StartRedis(t, "--appendonly", "yes", "--maxmemory-policy", "volatile-lru"), "")
		assert.NotContains(t, logs, "level=WARN")
	})
	t.Run("CONFIG GET refused", func(t *testing.T) {
		logs := preflightLog(t, testutil.StartRedis(t), "cg-preflight")
		assert.NotContains(t, logs, "level=WARN")
		assert.Contains(t, logs, "level=DEBUG")
		assert.Contains(t, logs, "could not check the server's configuration")
	})
}
