package fencing

import (
	"context"
	"fmt"
	"log/slog"
)

// Token is a fencing token: a number handed out with every successful lease
// acquire, strictly greater than every earlier token for the same lease key.
// Tokens compare as integers; the zero Token is never issued.
type Token uint64

// String returns the token as 15 zero-padded decimal digits, the form in
// which the Redis store keeps it (so that lexical and numeric order agree).
func (t Token) String() string { return fmt.Sprintf("%015d", uint64(t)) }

// LogValue logs a token as a number, so that a "fence" field has one type
// in every log line of every package (slog.LogValuer).
func (t Token) LogValue() slog.Value { return slog.Uint64Value(uint64(t)) }

type tokenKey struct{}

// NewContext returns a copy of ctx that carries t.
func NewContext(ctx context.Context, t Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// FromContext returns the token carried by ctx, and whether there was one.
func FromContext(ctx context.Context) (Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(Token)
	return t, ok
}
