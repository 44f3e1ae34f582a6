package redislease

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// TestStore_Garbage_NeverPanics writes garbage where a lease's keys live
// and checks that every operation fails with a clear ErrInternal instead of
// panicking or misreporting.
func TestStore_Garbage_NeverPanics(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	do := func(t *testing.T, cmd rueidis.Completed) {
		t.Helper()
		require.NoError(t, srv.client.Do(ctx, cmd).Error())
	}
	b := srv.client.B()

	dataGarbage := map[string]func(t *testing.T, key string){
		"non-JSON string": func(t *testing.T, key string) { do(t, b.Set().Key(key).Value("hello world").Build()) },
		"JSON missing fields": func(t *testing.T, key string) {
			do(t, b.Set().Key(key).Value(`{"lockId":"AAAAAAAAAAAAAAAAAAAAAA"}`).Build())
		},
		"list": func(t *testing.T, key string) { do(t, b.Rpush().Key(key).Element("x").Build()) },
	}
	for name, write := range dataGarbage {
		t.Run("data key holds "+name, func(t *testing.T) {
			st := srv.store(t)
			l, err := st.Acquire(ctx, "k", 5*time.Second)
			require.NoError(t, err)
			ks, err := keysFor(st.prefix, "k")
			require.NoError(t, err)
			do(t, b.Del().Key(ks.data).Build())
			write(t, ks.data)

			_, err = st.Extend(ctx, l.ID, time.Second)
			assert.ErrorIs(t, err, lease.ErrInternal, "extend")
			assert.ErrorIs(t, st.Release(ctx, l.ID), lease.ErrInternal, "release")
			_, err = l.Extend(ctx, time.Second)
			assert.ErrorIs(t, err, lease.ErrInternal, "extend (keyed)")
			assert.ErrorIs(t, l.Release(ctx), lease.ErrInternal, "release (keyed)")
			_, err = st.IsLocked(ctx, "k")
			assert.ErrorIs(t, err, lease.ErrInternal, "islocked")
			_, err = st.Lookup(ctx, "k")
			assert.ErrorIs(t, err, lease.ErrInternal, "lookup")
			_, err = st.LookupID(ctx, l.ID)
			assert.ErrorIs(t, err, lease.ErrInternal, "lookupid")

			_, err = st.Acquire(ctx, "k", time.Second)
			assert.ErrorIs(t, err, lease.ErrInternal, "acquire")
			if name == "list" {
				// The acquire reads its keys with one MGET, which answers
				// nil for a key holding another type than a string; its
				// first write (the record's SET, with GET) refuses the
				// list, which is left as it was, and nothing is written.
				assert.ErrorContains(t, err, "WRONGTYPE")
				n, err := srv.client.Do(ctx, b.Llen().Key(ks.data).Build()).AsInt64()
				require.NoError(t, err)
				assert.EqualValues(t, 1, n, "the list is left as it was")
			}
		})
	}

	// Each path that can win a free key refuses a lease key of another
	// type before it writes anything: the plain acquire, a scheduled one
	// with a round and a completion record, a fair waiter's and a
	// trigger's.
	t.Run("lease key of another type, every acquire", func(t *testing.T) {
		st := srv.store(t)
		ks, err := keysFor(st.prefix, "k")
		require.NoError(t, err)
		do(t, b.Hset().Key(ks.data).FieldValue().FieldValue("someone", "else").Build())
		// A trigger waits: the trigger's acquire must not take it.
		_, err = st.AddTrigger(ctx, "k", "test", time.Minute)
		require.NoError(t, err)
		queue, expiries := ks.queue(st.prefix)
		// What each acquire would write or take, as it is before them.
		snapshot := func() map[string]string {
			out := map[string]string{}
			for _, k := range []string{ks.fence, ks.round, ks.attempt(st.prefix), ks.history(st.prefix), queue, expiries} {
				n, err := srv.client.Do(ctx, b.Exists().Key(k).Build()).AsInt64()
				require.NoError(t, err)
				out[k] = strconv.FormatInt(n, 10)
			}
			n, err := srv.client.Do(ctx, b.Llen().Key(ks.trigger(st.prefix)).Build()).AsInt64()
			require.NoError(t, err)
			out["triggers"] = strconv.FormatInt(n, 10)
			return out
		}
		before := snapshot()
		require.Equal(t, "1", before["triggers"])

		const round = 1_764_000_000_000
		attempts := lease.Attempts{Max: 3, Deadline: time.Now().Add(time.Hour)}
		acquires := map[string]func() error{
			"plain": func() error { _, err := st.Acquire(ctx, "k", time.Second); return err },
			"round with attempts": func() error {
				_, err := st.Acquire(ctx, "k", time.Second, lease.WithRound(round), lease.WithAttempts(attempts))
				return err
			},
			"trigger": func() error { _, err := st.Acquire(ctx, "k", time.Second, lease.WithTrigger()); return err },
			"fair": func() error {
				lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_, err := lease.Lock(lctx, st, "k", time.Second, lease.WithFairness())
				return err
			},
		}
		for what, acquire := range acquires {
			err := acquire()
			assert.ErrorIs(t, err, lease.ErrInternal, what)
			assert.ErrorContains(t, err, "WRONGTYPE", what)
			assert.Equal(t, before, snapshot(), "%s wrote or took nothing", what)
		}

		// A resume of an attempt whose holder died (running, no lease):
		// it would write the attempt's end to the history first.
		do(t, b.Mset().KeyValue().KeyValue(ks.round, "1764000000000").KeyValue(ks.attempt(st.prefix), "1764000000000|1|r|0|"+
			strconv.FormatInt(attempts.Deadline.UnixMilli(), 10)+"|3").Build())
		before = snapshot()
		_, err = st.Acquire(ctx, "k", time.Second, lease.WithResume(round))
		assert.ErrorIs(t, err, lease.ErrInternal, "resume")
		assert.ErrorContains(t, err, "WRONGTYPE", "resume")
		assert.Equal(t, before, snapshot(), "the resume wrote nothing")
		rec, err := srv.client.Do(ctx, b.Get().Key(ks.attempt(st.prefix)).Build()).ToString()
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(rec, "1764000000000|1|r|"), "the completion record is as it was: %s", rec)

		typ, err := srv.client.Do(ctx, b.Type().Key(ks.data).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "hash", typ, "the key is left as it was")
		v, err := srv.client.Do(ctx, b.Hget().Key(ks.data).Field("someone").Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "else", v)
	})

	indexGarbage := map[string]func(t *testing.T, key string){
		"foreign key name": func(t *testing.T, key string) { do(t, b.Set().Key(key).Value("elsewhere").Build()) },
		"list":             func(t *testing.T, key string) { do(t, b.Rpush().Key(key).Element("x").Build()) },
	}
	for name, write := range indexGarbage {
		t.Run("index key holds "+name, func(t *testing.T) {
			st := srv.store(t)
			l, err := st.Acquire(ctx, "k", 5*time.Second)
			require.NoError(t, err)
			ik, ok := indexKey(st.prefix, l.ID)
			require.True(t, ok)
			do(t, b.Del().Key(ik).Build())
			write(t, ik)

			_, err = st.Extend(ctx, l.ID, time.Second)
			assert.ErrorIs(t, err, lease.ErrInternal, "extend")
			assert.ErrorIs(t, st.Release(ctx, l.ID), lease.ErrInternal, "release")
			_, err = st.LookupID(ctx, l.ID)
			assert.ErrorIs(t, err, lease.ErrInternal, "lookupid")
			locked, err := st.IsLocked(ctx, "k")
			require.NoError(t, err)
			assert.True(t, locked, "the data key is untouched")

			// The keyed path verifies the ID in the record and does not
			// read the index: the holder still extends and releases (the
			// release deletes the damaged index with the record).
			_, err = l.Extend(ctx, time.Second)
			require.NoError(t, err, "extend (keyed)")
			require.NoError(t, l.Release(ctx), "release (keyed)")
			n, err := srv.client.Do(ctx, b.Exists().Key(ik).Build()).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, n, "the index key went with the release")
		})
	}

	t.Run("round key holds a non-number", func(t *testing.T) {
		st := srv.store(t)
		ks, err := keysFor(st.prefix, "k")
		require.NoError(t, err)
		do(t, b.Set().Key(ks.round).Value("soon").Build())
		_, err = st.Acquire(ctx, "k", time.Second, lease.WithRound(5))
		assert.ErrorIs(t, err, lease.ErrInternal)
	})

	t.Run("fence key holds a non-number", func(t *testing.T) {
		st := srv.store(t)
		ks, err := keysFor(st.prefix, "k")
		require.NoError(t, err)
		do(t, b.Set().Key(ks.fence).Value("many").Build())
		_, err = st.Acquire(ctx, "k", time.Second)
		assert.ErrorIs(t, err, lease.ErrInternal)
		locked, err := st.IsLocked(ctx, "k")
		require.NoError(t, err)
		assert.False(t, locked, "a failed script writes nothing before the error")
	})

	t.Run("fence counter past its limit", func(t *testing.T) {
		st := srv.store(t)
		ks, err := keysFor(st.prefix, "k")
		require.NoError(t, err)
		do(t, b.Set().Key(ks.fence).Value("900000000000000").Build())
		_, err = st.Acquire(ctx, "k", time.Second)
		require.ErrorIs(t, err, lease.ErrInternal)
		assert.Contains(t, err.Error(), "overflow")
		locked, err := st.IsLocked(context.WithoutCancel(ctx), "k")
		require.NoError(t, err)
		assert.False(t, locked, "the unusable lease was given back")
	})
}
