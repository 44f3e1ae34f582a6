package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// fleetOf returns registry entries for replicas ids, each having jobs
// keys with fingerprint "fp".
func fleetOf(ids []string, keys []string) []fleet.Replica {
	var out []fleet.Replica
	for _, id := range ids {
		r := fleet.Replica{ID: id}
		for _, k := range keys {
			r.Jobs = append(r.Jobs, fleet.Job{Name: k, Key: k, Fingerprint: "fp"})
		}
		out = append(out, r)
	}
	return out
}

func replicaIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("replica-%d", i)
	}
	return ids
}

func jobKeys(n int) ([]string, map[string]string) {
	keys := make([]string, n)
	mine := make(map[string]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("job:%05d", i)
		mine[keys[i]] = "fp"
	}
	return keys, mine
}

// Every replica, from the same registry, finds exactly one first choice
// and one backup for each occurrence, the same every time it asks, and the
// choice spreads within 1.5x of the mean over replicas, for the first
// choices and the backups alike.
func TestFleetView_Role_OneFirstOneBackupSpreadEvenly(t *testing.T) {
	for _, n := range []int{3, 10, 20} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			ids := replicaIDs(n)
			keys, mine := jobKeys(200)
			all := fleetOf(ids, keys)
			views := make([]*fleetView, n)
			for i, id := range ids {
				views[i] = newFleetView(id, all, mine)
			}
			first, backup := make([]int, n), make([]int, n)
			occs := 0
			start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).UnixMilli()
			for _, k := range keys {
				for o := range 100 {
					ms := start + int64(o)*1000
					occs++
					var f, b int
					for i, v := range views {
						switch v.role(k, ms) {
						case roleFirst:
							f++
							first[i]++
						case roleBackup:
							b++
							backup[i]++
						case roleRace:
							t.Fatalf("replica %d races with a full view", i)
						}
						require.Equal(t, v.role(k, ms), v.role(k, ms), "deterministic")
					}
					require.Equal(t, 1, f, "one first choice for %s at %d", k, ms)
					require.Equal(t, 1, b, "one backup for %s at %d", k, ms)
				}
			}
			mean := float64(occs) / float64(n)
			for i := range n {
				for what, c := range map[string]int{"first": first[i], "backup": backup[i]} {
					assert.LessOrEqual(t, float64(c), 1.5*mean, "replica %d as %s", i, what)
					assert.GreaterOrEqual(t, float64(c), mean/1.5, "replica %d as %s", i, what)
				}
			}
		})
	}
}

// Without a view, for a key the view does not have, for a key in conflict
// and for a key whose candidates do not include this replica yet, the
// replica races as every replica did.
func TestFleetView_Role_RacesWithoutAView(t *testing.T) {
	var none *fleetView
	assert.Equal(t, roleRace, none.role("job:a", 1000))
	assert.False(t, none.others())

	all := fleetOf([]string{"a", "b"}, []string{"job:a", "job:b"})
	all = append(all, fleet.Replica{ID: "c", Jobs: []fleet.Job{{Key: "job:b", Fingerprint: "other"}}})
	v := newFleetView("a", all, map[string]string{"job:a": "fp", "job:b": "fp", "job:new": "fp"})
	assert.NotEqual(t, roleRace, v.role("job:a", 1000), "a and b have job:a alike")
	assert.Equal(t, roleRace, v.role("job:b", 1000), "job:b is in conflict with c")
	assert.Equal(t, roleRace, v.role("job:new", 1000), "job:new was registered here after the registry was read")
	assert.True(t, v.others())

	late := newFleetView("d", all, map[string]string{"job:a": "fp"})
	assert.Equal(t, roleRace, late.role("job:a", 1000), "d is not in the registry yet")

	alone := newFleetView("a", fleetOf([]string{"a"}, []string{"job:a"}), map[string]string{"job:a": "fp"})
	assert.Equal(t, roleFirst, alone.role("job:a", 1000))
	assert.False(t, alone.others())
}

// Choosing allocates nothing: a replica not chosen costs nothing per job
// per firing.
func TestFleetView_Role_AllocatesNothing(t *testing.T) {
	keys, mine := jobKeys(10)
	v := newFleetView("replica-1", fleetOf(replicaIDs(3), keys), mine)
	allocs := testing.AllocsPerRun(100, func() { _ = v.role(keys[3], 1_700_000_000_000) })
	assert.Zero(t, allocs)
}

// jobNameWhere returns the first job name jK whose key, in the view of the
// fleet ids from replica self, satisfies want: a test picks a job whose
// preferred replicas fall as its scenario needs.
func jobNameWhere(t *testing.T, self string, ids []string, want func(v *fleetView, key string) bool) string {
	t.Helper()
	for k := range 5000 {
		n := fmt.Sprintf("j%d", k)
		key := "job:" + n
		if want(newFleetView(self, fleetOf(ids, []string{key}), map[string]string{key: "fp"}), key) {
			return n
		}
	}
	require.FailNow(t, "no job name among 5000 has the choice the test needs")
	return ""
}

// ranked returns the first choice and the backup of key's occurrence ms in
// view v.
func ranked(v *fleetView, key string, ms int64) (first, backup string) {
	c := v.jobs[key]
	f, b := rank(c.seeds, fnv1a(fnvOffset, key), ms)
	return c.ids[f], c.ids[b]
}

// views sets each scheduler's view of the fleet, as if its control plane
// had read it, and keeps it: their control planes are off.
func setView(s *Scheduler, ids []string, keys ...string) {
	mine := map[string]string{}
	for _, k := range keys {
		mine[k] = "fp"
	}
	s.view.Store(newFleetView(s.cfg.instanceID, fleetOf(ids, keys), mine))
}

// Two replicas whose views disagree (each believes it is alone, so each is
// the first choice for every occurrence) never run an occurrence twice:
// rounds remain the safety net. With views that each leave the occurrence
// to the other (each believes a third replica and the other are chosen),
// an occurrence may run nowhere, never twice.
func TestScheduler_Prefer_StaleViewsNeverRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		occ := newOccurrences()
		a := newScheduler(t, store, WithInstanceID("a"), WithoutControlPlane())
		b := newScheduler(t, store, WithInstanceID("b"), WithoutControlPlane(), ahead(30*time.Millisecond))
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("j", Every(time.Second), occ.record))
		}
		setView(a, []string{"a"}, "job:j")
		setView(b, []string{"b"}, "job:j")
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Start())
		}
		time.Sleep(60 * time.Second)
		for _, s := range []*Scheduler{a, b} {
			shutdown(t, s)
		}
		synctest.Wait()
		ms := occ.sorted("j")
		require.GreaterOrEqual(t, len(ms), 59)
		requireOncePerStep(t, "j", ms, time.Second)
		assert.Positive(t, a.Stats().SkipClaimed+a.Stats().SkipLocked+b.Stats().SkipClaimed+b.Stats().SkipLocked,
			"both claimed: each was refused what the other won")
	})
}

// countingStore counts the acquires each replica sends, one by one or in
// batches, and the round reads of its backups.
type countingStore struct {
	*memory.Store
	acquires atomic.Int64
}

func (c *countingStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	c.acquires.Add(1)
	return c.Store.Acquire(ctx, key, ttl, opts...)
}

func (c *countingStore) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	c.acquires.Add(int64(len(reqs)))
	c.Store.AcquireBatch(ctx, reqs, res)
}

// With three replicas that share a view, each occurrence runs once, and
// only its first choice sends an acquire: the backup reads the round and
// finds it claimed, the third replica sends nothing and reports nothing.
func TestScheduler_Prefer_OnlyTheFirstChoiceAcquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		occ := newOccurrences()
		ids := []string{"a", "b", "c"}
		var counted []*countingStore
		var scheds []*Scheduler
		for i, id := range ids {
			cs := &countingStore{Store: store}
			s := newScheduler(t, cs, WithInstanceID(id), WithoutControlPlane(),
				ahead(time.Duration(i-1)*40*time.Millisecond))
			for k := range 5 {
				require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), occ.record))
			}
			setView(s, ids, "job:j0", "job:j1", "job:j2", "job:j3", "job:j4")
			counted, scheds = append(counted, cs), append(scheds, s)
		}
		time.Sleep(500 * time.Millisecond) // off the grid: every replica's first firing is at 1s
		for _, s := range scheds {
			require.NoError(t, s.Start())
		}
		time.Sleep(30 * time.Second)
		for _, s := range scheds {
			shutdown(t, s)
		}
		synctest.Wait()

		total := 0
		for k := range 5 {
			ms := occ.sorted(fmt.Sprintf("j%d", k))
			require.GreaterOrEqual(t, len(ms), 30)
			requireOncePerStep(t, fmt.Sprintf("j%d", k), ms, time.Second)
			total += len(ms)
		}
		var acquires int64
		var skippedClaimed uint64
		for i, cs := range counted {
			acquires += cs.acquires.Load()
			st := scheds[i].Stats()
			skippedClaimed += st.SkipClaimed
			assert.Zero(t, st.SkipLocked, "replica %s sent no acquire that found the lease held", ids[i])
			assert.Positive(t, st.Started, "replica %s ran its share", ids[i])
		}
		assert.Equal(t, int64(total), acquires, "one acquire per occurrence: the first choice's")
		assert.Equal(t, uint64(total), skippedClaimed, "the backup of each occurrence found it claimed")
	})
}

// stalledStore is a replica's store while the replica is stopped (as by
// SIGSTOP): every acquire waits until the test ends.
type stalledStore struct {
	*memory.Store
	until <-chan struct{}
}

func (s *stalledStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	select {
	case <-s.until:
	case <-ctx.Done():
	}
	return nil, fmt.Errorf("stalled: %w", lease.ErrAborted)
}

func (s *stalledStore) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	acquireEach(ctx, s.Acquire, reqs, res)
}

// A first choice that is stalled costs its occurrences one grace: they run
// on their backup within BackupGrace + 100ms of the occurrence, once.
func TestScheduler_Prefer_StalledFirstChoiceCostsOneGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		stall := make(chan struct{})
		ids := []string{"a", "b", "c"}
		keys := []string{"job:j0", "job:j1", "job:j2", "job:j3"}
		type run struct {
			replica string
			late    time.Duration
		}
		var mu sync.Mutex
		runs := map[string]map[int64]run{}
		record := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			mu.Lock()
			defer mu.Unlock()
			if runs[r.Job] == nil {
				runs[r.Job] = map[int64]run{}
			}
			_, twice := runs[r.Job][r.Occurrence.UnixMilli()]
			assert.False(t, twice, "%s at %s ran twice", r.Job, r.Occurrence)
			runs[r.Job][r.Occurrence.UnixMilli()] = run{replica: r.Owner[:1], late: time.Since(r.Occurrence)}
			return nil
		}
		var scheds []*Scheduler
		for _, id := range ids {
			var st lease.Store = store
			if id == "a" {
				st = &stalledStore{Store: store, until: stall}
			}
			s := newScheduler(t, st, WithInstanceID(id), WithoutControlPlane())
			for k := range keys {
				require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), record))
			}
			setView(s, ids, keys...)
			scheds = append(scheds, s)
		}
		time.Sleep(500 * time.Millisecond)
		for _, s := range scheds {
			require.NoError(t, s.Start())
		}
		time.Sleep(30 * time.Second)
		close(stall)
		for _, s := range scheds {
			shutdown(t, s)
		}
		synctest.Wait()

		view := scheds[0].view.Load()
		stalledFirst := 0
		for k, key := range keys {
			name := fmt.Sprintf("j%d", k)
			for o := int64(1); o <= 30; o++ {
				ms := time.Date(2000, 1, 1, 0, 0, int(o), 0, time.UTC).UnixMilli()
				r, ok := runs[name][ms]
				require.True(t, ok, "%s at %ds ran", name, o)
				assert.NotEqual(t, "a", r.replica, "a is stalled")
				if view.role(key, ms) == roleFirst {
					stalledFirst++
					assert.GreaterOrEqual(t, r.late, BackupGrace, "%s at %ds waited the grace", name, o)
					assert.LessOrEqual(t, r.late, BackupGrace+100*time.Millisecond, "%s at %ds ran within the grace + 100ms", name, o)
				} else {
					assert.Less(t, r.late, 100*time.Millisecond, "%s at %ds: its first choice ran it", name, o)
				}
			}
		}
		assert.Positive(t, stalledFirst, "a was the first choice of some occurrences")
	})
}

// An occurrence that came due while the job ran is skipped by its backup
// too, although the round is still unclaimed when the grace ends (the
// first choice's acquire found the lease held and recorded nothing) and the
// run has ended by then: the last run recorded spans the occurrence. It
// does not run late (OverlapSkip).
func TestScheduler_Prefer_BackupSkipsAnOccurrenceThatFoundTheJobRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		base := time.Now()
		ids := []string{"a", "b", "c"}
		at := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
		// A job name whose 2s runs on a replica that is not 4s's backup, so
		// that 4s's backup goes through the backup's check.
		name := ""
		for n := 0; name == ""; n++ {
			cand := fmt.Sprintf("long%d", n)
			key := JobKeyPrefix + cand
			views := make([]*fleetView, len(ids))
			for i, id := range ids {
				views[i] = newFleetView(id, fleetOf(ids, []string{key}), map[string]string{key: "fp"})
			}
			runner, backup := -1, -1
			for i, v := range views {
				if v.role(key, at(2*time.Second)) == roleFirst {
					runner = i
				}
				if v.role(key, at(4*time.Second)) == roleBackup {
					backup = i
				}
			}
			if runner != backup {
				name = cand
			}
		}
		occ := newOccurrences()
		var first atomic.Bool
		job := func(ctx context.Context) error {
			if first.CompareAndSwap(false, true) {
				time.Sleep(2*time.Second + 100*time.Millisecond) // 2s until 4.1s: 4s finds it running
			}
			return occ.record(ctx)
		}
		evs := make([]events, len(ids))
		var scheds []*Scheduler
		for i, id := range ids {
			s := newScheduler(t, store, WithInstanceID(id), WithRegistryRefresh(time.Second), WithObserver(evs[i].observe))
			require.NoError(t, s.Register(name, Every(2*time.Second), job))
			scheds = append(scheds, s)
		}
		time.Sleep(500 * time.Millisecond)
		for _, s := range scheds {
			require.NoError(t, s.Start())
		}
		time.Sleep(7 * time.Second) // to 7.5s: occurrences 2s, 4s and 6s
		for _, s := range scheds {
			shutdown(t, s)
		}
		synctest.Wait()

		assert.Equal(t, []int64{at(2 * time.Second), at(6 * time.Second)}, occ.sorted(name), "4s ran nowhere")
		skipped := 0
		for i := range evs {
			for _, e := range evs[i].of(EventSkipped) {
				if e.Occurrence.UnixMilli() == at(4*time.Second) {
					assert.Contains(t, []SkipReason{SkipLocked, SkipRunning}, e.Reason)
					skipped++
				}
			}
		}
		assert.Equal(t, 2, skipped, "4s's first choice and backup both skipped it (as locked, or running there)")
	})
}
