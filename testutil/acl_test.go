package testutil_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/testutil"
)

func TestACL_SetUserAndDenials(t *testing.T) {
	srv := testutil.StartRedis(t)
	admin := srv.Client(t)
	testutil.SetACLUser(t, admin, "reader", "on", ">secret", "resetkeys", "~k*", "-@all", "+get")
	testutil.SetACLUser(t, admin, "reader", "on", ">secret", "resetkeys", "~k*", "-@all", "+get") // replaces
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, Username: "reader", Password: "secret"})
	require.NoError(t, err)
	defer c.Close()
	require.True(t, rueidis.IsRedisNil(c.Do(t.Context(), c.B().Get().Key("k1").Build()).Error()), "GET is granted")
	require.Error(t, c.Do(t.Context(), c.B().Set().Key("k1").Value("v").Build()).Error(), "SET is not")
	require.Error(t, c.Do(t.Context(), c.B().Get().Key("other").Build()).Error(), "nor the key")
	// rueidis's probes at connect (CLUSTER SLOTS or SHARDS, CLIENT SETINFO)
	// are refused harmlessly and left out.
	assert.ElementsMatch(t, []string{"set", "other"}, testutil.ACLDenials(t, admin, "reader"))
	assert.Equal(t, []string{"other"}, testutil.ACLDenials(t, admin, "reader", "set"))
	assert.Empty(t, testutil.ACLDenials(t, admin, "nobody"))
}
