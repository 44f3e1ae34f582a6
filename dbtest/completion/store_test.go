package completion

import (
	"log/slog"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// storeWaitBound bounds a wait for the store to show what the replicas
// did.
const storeWaitBound = 10 * time.Second

// fleetStore is the test's own view of the store: a client of srv of its
// own, for the history, the job's state and the control channel.
type fleetStore struct {
	*redislease.Store
	admin rueidis.Client
}

func newFleetStore(t *testing.T, srv *testutil.Redis) fleetStore {
	t.Helper()
	admin := srv.Client(t)
	store, err := redislease.New(admin, redislease.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	return fleetStore{Store: store, admin: admin}
}

// history returns the job key's runs, oldest first.
func (fs fleetStore) history(t *testing.T, key string) []fleet.RunRecord {
	t.Helper()
	runs, _, err := fs.History(t.Context(), key, 0, fleet.DefaultHistoryLimit)
	require.NoError(t, err)
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

// historyOf returns the runs of occurrence occ in the job key's history,
// oldest first.
func (fs fleetStore) historyOf(t *testing.T, key string, occ time.Time) []fleet.RunRecord {
	t.Helper()
	var out []fleet.RunRecord
	for _, r := range fs.history(t, key) {
		if r.Occurrence.Equal(occ) {
			out = append(out, r)
		}
	}
	return out
}

// waitSubscribed waits until n clients listen on the control channel,
// where a replica hears that an occurrence was released open: the
// replicas started so far have their control plane running.
func (fs fleetStore) waitSubscribed(t *testing.T, n int64) {
	t.Helper()
	channel := redislease.DefaultPrefix + ":control"
	fs.waitUntil(t, "replicas subscribed to the control channel", func() bool {
		m, err := fs.admin.Do(t.Context(), fs.admin.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && m[channel] >= n
	})
}

// indexSize returns how many occurrences the fleet's index of open and
// running occurrences holds.
func (fs fleetStore) indexSize(t *testing.T) int64 {
	t.Helper()
	n, err := fs.admin.Do(t.Context(), fs.admin.B().Zcard().Key(redislease.DefaultPrefix+":open").Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// waitUntil checks cond every 20ms until it holds, for storeWaitBound:
// the store's state has no signal to wait on.
func (fs fleetStore) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, storeWaitBound, 20*time.Millisecond, what)
}

// jobState reads what the store holds about the job key, at the store's
// time (JobState.Now).
func (fs fleetStore) jobState(t *testing.T, key string) fleet.JobState {
	t.Helper()
	st, err := fs.JobState(t.Context(), key)
	require.NoError(t, err)
	return st
}
