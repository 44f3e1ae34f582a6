package fencing_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/fencing"
)

func TestToken_String(t *testing.T) {
	cases := []struct {
		token fencing.Token
		want  string
	}{
		{1, "000000000000001"},
		{42, "000000000000042"},
		{900000000000000, "900000000000000"},
		{math.MaxUint64, "18446744073709551615"}, // wider than 15 digits: never shortened
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.token.String())
	}
}

func TestFromContext_RoundTrip(t *testing.T) {
	_, ok := fencing.FromContext(context.Background())
	assert.False(t, ok, "a plain context carries no token")

	ctx := fencing.NewContext(t.Context(), 7)
	got, ok := fencing.FromContext(ctx)
	assert.True(t, ok)
	assert.Equal(t, fencing.Token(7), got)

	inner := fencing.NewContext(ctx, 8)
	got, _ = fencing.FromContext(inner)
	assert.Equal(t, fencing.Token(8), got, "the innermost token wins")
}
