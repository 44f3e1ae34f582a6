package scheduler

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease/redislease"
)

// The skew property of TestScheduler_Run_OncePerOccurrenceUnderClockSkew,
// against the real Redis store (its Lua scripts and the server's TIME) on
// an in-process miniredis inside a synctest bubble. miniredis is never
// Started (a TCP accept loop is not durably blocked, so the bubble's clock
// would not advance): each replica's rueidis client dials it over
// net.Pipe. With ClockTTL, expiry follows the bubble's clock, and TIME
// (miniredis's effectiveNow: time.Now when SetTime was never called) is
// the bubble's clock too, so server time is bubble time.
//
// Each replica has its own client, store and scheduler on a skewed clock.
// Replicas within half the interval of the server run every occurrence of
// a 1s Every job and a per-second cron job exactly once between them; a
// replica 700ms ahead is refused every occurrence (ErrClockSkew) and
// records nothing, so the others still run every one.
func TestScheduler_Run_OncePerOccurrenceUnderClockSkewOnRedis(t *testing.T) {
	const window = 210 * time.Second
	tests := []struct {
		name    string
		offsets []time.Duration
		broken  int // index of the replica beyond the max skew; -1: none
	}{
		{
			name:    "all within half the interval",
			offsets: []time.Duration{-200 * time.Millisecond, -90 * time.Millisecond, 0, 130 * time.Millisecond, 200 * time.Millisecond},
			broken:  -1,
		},
		{
			name:    "one replica 700ms ahead is refused",
			offsets: []time.Duration{-200 * time.Millisecond, -90 * time.Millisecond, 0, 200 * time.Millisecond, 700 * time.Millisecond},
			broken:  4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newBubbleMiniredis(t)
				occ := newOccurrences()
				var replicas []*Scheduler
				for i, off := range tt.offsets {
					store, err := redislease.New(newBubbleClient(t, m))
					require.NoError(t, err)
					s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("replica-%d", i)),
						WithClock(skewedClock{clockwork.NewRealClock(), off}),
						WithoutControlPlane()) // every replica claims every occurrence (no preferred replica)
					require.NoError(t, s.Register("every", Every(time.Second), occ.record))
					require.NoError(t, s.Register("cron", Cron("* * * * * *"), occ.record))
					replicas = append(replicas, s)
				}
				for _, s := range replicas {
					require.NoError(t, s.Start())
				}
				start := time.Now()
				time.Sleep(window)
				for _, s := range replicas {
					shutdown(t, s)
				}
				synctest.Wait()

				// The server's TIME is the bubble's clock.
				serverNow := serverTime(t, newBubbleClient(t, m))
				assert.Equal(t, time.Now().UnixMilli(), serverNow.UnixMilli(), "miniredis TIME follows the bubble's clock")

				var started uint64
				for i, s := range replicas {
					st := s.Stats()
					assert.Zero(t, st.AcquireFailed, "replica-%d", i)
					started += st.Started
					if i == tt.broken {
						assert.Zero(t, st.Started, "replica-%d (+%s) ran nothing", i, tt.offsets[i])
						// One firing per second per job over the window,
						// each refused.
						assert.GreaterOrEqual(t, st.SkipClockSkew, uint64(2*200), "replica-%d (+%s) was refused", i, tt.offsets[i])
						continue
					}
					assert.Zero(t, st.SkipClockSkew, "replica-%d (%s) is within half the interval", i, tt.offsets[i])
				}
				var runs int
				for _, job := range []string{"every", "cron"} {
					ms := occ.sorted(job)
					runs += len(ms)
					require.GreaterOrEqual(t, len(ms), 200, job)
					requireOncePerStep(t, job, ms, time.Second)
					assert.LessOrEqual(t, ms[0], start.Add(time.Second).UnixMilli(), job)
					assert.GreaterOrEqual(t, ms[len(ms)-1], start.Add(window-time.Second).UnixMilli(), job)
				}
				assert.Equal(t, uint64(runs), started, "every run was a lease won")
			})
		})
	}
}

// newBubbleMiniredis returns a miniredis that is served only over
// in-memory connections (Dial) and whose TTLs follow the clock, closed when
// the test ends. Call it inside a synctest bubble.
func newBubbleMiniredis(t *testing.T) *miniredis.Miniredis {
	t.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	t.Cleanup(m.Close)
	return m
}

// loadScripts loads every script of the store into m (SCRIPT LOAD), so
// that no EVALSHA meets a cold cache, whose EVAL fallbacks are where
// miniredis, served over a pipe in the bubble, lost a reply before (see
// TestScheduler_Prefer_ThreeReplicasOnRedis). Without it that test missed
// a job's occurrences for 5 s (an acquire's timeout) in 3 of 120 runs, on
// this code and on the code before claims ahead; with it, 0 of 150.
func loadScripts(t *testing.T, m *miniredis.Miniredis) {
	t.Helper()
	c := newBubbleClient(t, m)
	for name, src := range luascripts.All() {
		require.NoError(t, c.Do(t.Context(), c.B().ScriptLoad().Script(src).Build()).Error(), "SCRIPT LOAD %s", name)
	}
}

// newBubbleClient returns a rueidis client whose one connection is a
// net.Pipe to m, closed when the test ends (before m, which was created
// first).
func newBubbleClient(t *testing.T, m *miniredis.Miniredis) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"miniredis:0"}, // never dialled: DialCtxFn ignores it
		DialCtxFn: func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
			return m.Dial()
		},
		DisableCache:      true,
		ForceSingleClient: true,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// serverTime returns the server's TIME.
func serverTime(t *testing.T, c rueidis.Client) time.Time {
	t.Helper()
	parts, err := c.Do(t.Context(), c.B().Time().Build()).AsIntSlice()
	require.NoError(t, err)
	require.Len(t, parts, 2)
	return time.Unix(parts[0], parts[1]*1000)
}
