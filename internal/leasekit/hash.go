package leasekit

import (
	"crypto/sha256"
	"encoding/base64"
)

// Hash returns base64url(SHA-256(s)[:16]), 22 characters: the form in which
// keys and IDs are shown (Info) and long keys are stored.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
