package fleet

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/lease"
)

// An UnreadableError reads as its first entry's error, names a few more
// replicas (not thousands), and wraps the cause.
func TestUnreadableError_NamesTheEntries(t *testing.T) {
	cause := fmt.Errorf("%w: the entry of replica %q is not JSON", lease.ErrInternal, "r00")
	one := &UnreadableError{Replicas: []string{"r00"}, Err: cause}
	assert.Equal(t, cause.Error(), one.Error())
	assert.ErrorIs(t, one, lease.ErrInternal)

	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("r%02d", i))
	}
	many := &UnreadableError{Replicas: ids, Err: cause}
	assert.Equal(t, cause.Error()+" (and the entries of 11 more replicas: r01, r02, r03, r04, r05, r06, r07, r08, ...)", many.Error())
	var u *UnreadableError
	assert.True(t, errors.As(fmt.Errorf("read: %w", many), &u))
	assert.Len(t, u.Replicas, 12)
}
