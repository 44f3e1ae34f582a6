package redislease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// ServerTime is the server's TIME: on a server on this machine, within a
// second of the local clock, to the microsecond.
func TestStore_ServerTime_IsTheServersTime(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	store, err := redislease.New(srv.Client(t))
	require.NoError(t, err)
	before := time.Now()
	got, err := store.ServerTime(t.Context())
	require.NoError(t, err)
	assert.WithinDuration(t, before, got, time.Second)
}
