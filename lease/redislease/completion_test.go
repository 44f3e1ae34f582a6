package redislease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// acquireWithAttempts acquires round of key with max attempts and a
// deadline an hour away.
func acquireWithAttempts(t *testing.T, st *Store, key string, round int64, max int) *lease.Lease {
	t.Helper()
	l, err := st.Acquire(t.Context(), key, time.Second, lease.WithRound(round),
		lease.WithAttempts(lease.Attempts{Max: max, Deadline: time.Now().Add(time.Hour)}))
	require.NoError(t, err)
	return l
}

// TestStore_ReleaseWithStatus_IndexAfterScriptFlush: the release with
// attempts sends its script and the index command in one pipeline; after
// a SCRIPT FLUSH it sends both again (built anew: rueidis recycles a sent
// command), and the connection's replies stay in step.
func TestStore_ReleaseWithStatus_IndexAfterScriptFlush(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	l := acquireWithAttempts(t, st, "job", 1, 2)
	require.NoError(t, srv.client.Do(ctx, srv.client.B().ScriptFlush().Build()).Error())
	_, err := st.ReleaseWithStatus(ctx, l, fleet.Status{Close: fleet.CloseOpen})
	require.NoError(t, err)
	for range 3 {
		due, err := st.DueOccurrences(ctx, 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		assert.Equal(t, "job", due[0].Key)
	}
	rec, err := srv.client.Do(ctx, srv.client.B().Get().Key(tagged(st.prefix, "attempt", "job")).Build()).ToString()
	require.NoError(t, err)
	c, err := parseCompletionRecord(rec)
	require.NoError(t, err)
	assert.Equal(t, byte('o'), c.State)
	assert.Equal(t, 1, c.Attempt)
}

// TestStore_Acquire_ResumeRolledBack: a resume whose reply is lost is
// rolled back: the lease released and the record open again at the
// attempt before, so the next resume is the same attempt.
func TestStore_Acquire_ResumeRolledBack(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t, WithLogger(quietLogger()))
	ctx := t.Context()
	l := acquireWithAttempts(t, st, "job", 7, 3)
	require.NoError(t, l.Release(ctx))
	ks, err := keysFor(st.prefix, "job")
	require.NoError(t, err)
	r, err := st.Acquire(ctx, "job", time.Second, lease.WithResume(7))
	require.NoError(t, err)
	require.Equal(t, 2, r.Attempt)
	ik, _ := indexKey(st.prefix, r.ID)
	st.rollback(ctx, ks, ik, r.ID, 0, 7, time.Second, "job")

	locked, err := st.IsLocked(ctx, "job")
	require.NoError(t, err)
	assert.False(t, locked, "the rolled-back resume's lease is released")
	again, err := st.Acquire(ctx, "job", time.Second, lease.WithResume(7))
	require.NoError(t, err, "a rolled-back resume leaves the occurrence resumable")
	assert.Equal(t, 2, again.Attempt, "and uses no attempt")
	assert.Greater(t, again.Fence, r.Fence, "fences never go back")
	require.NoError(t, again.Release(ctx))
	round, err := srv.client.Do(ctx, srv.client.B().Get().Key(ks.round).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "7", round, "the round record is left alone")
}

// TestStore_Acquire_UnreadableCompletionRecord: a record that is not this
// store's answers lease.ErrInternal, never a panic or a guess.
func TestStore_Acquire_UnreadableCompletionRecord(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	l := acquireWithAttempts(t, st, "job", 7, 3)
	require.NoError(t, l.Release(ctx))
	key := tagged(st.prefix, "attempt", "job")
	for _, bad := range []string{"7|1|x|0|1|3", "7|1|r", "garbage", "7|1|r|0|1|3|extra"} {
		require.NoError(t, srv.client.Do(ctx, srv.client.B().Set().Key(key).Value(bad).Build()).Error())
		_, err := st.Acquire(ctx, "job", time.Second, lease.WithResume(7))
		require.ErrorIs(t, err, lease.ErrInternal, "record %q", bad)
		_, err = st.GiveUp(ctx, "job", 7)
		require.ErrorIs(t, err, lease.ErrInternal, "record %q", bad)
	}
}

func TestParseCompletionRecord_Valid(t *testing.T) {
	c, err := parseCompletionRecord("1700000000000|2|o|1700000005000|1700003600000|3")
	require.NoError(t, err)
	assert.Equal(t, completionRecord{Round: 1700000000000, Attempt: 2, State: 'o', NotBeforeMs: 1700000005000, DeadlineMs: 1700003600000, Max: 3}, c)
	assert.Equal(t, "1700000000000|2|o|1700000005000|1700003600000|3", c.String())
}

func TestParseCompletionRecord_Invalid(t *testing.T) {
	for _, bad := range []string{
		"", "|||||", "1|1|r|0|1", "1|1|r|0|1|1|1", "1|1|x|0|1|1", "1|1|rr|0|1|1", "0|1|r|0|1|1",
		"1|0|r|0|1|1", "1|3|r|0|1|2", "1|1|r|0|1|0", "1|1|r|0|1|10001", "-1|1|r|0|1|1", "1|1|r|-5|1|1",
		"1|1|r|0|1|1 ", "+1|1|r|0|1|1", "1|1|r|0|99999999999999999999|1", "1|1|r|0|9007199254740993|1",
	} {
		_, err := parseCompletionRecord(bad)
		assert.ErrorIs(t, err, lease.ErrInternal, "%q", bad)
	}
}

func FuzzParseCompletionRecord(f *testing.F) {
	for _, s := range []string{"1700000000000|2|o|1700000005000|1700003600000|3", "1|1|r|0|1|1", "", "|", "1|1|g|0|1|1|", "\xff|1|d|0|1|1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCompletionRecord(s)
		if err != nil {
			if !errors.Is(err, lease.ErrInternal) {
				t.Fatalf("parseCompletionRecord(%q): %v does not wrap lease.ErrInternal", s, err)
			}
			return
		}
		if c.String() != s {
			t.Fatalf("parseCompletionRecord(%q) = %+v, which reads back as %q", s, c, c.String())
		}
		if c.Attempt < 1 || c.Attempt > c.Max || c.Max > lease.MaxAttempts || !strings.ContainsRune("rodg", rune(c.State)) {
			t.Fatalf("parseCompletionRecord(%q) = %+v: out of range", s, c)
		}
	})
}

func FuzzParseDueMember(f *testing.F) {
	for _, s := range []string{"1:2:job", "1700000000000:1700003600000:job:a:b", "", "::", "1::job", "a:1:job", "1:2:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, round, dl, ok := parseDueMember(s)
		if !ok {
			return
		}
		if round <= 0 || dl <= 0 || key == "" {
			t.Fatalf("parseDueMember(%q) = %q, %d, %d: accepted out of range", s, key, round, dl)
		}
		if got := dueMember(key, round, dl); got != s {
			t.Fatalf("parseDueMember(%q) reads back as %q", s, got)
		}
	})
}

func TestParseDue_SkipsForeignMembers(t *testing.T) {
	got := parseDue([]string{"5:9:job", "1000", "junk", "1", "6:9:other", "nan", "7:9:k", "2000", "dangling"})
	require.Len(t, got, 2)
	assert.Equal(t, fleet.Due{Key: "job", Round: 5, Deadline: time.UnixMilli(9), At: time.UnixMilli(1000)}, got[0])
	assert.Equal(t, "k", got[1].Key)
}

// TestStore_Acquire_ResumeWaitsForReplicas: with WithReplicaAck a resume
// waits for the replicas like any acquire, and one they did not
// acknowledge is rolled back, its attempt unused.
func TestStore_Acquire_ResumeWaitsForReplicas(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	prefix := uniquePrefix()
	st, err := New(srv.client, WithPrefix(prefix), WithLogger(quietLogger()))
	require.NoError(t, err)
	acked, err := New(srv.client, WithPrefix(prefix), WithLogger(quietLogger()), WithReplicaAck(1, 50*time.Millisecond))
	require.NoError(t, err)
	ctx := t.Context()
	l := acquireWithAttempts(t, st, "job", 3, 3)
	require.NoError(t, l.Release(ctx))

	_, err = acked.Acquire(ctx, "job", time.Second, lease.WithResume(3))
	require.ErrorIs(t, err, lease.ErrUnavailable, "no replica acknowledges on a lone server")
	r, err := st.Acquire(ctx, "job", time.Second, lease.WithResume(3))
	require.NoError(t, err, "the unacknowledged resume was rolled back")
	assert.Equal(t, 2, r.Attempt, "and used no attempt")
	require.NoError(t, r.Release(ctx))
}
