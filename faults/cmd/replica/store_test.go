package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const prefix = "job:"

// recorded returns a recording store over a memory store and a function
// that returns what it recorded so far.
func recorded(t *testing.T) (*recordingStore, func() []history.Event) {
	t.Helper()
	inner, err := memory.New()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	hist, err := history.Create(path, "r1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = hist.Close() })
	return newRecordingStore(inner, hist, prefix), func() []history.Event {
		evs, err := history.ReadFile(path)
		require.NoError(t, err)
		return evs
	}
}

// TestRecordingStore_Attempts: a resume is recorded as an acquire of its
// round with its attempt, a release with what it did to the occurrence,
// and a resume that finds no attempt left as given_up, first.
func TestRecordingStore_Attempts(t *testing.T) {
	s, read := recorded(t)
	ctx := t.Context()
	policy := lease.Attempts{Max: 2, Deadline: time.Now().Add(time.Hour)}
	l1, err := s.Acquire(ctx, prefix+"nightly", time.Minute, lease.WithRound(10000), lease.WithAttempts(policy))
	require.NoError(t, err)
	_, err = s.ReleaseWithStatus(ctx, l1, fleet.Status{Close: fleet.CloseOpen})
	require.NoError(t, err)
	l2, err := s.Acquire(ctx, prefix+"nightly", time.Minute, lease.WithResume(10000))
	require.NoError(t, err)
	_, err = s.ReleaseWithStatus(ctx, l2, fleet.Status{Close: fleet.CloseOpen})
	require.NoError(t, err)
	_, err = s.Acquire(ctx, prefix+"nightly", time.Minute, lease.WithResume(10000))
	require.ErrorIs(t, err, lease.ErrGivenUp)

	evs := read()
	require.Len(t, evs, 5)
	for _, e := range evs {
		assert.Equal(t, "nightly", e.Job)
		assert.Equal(t, int64(10000), e.Occurrence, "%s", e.Kind)
	}
	assert.Equal(t, history.Acquire, evs[0].Kind)
	assert.Equal(t, 1, evs[0].Attempt)
	assert.Equal(t, history.Release, evs[1].Kind)
	assert.Equal(t, history.CloseOpen, evs[1].Close)
	assert.Equal(t, history.Acquire, evs[2].Kind)
	assert.Equal(t, 2, evs[2].Attempt)
	assert.Greater(t, evs[2].Fence, evs[0].Fence)
	assert.Equal(t, history.CloseOpen, evs[3].Close)
	assert.Equal(t, history.AcquireError, evs[4].Kind)
	assert.Equal(t, history.AcquireGivenUp, evs[4].Reason)
	assert.True(t, evs[4].First)
	assert.Equal(t, 2, evs[4].Attempt)
}

// TestRecordingStore_GivenUpMarks: the store's marks of an occurrence given
// up are recorded where the replica learns them: on the acquire that
// superseded it, and on a GiveUp that marked it; a release of a lease
// without completion record says nothing of the occurrence.
func TestRecordingStore_GivenUpMarks(t *testing.T) {
	s, read := recorded(t)
	ctx := t.Context()
	policy := func(max int) lease.Attempts { return lease.Attempts{Max: max, Deadline: time.Now().Add(time.Hour)} }
	l, err := s.Acquire(ctx, prefix+"a", time.Minute, lease.WithRound(10000), lease.WithAttempts(policy(3)))
	require.NoError(t, err)
	_, err = s.ReleaseWithStatus(ctx, l, fleet.Status{Close: fleet.CloseOpen})
	require.NoError(t, err)
	l, err = s.Acquire(ctx, prefix+"a", time.Minute, lease.WithRound(20000), lease.WithAttempts(policy(3)))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	l, err = s.Acquire(ctx, prefix+"b", time.Minute, lease.WithRound(10000), lease.WithAttempts(policy(1)))
	require.NoError(t, err)
	_, err = s.ReleaseWithStatus(ctx, l, fleet.Status{Close: fleet.CloseOpen})
	require.NoError(t, err)
	first, err := s.GiveUp(ctx, prefix+"b", 10000)
	require.NoError(t, err)
	require.True(t, first)
	first, err = s.GiveUp(ctx, prefix+"b", 10000)
	require.NoError(t, err)
	require.False(t, first)

	l, err = s.Acquire(ctx, prefix+"c", time.Minute, lease.WithRound(10000))
	require.NoError(t, err)
	_, err = s.ReleaseWithStatus(ctx, l, fleet.Status{})
	require.NoError(t, err)

	evs := read()
	require.Len(t, evs, 9)
	assert.Equal(t, history.Acquire, evs[2].Kind)
	assert.Equal(t, int64(20000), evs[2].Occurrence)
	assert.Equal(t, int64(10000), evs[2].Superseded)
	assert.Equal(t, history.Release, evs[3].Kind)
	assert.Empty(t, evs[3].Close, "a plain release")
	assert.Equal(t, history.GiveUpMarked, evs[6].Kind, "once")
	assert.Equal(t, "b", evs[6].Job)
	assert.Equal(t, int64(10000), evs[6].Occurrence)
	assert.Equal(t, history.Release, evs[8].Kind)
	assert.Empty(t, evs[8].Close, "no completion record")
}

// TestRecordingStore_Acquire_InvalidIsNoLostReply: an acquire refused
// before any I/O is recorded as invalid, not as an error whose outcome is
// unknown (which the checker lets explain a miss).
func TestRecordingStore_Acquire_InvalidIsNoLostReply(t *testing.T) {
	s, read := recorded(t)
	_, err := s.Acquire(t.Context(), prefix+"a", -time.Second)
	require.ErrorIs(t, err, lease.ErrInvalidArgument)
	evs := read()
	require.Len(t, evs, 1)
	assert.Equal(t, history.AcquireError, evs[0].Kind)
	assert.Equal(t, history.AcquireInvalid, evs[0].Reason)
}
