package redislease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/leasetest"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// TestStore_Cluster runs the Store against a real 3-primary Redis Cluster,
// started once for all its subtests.
func TestStore_Cluster(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3)
	client := c.Client(t)

	t.Run("Conformance", func(t *testing.T) {
		leasetest.Run(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix(uniquePrefix()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})
	t.Run("KeysSpanAllNodes", func(t *testing.T) { testClusterKeysSpanAllNodes(t, c, client) })
	t.Run("FromIDAlone", func(t *testing.T) { testClusterFromIDAlone(t, c, client) })
	t.Run("JobStateOnEveryNode", func(t *testing.T) { testClusterJobState(t, client) })
	t.Run("SchedulerOncePerOccurrence", func(t *testing.T) { testClusterScheduler(t, c) })
	t.Run("Notifications", func(t *testing.T) { testClusterNotifications(t, c, client) })
	t.Run("SemaphoreConformance", func(t *testing.T) {
		leasetest.RunSemaphore(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix(uniquePrefix()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})
	t.Run("SemaphoreWaiters", func(t *testing.T) { testClusterSemaphores(t, c, client) })
	t.Run("CompletionConformance", func(t *testing.T) {
		leasetest.RunCompletion(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix(uniquePrefix()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})
	t.Run("CompletionIndex", func(t *testing.T) { testClusterCompletionIndex(t, client) })
	t.Run("PublishBatch", func(t *testing.T) { testClusterPublishBatch(t, c, client) })
	t.Run("RoundReadsKeyByKey", func(t *testing.T) { testClusterRoundReads(t, client) })
	t.Run("FairConformance", func(t *testing.T) {
		leasetest.RunFair(t, func(t *testing.T) leasetest.Env {
			st, err := New(client, WithPrefix(uniquePrefix()))
			require.NoError(t, err)
			return leasetest.Env{Store: st, Wait: time.Sleep}
		})
	})
}

// JobState's pipeline (TIME and plain reads, no script) goes to the node
// of the job's slot, whichever node that is, and reads the job's keys.
func testClusterJobState(t *testing.T, client rueidis.Client) {
	ctx := t.Context()
	st, err := New(client, WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	keys := append([]string(nil), clusterKeys...)
	for i := len(keys); i < 40; i++ {
		keys = append(keys, fmt.Sprintf("job-%d", i))
	}
	for _, k := range keys {
		l, err := st.Acquire(ctx, k, 30*time.Second, lease.WithOwner("r1/"+k))
		require.NoError(t, err, "acquire %q", k)
		js, err := st.JobState(ctx, k)
		require.NoError(t, err, "job state %q", k)
		require.NotNil(t, js.Holder, "job state %q", k)
		assert.Equal(t, l.Fence, js.Holder.Fence, "job state %q", k)
		assert.True(t, js.Holder.ExpiresAt.After(js.Now), "job state %q: the slot's node's clock", k)
		require.NoError(t, l.Release(ctx))
	}
}

// clusterKeys are user keys with and without braces: a brace in the key
// must not split the lease's keys over two slots.
var clusterKeys = []string{"{", "}", "{}", "}{", "{job}", "a{b}c", "x}y{z", "{{nested}}", "{:}", "report:{2024}"}

// 200 leases on distinct keys (braces included) land in slots of all three
// primaries, and every lease's data key and ID index live on the same
// node.
func testClusterKeysSpanAllNodes(t *testing.T, c *testutil.Cluster, client rueidis.Client) {
	ctx := t.Context()
	prefix := uniquePrefix()
	st, err := New(client, WithPrefix(prefix))
	require.NoError(t, err)

	keys := append([]string(nil), clusterKeys...)
	for i := len(keys); i < 200; i++ {
		keys = append(keys, fmt.Sprintf("job-%d", i))
	}
	leases := make(map[string]*lease.Lease, len(keys))
	for _, k := range keys {
		l, err := st.Acquire(ctx, k, 30*time.Second)
		require.NoError(t, err, "acquire %q", k)
		leases[k] = l
	}
	for _, k := range keys {
		locked, err := st.IsLocked(ctx, k)
		require.NoError(t, err)
		assert.True(t, locked, "key %q", k)
	}

	var dataTotal int
	for _, addr := range c.Addrs {
		node := c.NodeClient(t, addr)
		ranges := c.SlotRanges(t, addr)
		var data, index int
		for _, k := range scanKeys(t, node, prefix+":*") {
			slot, err := node.Do(ctx, node.B().ClusterKeyslot().Key(k).Build()).AsInt64()
			require.NoError(t, err)
			assert.True(t, inRanges(int(slot), ranges), "key %q (slot %d) is on %s, which does not serve that slot", k, slot, addr)
			switch {
			case strings.HasPrefix(k, prefix+":{"):
				data++
			case strings.HasPrefix(k, prefix+":id:"):
				index++
			}
		}
		assert.Positive(t, data, "node %s holds no lease of 200", addr)
		assert.Equal(t, data, index, "node %s: every lease's ID index lives with its data", addr)
		dataTotal += data
	}
	assert.Equal(t, len(keys), dataTotal, "every lease is stored exactly once")

	for _, k := range keys {
		require.NoError(t, st.Release(ctx, leases[k].ID), "release %q", k)
	}
}

// A second Store, on its own cluster client, that knows only a lease's ID
// can look it up, extend it and release it, whatever slot the key hashes
// to.
func testClusterFromIDAlone(t *testing.T, c *testutil.Cluster, client rueidis.Client) {
	ctx := t.Context()
	prefix := uniquePrefix()
	holder, err := New(client, WithPrefix(prefix))
	require.NoError(t, err)
	other, err := New(c.Client(t), WithPrefix(prefix))
	require.NoError(t, err)

	keys := append([]string{"plain", "a/long/" + strings.Repeat("x", 400)}, clusterKeys...)
	for _, k := range keys {
		l, err := holder.Acquire(ctx, k, 2*time.Second)
		require.NoError(t, err, "acquire %q", k)
		id := l.ID

		info, err := other.LookupID(ctx, id)
		require.NoError(t, err, "LookupID for %q", k)
		assert.Equal(t, l.Fence, info.Fence, "key %q", k)
		assert.Equal(t, leasekit.Hash(id), info.IDHash, "key %q", k)

		exp, err := other.Extend(ctx, id, 20*time.Second)
		require.NoError(t, err, "Extend for %q", k)
		assert.True(t, exp.After(l.ExpiresAt), "key %q: Extend to 20s moves the expiry past the 2s one", k)

		require.NoError(t, other.Release(ctx, id), "Release for %q", k)
		locked, err := holder.IsLocked(ctx, k)
		require.NoError(t, err)
		assert.False(t, locked, "key %q is free after a release by ID from another Store", k)
		_, err = holder.Extend(ctx, id, time.Second)
		assert.ErrorIs(t, err, lease.ErrNotHeld, "key %q", k)
	}
}

// Three scheduler replicas, each with its own cluster client, run an
// Every(200ms) job for about 2s on the real clock: no occurrence runs
// twice, and the job keeps running.
func testClusterScheduler(t *testing.T, c *testutil.Cluster) {
	prefix := uniquePrefix()
	var mu sync.Mutex
	runs := map[int64]int{} // occurrence (Unix ms) -> runs
	job := func(ctx context.Context) error {
		r, ok := scheduler.RunFromContext(ctx)
		if !ok {
			return fmt.Errorf("no run in context")
		}
		mu.Lock()
		runs[r.Occurrence.UnixMilli()]++
		mu.Unlock()
		return nil
	}
	var replicas []*scheduler.Scheduler
	for i := range 3 {
		st, err := New(c.Client(t), WithPrefix(prefix))
		require.NoError(t, err)
		s, err := scheduler.New(st, scheduler.WithInstanceID(fmt.Sprintf("replica-%d", i)))
		require.NoError(t, err)
		require.NoError(t, s.Register("grid", scheduler.Every(200*time.Millisecond), job, scheduler.WithTTL(time.Second)))
		replicas = append(replicas, s)
	}
	for _, s := range replicas {
		require.NoError(t, s.Start())
	}
	time.Sleep(2 * time.Second) // real time on a real cluster is the point of this test
	for _, s := range replicas {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, s.Shutdown(ctx))
		cancel()
	}

	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, len(runs), 7, "about 10 occurrences in 2s")
	for occ, n := range runs {
		assert.Equal(t, 1, n, "occurrence %d ran %d times", occ, n)
		assert.Zero(t, occ%200, "occurrence %d is on the 200ms grid", occ)
	}
}

// scanKeys returns every key matching pattern on the node behind client.
func scanKeys(t *testing.T, client rueidis.Client, pattern string) []string {
	t.Helper()
	var keys []string
	var cursor uint64
	for {
		e, err := client.Do(t.Context(), client.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		require.NoError(t, err)
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return keys
		}
	}
}

func inRanges(slot int, ranges [][2]int) bool {
	for _, r := range ranges {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// The index of open occurrences has a slot of its own: a release with
// attempts pipelines its script (the job's slot) with the index command
// (the index's slot), and due.lua, GiveUp and the resume reach both,
// whichever nodes they are on.
func testClusterCompletionIndex(t *testing.T, client rueidis.Client) {
	ctx := t.Context()
	st, err := New(client, WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	keys := append([]string(nil), clusterKeys...)
	for i := len(keys); i < 30; i++ {
		keys = append(keys, fmt.Sprintf("job-%d", i))
	}
	a := lease.Attempts{Max: 2, Deadline: time.Now().Add(time.Hour)}
	for _, k := range keys {
		l, err := st.Acquire(ctx, k, 30*time.Second, lease.WithRound(5), lease.WithAttempts(a), lease.WithPauseCheck())
		require.NoError(t, err, "acquire %q", k)
		_, err = st.ReleaseWithStatus(ctx, l, fleet.Status{Outcome: fleet.OutcomeFailed, Close: fleet.CloseOpen})
		require.NoError(t, err, "release %q", k)
	}
	due, err := st.DueOccurrences(ctx, 1000)
	require.NoError(t, err)
	require.Len(t, due, len(keys), "every occurrence released open is due")
	for _, d := range due {
		l, err := st.Acquire(ctx, d.Key, 30*time.Second, lease.WithResume(d.Round), lease.WithPauseCheck())
		require.NoError(t, err, "resume %q", d.Key)
		assert.Equal(t, 2, l.Attempt)
		require.NoError(t, l.Release(ctx)) // interrupted: no attempt remains
		ok, err := st.GiveUp(ctx, d.Key, d.Round)
		require.NoError(t, err, "give up %q", d.Key)
		assert.True(t, ok, "give up %q", d.Key)
	}
	due, err = st.DueOccurrences(ctx, 1000)
	require.NoError(t, err)
	assert.Empty(t, due, "GiveUp removed every entry")
}

// On a Cluster the round records of keys in many slots are read with a GET
// each (no MGET across slots): every key gets its answer, and a record of
// another type is named unreadable, the others read.
func testClusterRoundReads(t *testing.T, client rueidis.Client) {
	ctx := t.Context()
	st, err := New(client, WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	keys := append([]string(nil), clusterKeys...)
	for i, k := range keys {
		l, err := st.Acquire(ctx, k, 30*time.Second, lease.WithRound(int64(100+i)))
		require.NoError(t, err, "acquire %q", k)
		require.NoError(t, l.Release(ctx))
	}
	ks, err := keysFor(st.prefix, "foreign")
	require.NoError(t, err)
	require.NoError(t, client.Do(ctx, client.B().Hset().Key(ks.round).FieldValue().FieldValue("a", "b").Build()).Error())
	keys = append(keys, "foreign", "fresh")

	rounds := make([]int64, len(keys))
	err = st.LastRounds(ctx, keys, rounds)
	unread, rest := lease.UnreadKeys(err)
	require.True(t, rest, "the other keys are read: %v", err)
	assert.Equal(t, []int{len(keys) - 2}, unread)
	for i := range clusterKeys {
		assert.Equal(t, int64(100+i), rounds[i], "key %q", keys[i])
	}
	assert.Zero(t, rounds[len(keys)-2])
	assert.Zero(t, rounds[len(keys)-1])

	// The last runs: one MGET of the status and the lease record per key,
	// in its slot; a key held answers its holder's span.
	held, err := st.Acquire(ctx, clusterKeys[0], 30*time.Second, lease.WithRound(1000))
	require.NoError(t, err)
	spans := make([]lease.RunSpan, len(clusterKeys))
	require.NoError(t, st.LastRuns(ctx, clusterKeys, spans))
	assert.True(t, spans[0].Start.Equal(held.AcquiredAt), "the holder's span")
	for i := 1; i < len(clusterKeys); i++ {
		assert.Zero(t, spans[i], "key %q: plain releases record no run", clusterKeys[i])
	}
	require.NoError(t, held.Release(ctx))
}

// testClusterPublishBatch: the announcements of a reader of the index
// (PublishBatch, pipelined PUBLISH commands that the cluster routes to
// several nodes) reach a subscriber of another client, each once and in
// order.
func testClusterPublishBatch(t *testing.T, c *testutil.Cluster, client rueidis.Client) {
	ctx := t.Context()
	prefix := uniquePrefix()
	pub, err := New(client, WithPrefix(prefix))
	require.NoError(t, err)
	sub, err := New(c.Client(t), WithPrefix(prefix))
	require.NoError(t, err)
	got := make(chan fleet.Message, 64)
	stop, err := sub.Subscribe(ctx, func(m fleet.Message) { got <- m })
	require.NoError(t, err)
	defer stop()

	var msgs []fleet.Message
	for i, k := range clusterKeys {
		msgs = append(msgs, fleet.Message{Kind: fleet.MessageOpen, Key: "job:" + k, Round: int64(1_700_000_000_000 + i)})
	}
	require.NoError(t, pub.PublishBatch(ctx, msgs))
	for _, want := range msgs {
		select {
		case m := <-got:
			assert.Equal(t, want, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("no message %v within 10s", want)
		}
	}
}
