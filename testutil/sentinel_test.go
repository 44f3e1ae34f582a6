package testutil

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSentinel_Failover_ClientFollowsNewPrimary(t *testing.T) {
	s := StartSentinel(t)
	require.Len(t, s.SentinelAddrs, 3)
	assert.Equal(t, SentinelMasterName, s.MasterName)
	ctx := t.Context()
	oldPrimary, oldReplica := s.Primary.Addr, s.Replica.Addr

	client := s.Client(t)
	require.NoError(t, client.Do(ctx, client.B().Set().Key("before").Value("1").Build()).Error())

	s.Failover(t)
	assert.Equal(t, oldReplica, s.Primary.Addr, "Failover swaps Primary and Replica")
	assert.Equal(t, oldPrimary, s.Replica.Addr)
	role, err := redisCLI(ctx, s.Primary.Addr, "ROLE")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(role, "master"), "new primary role: %q", role)
	role, err = redisCLI(ctx, s.Replica.Addr, "ROLE")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(role, "slave"), "old primary role: %q", role)

	// The client learns of the switch from the sentinels; until it does,
	// writes may fail (READONLY or connection errors). Bound the wait.
	require.Eventually(t, func() bool {
		return client.Do(ctx, client.B().Set().Key("after").Value("2").Build()).Error() == nil
	}, 10*time.Second, 50*time.Millisecond)
	got, err := client.Do(ctx, client.B().Get().Key("before").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", got, "the write made before the failover survived it")
}
