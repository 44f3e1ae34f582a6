package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	leaseredis "github.com/cronguard/cronguard/lease/redis"
	"github.com/cronguard/cronguard/testutil"
)

// Three replicas on a real redis-server and the real clock run a 200ms
// Every job for about 3s: no occurrence runs twice, and none is missed
// between the first and the last few.
func TestScheduler_Run_RealRedisOncePerOccurrence(t *testing.T) {
	srv := testutil.StartRedis(t)
	occ := newOccurrences()
	var replicas []*Scheduler
	for i := range 3 {
		store, err := leaseredis.New(srv.Client(t))
		require.NoError(t, err)
		s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)))
		require.NoError(t, s.Register("grid", Every(200*time.Millisecond), occ.record, WithTTL(time.Second)))
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	time.Sleep(3 * time.Second) // real time is the point of this test
	for _, s := range replicas {
		shutdown(t, s)
	}

	ms := occ.sorted("grid")
	require.GreaterOrEqual(t, len(ms), 12, "about 15 occurrences in 3s")
	seen := make(map[int64]bool)
	for _, m := range ms {
		require.False(t, seen[m], "occurrence %d ran twice", m)
		seen[m] = true
		assert.Zero(t, m%200, "occurrence %d is on the 200ms epoch grid", m)
	}
	requireOncePerStep(t, "grid", ms[2:len(ms)-2], 200*time.Millisecond)
	var started, skewed uint64
	for _, s := range replicas {
		started += s.Stats().Started
		skewed += s.Stats().SkipClockSkew
	}
	assert.Equal(t, uint64(len(ms)), started)
	assert.Zero(t, skewed)
}
