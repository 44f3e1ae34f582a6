package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartRedis_ClientPing(t *testing.T) {
	srv := StartRedis(t)
	c := srv.Client(t)
	got, err := c.Do(t.Context(), c.B().Ping().Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "PONG", got)
	assert.Positive(t, srv.PID())
}

func TestRedis_Stop_RefusesConnectionsAndIsIdempotent(t *testing.T) {
	srv := StartRedis(t)
	srv.Stop()
	srv.Stop()
	assert.Zero(t, srv.PID())
	assert.Error(t, ping(srv.Addr))
}

func TestRedis_Pause_StallsUntilResume(t *testing.T) {
	srv := StartRedis(t)
	c := srv.Client(t)
	require.NoError(t, c.Do(t.Context(), c.B().Set().Key("k").Value("v").Build()).Error())

	srv.Pause()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	err := c.Do(ctx, c.B().Get().Key("k").Build()).Error()
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a paused server must not answer")

	srv.Resume()
	got, err := c.Do(t.Context(), c.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

func TestRedis_Restart(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantKept bool
	}{
		{name: "AOFAlwaysKeepsAcknowledgedWrites", args: []string{"--appendonly", "yes", "--appendfsync", "always"}, wantKept: true},
		{name: "DefaultsKeepNothing", args: nil, wantKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := StartRedis(t, tt.args...)
			addr, pid := srv.Addr, srv.PID()
			before := srv.Client(t)
			require.NoError(t, before.Do(t.Context(), before.B().Set().Key("fence").Value("7").Build()).Error())

			srv.Restart()

			assert.Equal(t, addr, srv.Addr, "Restart must keep the port")
			assert.NotEqual(t, pid, srv.PID(), "Restart must start a new process")
			after := srv.Client(t)
			got, err := after.Do(t.Context(), after.B().Get().Key("fence").Build()).ToString()
			if tt.wantKept {
				require.NoError(t, err)
				assert.Equal(t, "7", got)
			} else {
				assert.True(t, rueidis.IsRedisNil(err), "want nil reply, got %q, %v", got, err)
			}
		})
	}
}

func TestRedis_Restart_ResumesPausedServer(t *testing.T) {
	srv := StartRedis(t)
	srv.Pause()
	srv.Restart()
	require.NoError(t, ping(srv.Addr))
}

func TestRedis_Start_PortTakenByAnotherServerFails(t *testing.T) {
	other := StartRedis(t)
	r := &Redis{t: t, Dir: t.TempDir(), Addr: other.Addr, bin: serverBinary(t)}
	t.Cleanup(r.Stop)

	err := r.start()

	require.Error(t, err, "a server answering on the port that is not ours must be detected")
	assert.Contains(t, err.Error(), "another process")
	assert.ErrorIs(t, err, errPortTaken, "StartRedis tries another port")
	assert.Zero(t, r.PID())
}
