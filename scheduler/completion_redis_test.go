package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// Finding open occurrences costs each replica the same store commands per
// period whatever the number of jobs: 3 replicas with 100 idle jobs each,
// and with 10,000, read the fleet's index once per period each (one
// script: TIME and ZRANGEBYSCORE), and nothing else. Each replica's fake
// clock is advanced one period at a time; the registry's refresh (an hour)
// and the jobs (daily) do not come due.
func TestScheduler_Resume_DetectionIsConstant(t *testing.T) {
	t.Parallel()
	const replicas, periods = 3, 5
	perPeriod := func(t *testing.T, jobs int) map[string]float64 {
		srv := testutil.StartRedis(t)
		admin := srv.Client(t)
		clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 500_000_000, time.UTC))
		for r := range replicas {
			store, err := redislease.New(srv.Client(t))
			require.NoError(t, err)
			s := newScheduler(t, store, WithInstanceID(fmt.Sprintf("r%d", r)), WithRegistryRefresh(time.Hour), WithClock(clock))
			for i := range jobs {
				require.NoError(t, s.Register(fmt.Sprintf("job-%05d", i), Every(24*time.Hour), func(context.Context) error { return nil }))
			}
			require.NoError(t, s.Start())
		}
		waitUntilHolds(t, "every replica is in the registry, subscribed, and has looked for waiting triggers (one read per job)", func() bool {
			n, err := admin.Do(t.Context(), admin.B().Zcard().Key("cronguard:fleet:{fleet}:replicas").Build()).AsInt64()
			return err == nil && n == replicas && callsByCommand(t, admin)["lrange"] >= int64(replicas*jobs)
		})
		clock.Advance(resumePoll) // a first period loads the script on each replica's connection
		waitUntilHolds(t, "a first period", func() bool { return callsByCommand(t, admin)["zrangebyscore"] >= replicas })
		require.NoError(t, admin.Do(t.Context(), admin.B().ConfigResetstat().Build()).Error())
		for i := int64(1); i <= periods; i++ {
			clock.Advance(resumePoll)
			waitUntilHolds(t, fmt.Sprintf("period %d of %d", i, periods), func() bool {
				return callsByCommand(t, admin)["zrangebyscore"] >= i*replicas
			})
		}
		calls := callsByCommand(t, admin)
		out := map[string]float64{}
		for name, c := range calls {
			switch name {
			case "config|resetstat", "info", "zcard", "ping", "hello": // the test's own, and the clients' keep-alive and (re)connections
			default:
				out[name] = float64(c) / (periods * replicas)
			}
		}
		return out
	}
	few := perPeriod(t, 100)
	many := perPeriod(t, 10_000)
	want := map[string]float64{"evalsha": 1, "time": 1, "zrangebyscore": 1}
	assert.Equal(t, want, few, "commands per replica per period with 100 jobs")
	assert.Equal(t, want, many, "commands per replica per period with 10,000 jobs")
}
