package memory_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func TestWithHistoryLimit_Validates(t *testing.T) {
	for _, n := range []int{0, -1, fleet.MaxHistoryLimit + 1} {
		_, err := memory.New(memory.WithHistoryLimit(n))
		assert.True(t, errors.Is(err, lease.ErrInvalidArgument), "%d: %v", n, err)
		assert.ErrorContains(t, err, "n must be from 1 to 10000")
	}
	s, err := memory.New()
	require.NoError(t, err)
	assert.Equal(t, fleet.DefaultHistoryLimit, s.HistoryLimit())
	s, err = memory.New(memory.WithHistoryLimit(7))
	require.NoError(t, err)
	assert.Equal(t, 7, s.HistoryLimit())
}
