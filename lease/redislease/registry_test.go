package redislease

import (
	"context"
	"fmt"
	"slices"
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

// registryJobs are n jobs as a scheduler of one build registers them.
func registryJobs(n int) []fleet.Job {
	jobs := make([]fleet.Job, n)
	for i := range jobs {
		name := fmt.Sprintf("report-%04d", i)
		jobs[i] = fleet.Job{Name: name, Key: "cronguard:" + name, Schedule: "every 1m0s",
			Spec: "every:60000000000+0", Fingerprint: "q0Jx1cM2Zb3vU8aW"}
	}
	return jobs
}

func registryReplica(id string, jobs []fleet.Job) fleet.Replica {
	return fleet.Replica{ID: id, Version: "v0.1.0", Started: time.UnixMilli(1_700_000_000_000), Refresh: time.Second, Jobs: jobs}
}

// jobListKeys returns the job lists stored under st's prefix.
func jobListKeys(t *testing.T, client rueidis.Client, st *Store) []string {
	t.Helper()
	keys, err := client.Do(t.Context(), client.B().Keys().Pattern(fleetKeysFor(st.prefix).jobList+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	return keys
}

// outputBytes is the server's total_net_output_bytes.
func outputBytes(t testing.TB, client rueidis.Client) int64 {
	t.Helper()
	info, err := client.Do(context.Background(), client.B().Info().Section("stats").Build()).ToString()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats has no total_net_output_bytes")
	return 0
}

// TestStore_Registry_ReplicasWithTheSameJobsShareOneList: twenty replicas
// of one build store one job list, and a read of the registry fetches it
// once, so the bytes a read returns do not grow with the list times the
// replicas.
func TestStore_Registry_ReplicasWithTheSameJobsShareOneList(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	jobs := registryJobs(500)
	const replicas = 20
	for i := range replicas {
		_, err := st.PublishReplica(ctx, registryReplica(fmt.Sprintf("r%02d", i), jobs), time.Minute)
		require.NoError(t, err)
	}
	require.Len(t, jobListKeys(t, srv.client, st), 1, "one list for the fleet")

	before := outputBytes(t, srv.client)
	all, err := st.Replicas(ctx)
	require.NoError(t, err)
	read := outputBytes(t, srv.client) - before
	require.Len(t, all, replicas)
	for _, r := range all {
		assert.Equal(t, jobs, r.Jobs, "replica %s has every job", r.ID)
	}
	list := int64(len(encodeJobs(jobs)))
	assert.Less(t, read, 2*list, "a read returns the list once (%d bytes for a list of %d)", read, list)

	// A replica with other jobs publishes a list of its own.
	_, err = st.PublishReplica(ctx, registryReplica("other", registryJobs(3)), time.Minute)
	require.NoError(t, err)
	assert.Len(t, jobListKeys(t, srv.client, st), 2)
	all, err = st.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, replicas+1)
	assert.Equal(t, registryJobs(3), all[0].Jobs, "sorted by ID: other first")
}

// TestStore_Registry_ARefreshFindsItsListMissing: a job list lost (a
// flush, a failover that lost it) makes the next refresh of an entry that
// names it report the entry not found, so that its replica publishes it
// again; meanwhile a read leaves that replica out, as it does one whose
// entry lapsed.
func TestStore_Registry_ARefreshFindsItsListMissing(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	r := registryReplica("r1", registryJobs(2))
	_, err := st.PublishReplica(ctx, r, time.Minute)
	require.NoError(t, err)
	_, found, err := st.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)
	require.True(t, found)

	keys := jobListKeys(t, srv.client, st)
	require.Len(t, keys, 1)
	require.NoError(t, srv.client.Do(ctx, srv.client.B().Del().Key(keys[0]).Build()).Error())
	all, err := st.Replicas(ctx)
	require.NoError(t, err)
	assert.Empty(t, all, "an entry whose list is missing is left out")
	_, found, err = st.RefreshReplica(ctx, "r1", time.Minute)
	require.NoError(t, err)
	assert.False(t, found, "the refresh asks for the entry to be published again")

	_, err = st.PublishReplica(ctx, r, time.Minute)
	require.NoError(t, err)
	all, err = st.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, r.Jobs, all[0].Jobs)
}

// TestStore_Registry_PublishAndRefreshRenewTheList: a publish that finds
// its list stored renews it, a refresh renews the list its entry names,
// and a drop leaves a shared list to the replicas that still name it.
func TestStore_Registry_PublishAndRefreshRenewTheList(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	jobs := registryJobs(2)
	_, err := st.PublishReplica(ctx, registryReplica("r1", jobs), time.Minute)
	require.NoError(t, err)
	keys := jobListKeys(t, srv.client, st)
	require.Len(t, keys, 1)
	pttl := func() int64 {
		ms, err := srv.client.Do(ctx, srv.client.B().Pttl().Key(keys[0]).Build()).AsInt64()
		require.NoError(t, err)
		return ms
	}
	shorten := func() {
		require.NoError(t, srv.client.Do(ctx, srv.client.B().Pexpire().Key(keys[0]).Milliseconds(5000).Build()).Error())
	}
	assert.InDelta(t, minJobListTTL.Milliseconds(), pttl(), 60_000, "a list lives at least minJobListTTL")

	shorten()
	_, err = st.PublishReplica(ctx, registryReplica("r2", jobs), time.Minute)
	require.NoError(t, err)
	assert.Len(t, jobListKeys(t, srv.client, st), 1, "r2 names r1's list")
	assert.Greater(t, pttl(), int64(60_000), "a publish that finds the list renews it")

	shorten()
	_, found, err := st.RefreshReplica(ctx, "r2", time.Minute)
	require.NoError(t, err)
	require.True(t, found)
	assert.Greater(t, pttl(), int64(60_000), "a refresh renews it")

	require.NoError(t, st.DropReplica(ctx, "r1"))
	all, err := st.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, jobs, all[0].Jobs, "r2 still has its jobs")
	assert.Greater(t, pttl(), int64(60_000), "a drop leaves a shared list alone")
}

// TestStore_Registry_ARefreshFindsAnotherList: a refresh reports the
// entry not found, so that its replica publishes it again, when the entry
// in the store names another list than the one the replica published
// (a failover that restored an older entry, another client's publish), or
// names one when the replica published none, or when the refresh goes
// through a Store that did not publish it.
func TestStore_Registry_ARefreshFindsAnotherList(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	fk := func(st *Store) fleetKeys { return fleetKeysFor(st.prefix) }

	t.Run("an older entry naming another list", func(t *testing.T) {
		st := srv.store(t)
		_, err := st.PublishReplica(ctx, registryReplica("r1", registryJobs(1)), time.Minute)
		require.NoError(t, err)
		older, err := srv.client.Do(ctx, srv.client.B().Get().Key(fk(st).entry+"r1").Build()).ToString()
		require.NoError(t, err)
		_, err = st.PublishReplica(ctx, registryReplica("r1", registryJobs(2)), time.Minute)
		require.NoError(t, err)
		require.NoError(t, srv.client.Do(ctx, srv.client.B().Set().Key(fk(st).entry+"r1").Value(older).Px(time.Minute).Build()).Error())
		_, found, err := st.RefreshReplica(ctx, "r1", time.Minute)
		require.NoError(t, err)
		assert.False(t, found, "the entry names the list of one job, the replica published two")
	})
	t.Run("a list where none was published", func(t *testing.T) {
		st := srv.store(t)
		_, err := st.PublishReplica(ctx, registryReplica("r1", nil), time.Minute)
		require.NoError(t, err)
		_, found, err := st.RefreshReplica(ctx, "r1", time.Minute)
		require.NoError(t, err)
		require.True(t, found)
		other, err := New(srv.client, WithPrefix(st.prefix)) // another client's publish
		require.NoError(t, err)
		_, err = other.PublishReplica(ctx, registryReplica("r1", registryJobs(1)), time.Minute)
		require.NoError(t, err)
		_, found, err = st.RefreshReplica(ctx, "r1", time.Minute)
		require.NoError(t, err)
		assert.False(t, found)
	})
	t.Run("a Store that did not publish it", func(t *testing.T) {
		st := srv.store(t)
		_, err := st.PublishReplica(ctx, registryReplica("r1", registryJobs(1)), time.Minute)
		require.NoError(t, err)
		other, err := New(srv.client, WithPrefix(st.prefix))
		require.NoError(t, err)
		_, found, err := other.RefreshReplica(ctx, "r1", time.Minute)
		require.NoError(t, err)
		assert.False(t, found, "it cannot renew a list it does not know")
		_, err = other.PublishReplica(ctx, registryReplica("r1", registryJobs(1)), time.Minute)
		require.NoError(t, err)
		_, found, err = other.RefreshReplica(ctx, "r1", time.Minute)
		require.NoError(t, err)
		assert.True(t, found, "once it published it")
	})
}

// TestStore_Registry_OneListWhateverTheRegistrationOrder: replicas that
// register the same jobs in different orders name one list.
func TestStore_Registry_OneListWhateverTheRegistrationOrder(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	jobs := registryJobs(5)
	reversed := slices.Clone(jobs)
	slices.Reverse(reversed)
	_, err := st.PublishReplica(ctx, registryReplica("r1", jobs), time.Minute)
	require.NoError(t, err)
	_, err = st.PublishReplica(ctx, registryReplica("r2", reversed), time.Minute)
	require.NoError(t, err)
	assert.Len(t, jobListKeys(t, srv.client, st), 1)
	all, err := st.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, jobs, all[1].Jobs, "in the order of their keys")
}

// TestStore_Registry_ReadsEntriesOfEarlierVersions: an entry that holds
// its jobs inline, as earlier versions wrote it, is read as before, beside
// entries that name a list.
func TestStore_Registry_ReadsEntriesOfEarlierVersions(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	st := srv.store(t)
	ctx := t.Context()
	_, err := st.PublishReplica(ctx, registryReplica("new", registryJobs(2)), time.Minute)
	require.NoError(t, err)

	fk := fleetKeysFor(st.prefix)
	old := `{"id":"old","version":"v0.0.9","startedAt":1700000000000,"refreshMs":1000,"jobs":[` +
		`{"name":"report-0000","key":"cronguard:report-0000","schedule":"every 1m0s","spec":"every:60000000000+0","fingerprint":"q0Jx1cM2Zb3vU8aW"}]}`
	for _, c := range []rueidis.Completed{
		srv.client.B().Set().Key(fk.entry + "old").Value(old).Px(time.Minute).Build(),
		srv.client.B().Zadd().Key(fk.replicas).ScoreMember().ScoreMember(float64(time.Now().Add(time.Minute).UnixMilli()), "old").Build(),
	} {
		require.NoError(t, srv.client.Do(ctx, c).Error())
	}
	all, err := st.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, "new", all[0].ID)
	assert.Equal(t, registryJobs(2), all[0].Jobs)
	assert.Equal(t, "old", all[1].ID)
	assert.Equal(t, registryJobs(1), all[1].Jobs, "the inline jobs of an earlier version's entry")
}

// TestStore_Registry_AStrangeEntryIsLeftOut: an entry that is not JSON,
// that names a list by something that is not a digest, or whose list is
// not JSON, is left out of the read without a panic or a read of some
// other key: the other replicas come back, with a *fleet.UnreadableError
// (lease.ErrInternal) naming the strange one. A publish beside it writes
// its entry and reports its conflicts with the readable ones.
func TestStore_Registry_AStrangeEntryIsLeftOut(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := t.Context()
	for name, tc := range map[string]struct{ entry, list, want string }{
		"not JSON": {entry: `[1,2`, want: `the entry of replica "r1" is not JSON`},
		"not a digest": {entry: `{"id":"r1","version":"v","startedAt":1,"refreshMs":1000,"jobs":null,"jobList":"../replica:r2"}`,
			want: `replica "r1" names a job list that is not a digest`},
		"a list not JSON": {entry: `{"id":"r1","version":"v","startedAt":1,"refreshMs":1000,"jobs":null,"jobList":"q0Jx1cM2Zb3vU8aWq0Jx1c"}`,
			list: `[{"name":`, want: `job list "q0Jx1cM2Zb3vU8aWq0Jx1c" of replica "r1" is not JSON`},
	} {
		t.Run(name, func(t *testing.T) {
			st := srv.store(t)
			fk := fleetKeysFor(st.prefix)
			_, err := st.PublishReplica(ctx, registryReplica("r0", registryJobs(2)), time.Minute)
			require.NoError(t, err)
			cmds := rueidis.Commands{
				srv.client.B().Set().Key(fk.entry + "r1").Value(tc.entry).Px(time.Minute).Build(),
				srv.client.B().Zadd().Key(fk.replicas).ScoreMember().ScoreMember(float64(time.Now().Add(time.Minute).UnixMilli()), "r1").Build(),
			}
			if tc.list != "" {
				cmds = append(cmds, srv.client.B().Set().Key(fk.jobList+"q0Jx1cM2Zb3vU8aWq0Jx1c").Value(tc.list).Px(time.Minute).Build())
			}
			for _, r := range srv.client.DoMulti(ctx, cmds...) {
				require.NoError(t, r.Error())
			}

			all, err := st.Replicas(ctx)
			require.ErrorIs(t, err, lease.ErrInternal)
			assert.Contains(t, err.Error(), tc.want)
			var unreadable *fleet.UnreadableError
			require.ErrorAs(t, err, &unreadable)
			assert.Equal(t, []string{"r1"}, unreadable.Replicas)
			require.Len(t, all, 1, "the readable replica is returned")
			assert.Equal(t, "r0", all[0].ID)
			assert.Equal(t, registryJobs(2), all[0].Jobs)

			other := registryJobs(2)
			other[0].Fingerprint = "AAAAAAAAAAAAAAAA"
			conflicts, err := st.PublishReplica(ctx, registryReplica("r2", other), time.Minute)
			require.ErrorAs(t, err, &unreadable)
			require.Len(t, conflicts, 1, "r2's conflict with r0 is reported beside the unreadable entry")
			assert.Equal(t, [2]string{"r0", "r2"}, conflicts[0].Replicas)
			all, err = st.Replicas(ctx)
			require.ErrorAs(t, err, &unreadable)
			assert.Len(t, all, 2, "r2's entry was written")
			conflicts, err = st.Conflicts(ctx)
			require.ErrorAs(t, err, &unreadable)
			assert.Len(t, conflicts, 1)
		})
	}
}

// BenchmarkStore_Replicas reads a registry of R replicas of 1,000 jobs
// each, every replica with the same jobs (one build): bytes/read is what
// the server sends back for one read.
func BenchmarkStore_Replicas(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	jobs := registryJobs(1000)
	published := 0
	for _, replicas := range []int{3, 20, 50} {
		for ; published < replicas; published++ {
			if _, err := st.PublishReplica(ctx, registryReplica(fmt.Sprintf("r%02d", published), jobs), time.Hour); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			b.ReportAllocs()
			before := outputBytes(b, c)
			for b.Loop() {
				all, err := st.Replicas(ctx)
				if err != nil || len(all) != replicas {
					b.Fatalf("%d replicas, %v", len(all), err)
				}
			}
			b.ReportMetric(float64(outputBytes(b, c)-before)/float64(b.N), "bytes/read")
		})
	}
}
