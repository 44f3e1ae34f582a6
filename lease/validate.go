package lease

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
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
	// IDLen is the length of a lease ID: 16 bytes, base64url, no padding.
	IDLen = 22
	// DefaultPrefix is the default key prefix for stored leases.
	DefaultPrefix = "cronguard"
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

// NewID returns a fresh lease ID: 16 bytes from crypto/rand, base64url
// encoded without padding (IDLen characters).
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ShortID returns "…" followed by the last 6 characters of an ID: enough
// to tell leases apart in logs (36 random bits) without revealing the ID.
// The last characters are used because a store may encode routing in the
// first ones (lease/redis puts the cluster slot there).
func ShortID(id string) string {
	if len(id) <= 6 {
		return id
	}
	return "…" + id[len(id)-6:]
}

// Hash returns base64url(SHA-256(s)[:16]), 22 characters: the form in which
// keys and IDs are shown (Info) and long keys are stored.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// Reserved namespace names: a prefix must not end with one of them, or its
// lease data could collide with another prefix's fence, round, ID index,
// pause, trigger, status, fleet, semaphore or queue keys.
var reservedSegments = []string{"fence", "round", "id", "pause", "trigger", "status", "fleet", "sem", "queue"}

// NormalizePrefix strips trailing colons from prefix and checks the prefix
// rules: non-empty, at most 128 bytes, no braces (they would change the
// Redis Cluster hash tag), no whitespace or control characters, and no
// reserved last segment (fence, round, id, pause, trigger, status, fleet,
// sem, queue) that would let lease data of this prefix overlap a namespace
// of another.
func NormalizePrefix(prefix string) (string, error) {
	p := strings.TrimRight(prefix, ":")
	if p == "" {
		return "", invalid("key prefix must not be empty")
	}
	if len(p) > 128 {
		return "", invalid("key prefix must be at most 128 bytes, got %d", len(p))
	}
	if !utf8.ValidString(p) {
		return "", invalid("key prefix must be valid UTF-8")
	}
	for _, r := range p {
		switch {
		case r == '{' || r == '}':
			return "", invalid("key prefix must not contain braces, got %q", prefix)
		case r <= ' ' || r == 0x7f:
			return "", invalid("key prefix must not contain whitespace or control characters, got %q", prefix)
		}
	}
	last := p[strings.LastIndexByte(p, ':')+1:]
	for _, s := range reservedSegments {
		if last == s {
			return "", invalid("key prefix must not end with the reserved segment %q (it would overlap the %s namespace)", s, s)
		}
	}
	return p, nil
}

// Storage-key budget defaults (see StorageKey).
const (
	StorageKeyBudget  = 1000 // bytes a storage key may take in all
	StorageKeyReserve = 26   // bytes kept free for namespaces and hash tags
)

// StorageKey derives the storage key for a normalized user key:
// "prefix:key" when len(prefix)+1+len(key)+reserve <= budget, else
// "prefix:" followed by Hash("prefix:key") (22 characters). Trailing colons
// of prefix are stripped. It fails with ErrInvalidArgument when even the
// hashed form does not fit the budget.
func StorageKey(prefix, key string, budget, reserve int) (string, error) {
	p := strings.TrimRight(prefix, ":")
	full := p + ":" + key
	if len(full)+reserve <= budget {
		return full, nil
	}
	hashed := p + ":" + Hash(full)
	if len(hashed)+reserve > budget {
		return "", invalid("storage key does not fit in %d bytes even hashed (prefix is %d bytes, reserve %d)", budget, len(p), reserve)
	}
	return hashed, nil
}
