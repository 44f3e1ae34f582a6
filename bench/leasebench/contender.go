package leasebench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"
)

// ErrContended is what a Contender's Acquire returns when another holder has
// the key. Any other error is a failure and is counted as such.
var ErrContended = errors.New("leasebench: key held by another")

// ErrNoExtend is what Held.Extend returns for a contender that has no
// explicit extend call.
var ErrNoExtend = errors.New("leasebench: contender cannot extend")

// Contender is one lock implementation under test.
type Contender interface {
	// Name is the label printed in tables.
	Name() string
	// Acquire makes one non-waiting attempt to take key for ttl.
	Acquire(ctx context.Context, key string, ttl time.Duration) (Held, error)
	// CanExtend reports whether Held.Extend is supported.
	CanExtend() bool
	// Close releases the contender's clients.
	Close()
}

// Held is a lock a Contender acquired.
type Held interface {
	// Release gives the lock up.
	Release(ctx context.Context) error
	// Extend resets the lock's expiry to ttl from now.
	Extend(ctx context.Context, ttl time.Duration) error
}

// token returns a 16-byte random value, base64url encoded, as the floor's
// ownership token (the same entropy and encoding cronguard uses for IDs).
func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
