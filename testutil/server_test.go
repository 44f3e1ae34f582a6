package testutil

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChosenServer_EnvValues(t *testing.T) {
	tests := []struct {
		env     string
		bin     string
		cli     string
		wantErr bool
	}{
		{env: "", bin: "redis-server", cli: "redis-cli"},
		{env: "redis", bin: "redis-server", cli: "redis-cli"},
		{env: "valkey", bin: "valkey-server", cli: "valkey-cli"},
		{env: "/opt/valkey/bin/valkey-server", bin: "/opt/valkey/bin/valkey-server", cli: "/opt/valkey/bin/valkey-cli"},
		{env: "./redis-7.4/src/redis-server", bin: "./redis-7.4/src/redis-server", cli: "redis-7.4/src/redis-cli"},
		{env: "keydb", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(ServerEnv, tt.env)
			got, err := chosenServer()
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), ServerEnv)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.bin, got.bin)
			assert.Equal(t, tt.cli, got.cli)
		})
	}
}

func TestChosenServer_ValkeyMissing_HintSaysHowToInstall(t *testing.T) {
	t.Setenv(ServerEnv, "valkey")
	got, err := chosenServer()
	require.NoError(t, err)
	assert.Contains(t, got.binHint, "bookworm-backports")
	assert.Contains(t, got.binHint, "unset "+ServerEnv)
}

// TestStartRedis_ChosenServer_Answers checks that StartRedis starts the
// server ServerEnv chooses: Valkey answers INFO server with valkey_version.
func TestStartRedis_ChosenServer_Answers(t *testing.T) {
	srv := StartRedis(t)
	c := srv.Client(t)
	info, err := c.Do(t.Context(), c.B().Info().Section("server").Build()).ToString()
	require.NoError(t, err)
	wantValkey := os.Getenv(ServerEnv) == "valkey"
	assert.Equal(t, wantValkey, strings.Contains(info, "valkey_version:"), "INFO server:\n%s", info)
}

func TestFreePorts_Distinct(t *testing.T) {
	for range 20 {
		ports, err := freePorts(8)
		require.NoError(t, err)
		seen := map[int]bool{}
		for _, p := range ports {
			assert.False(t, seen[p], "port %d twice in %v", p, ports)
			seen[p] = true
		}
	}
}
