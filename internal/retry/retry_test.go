package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/lease"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDo_RetriesTransientUntilSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		var waits []time.Duration
		n, err := Do(t.Context(), func(context.Context) error {
			calls++
			if calls < 4 {
				return fmt.Errorf("%w: connection reset", lease.ErrUnavailable)
			}
			return nil
		}, func(_ error, w time.Duration) { waits = append(waits, w) })
		require.NoError(t, err)
		assert.Equal(t, 4, n)
		require.Len(t, waits, 3)
		for _, w := range waits {
			assert.Positive(t, w)
			assert.LessOrEqual(t, w, Max*3/2)
		}
	})
}

func TestDo_StopsAtAnAnswer(t *testing.T) {
	for name, answer := range map[string]error{
		"not held": &lease.NotHeldError{Op: "release", Reason: lease.ReasonNotFound},
		"auth":     fmt.Errorf("%w: NOPERM", lease.ErrAuth),
		"internal": fmt.Errorf("%w: bad reply", lease.ErrInternal),
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			n, err := Do(t.Context(), func(context.Context) error { calls++; return answer }, nil)
			assert.Equal(t, 1, n)
			assert.Equal(t, 1, calls)
			assert.Same(t, answer, err)
		})
	}
}

func TestDo_BoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		unavailable := fmt.Errorf("%w: EOF", lease.ErrUnavailable)
		start := time.Now()
		n, err := Do(ctx, func(context.Context) error { return unavailable }, nil)
		assert.ErrorIs(t, err, lease.ErrUnavailable, "the last error of the operation, not the context's")
		assert.Greater(t, n, 2)
		assert.LessOrEqual(t, time.Since(start), time.Second+Max, "gives up once the context ends")
		assert.True(t, errors.Is(ctx.Err(), context.DeadlineExceeded))
	})
}
