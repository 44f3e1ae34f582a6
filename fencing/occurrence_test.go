package fencing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/fencing"
)

func TestOccurrenceFromContext_RoundTrip(t *testing.T) {
	_, ok := fencing.OccurrenceFromContext(context.Background())
	assert.False(t, ok, "a plain context carries no occurrence")

	ctx := fencing.NewOccurrenceContext(t.Context(), occ)
	got, ok := fencing.OccurrenceFromContext(ctx)
	assert.True(t, ok)
	assert.True(t, occ.Equal(got))

	next := occ.Add(time.Hour)
	inner := fencing.NewOccurrenceContext(fencing.NewContext(ctx, 8), next)
	got, _ = fencing.OccurrenceFromContext(inner)
	assert.True(t, next.Equal(got), "the innermost occurrence wins")
	token, ok := fencing.FromContext(inner)
	assert.True(t, ok, "the token and the occurrence live side by side")
	assert.Equal(t, fencing.Token(8), token)

	_, ok = fencing.FromContext(fencing.NewOccurrenceContext(t.Context(), occ))
	assert.False(t, ok, "an occurrence is not a token")
}
