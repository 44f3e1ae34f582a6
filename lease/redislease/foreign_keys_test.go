package redislease

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// TestStore_ReleaseWithStatus_ForeignHistoryOrTriggerKey: a job's history
// or trigger key that holds another type (written by hand, or by another
// program under the same prefix) does not keep a release from ending its
// attempt. The release records the run's end in the completion record and
// the status, and answers like any other; only the history entry is left
// out. Before, the script failed at the LPUSH (or the LLEN) after it had
// deleted the lease, so the completion record still said "running" with
// no holder: the occurrence was resumed and ran twice.
func TestStore_ReleaseWithStatus_ForeignHistoryOrTriggerKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	b := srv.client.B()
	foreign := map[string]func(ks keyset, prefix string) rueidis.Completed{
		"history holds a string": func(ks keyset, prefix string) rueidis.Completed {
			return b.Set().Key(ks.history(prefix)).Value("not a list").Build()
		},
		"history holds a hash": func(ks keyset, prefix string) rueidis.Completed {
			return b.Hset().Key(ks.history(prefix)).FieldValue().FieldValue("a", "b").Build()
		},
		"trigger queue holds a string": func(ks keyset, prefix string) rueidis.Completed {
			return b.Set().Key(ks.trigger(prefix)).Value("not a list").Build()
		},
	}
	for name, write := range foreign {
		for _, batch := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: ", batch"}[batch], func(t *testing.T) {
				var logs bytes.Buffer
				st := srv.store(t, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				ks, err := keysFor(st.prefix, "job")
				require.NoError(t, err)
				require.NoError(t, srv.client.Do(ctx, write(ks, st.prefix)).Error())
				const round = 7
				l := acquireWithAttempts(t, st, "job", round, 3)
				stat := fleet.Status{Occurrence: time.UnixMilli(round), Owner: "me", Attempt: 1, Fence: l.Fence,
					Started: l.AcquiredAt, Outcome: "succeeded", Close: fleet.CloseDone}
				var n int
				if batch {
					ns, errs := make([]int, 1), make([]error, 1)
					st.ReleaseWithStatusBatch(ctx, []*lease.Lease{l}, []fleet.Status{stat}, ns, errs)
					n, err = ns[0], errs[0]
				} else {
					n, err = st.ReleaseWithStatus(ctx, l, stat)
				}
				require.NoError(t, err, "the release ends the attempt")
				assert.Zero(t, n, "no trigger waits")

				locked, err := st.IsLocked(ctx, "job")
				require.NoError(t, err)
				assert.False(t, locked, "the lease is released")
				rec, err := srv.client.Do(ctx, b.Get().Key(ks.attempt(st.prefix)).Build()).ToString()
				require.NoError(t, err)
				c, err := parseCompletionRecord(rec)
				require.NoError(t, err)
				assert.Equal(t, byte('d'), c.State, "the completion record says done: %s", rec)
				last, ok, err := st.LastStatus(ctx, "job")
				require.NoError(t, err)
				require.True(t, ok, "the status is recorded")
				assert.Equal(t, "succeeded", last.Outcome)

				_, err = st.Acquire(ctx, "job", time.Second, lease.WithResume(round))
				assert.Error(t, err, "a done occurrence is not resumed")
				due, err := st.DueOccurrences(ctx, 10)
				require.NoError(t, err)
				assert.Empty(t, due, "nothing is left to resume")

				typ, err := srv.client.Do(ctx, b.Type().Key(ks.history(st.prefix)).Build()).ToString()
				require.NoError(t, err)
				if name == "history holds a hash" {
					assert.Equal(t, "hash", typ, "the foreign key is left as it was")
				}
				if name == "trigger queue holds a string" {
					assert.Equal(t, "list", typ, "the run is in its history")
					assert.NotContains(t, logs.String(), "history")
				} else {
					assert.Contains(t, logs.String(), "the run is not in its history", "the release warns")
					assert.Contains(t, logs.String(), "job=job")
				}
			})
		}
	}
}

// TestStore_Resume_ForeignHistoryKey: an attempt whose holder died is
// resumed, and an occurrence with no attempt left is given up, though the
// job's history key holds another type: only their history entries are
// left out. Before, the scripts failed at their LPUSH, so the occurrence
// was never resumed (every resume failed alike) until its deadline.
func TestStore_Resume_ForeignHistoryKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	b := srv.client.B()
	st := srv.store(t, WithLogger(quietLogger()))
	ks, err := keysFor(st.prefix, "job")
	require.NoError(t, err)
	require.NoError(t, srv.client.Do(ctx, b.Set().Key(ks.history(st.prefix)).Value("not a list").Build()).Error())
	deadline := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	// Attempt 1 of 2 of round 7 running, its holder gone (no lease).
	running := func() {
		require.NoError(t, srv.client.Do(ctx, b.Mset().KeyValue().KeyValue(ks.round, "7").
			KeyValue(ks.attempt(st.prefix), "7|1|r|0|"+deadline+"|2").Build()).Error())
	}

	running()
	l, err := st.Acquire(ctx, "job", time.Second, lease.WithResume(7))
	require.NoError(t, err, "the dead holder's attempt is resumed")
	assert.Equal(t, 2, l.Attempt)
	require.NoError(t, l.Release(ctx))

	running()
	require.NoError(t, srv.client.Do(ctx, b.Set().Key(ks.attempt(st.prefix)).Value("7|2|r|0|"+deadline+"|2").Build()).Error())
	gaveUp, err := st.GiveUp(ctx, "job", 7)
	require.NoError(t, err, "an occurrence with no attempt left is given up")
	assert.True(t, gaveUp)
	rec, err := srv.client.Do(ctx, b.Get().Key(ks.attempt(st.prefix)).Build()).ToString()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rec, "7|2|g|"), "the record says given up: %s", rec)
	typ, err := srv.client.Do(ctx, b.Type().Key(ks.history(st.prefix)).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "string", typ, "the foreign key is left as it was")
}

// TestStore_BatchReads_AForeignKeyIsLeftOut: the reads of many keys
// (LastRounds, LastRuns, PendingTriggersBatch) answer every key they can
// read, and name the others in a *lease.UnreadableKeysError that wraps
// lease.ErrInternal: a value not in this store's form, or of another type
// where the read says so (LLEN; the MGET of LastRounds and LastRuns reads
// a key of another type as absent, as the acquire does).
func TestStore_BatchReads_AForeignKeyIsLeftOut(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	b := srv.client.B()
	st := srv.store(t, WithLogger(quietLogger()))
	set := func(c rueidis.Completed) { require.NoError(t, srv.client.Do(ctx, c).Error()) }
	ksOf := func(key string) keyset {
		ks, err := keysFor(st.prefix, key)
		require.NoError(t, err)
		return ks
	}
	// "good" has a round, a run and a trigger; "fresh" nothing; "wrong"
	// keys of another type; "garbage" strings not in this store's form.
	l, err := st.Acquire(ctx, "good", time.Second, lease.WithRound(5))
	require.NoError(t, err)
	_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{Occurrence: time.UnixMilli(5), Owner: "me", Fence: l.Fence,
		Started: l.AcquiredAt, Duration: time.Second, Outcome: "succeeded"})
	require.NoError(t, err)
	_, err = st.AddTrigger(ctx, "good", "ops", time.Minute)
	require.NoError(t, err)
	wrong, garbage := ksOf("wrong"), ksOf("garbage")
	set(b.Hset().Key(wrong.round).FieldValue().FieldValue("a", "b").Build())
	set(b.Rpush().Key(wrong.status(st.prefix)).Element("x").Build())
	set(b.Set().Key(wrong.trigger(st.prefix)).Value("x").Build())
	set(b.Set().Key(garbage.round).Value("soon").Build())
	set(b.Set().Key(garbage.status(st.prefix)).Value("not JSON").Build())

	keys := []string{"good", "wrong", "fresh", "garbage"}
	unreadable := func(t *testing.T, err error, want []int) {
		t.Helper()
		var ue *lease.UnreadableKeysError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, want, ue.Keys)
		assert.ErrorIs(t, err, lease.ErrInternal)
		unread, rest := lease.UnreadKeys(err)
		assert.True(t, rest, "the other keys are read")
		assert.Equal(t, want, unread)
	}

	rounds := []int64{-1, -1, -1, -1}
	err = st.LastRounds(ctx, keys, rounds)
	unreadable(t, err, []int{3})
	assert.Equal(t, []int64{5, 0, 0, 0}, rounds)

	spans := make([]lease.RunSpan, 4)
	err = st.LastRuns(ctx, keys, spans)
	unreadable(t, err, []int{3})
	assert.Equal(t, time.Second, spans[0].End.Sub(spans[0].Start), "the good key's run is read")
	for _, i := range []int{1, 2, 3} {
		assert.Zero(t, spans[i], "key %d", i)
	}

	counts := []int{-1, -1, -1, -1}
	err = st.PendingTriggersBatch(ctx, keys, counts)
	unreadable(t, err, []int{1})
	assert.Equal(t, []int{1, 0, 0, 0}, counts)

	// Without a foreign key, no error.
	require.NoError(t, st.LastRounds(ctx, []string{"good", "fresh"}, rounds[:2]))
	require.NoError(t, st.PendingTriggersBatch(ctx, []string{"good", "fresh"}, counts[:2]))
}
