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
	"github.com/cronguard/cronguard/lease"
)

// readersOf returns the replicas that read the index for the fleet, each
// as it computes its own role from the same registry.
func readersOf(replicas []fleet.Replica) []string {
	var readers []string
	for _, r := range replicas {
		if indexRoleOf(r.ID, replicas).announce {
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
	for _, n := range []int{2, 3, 4, 5, 10, 20, 50} {
		replicas := replicasNamed(n, true)
		assert.Len(t, readersOf(replicas), 2, "%d replicas", n)
		perSecond := 0.0 // reads of the index by the fleet, per resumePoll
		for _, r := range replicas {
			role := indexRoleOf(r.ID, replicas)
			require.Positive(t, role.every)
			perSecond += 1 / float64(role.every)
			if !role.announce {
				assert.Equal(t, indexEvery(n), role.every, "%d replicas: %s is not a reader", n, r.ID)
			}
		}
		assert.LessOrEqual(t, perSecond, 4+1e-9, "%d replicas: the fleet reads at most four times a second", n)
		assert.GreaterOrEqual(t, perSecond, min(float64(n), 3.0), "%d replicas: the others read about twice a second in all", n)
	}
}

func TestIndexEvery_Rule(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2, 7: 3, 10: 4, 20: 9, 50: 24} {
		assert.Equal(t, want, indexEvery(n), "%d replicas", n)
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
	assert.Equal(t, indexRole{announce: true, every: 1}, indexRoleOf("new", replicas),
		"the only replica that reads for the fleet reads, among old ones that read for themselves or not at all")

	replicas = append(old, fleet.Replica{ID: "new-1", ReadsIndex: true}, fleet.Replica{ID: "new-2", ReadsIndex: true},
		fleet.Replica{ID: "new-3", ReadsIndex: true})
	var announce []bool
	for _, id := range []string{"new-1", "new-2", "new-3"} {
		announce = append(announce, indexRoleOf(id, replicas).announce)
	}
	assert.ElementsMatch(t, []bool{true, true, false}, announce, "two readers among the three that can read")
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

// A fleet of five replicas reads its index of open occurrences three and a
// half times a second, not five: the two readers every resumePoll, the
// three others every indexEvery(5) = 2.
func TestScheduler_IndexReaders_TheFleetReadsAtAFixedRate(t *testing.T) {
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
		require.Equal(t, 2, indexEvery(len(ids)))

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
				assert.InDelta(t, 10, n, 1, "replica %s reads every other resumePoll", id)
			}
		}
	})
}

// noIndex is a replica's store that cannot read the fleet's index.
type noIndex struct{ *indexReads }

func (noIndex) DueOccurrences(context.Context, int) ([]fleet.Due, error) { return nil, errDead }

// A replica dies during a run of a job that neither reader has, and one
// of the readers dies with it. The replica left with the job cannot read
// the index itself: the other reader announces the occurrence when it
// comes due, and that replica resumes it within TTL + 2s of the death.
func TestScheduler_IndexReaders_AnnounceToTheReplicasThatHaveTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		ids := []string{"a", "b", "c", "d"}
		readers, others := rolesOf(ids)

		log, fx := newAttemptLog(), newEffects()
		job := firstAttemptCut(log, fx)
		const ttl = 3 * time.Second
		time.Sleep(30 * time.Second) // off the hourly grid
		stores := map[string]*indexReads{}
		scheds := map[string]*Scheduler{}
		for _, id := range ids {
			stores[id] = &indexReads{mortalStore: &mortalStore{Store: shared}}
			var st lease.Store = stores[id]
			if !slices.Contains(readers, id) {
				st = noIndex{stores[id]}
			}
			scheds[id] = newScheduler(t, st, WithInstanceID(id))
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
		survivor := otherThan(others, holder)
		time.Sleep(10 * time.Second) // the holder renews its lease a few times
		second, took := resumeAfter(log, func() {
			stores[holder].kill()
			stores[readers[0]].kill()
		})

		assertResumedAfterDeath(t, first, second, survivor, took, ttl, fx)
		assert.Positive(t, stores[readers[1]].n.Load(), "the reader left read it")
	})
}

// Both readers die with the holder of a run (three replicas of one
// machine): the replica left with the job reads the index for itself and
// resumes the occurrence within TTL + 2s of the death, without waiting for
// the registry to drop the readers.
func TestScheduler_IndexReaders_BothReadersDie(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := newMemoryStore(t, nil)
		ids := []string{"a", "b", "c", "d"}
		readers, others := rolesOf(ids)
		require.Equal(t, 1, indexEvery(len(ids)), "the others read every second in a fleet of four")

		log, fx := newAttemptLog(), newEffects()
		job := firstAttemptCut(log, fx)
		const ttl = 3 * time.Second
		time.Sleep(30 * time.Second) // off the hourly grid
		stores := map[string]*mortalStore{}
		for _, id := range ids {
			stores[id] = &mortalStore{Store: shared}
			s := newScheduler(t, stores[id], WithInstanceID(id))
			if slices.Contains(readers, id) {
				require.NoError(t, s.Register("other", Every(time.Hour), func(context.Context) error { return nil }))
			} else {
				require.NoError(t, s.Register("nightly", Every(time.Hour), job, WithTTL(ttl)))
			}
			require.NoError(t, s.Start())
		}
		first := <-log.started
		require.Contains(t, others, first.Replica)
		holder := first.Replica
		survivor := otherThan(others, holder)
		time.Sleep(10 * time.Second)
		second, took := resumeAfter(log, func() {
			for _, id := range []string{holder, readers[0], readers[1]} {
				stores[id].kill()
			}
		})

		assertResumedAfterDeath(t, first, second, survivor, took, ttl, fx)
	})
}

// otherThan returns the replica of the pair ids that is not id.
func otherThan(ids []string, id string) string {
	if ids[0] == id {
		return ids[1]
	}
	return ids[0]
}

// rolesOf returns the readers of a fleet of replicas ids (all of this
// version) and the others.
func rolesOf(ids []string) (readers, others []string) {
	var replicas []fleet.Replica
	for _, id := range ids {
		replicas = append(replicas, fleet.Replica{ID: id, ReadsIndex: true})
	}
	readers = readersOf(replicas)
	for _, id := range ids {
		if !slices.Contains(readers, id) {
			others = append(others, id)
		}
	}
	return readers, others
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
		require.True(t, scheds[other].view.Load().indexRole().announce, "two replicas: both read for the fleet")
		time.Sleep(10 * time.Second)
		second, took := resumeAfter(log, mortal[holder].kill)

		assertResumedAfterDeath(t, first, second, other, took, ttl, fx)
		assert.Equal(t, 1, logs[other].count("WARN",
			"could not announce the fleet's due open occurrences; only this replica's own jobs are resumed from them until it works again"), "warned once")
	})
}

// A reader ignores its own announcements of the index (it offered those
// entries as it read them) and takes those of another reader.
func TestControlPlane_OnMessage_IgnoresItsOwnAnnouncement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingStore{Store: newMemoryStore(t, nil)}
		s := newScheduler(t, store, WithInstanceID("me"))
		require.NoError(t, s.Register("nightly", Every(time.Hour), nop))
		time.Sleep(30 * time.Second) // off the hourly grid
		require.NoError(t, s.Start())
		time.Sleep(time.Second)
		synctest.Wait()
		round := time.Now().Truncate(time.Hour).UnixMilli()
		before := store.acquires.Load()

		s.control.onMessage(fleet.Message{Kind: fleet.MessageOpen, Key: "job:nightly", Round: round, Replica: "me"})
		synctest.Wait()
		assert.Equal(t, before, store.acquires.Load(), "its own announcement: no claim")

		s.control.onMessage(fleet.Message{Kind: fleet.MessageOpen, Key: "job:nightly", Round: round, Replica: "other"})
		synctest.Wait()
		assert.Equal(t, before+1, store.acquires.Load(), "another reader's announcement: one claim of the next attempt")
		shutdown(t, s)
	})
}
