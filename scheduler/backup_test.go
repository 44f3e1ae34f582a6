package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// slowStore claims one key at a time, each acquire taking perAcquire: a
// first choice that works through a firing group's claims slower than
// its backup's grace. The turn is a channel, not a mutex: a goroutine
// waiting on a mutex is not durably blocked, and the bubble's clock would
// not advance past the holder's sleep.
type slowStore struct {
	*memory.Store
	perAcquire time.Duration
	turn       chan struct{} // capacity 1
}

func newSlowStore(store *memory.Store, perAcquire time.Duration) *slowStore {
	return &slowStore{Store: store, perAcquire: perAcquire, turn: make(chan struct{}, 1)}
}

func (s *slowStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	s.turn <- struct{}{}
	defer func() { <-s.turn }()
	time.Sleep(s.perAcquire)
	return s.Store.Acquire(ctx, key, ttl, opts...)
}

func (s *slowStore) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	acquireEach(ctx, s.Acquire, reqs, res)
}

// ranBy records which replica ran each occurrence of each job, failing
// the test on a second run.
type ranBy struct {
	t    *testing.T
	mu   sync.Mutex
	runs map[string]map[int64]string
}

func newRanBy(t *testing.T) *ranBy { return &ranBy{t: t, runs: map[string]map[int64]string{}} }

func (r *ranBy) record(ctx context.Context) error {
	run, _ := RunFromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs[run.Job] == nil {
		r.runs[run.Job] = map[int64]string{}
	}
	ms := run.Occurrence.UnixMilli()
	_, twice := r.runs[run.Job][ms]
	assert.False(r.t, twice, "%s at %s ran twice", run.Job, run.Occurrence)
	r.runs[run.Job][ms] = run.Owner[:1]
	return nil
}

// runFor starts scheds half a second into the bubble, lets them run for d
// and shuts them down.
func runFor(t *testing.T, scheds []*Scheduler, d time.Duration) {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	for _, s := range scheds {
		require.NoError(t, s.Start())
	}
	time.Sleep(d)
	for _, s := range scheds {
		shutdown(t, s)
	}
	synctest.Wait()
}

// pairKeys returns the lease keys of the jobs the backup tests register,
// j0 to j15.
func pairKeys() []string {
	keys := make([]string, 16)
	for k := range keys {
		keys[k] = fmt.Sprintf("job:j%d", k)
	}
	return keys
}

// slowFirstPair returns the schedulers of replicas ids ("a" and "b") on
// store, without a control plane and with a fixed view, each with a job
// per key on Every(time.Second) recorded by ran; a's acquires take
// perAcquire each, one at a time (slowStore).
func slowFirstPair(t *testing.T, store *memory.Store, perAcquire time.Duration, ids, keys []string, ran *ranBy) []*Scheduler {
	t.Helper()
	return slowFirstPairOn(t, store, store, perAcquire, ids, keys, ran)
}

// slowFirstPairOn is slowFirstPair with b on store b.
func slowFirstPairOn(t *testing.T, store *memory.Store, b lease.Store, perAcquire time.Duration, ids, keys []string, ran *ranBy) []*Scheduler {
	t.Helper()
	var scheds []*Scheduler
	for _, id := range ids {
		var st lease.Store = b
		if id == "a" {
			st = newSlowStore(store, perAcquire)
		}
		s := newScheduler(t, st, WithInstanceID(id), WithoutControlPlane())
		for k := range keys {
			require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), ran.record))
		}
		setView(s, ids, keys...)
		scheds = append(scheds, s)
	}
	return scheds
}

// A backup waits for a first choice that it sees claiming: replica a
// claims its first-choice jobs one at a time, 40ms each, so its last claims
// of a firing come after the backup's grace; b sees some of a's rounds
// claimed when its grace ends and looks again instead of claiming. Every
// occurrence whose first choice is a runs on a, once.
func TestScheduler_Backup_WaitsForAFirstChoiceSeenClaiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "b"}
		keys := pairKeys()
		ran := newRanBy(t)
		scheds := slowFirstPair(t, store, 40*time.Millisecond, ids, keys, ran)
		runFor(t, scheds, 10*time.Second)

		view := scheds[1].view.Load()
		late := 0 // a's claims that came after b's grace
		for k, key := range keys {
			name := fmt.Sprintf("j%d", k)
			for o := int64(1); o <= 9; o++ {
				ms := time.Date(2000, 1, 1, 0, 0, int(o), 0, time.UTC).UnixMilli()
				by, ok := ran.runs[name][ms]
				require.True(t, ok, "%s at %ds ran", name, o)
				if view.role(key, ms) == roleBackup { // b is the backup: a is the first choice
					assert.Equal(t, "a", by, "%s at %ds: its first choice, claiming, was waited for", name, o)
					late++
				}
			}
		}
		require.Positive(t, late, "a was the first choice of some occurrences")
		assert.Positive(t, scheds[0].Stats().Started, "a ran its occurrences")
	})
}

// A backup waits for a first choice seen claiming until its own claim's
// retries would end, not half the gap: replica a claims its first-choice
// jobs one at a time, the busiest firing's last about 800ms after the
// occurrence, past half the 1s gap. b sees a claiming at each look and
// waits until a has claimed them all. Every occurrence whose first choice
// is a runs on a, once.
func TestScheduler_Backup_WaitsForAFirstChoiceSeenClaimingPastHalfTheGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "b"}
		keys := pairKeys()
		occurrence := func(o int) int64 { return time.Date(2000, 1, 1, 0, 0, o, 0, time.UTC).UnixMilli() }
		// a's claims of its busiest firing span 800ms, one at least every
		// half grace, so that b sees a claiming at every look.
		mine := map[string]string{}
		for _, k := range keys {
			mine[k] = "fp"
		}
		roles := newFleetView("b", fleetOf(ids, keys), mine)
		busiest := 0
		for o := 1; o <= 10; o++ {
			n := 0
			for _, key := range keys {
				if roles.role(key, occurrence(o)) == roleBackup {
					n++
				}
			}
			busiest = max(busiest, n)
		}
		perAcquire := 800 * time.Millisecond / time.Duration(busiest)
		require.Less(t, perAcquire, backupRecheck, "a claims at least once between two of b's looks")

		ran := newRanBy(t)
		b := &runReads{Store: store}
		scheds := slowFirstPairOn(t, store, b, perAcquire, ids, keys, ran)
		runFor(t, scheds, 10*time.Second)

		for k, key := range keys {
			name := fmt.Sprintf("j%d", k)
			for o := 2; o <= 9; o++ {
				by, ok := ran.runs[name][occurrence(o)]
				require.True(t, ok, "%s at %ds ran", name, o)
				if roles.role(key, occurrence(o)) == roleBackup { // b is the backup: a is the first choice
					assert.Equal(t, "a", by, "%s at %ds: its first choice, seen claiming, was waited for past half the gap", name, o)
				}
			}
		}
		// Every round b waited for was claimed by its last look: b read no
		// job's last run (it reads one only at the look that decides).
		assert.Zero(t, b.keys.Load(), "last runs read by the backup")
	})
}

// runReads is a store that counts the keys whose last run is read
// (lease.RoundReader.LastRuns).
type runReads struct {
	*memory.Store
	keys atomic.Int64
}

func (r *runReads) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	r.keys.Add(int64(len(keys)))
	return r.Store.LastRuns(ctx, keys, spans)
}

// A backup whose clock runs ahead of its first choice's adds the
// difference, as their registry entries tell it, to its grace: replica a
// runs 400ms behind the store, b 400ms ahead, so b fires 800ms before a.
// Every occurrence whose first choice is a still runs on a, once.
func TestScheduler_Backup_WaitsForAFirstChoiceWhoseClockIsBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		ids := []string{"a", "b"}
		offsets := map[string]time.Duration{"a": -400 * time.Millisecond, "b": 400 * time.Millisecond}
		keys := pairKeys()
		ran := newRanBy(t)
		var scheds []*Scheduler
		for _, id := range ids {
			clock := skewedClock{Clock: clockwork.NewRealClock(), offset: offsets[id]}
			s := newScheduler(t, store, WithInstanceID(id), WithoutControlPlane(), WithClock(clock))
			for k := range keys {
				require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), ran.record))
			}
			var replicas []fleet.Replica
			for _, r := range fleetOf(ids, keys) {
				r.ClockOffset = offsets[r.ID]
				replicas = append(replicas, r)
			}
			mine := map[string]string{}
			for _, k := range keys {
				mine[k] = "fp"
			}
			s.view.Store(newFleetView(id, replicas, mine))
			scheds = append(scheds, s)
		}
		runFor(t, scheds, 10*time.Second)

		view := scheds[1].view.Load()
		first := map[string]int{}
		for k, key := range keys {
			name := fmt.Sprintf("j%d", k)
			for o := int64(2); o <= 9; o++ {
				ms := time.Date(2000, 1, 1, 0, 0, int(o), 0, time.UTC).UnixMilli()
				by, ok := ran.runs[name][ms]
				require.True(t, ok, "%s at %ds ran", name, o)
				if view.role(key, ms) == roleBackup {
					assert.Equal(t, "a", by, "%s at %ds: b waited for a, whose clock is 800ms behind", name, o)
				}
				first[by]++
			}
		}
		assert.Positive(t, first["a"], "a ran occurrences")
		assert.Positive(t, first["b"], "b ran occurrences")
	})
}

// The measured offset is the midpoint of the round trip with the shortest
// round trip of the period, minus the store's time; a period whose best
// round trip is too long to tell the offset within offsetMaxError gives
// none.
func TestClockOffset_Take_KeepsTheShortestRoundTrip(t *testing.T) {
	var c clockOffset
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	server := t0.Add(-300 * time.Millisecond)
	c.observe(t0, t0.Add(18*time.Millisecond), server.Add(5*time.Millisecond)) // 9ms half round trip
	c.observe(t0, t0.Add(4*time.Millisecond), server.Add(2*time.Millisecond))  // 2ms: the best
	c.observe(t0, t0.Add(30*time.Millisecond), server)                         // too long to beat it
	off, ok := c.take()
	require.True(t, ok)
	assert.Equal(t, 300*time.Millisecond, off, "midpoint (t0+2ms) minus the store's time (t0-298ms)")

	_, ok = c.take()
	assert.False(t, ok, "a new period has no sample")

	c.observe(t0, t0.Add(2*offsetMaxError+2*time.Millisecond), server)
	_, ok = c.take()
	assert.False(t, ok, "a round trip of more than twice offsetMaxError tells too little")

	assert.False(t, republish(300*time.Millisecond, 300*time.Millisecond+offsetRepublish))
	assert.True(t, republish(300*time.Millisecond, 300*time.Millisecond+offsetRepublish+time.Millisecond))
	assert.True(t, republish(0, -offsetRepublish-time.Millisecond))
}

// A backup's wait is the grace plus how far its clock runs ahead of its
// first choice's, never less than the grace, at most MaxOccurrenceSkew
// more.
func TestChoice_BackupWait_AddsHowFarTheBackupIsAhead(t *testing.T) {
	c := &candidates{ids: []string{"a", "b"}, offsets: []time.Duration{-400 * time.Millisecond, 400 * time.Millisecond}}
	c.self = 1
	assert.Equal(t, BackupGrace+800*time.Millisecond, choice{role: roleBackup, c: c, first: 0}.backupWait())
	c.self = 0
	assert.Equal(t, BackupGrace, choice{role: roleBackup, c: c, first: 1}.backupWait(), "a first choice ahead: the grace")
	c.offsets[1] = time.Hour
	c.self = 1
	assert.Equal(t, BackupGrace+MaxOccurrenceSkew, choice{role: roleBackup, c: c, first: 0}.backupWait())
	assert.Equal(t, BackupGrace, choice{}.backupWait(), "no view: the grace")
}

// When a backup claim is looked at: from the occurrence for a scheduled
// firing that came within a grace of it (or ahead of it), with the
// clocks' difference; the grace from now for one that waited here (a
// buffered occurrence whose wait ended with the run here) or for a
// trigger, unless the first choice's firing by its own clock is later.
func TestBackupDue_FromTheOccurrenceOrFromNow(t *testing.T) {
	occ := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c := &candidates{ids: []string{"first", "backup"}, offsets: []time.Duration{0, 2330 * time.Millisecond}, self: 1}
	ahead := choice{role: roleBackup, c: c, first: 0} // this backup's clock runs 2.33s ahead
	level := choice{role: roleBackup}                 // no view: the grace alone
	for _, tc := range []struct {
		name      string
		now       time.Time
		scheduled bool
		ch        choice
		want      time.Time
	}{
		{"on time", occ.Add(50 * time.Millisecond), true, level, occ.Add(BackupGrace)},
		{"on time, ahead", occ.Add(50 * time.Millisecond), true, ahead, occ.Add(BackupGrace + 2330*time.Millisecond)},
		{"ahead of the occurrence", occ.Add(-200 * time.Millisecond), true, level, occ.Add(BackupGrace)},
		{"late by load, ahead: the first choice fires later still", occ.Add(300 * time.Millisecond), true, ahead, occ.Add(BackupGrace + 2330*time.Millisecond)},
		{"late by load", occ.Add(300 * time.Millisecond), true, level, occ.Add(300*time.Millisecond + BackupGrace)},
		{"waited here for a run, ahead", occ.Add(8 * time.Second), true, ahead, occ.Add(8*time.Second + BackupGrace)},
		{"a trigger, ahead", occ.Add(50 * time.Millisecond), false, ahead, occ.Add(50*time.Millisecond + BackupGrace)},
	} {
		assert.Equal(t, tc.want, backupDue(tc.now, occ, tc.scheduled, tc.ch), tc.name)
	}
}
