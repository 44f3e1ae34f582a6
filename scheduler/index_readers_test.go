package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

// readersOf returns the replicas that read the index for the fleet, each
// as it computes its own role from the same registry.
func readersOf(replicas []fleet.Replica) []string {
	var readers []string
	for _, r := range replicas {
		if indexRoleOf(r.ID, replicas) == indexReadAnnounce {
			readers = append(readers, r.ID)
		}
	}
	return readers
}

func replicasNamed(n int, reads bool) []fleet.Replica {
	out := make([]fleet.Replica, n)
	for i := range out {
		out[i] = fleet.Replica{ID: fmt.Sprintf("replica-%02d", i), ReadsIndex: reads}
	}
	return out
}

func TestIndexRole_TwoReadersWhateverTheFleet(t *testing.T) {
	for _, n := range []int{2, 3, 10, 20, 50} {
		replicas := replicasNamed(n, true)
		none := 0
		for _, r := range replicas {
			if indexRoleOf(r.ID, replicas) == indexNone {
				none++
			}
		}
		assert.Equal(t, n-2, none, "%d replicas: all but two leave the index to the readers", n)
		assert.Len(t, readersOf(replicas), 2, "%d replicas", n)
	}
}

func TestIndexRole_AReaderThatLeavesIsReplacedByOne(t *testing.T) {
	replicas := replicasNamed(10, true)
	readers := readersOf(replicas)
	require.Len(t, readers, 2)
	gone := slices.IndexFunc(replicas, func(r fleet.Replica) bool { return r.ID == readers[0] })
	rest := slices.Delete(slices.Clone(replicas), gone, gone+1)
	after := readersOf(rest)
	require.Len(t, after, 2)
	assert.Contains(t, after, readers[1], "the reader that stays keeps reading (rendezvous)")
	assert.NotContains(t, after, readers[0])
}

func TestIndexRole_OnlyReplicasThatSayTheyReadAreChosen(t *testing.T) {
	old := replicasNamed(5, false) // earlier versions: no ReadsIndex
	for i := range old {
		old[i].ID = "old-" + old[i].ID
	}
	replicas := append(old, fleet.Replica{ID: "new", ReadsIndex: true})
	assert.Equal(t, indexReadAnnounce, indexRoleOf("new", replicas),
		"the only replica that reads for the fleet reads, among old ones that read for themselves or not at all")

	replicas = append(old, fleet.Replica{ID: "new-1", ReadsIndex: true}, fleet.Replica{ID: "new-2", ReadsIndex: true},
		fleet.Replica{ID: "new-3", ReadsIndex: true})
	var roles []indexRole
	for _, id := range []string{"new-1", "new-2", "new-3"} {
		roles = append(roles, indexRoleOf(id, replicas))
	}
	assert.ElementsMatch(t, []indexRole{indexReadAnnounce, indexReadAnnounce, indexNone}, roles)
}

func TestIndexRole_ReadsForItselfWithoutAPlaceInTheView(t *testing.T) {
	var v *fleetView
	assert.Equal(t, indexReadOwn, v.indexRole(), "no view yet")
	replicas := replicasNamed(5, true)
	assert.Equal(t, indexReadOwn, indexRoleOf("not-published-yet", replicas))
	assert.Equal(t, indexReadOwn, indexRoleOf("replica-00", replicasNamed(1, true)), "alone: nobody to announce to")
	assert.Equal(t, indexReadOwn, newFleetView("x", nil, nil).indexRole())
}

// indexReads counts a replica's reads of the fleet's index.
type indexReads struct {
	*mortalStore
	n atomic.Int64
}

func (c *indexReads) DueOccurrences(ctx context.Context, limit int) ([]fleet.Due, error) {
	c.n.Add(1)
	return c.mortalStore.DueOccurrences(ctx, limit)
}

// A fleet of five replicas reads its index of open occurrences twice a
// second, not five times: the two readers every resumePoll, the others
// not at all.
func TestScheduler_IndexReaders_TwoReadForTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		ids := []string{"a", "b", "c", "d", "e"}
		stores := map[string]*indexReads{}
		var replicas []fleet.Replica
		for _, id := range ids {
			stores[id] = &indexReads{mortalStore: &mortalStore{Store: shared}}
			replicas = append(replicas, fleet.Replica{ID: id, ReadsIndex: true})
			s := newScheduler(t, stores[id], WithInstanceID(id))
			require.NoError(t, s.Register("tick", Every(time.Minute), func(context.Context) error { return nil }))
			require.NoError(t, s.Start())
		}
		readers := readersOf(replicas)
		require.Len(t, readers, 2)

		time.Sleep(10 * time.Second) // every replica has read the registry
		for _, st := range stores {
			st.n.Store(0)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		for _, id := range ids {
			n := stores[id].n.Load()
			if slices.Contains(readers, id) {
				assert.InDelta(t, 20, n, 1, "reader %s reads every resumePoll", id)
			} else {
				assert.Zero(t, n, "replica %s leaves the index to the readers", id)
			}
		}
	})
}

// A replica dies during a run of a job that neither reader has, and one
// of the readers dies with it: the other reader announces the occurrence
// when it comes due, and the replica left with the job resumes it within
// TTL + 2s of the death, though it never reads the index itself.
func TestScheduler_IndexReaders_AnnounceToTheReplicasThatHaveTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		ids := []string{"a", "b", "c", "d"}
		var replicas []fleet.Replica
		for _, id := range ids {
			replicas = append(replicas, fleet.Replica{ID: id, ReadsIndex: true})
		}
		readers := readersOf(replicas)
		require.Len(t, readers, 2)
		var others []string
		for _, id := range ids {
			if !slices.Contains(readers, id) {
				others = append(others, id)
			}
		}

		log, fx := newAttemptLog(), newEffects()
		job := firstAttemptCut(log, fx)
		const ttl = 3 * time.Second
		time.Sleep(30 * time.Second) // off the hourly grid
		stores := map[string]*indexReads{}
		scheds := map[string]*Scheduler{}
		for _, id := range ids {
			stores[id] = &indexReads{mortalStore: &mortalStore{Store: shared}}
			scheds[id] = newScheduler(t, stores[id], WithInstanceID(id))
			if slices.Contains(readers, id) {
				require.NoError(t, scheds[id].Register("other", Every(time.Hour), func(context.Context) error { return nil }))
			} else {
				require.NoError(t, scheds[id].Register("nightly", Every(time.Hour), job, WithTTL(ttl)))
			}
			require.NoError(t, scheds[id].Start())
		}
		first := <-log.started
		require.Contains(t, others, first.Replica)
		holder := first.Replica
		survivor := others[0]
		if survivor == holder {
			survivor = others[1]
		}
		time.Sleep(10 * time.Second) // the holder renews its lease a few times
		stores[survivor].n.Store(0)
		stores[holder].kill()
		stores[readers[0]].kill()
		died := time.Now()
		second := <-log.started
		resumed := time.Now()
		synctest.Wait()

		assertResumedAfterDeath(t, first, second, survivor, resumed.Sub(died), ttl, fx)
		assert.Zero(t, stores[survivor].n.Load(), "the replica that resumed never read the index")
		assert.Positive(t, stores[readers[1]].n.Load(), "the reader left read it")
	})
}

// noAnnounce is a replica's store whose announcements on the control
// channel fail.
type noAnnounce struct{ *mortalStore }

func (noAnnounce) PublishBatch(context.Context, []fleet.Message) error { return errDead }

// A reader whose announcements fail still offers the due entries of its
// own jobs: the holder of a run dies, the other replica (a reader whose
// announcements fail) resumes its occurrence within TTL + 2s, and warns
// once that it could not announce.
func TestScheduler_IndexReaders_AnnouncementFailsOffersItsOwnJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		log, fx := newAttemptLog(), newEffects()
		job := firstAttemptCut(log, fx)
		const ttl = 3 * time.Second
		time.Sleep(30 * time.Second) // off the hourly grid
		mortal := map[string]*mortalStore{"a": {Store: shared}, "b": {Store: shared}}
		logs := map[string]*logRecorder{"a": {}, "b": {}}
		scheds := map[string]*Scheduler{}
		for _, id := range []string{"a", "b"} {
			scheds[id] = newScheduler(t, noAnnounce{mortal[id]}, WithInstanceID(id), WithLogger(logs[id].logger()))
			require.NoError(t, scheds[id].Register("nightly", Every(time.Hour), job, WithTTL(ttl)))
			require.NoError(t, scheds[id].Start())
		}
		first := <-log.started
		holder, other := first.Replica, map[string]string{"a": "b", "b": "a"}[first.Replica]
		require.Equal(t, indexReadAnnounce, scheds[other].view.Load().indexRole(), "two replicas: both read for the fleet")
		time.Sleep(10 * time.Second)
		mortal[holder].kill()
		died := time.Now()
		second := <-log.started
		resumed := time.Now()
		synctest.Wait()

		assertResumedAfterDeath(t, first, second, other, resumed.Sub(died), ttl, fx)
		assert.Equal(t, 1, logs[other].count("WARN",
			"could not announce the fleet's due open occurrences; only this replica's own jobs are resumed from them until it works again"), "warned once")
	})
}
