package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// unevenCron fires at seconds :x0 and :x1 of every ten: the gap before :x1
// is 1s, the gap after it 9s. A round's skew bound must protect both
// neighbours: a replica 2s ahead that could claim :x1 at :x9 (within 9s/2)
// would claim it before :x0 is due, and :x0 would then never run anywhere.
const unevenCron = "0,1,10,11,20,21,30,31,40,41,50,51 * * * * *"

// unevenOccurrences returns the occurrences of unevenCron in (from, to], in
// Unix ms.
func unevenOccurrences(from, to time.Time) []int64 {
	var out []int64
	for s := from.Unix() + 1; s <= to.Unix(); s++ {
		if s%10 == 0 || s%10 == 1 {
			out = append(out, s*1000)
		}
	}
	return out
}

// requireEachOnce checks that the runs within (from, to] are exactly want,
// and that no occurrence ran twice anywhere.
func requireEachOnce(t *testing.T, ms []int64, from, to time.Time, want []int64) {
	t.Helper()
	require.Len(t, slices.Compact(slices.Clone(ms)), len(ms), "no occurrence ran twice")
	var got []int64
	for _, m := range ms {
		if m > from.UnixMilli() && m <= to.UnixMilli() {
			got = append(got, m)
		}
	}
	require.Equal(t, want, got, "every occurrence ran exactly once")
}

// Five replicas on the Redis store (miniredis in a synctest bubble), one of
// them 2s ahead: on a schedule with uneven gaps every occurrence runs
// exactly once, and the fast replica is refused, since 2s exceeds half the
// 1s gap on one side of every round. The replicas race (no control plane),
// so that the fast one claims every occurrence early: with the preferred
// replica it claims only those it is the first choice of, and as a backup
// it waits for its first choice's clock (backup_test.go).
func TestScheduler_Run_SkewBoundProtectsBothNeighbours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newBubbleMiniredis(t)
		offsets := []time.Duration{-300 * time.Millisecond, 0, 200 * time.Millisecond, 400 * time.Millisecond, 2 * time.Second}
		const fast = 4
		occ := newOccurrences()
		var replicas []*Scheduler
		for i, off := range offsets {
			store, err := redislease.New(newBubbleClient(t, m))
			require.NoError(t, err)
			s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)),
				WithClock(skewedClock{clockwork.NewRealClock(), off}), WithoutControlPlane())
			require.NoError(t, s.Register("uneven", Cron(unevenCron), occ.record))
			replicas = append(replicas, s)
		}
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		for _, s := range replicas {
			require.NoError(t, s.Start())
		}
		const window = 120 * time.Second
		time.Sleep(window)
		for _, s := range replicas {
			shutdown(t, s)
		}
		synctest.Wait()

		requireEachOnce(t, occ.sorted("uneven"), start.Add(time.Second), start.Add(window-3*time.Second),
			unevenOccurrences(start.Add(time.Second), start.Add(window-3*time.Second)))
		for i, s := range replicas {
			st := s.Stats()
			if i == fast {
				assert.Zero(t, st.Started, "the replica 2s ahead ran nothing")
				assert.Positive(t, st.SkipClockSkew, "it was refused")
				continue
			}
			assert.Zero(t, st.SkipClockSkew, "replica-%d (%s) is within the bound", i, offsets[i])
		}
	})
}

// The same on a real redis-server and the real clock: three replicas, one
// 2s ahead, over two ten-second cycles.
func TestScheduler_Run_SkewBoundProtectsBothNeighboursOnRealRedis(t *testing.T) {
	t.Parallel()
	srv := testutil.StartRedis(t)
	offsets := []time.Duration{0, 300 * time.Millisecond, 2 * time.Second}
	const fast = 2
	occ := newOccurrences()
	var replicas []*Scheduler
	for i, off := range offsets {
		store, err := redislease.New(srv.Client(t))
		require.NoError(t, err)
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)),
			WithClock(skewedClock{clockwork.NewRealClock(), off}), WithoutControlPlane())
		require.NoError(t, s.Register("uneven", Cron(unevenCron), occ.record, WithTTL(time.Second)))
		replicas = append(replicas, s)
	}
	start := time.Now()
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	const window = 22 * time.Second
	time.Sleep(window) // real time is the point of this test
	for _, s := range replicas {
		shutdown(t, s)
	}
	from, to := start.Add(time.Second), start.Add(window-2*time.Second)
	requireEachOnce(t, occ.sorted("uneven"), from, to, unevenOccurrences(from, to))
	assert.Zero(t, replicas[fast].Stats().Started, "the replica 2s ahead ran nothing")
	assert.Positive(t, replicas[fast].Stats().SkipClockSkew)
}
