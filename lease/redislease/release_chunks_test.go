package redislease

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// releaseCase is a lease in a given state and the status it is released
// with: what TestStore_ReleaseBatch_AnswersAndWritesAsRelease compares.
// setup acquires key on st, puts it in the case's state and returns the
// lease and the status.
type releaseCase struct {
	name  string
	setup func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status)
}

// releaseCases covers both shapes of release (without attempts, with
// them: done, open, given up) and every answer of release_status.lua.
func releaseCases() []releaseCase {
	ttl := time.Minute
	deadline := time.Now().Add(time.Hour) // the same in both prefixes' records
	do := func(t *testing.T, st *Store, cmd rueidis.Completed) {
		t.Helper()
		require.NoError(t, st.client.Do(t.Context(), cmd).Error())
	}
	keys := func(t *testing.T, st *Store, key string) keyset {
		t.Helper()
		ks, err := keysFor(st.prefix, key)
		require.NoError(t, err)
		return ks
	}
	status := func(l *lease.Lease, outcome string) fleet.Status {
		// Nothing of the lease's own (fence, times): the two prefixes'
		// statuses compare equal.
		return fleet.Status{Occurrence: time.UnixMilli(l.Round), Owner: l.Owner, Replica: "r1", Attempt: l.Attempt, Fence: 7,
			Started: time.UnixMilli(5000), Duration: 10 * time.Millisecond, Outcome: outcome}
	}
	plain := func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status) {
		t.Helper()
		l, err := st.Acquire(t.Context(), key, ttl, lease.WithRound(1000), lease.WithOwner("r1/"+key))
		require.NoError(t, err)
		return l, status(l, fleet.OutcomeSucceeded)
	}
	attempts := func(close fleet.CloseKind, retry time.Duration) func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status) {
		return func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status) {
			t.Helper()
			l, err := st.Acquire(t.Context(), key, ttl, lease.WithRound(2000), lease.WithOwner("r1/"+key),
				lease.WithAttempts(lease.Attempts{Max: 3, Deadline: deadline}))
			require.NoError(t, err)
			s := status(l, fleet.OutcomeFailed)
			s.Close, s.RetryAfter = close, retry
			return l, s
		}
	}
	then := func(first func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status), after func(t *testing.T, st *Store, key string, l *lease.Lease)) func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status) {
		return func(t *testing.T, st *Store, key string) (*lease.Lease, fleet.Status) {
			t.Helper()
			l, s := first(t, st, key)
			after(t, st, key, l)
			return l, s
		}
	}
	return []releaseCase{
		{name: "held", setup: plain},
		{name: "held, triggers wait", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			for range 2 {
				_, err := st.AddTrigger(t.Context(), key, "ops", time.Minute)
				require.NoError(t, err)
			}
		})},
		{name: "held, the history trimmed", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			most, err := strconv.Atoi(st.historyMost)
			require.NoError(t, err)
			for i := range most {
				do(t, st, st.client.B().Rpush().Key(keys(t, st, key).history(st.prefix)).Element("old-"+strconv.Itoa(i)).Build())
			}
		})},
		{name: "held, the history of another type", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			do(t, st, st.client.B().Set().Key(keys(t, st, key).history(st.prefix)).Value("x").Build())
		})},
		{name: "held, the trigger queue of another type", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			do(t, st, st.client.B().Set().Key(keys(t, st, key).trigger(st.prefix)).Value("x").Build())
		})},
		{name: "released", setup: then(plain, func(t *testing.T, st *Store, _ string, l *lease.Lease) {
			require.NoError(t, st.Release(t.Context(), l.ID))
		})},
		{name: "expired", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			do(t, st, st.client.B().Del().Key(keys(t, st, key).data).Build())
		})},
		{name: "taken by another", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			do(t, st, st.client.B().Del().Key(keys(t, st, key).data).Build())
			_, err := st.Acquire(t.Context(), key, ttl, lease.WithOwner("r2/"+key))
			require.NoError(t, err)
		})},
		{name: "record unreadable", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			do(t, st, st.client.B().Set().Key(keys(t, st, key).data).Value("garbage").Build())
		})},
		{name: "index names another key", setup: then(plain, func(t *testing.T, st *Store, key string, l *lease.Lease) {
			// The record moved under another key, which the index names:
			// the release by ID that follows releases it there.
			ik, _ := indexKey(st.prefix, l.ID)
			data := keys(t, st, key).data
			rec, err := st.client.Do(t.Context(), st.client.B().Get().Key(data).Build()).ToString()
			require.NoError(t, err)
			elsewhere := st.prefix + ":{elsewhere-" + key + "}"
			do(t, st, st.client.B().Set().Key(elsewhere).Value(rec).Build())
			do(t, st, st.client.B().Del().Key(data).Build())
			do(t, st, st.client.B().Set().Key(ik).Value(elsewhere).Build())
		})},
		{name: "lease key of another type", setup: then(plain, func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			ks := keys(t, st, key)
			do(t, st, st.client.B().Del().Key(ks.data).Build())
			do(t, st, st.client.B().Rpush().Key(ks.data).Element("x").Build())
		})},
		{name: "index key of another type", setup: then(plain, func(t *testing.T, st *Store, key string, l *lease.Lease) {
			ik, _ := indexKey(st.prefix, l.ID)
			do(t, st, st.client.B().Del().Key(keys(t, st, key).data, ik).Build())
			do(t, st, st.client.B().Rpush().Key(ik).Element("x").Build())
		})},
		{name: "attempts, done", setup: attempts(fleet.CloseDone, 0)},
		{name: "attempts, open", setup: attempts(fleet.CloseOpen, 0)},
		{name: "attempts, open after a backoff", setup: attempts(fleet.CloseOpen, 30*time.Second)},
		{name: "attempts, given up", setup: attempts(fleet.CloseGivenUp, 0)},
		{name: "attempts, lost", setup: then(attempts(fleet.CloseOpen, 0), func(t *testing.T, st *Store, key string, _ *lease.Lease) {
			_, err := st.ForceRelease(t.Context(), key)
			require.NoError(t, err)
		})},
	}
}

// TestStore_ReleaseBatch_AnswersAndWritesAsRelease: ReleaseWithStatusBatch,
// which makes its releases with release_batch.lua, answers and writes each
// release as ReleaseWithStatus (release_status.lua) does. Every case is set
// up under two prefixes of one server; one releases each lease with
// ReleaseWithStatus, the other all of them in one ReleaseWithStatusBatch.
// The answers (triggers, error class, why not held) and what each left
// behind (record, ID index, status, history, completion record, trigger
// queue, index of open occurrences) must agree.
//
// Each of five rounds puts the cases in another order, so that each shape
// and answer comes at other places of its call, and the shapes alternate
// differently (a call per run of one shape).
func TestStore_ReleaseBatch_AnswersAndWritesAsRelease(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for round := range 5 {
		cases := releaseCases()
		if round > 0 {
			rand.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
		}
		t.Run("order "+strconv.Itoa(round), func(t *testing.T) { testReleaseBatchAgainstRelease(t, srv, cases) })
	}
}

func testReleaseBatchAgainstRelease(t *testing.T, srv server, cases []releaseCase) {
	ctx := t.Context()
	one, batch := srv.store(t, WithHistoryLimit(2)), srv.store(t, WithHistoryLimit(2))
	leases := make([]*lease.Lease, len(cases))
	sts := make([]fleet.Status, len(cases))
	oneLeases := make([]*lease.Lease, len(cases))
	oneSts := make([]fleet.Status, len(cases))
	for i, c := range cases {
		key := "case-" + strconv.Itoa(i)
		oneLeases[i], oneSts[i] = c.setup(t, one, key)
		leases[i], sts[i] = c.setup(t, batch, key)
	}
	chunks := 0
	for i := range leases {
		if i == 0 || (leases[i].Attempts.Max > 0) != (leases[i-1].Attempts.Max > 0) {
			chunks++
		}
	}
	before := commandCalls(t, batch, "mget")
	triggers := make([]int, len(cases))
	errs := make([]error, len(cases))
	batch.ReleaseWithStatusBatch(ctx, leases, sts, triggers, errs)
	batchCalls := commandCalls(t, batch, "mget") - before
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := one.ReleaseWithStatus(ctx, oneLeases[i], oneSts[i])
			berr := errs[i]
			assert.Equal(t, n, triggers[i], "triggers")
			require.Equal(t, err == nil, berr == nil, "ReleaseWithStatus: %v; ReleaseWithStatusBatch: %v", err, berr)
			assert.Equal(t, lease.Class(err), lease.Class(berr), "ReleaseWithStatus: %v; ReleaseWithStatusBatch: %v", err, berr)
			var nh, bnh *lease.NotHeldError
			if errors.As(err, &nh) && assert.ErrorAs(t, berr, &bnh) {
				assert.Equal(t, nh.Reason, bnh.Reason, "why not held")
			}
			assertSameRelease(t, one, batch, "case-"+strconv.Itoa(i), oneLeases[i], leases[i])
		})
	}
	// Each run of one shape is one call of the script, which reads the
	// records with one MGET (the single releases and their follow-ups use
	// none).
	assert.EqualValues(t, chunks, batchCalls, "calls of release_batch.lua (MGETs) for the batch")
}

// commandCalls returns the calls of cmd the server has counted.
func commandCalls(t *testing.T, st *Store, cmd string) int64 {
	t.Helper()
	info, err := st.client.Do(t.Context(), st.client.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

// recordTime matches the time field of a completion record (the next
// attempt's earliest start, on the server's clock), which two releases a
// few ms apart write differently.
var recordTime = regexp.MustCompile(`^(\d+\|\d+\|[a-z]\|)(\d*)(\|.*)$`)

// assertSameRelease compares what the two releases of key left behind.
func assertSameRelease(t *testing.T, one, batch *Store, key string, l, bl *lease.Lease) {
	t.Helper()
	ctx := t.Context()
	get := func(st *Store, name string) (string, bool) {
		v, err := st.client.Do(ctx, st.client.B().Get().Key(name).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "", false
		}
		if err != nil {
			return "WRONGTYPE", true
		}
		return v, true
	}
	both := func(name func(st *Store, ks keyset) string) (a, b string, aok, bok bool) {
		aks, err := keysFor(one.prefix, key)
		require.NoError(t, err)
		bks, err := keysFor(batch.prefix, key)
		require.NoError(t, err)
		a, aok = get(one, name(one, aks))
		b, bok = get(batch, name(batch, bks))
		return a, b, aok, bok
	}
	// The record: its existence (a new holder's record has its own ID).
	_, _, aok, bok := both(func(_ *Store, ks keyset) string { return ks.data })
	assert.Equal(t, aok, bok, "record exists")
	ai, _ := indexKey(one.prefix, l.ID)
	bi, _ := indexKey(batch.prefix, bl.ID)
	an, err := one.client.Do(ctx, one.client.B().Exists().Key(ai).Build()).AsInt64()
	require.NoError(t, err)
	bn, err := batch.client.Do(ctx, batch.client.B().Exists().Key(bi).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, an, bn, "the ID index exists")

	a, b, aok, bok := both(func(st *Store, ks keyset) string { return ks.status(st.prefix) })
	assert.Equal(t, aok, bok, "status exists")
	assert.Equal(t, a, b, "status")

	a, b, aok, bok = both(func(st *Store, ks keyset) string { return ks.attempt(st.prefix) })
	assert.Equal(t, aok, bok, "completion record exists")
	am, bm := recordTime.FindStringSubmatch(a), recordTime.FindStringSubmatch(b)
	if am != nil && bm != nil {
		assert.Equal(t, am[1]+am[3], bm[1]+bm[3], "completion record")
		at, _ := strconv.ParseInt(am[2], 10, 64)
		bt, _ := strconv.ParseInt(bm[2], 10, 64)
		assert.InDelta(t, at, bt, float64(5*time.Second/time.Millisecond), "completion record's time")
	} else {
		assert.Equal(t, a, b, "completion record")
	}

	lrange := func(st *Store, name string) []string {
		v, err := st.client.Do(ctx, st.client.B().Lrange().Key(name).Start(0).Stop(-1).Build()).AsStrSlice()
		if err != nil {
			s, _ := get(st, name)
			return []string{"not a list: " + s}
		}
		return v
	}
	aks, _ := keysFor(one.prefix, key)
	bks, _ := keysFor(batch.prefix, key)
	assert.Equal(t, lrange(one, aks.history(one.prefix)), lrange(batch, bks.history(batch.prefix)), "history")
	assert.Equal(t, len(lrange(one, aks.trigger(one.prefix))), len(lrange(batch, bks.trigger(batch.prefix))), "trigger queue")
	assert.Equal(t, len(dueOf(t, one, key)), len(dueOf(t, batch, key)), "index of open occurrences")
}

// dueOf returns the entries of the index of open occurrences for key.
func dueOf(t *testing.T, st *Store, key string) []fleet.Due {
	t.Helper()
	due, err := st.DueOccurrences(t.Context(), 1000)
	require.NoError(t, err)
	var out []fleet.Due
	for _, d := range due {
		if d.Key == key {
			out = append(out, d)
		}
	}
	return out
}

// A batch that names one lease key twice is cut in two calls.
func TestStore_ReleaseBatch_KeyTwiceIsTwoCalls(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	a, err := st.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	b, err := st.Acquire(ctx, "b", time.Minute)
	require.NoError(t, err)
	leases := []*lease.Lease{a, b, a}
	sts := make([]fleet.Status, len(leases))
	var calls []releaseCall
	for i, l := range leases {
		sts[i] = fleet.Status{Outcome: fleet.OutcomeSucceeded}
		c, ok := st.batchable(i, l, sts[i])
		require.True(t, ok)
		calls = append(calls, c)
	}
	chunks := chunkReleases(calls)
	require.Len(t, chunks, 2)
	assert.Equal(t, [2]int{0, 2}, [2]int{chunks[0].from, chunks[0].to})
	assert.Equal(t, [2]int{2, 3}, [2]int{chunks[1].from, chunks[1].to})

	triggers := make([]int, len(leases))
	errs := make([]error, len(leases))
	st.ReleaseWithStatusBatch(ctx, leases, sts, triggers, errs)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	var nh *lease.NotHeldError
	require.ErrorAs(t, errs[2], &nh, "the second release of a finds it released by the first")
	assert.Equal(t, lease.ReasonNotFound, nh.Reason)
}

// The script itself refuses a call that names a lease key twice, before it
// writes anything: its one read of every record would not see the first
// release's writes.
func TestReleaseBatchScript_RefusesAKeyTwice(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	l, err := st.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	var calls []releaseCall
	for range 2 {
		c, ok := st.batchable(0, l, fleet.Status{Outcome: fleet.OutcomeSucceeded})
		require.True(t, ok)
		calls = append(calls, c)
	}
	ch := releaseChunk{from: 0, to: 2}
	for _, c := range calls {
		ch.keys = append(ch.keys, c.keys...)
		ch.args = append(ch.args, c.args[:2]...)
	}
	err = st.client.Do(ctx, st.evalReleaseBatch("", luascripts.ReleaseBatch, ch)).Error()
	require.ErrorContains(t, err, "lease key given twice")
	held, err := st.IsLocked(ctx, "a")
	require.NoError(t, err)
	assert.True(t, held, "nothing was written")
}
