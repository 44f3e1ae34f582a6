package lease_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/lease"
)

func TestUnreadableKeysError_SaysHowManyAndWhy(t *testing.T) {
	why := fmt.Errorf("%w: WRONGTYPE", lease.ErrInternal)
	one := &lease.UnreadableKeysError{Keys: []int{3}, Err: why}
	assert.Equal(t, "key 3 of the read: lease: internal error: WRONGTYPE", one.Error())
	many := &lease.UnreadableKeysError{Keys: []int{3, 7, 9}, Err: why}
	assert.Equal(t, "3 keys of the read, the first key 3: lease: internal error: WRONGTYPE", many.Error())
	assert.ErrorIs(t, fmt.Errorf("last rounds: %w", many), lease.ErrInternal)
}

func TestUnreadKeys(t *testing.T) {
	keys, rest := lease.UnreadKeys(nil)
	assert.Nil(t, keys)
	assert.True(t, rest, "nil: every key read")

	keys, rest = lease.UnreadKeys(fmt.Errorf("x: %w", &lease.UnreadableKeysError{Keys: []int{1, 4}, Err: lease.ErrInternal}))
	assert.Equal(t, []int{1, 4}, keys)
	assert.True(t, rest, "the other keys are read")

	keys, rest = lease.UnreadKeys(errors.Join(lease.ErrUnavailable))
	assert.Nil(t, keys)
	assert.False(t, rest, "any other error: nothing to trust")
}
