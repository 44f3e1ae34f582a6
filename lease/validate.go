package lease

import (
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Limits on user input.
const (
	// MaxKeyBytes is the longest key accepted, in bytes after NFC
	// normalization.
	MaxKeyBytes = 512
	// MaxTTL is the longest TTL accepted. Leases are for work measured in
	// seconds to hours; longer work belongs in a workflow engine.
	MaxTTL = 7 * 24 * time.Hour
)

// NormalizeKey returns key in Unicode NFC form after checking the key rules:
// valid UTF-8, non-empty, at most MaxKeyBytes bytes after normalization. Any
// other content (colons, slashes, braces, emoji) is allowed. Keys that are
// canonically equivalent name the same lease.
func NormalizeKey(key string) (string, error) {
	if key == "" {
		return "", invalid("key must not be empty")
	}
	if isASCII(key) {
		// ASCII is valid UTF-8 and already in NFC: the common case, on
		// every acquire, without the normalizer's rune-by-rune check.
		if len(key) > MaxKeyBytes {
			return "", invalid("key must be at most %d bytes after NFC normalization, got %d", MaxKeyBytes, len(key))
		}
		return key, nil
	}
	if !utf8.ValidString(key) {
		return "", invalid("key must be valid UTF-8")
	}
	n := norm.NFC.String(key)
	if len(n) > MaxKeyBytes {
		return "", invalid("key must be at most %d bytes after NFC normalization, got %d", MaxKeyBytes, len(n))
	}
	return n, nil
}

// isASCII reports whether s holds only bytes below 0x80.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// ValidateTTL checks that ttl is a positive whole number of milliseconds, at
// most MaxTTL.
func ValidateTTL(ttl time.Duration) error {
	switch {
	case ttl <= 0:
		return invalid("ttl must be positive, got %s", ttl)
	case ttl%time.Millisecond != 0:
		return invalid("ttl must be a whole number of milliseconds, got %s", ttl)
	case ttl > MaxTTL:
		return invalid("ttl must be at most %s, got %s", MaxTTL, ttl)
	}
	return nil
}

// ShortID returns "…" followed by the last 6 characters of an ID: enough
// to tell leases apart in logs (36 random bits) without revealing the ID.
// The last characters are used because a store may encode routing in the
// first ones (lease/redislease puts the cluster slot there).
func ShortID(id string) string {
	if len(id) <= 6 {
		return id
	}
	return "…" + id[len(id)-6:]
}
