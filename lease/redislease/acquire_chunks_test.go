package redislease

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// acquireCase is a key in a given state and an acquire of it: what
// TestStore_AcquireBatch_AnswersAndWritesAsAcquire compares.
type acquireCase struct {
	name  string
	setup func(t *testing.T, st *Store, key string) // the key's state before the acquire
	opts  func(now time.Time) []lease.AcquireOption
}

// acquireCases covers every shape of acquire (plain, round, round with
// the pause check, with attempts) and every answer of the acquire script.
func acquireCases() []acquireCase {
	setupAt := time.Now() // the same state under both prefixes
	set := func(t *testing.T, st *Store, key string, name func(keyset) string, value string) {
		t.Helper()
		ks, err := keysFor(st.prefix, key)
		require.NoError(t, err)
		require.NoError(t, st.client.Do(t.Context(), st.client.B().Set().Key(name(ks)).Value(value).Build()).Error())
	}
	round := func(now time.Time, d time.Duration) int64 { return now.Add(d).UnixMilli() }
	attempts := func(now time.Time) lease.Attempts {
		return lease.Attempts{Max: 3, Deadline: now.Add(time.Minute)}
	}
	held := func(t *testing.T, st *Store, key string) {
		t.Helper()
		_, err := st.Acquire(t.Context(), key, time.Minute)
		require.NoError(t, err)
	}
	return []acquireCase{
		{name: "plain, free", opts: func(time.Time) []lease.AcquireOption { return nil }},
		{name: "plain, held", setup: held, opts: func(time.Time) []lease.AcquireOption { return nil }},
		{name: "round, free", opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "round, after an older one", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.round }, "1000")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0)), lease.WithOwner("r1/job")}
		}},
		{name: "round, claimed", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.round }, strconv.FormatInt(round(setupAt, time.Hour), 10))
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "round, held", setup: held, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "round, too far ahead", opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now.Add(time.Hour), time.Second)}
		}},
		{name: "round and pause check, not paused", opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now, time.Second), lease.WithPauseCheck()}
		}},
		{name: "round and pause check, paused", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.pause(st.prefix) }, `{"by":"ops"}`)
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now, time.Second), lease.WithPauseCheck()}
		}},
		{name: "round and pause check, paused after an earlier round", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.round }, "1000")
			set(t, st, key, func(ks keyset) string { return ks.pause(st.prefix) }, "1700000000000\nops\n")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now, time.Second), lease.WithPauseCheck()}
		}},
		{name: "attempts, free", opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now, time.Second), lease.WithPauseCheck(), lease.WithAttempts(attempts(now))}
		}},
		{name: "attempts, superseding an open occurrence", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.round }, "1000")
			set(t, st, key, func(ks keyset) string { return ks.attempt(st.prefix) }, "1000|2|o|0|9999999999999|3")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now, time.Second), lease.WithAttempts(attempts(now))}
		}},
		{name: "attempts, paused", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.pause(st.prefix) }, `{"by":"ops"}`)
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRoundTime(now, time.Second), lease.WithPauseCheck(), lease.WithAttempts(attempts(now))}
		}},
		{name: "a fence counter behind the clock's floor", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.fence }, "7")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "a fence counter ahead of the clock's floor", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.fence }, strconv.FormatInt(setupAt.Add(time.Hour).UnixMilli()*100, 10))
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "an unreadable fence counter", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.fence }, "not a number")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "an unreadable round record", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.round }, "x")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "an unreadable record", setup: func(t *testing.T, st *Store, key string) {
			set(t, st, key, func(ks keyset) string { return ks.data }, "someone else's value")
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
		{name: "a lease key of another type", setup: func(t *testing.T, st *Store, key string) {
			ks, err := keysFor(st.prefix, key)
			require.NoError(t, err)
			require.NoError(t, st.client.Do(t.Context(), st.client.B().Rpush().Key(ks.data).Element("x").Build()).Error())
		}, opts: func(now time.Time) []lease.AcquireOption {
			return []lease.AcquireOption{lease.WithRound(round(now, 0))}
		}},
	}
}

// The batch script answers every acquire as the acquire script does, and
// leaves the same keys behind: each case runs on a key of its own under
// two prefixes, one acquired with Acquire, the other with all the cases
// in one AcquireBatch (several calls of acquire_batch.lua, one per shape),
// and the answers (error class, round, previous round, superseded
// attempt, attempts) and the keys' values (round, completion record,
// pause; the record's, the fence counter's and the index's existence)
// must agree.
//
// Each of five rounds puts the cases in another order, so that each shape
// and answer comes at other places of its call.
func TestStore_AcquireBatch_AnswersAndWritesAsAcquire(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for round := range 5 {
		cases := acquireCases()
		if round > 0 {
			rand.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
		}
		t.Run("order "+strconv.Itoa(round), func(t *testing.T) { testBatchAgainstAcquire(t, srv, cases) })
	}
}

func testBatchAgainstAcquire(t *testing.T, srv server, cases []acquireCase) {
	ctx := t.Context()
	one, batch := srv.store(t), srv.store(t)
	now := time.Now()
	reqs := make([]lease.AcquireRequest, len(cases))
	for i, c := range cases {
		key := "case-" + strconv.Itoa(i)
		if c.setup != nil {
			c.setup(t, one, key)
			c.setup(t, batch, key)
		}
		reqs[i] = lease.AcquireRequest{Key: key, TTL: time.Minute, Options: c.opts(now)}
	}
	res := make([]lease.AcquireResult, len(reqs))
	batch.AcquireBatch(ctx, reqs, res)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := one.Acquire(ctx, reqs[i].Key, reqs[i].TTL, reqs[i].Options...)
			bl, berr := res[i].Lease, res[i].Err
			for _, target := range []error{lease.ErrLocked, lease.ErrRoundClaimed, lease.ErrClockSkew, lease.ErrPaused, lease.ErrInternal} {
				assert.Equal(t, errors.Is(err, target), errors.Is(berr, target), "Acquire: %v; AcquireBatch: %v", err, berr)
			}
			require.Equal(t, err == nil, berr == nil, "Acquire: %v; AcquireBatch: %v", err, berr)
			var pe, bpe *lease.PausedError
			if assert.Equal(t, errors.As(err, &pe), errors.As(berr, &bpe), "Acquire: %v; AcquireBatch: %v", err, berr) && pe != nil {
				assert.Equal(t, *pe, *bpe, "the round before and the pause's time")
			}
			if err == nil {
				assert.Equal(t, l.Round, bl.Round)
				assert.Equal(t, l.PrevRound, bl.PrevRound)
				assert.Equal(t, l.Superseded, bl.Superseded)
				assert.Equal(t, l.Attempts, bl.Attempts)
				assert.Equal(t, l.Attempt, bl.Attempt)
				// The fence rule: the counter + 1, or the server's clock
				// in ms x 100 if that is more; the counter keeps it.
				floor := fencing.Token(bl.AcquiredAt.UnixMilli() * 100)
				if l.Fence > fencing.Token(l.AcquiredAt.UnixMilli()*100) {
					assert.Equal(t, l.Fence, bl.Fence, "a counter ahead of the floor: counter + 1 on both")
				} else {
					assert.Equal(t, floor, bl.Fence, "the floor")
				}
				ks, err := keysFor(batch.prefix, reqs[i].Key)
				require.NoError(t, err)
				counter, err := batch.client.Do(ctx, batch.client.B().Get().Key(ks.fence).Build()).AsInt64()
				require.NoError(t, err)
				assert.EqualValues(t, bl.Fence, counter, "the fence counter holds the fence")
				assert.Equal(t, reqs[i].Key, bl.Key)
				assert.Len(t, bl.ID, len(l.ID))
			}
			assertSameKeys(t, one, batch, reqs[i].Key, l, bl)
			if bl != nil {
				require.NoError(t, bl.Release(ctx), "a lease won in a batch is released through its store")
			}
		})
	}
}

// assertSameKeys compares what the two acquires of key left behind.
func assertSameKeys(t *testing.T, one, batch *Store, key string, l, bl *lease.Lease) {
	t.Helper()
	ctx := t.Context()
	read := func(st *Store, name func(keyset) string) (string, bool) {
		ks, err := keysFor(st.prefix, key)
		require.NoError(t, err)
		v, err := st.client.Do(ctx, st.client.B().Get().Key(name(ks)).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "", false
		}
		if err != nil {
			return "WRONGTYPE", true // the lease key of another type: compared by this only
		}
		return v, true
	}
	for what, name := range map[string]func(keyset) string{
		"round record":      func(ks keyset) string { return ks.round },
		"completion record": func(ks keyset) string { return ks.attempt(one.prefix) },
		"pause":             func(ks keyset) string { return ks.pause(one.prefix) },
	} {
		a, aok := read(one, name)
		bname := name
		if what != "round record" {
			bname = map[string]func(keyset) string{
				"completion record": func(ks keyset) string { return ks.attempt(batch.prefix) },
				"pause":             func(ks keyset) string { return ks.pause(batch.prefix) },
			}[what]
		}
		b, bok := read(batch, bname)
		assert.Equal(t, aok, bok, "%s exists", what)
		assert.Equal(t, a, b, what)
	}
	for what, name := range map[string]func(keyset) string{
		"record":        func(ks keyset) string { return ks.data },
		"fence counter": func(ks keyset) string { return ks.fence },
	} {
		_, aok := read(one, name)
		_, bok := read(batch, name)
		assert.Equal(t, aok, bok, "%s exists", what)
	}
	if l != nil && bl != nil {
		ai, _ := indexKey(one.prefix, l.ID)
		bi, _ := indexKey(batch.prefix, bl.ID)
		an, err := one.client.Do(ctx, one.client.B().Exists().Key(ai).Build()).AsInt64()
		require.NoError(t, err)
		bn, err := batch.client.Do(ctx, batch.client.B().Exists().Key(bi).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, an, bn, "the ID index exists")
		assert.EqualValues(t, 1, bn)
	}
}

// A batch that names one lease key twice is cut in two calls: the second
// acquire of the key finds it held by the first, as Acquire would.
func TestStore_AcquireBatch_KeyTwiceIsTwoCalls(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	now := time.Now().UnixMilli()
	reqs := []lease.AcquireRequest{
		{Key: "a", TTL: time.Minute, Options: []lease.AcquireOption{lease.WithRound(now)}},
		{Key: "b", TTL: time.Minute, Options: []lease.AcquireOption{lease.WithRound(now)}},
		{Key: "a", TTL: time.Minute, Options: []lease.AcquireOption{lease.WithRound(now + 1)}},
	}
	var calls []acquireCall
	for _, r := range reqs {
		a, err := st.newAcquire(r.Key, r.TTL, r.Options)
		require.NoError(t, err)
		calls = append(calls, a)
	}
	chunks := st.chunkAcquires(calls)
	require.Len(t, chunks, 2)
	assert.Equal(t, [2]int{0, 2}, [2]int{chunks[0].from, chunks[0].to})
	assert.Equal(t, [2]int{2, 3}, [2]int{chunks[1].from, chunks[1].to})

	res := make([]lease.AcquireResult, len(reqs))
	st.AcquireBatch(t.Context(), reqs, res)
	require.NoError(t, res[0].Err)
	require.NoError(t, res[1].Err)
	assert.ErrorIs(t, res[2].Err, lease.ErrLocked)
}

// The script itself refuses a call that names a lease key twice, before
// it writes anything: its one read of every key would not see the first
// acquire's writes.
func TestAcquireBatchScript_RefusesAKeyTwice(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	var keys, args []string
	for _, key := range []string{"a", "a"} {
		a, err := st.newAcquire(key, time.Minute, nil)
		require.NoError(t, err)
		k, g := st.keysArgs(&a)
		keys, args = append(keys, k...), append(args, g...)
	}
	err := st.client.Do(t.Context(), st.evalAcquireBatch("", acquireBatchSource(), acquireChunk{from: 0, to: 2, keys: keys, args: args})).Error()
	require.ErrorContains(t, err, "lease key given twice")
	ks, err := keysFor(st.prefix, "a")
	require.NoError(t, err)
	n, err := st.client.Do(t.Context(), st.client.B().Exists().Key(ks.data, ks.fence).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was written")
}

func acquireBatchSource() string { return luascripts.AcquireBatch }
