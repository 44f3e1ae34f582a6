package redislease

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/testutil"
)

// TestStore_TLS runs the Store over TLS (rediss://) against a
// redis-server that only accepts TLS, with a CA made in the test.
func TestStore_TLS(t *testing.T) {
	t.Parallel()
	srv := testutil.StartTLSRedis(t)

	t.Run("Lifecycle", func(t *testing.T) {
		ctx := t.Context()
		opt, err := rueidis.ParseURL(srv.URL())
		require.NoError(t, err)
		opt.TLSConfig.RootCAs = srv.CA.Pool
		opt.DisableCache = true
		client, err := rueidis.NewClient(opt)
		require.NoError(t, err)
		t.Cleanup(client.Close)
		st, err := New(client, WithPrefix(uniquePrefix()))
		require.NoError(t, err)

		l, err := st.Acquire(ctx, "report", 2*time.Second)
		require.NoError(t, err)
		_, err = st.Acquire(ctx, "report", 2*time.Second)
		require.ErrorIs(t, err, lease.ErrLocked)
		info, err := st.LookupID(ctx, l.ID)
		require.NoError(t, err)
		assert.Equal(t, l.Fence, info.Fence)
		exp, err := l.Extend(ctx, 5*time.Second)
		require.NoError(t, err)
		assert.True(t, exp.After(l.ExpiresAt))
		require.NoError(t, l.Release(ctx))
		locked, err := st.IsLocked(ctx, "report")
		require.NoError(t, err)
		assert.False(t, locked)
	})

	t.Run("WrongCA", func(t *testing.T) {
		wrong := &tls.Config{RootCAs: testutil.NewCA(t).Pool, MinVersion: tls.VersionTLS12}

		// rueidis dials at construction: the client is never made.
		_, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr}, DisableCache: true, TLSConfig: wrong,
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate signed by unknown authority")

		// With ForceSingleClient rueidis returns the client anyway, and
		// every command fails the handshake again: the Store reports it
		// as ErrAuth (the server was not authenticated; retrying will not
		// help), naming the certificate problem.
		client, _ := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr}, DisableCache: true, TLSConfig: wrong, ForceSingleClient: true,
		})
		require.NotNil(t, client)
		t.Cleanup(client.Close)
		st, err := New(client, WithPrefix(uniquePrefix()))
		require.NoError(t, err)
		_, err = st.Acquire(t.Context(), "report", time.Second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate signed by unknown authority")
		var verr *tls.CertificateVerificationError
		assert.True(t, errors.As(err, &verr), "the TLS verification error is wrapped: %v", err)
		assert.ErrorIs(t, err, lease.ErrAuth)
		assert.NotErrorIs(t, err, lease.ErrInternal)
	})
}
