package leasekit

import (
	"strings"
	"unicode/utf8"
)

// Reserved namespace names: a prefix must not end with one of them, or its
// lease data could collide with another prefix's fence, round, ID index,
// pause, trigger, status, history, fleet, semaphore or queue keys.
var reservedSegments = []string{"fence", "round", "id", "pause", "trigger", "status", "history", "fleet", "sem", "queue"}

// NormalizePrefix strips trailing colons from prefix and checks the prefix
// rules: non-empty, at most 128 bytes, no braces (they would change the
// Redis Cluster hash tag), no whitespace or control characters, and no
// reserved last segment (fence, round, id, pause, trigger, status,
// history, fleet, sem, queue) that would let lease data of this prefix overlap a namespace
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

// DefaultPrefix is the key prefix of a store that was given none
// (redislease.DefaultPrefix).
const DefaultPrefix = "cronguard"
