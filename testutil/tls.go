package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// CA is a throwaway certificate authority made for a test.
type CA struct {
	// Cert is the self-signed CA certificate.
	Cert *x509.Certificate
	// Pool holds Cert alone: a client that trusts exactly this CA.
	Pool *x509.CertPool
	// CertFile is Cert in PEM form, written to a temporary directory.
	CertFile string

	key *ecdsa.PrivateKey
}

// NewCA makes a self-signed ECDSA P-256 CA valid for one day and writes its
// certificate to a temporary file.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testutil: CA key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "cronguard test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testutil: CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testutil: CA certificate: %v", err)
	}
	ca := &CA{Cert: cert, Pool: x509.NewCertPool(), key: key}
	ca.Pool.AddCert(cert)
	ca.CertFile = filepath.Join(t.TempDir(), "ca.crt")
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// ServerCert issues a server certificate for 127.0.0.1 (IP SAN) and
// localhost, signed by ca, and writes the certificate and its private key
// to PEM files in dir. It returns their paths.
func (ca *CA) ServerCert(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testutil: server key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("testutil: server certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testutil: server key: %v", err)
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// TLSRedis is a redis-server started for a test that accepts only TLS
// connections (the plain-text port is disabled).
type TLSRedis struct {
	// Addr is host:port of the TLS port on loopback.
	Addr string
	// Dir is the server's working directory; its certificate and key live
	// here.
	Dir string
	// CA is the authority that signed the server's certificate.
	CA *CA
}

// StartTLSRedis makes a CA and a server certificate for 127.0.0.1 and
// starts redis-server with --port 0 --tls-port <free port> and
// --tls-auth-clients no (clients need not present a certificate). It
// returns once the server answers PING over TLS and stops it when the test
// ends. The test fails, saying why, if redis-server was built without TLS.
func StartTLSRedis(t testing.TB) *TLSRedis {
	t.Helper()
	r := &TLSRedis{Dir: t.TempDir(), CA: NewCA(t)}
	certFile, keyFile := r.CA.ServerCert(t, r.Dir)
	port, err := FreePort()
	if err != nil {
		t.Fatalf("testutil: free port: %v", err)
	}
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{
		"--port", "0",
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", certFile,
		"--tls-key-file", keyFile,
		"--tls-ca-cert-file", r.CA.CertFile,
		"--tls-auth-clients", "no",
		"--bind", "127.0.0.1",
		"--dir", r.Dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--logfile", filepath.Join(r.Dir, "redis.log"),
	}
	cfg := r.TLSConfig()
	startServer(t, r.Dir, "redis.log", args, func() error { return pingTLS(r.Addr, cfg) })
	return r
}

// TLSConfig returns a client TLS configuration that trusts only the
// server's CA.
func (r *TLSRedis) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: r.CA.Pool, MinVersion: tls.VersionTLS12}
}

// URL returns a rediss:// URL for the server, for rueidis.ParseURL. The
// URL does not carry the CA: set ClientOption.TLSConfig.RootCAs to CA.Pool.
func (r *TLSRedis) URL() string { return "rediss://" + r.Addr }

// Client returns a rueidis client that connects over TLS trusting only the
// server's CA, with client-side caching disabled, closed when the test
// ends.
func (r *TLSRedis) Client(t testing.TB) rueidis.Client {
	t.Helper()
	opt, err := rueidis.ParseURL(r.URL())
	if err != nil {
		t.Fatalf("testutil: parse %s: %v", r.URL(), err)
	}
	opt.TLSConfig.RootCAs = r.CA.Pool
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("testutil: TLS redis client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// pingTLS dials addr over TLS with cfg and expects PONG to PING.
func pingTLS(addr string, cfg *tls.Config) error {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	return pingOver(c)
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		t.Fatalf("testutil: certificate serial: %v", err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("testutil: write %s: %v", path, err)
	}
}
