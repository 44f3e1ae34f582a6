package leasekit

import (
	"crypto/rand"
	"encoding/base64"
)

// IDLen is the length of a lease ID: 16 bytes, base64url, no padding.
const IDLen = 22

// NewID returns a fresh lease ID: 16 bytes from crypto/rand, base64url
// encoded without padding (IDLen characters).
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidateID checks that id has the form of a lease ID: exactly IDLen
// characters of [A-Za-z0-9_-].
func ValidateID(id string) error {
	if len(id) != IDLen {
		return invalid("lease id must be %d characters, got %d", IDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if !isIDChar(id[i]) {
			return invalid("lease id must contain only [A-Za-z0-9_-], found %q at %d", id[i], i)
		}
	}
	return nil
}

func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
