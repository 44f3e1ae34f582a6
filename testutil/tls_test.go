package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartTLSRedis_ClientTrustingCA_SetGet(t *testing.T) {
	r := StartTLSRedis(t)
	ctx := t.Context()

	c := r.Client(t)
	require.NoError(t, c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error())
	got, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", got)

	// The plain-text port is off: a TLS handshake is the only way in, and a
	// plain PING on the TLS port gets no PONG.
	assert.Error(t, ping(r.Addr))
}

func TestStartTLSRedis_WrongCA_UnknownAuthority(t *testing.T) {
	r := StartTLSRedis(t)
	other := NewCA(t)

	_, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{r.Addr},
		DisableCache: true,
		TLSConfig:    &tls.Config{RootCAs: other.Pool, MinVersion: tls.VersionTLS12},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
}

func TestCA_ServerCert_VerifiesFor127001(t *testing.T) {
	ca := NewCA(t)
	certFile, keyFile := ca.ServerCert(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	require.NotNil(t, pair.Leaf)
	_, err = pair.Leaf.Verify(x509VerifyOptions(ca, "127.0.0.1"))
	assert.NoError(t, err)
	assert.True(t, pair.Leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)))
	_, err = pair.Leaf.Verify(x509VerifyOptions(NewCA(t), "127.0.0.1"))
	assert.Error(t, err, "a certificate from another CA must not verify")
}

func x509VerifyOptions(ca *CA, host string) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: ca.Pool, DNSName: host}
}
