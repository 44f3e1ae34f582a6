package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/fencing"
)

// How an attempt ended decides what its occurrence's record says; a run
// past its timeout failed, whatever it returned (a job that ignores its
// context and returns nil late did not succeed in time: its report says
// timed out, and WithRetry retries it).
func TestEndOf_Classifies(t *testing.T) {
	timedOut := &run{}
	timedOut.timedOut.Store(true)
	for _, tc := range []struct {
		name  string
		r     *run
		end   exit
		cause error
		want  attemptEnd
	}{
		{"nil", &run{}, exit{how: exitReturned}, nil, endSucceeded},
		{"duplicate", &run{}, exit{how: exitReturned, err: fmt.Errorf("write: %w", fencing.ErrDuplicate)}, nil, endSucceeded},
		{"error", &run{}, exit{how: exitReturned, err: errors.New("boom")}, nil, endFailed},
		{"panic", &run{}, exit{how: exitPanicked, err: ErrPanic}, nil, endFailed},
		{"shutdown", &run{}, exit{how: exitReturned, err: ErrShutdown}, ErrShutdown, endInterrupted},
		{"nil after the timeout", timedOut, exit{how: exitReturned}, ErrTimeout, endFailed},
		{"duplicate after the timeout", timedOut, exit{how: exitReturned, err: fencing.ErrDuplicate}, ErrTimeout, endSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, endOf(tc.r, &tc.end, tc.cause))
		})
	}
}
