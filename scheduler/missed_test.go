package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
)

// outageStore is a store that cannot be reached between from and to (on
// the bubble's clock): every call fails as a refused connection would.
type outageStore struct {
	lease.Store
	from, to time.Time
}

func (o outageStore) down() error {
	if now := time.Now(); !now.Before(o.from) && now.Before(o.to) {
		return fmt.Errorf("%w: test outage", lease.ErrUnavailable)
	}
	return nil
}

func (o outageStore) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	if err := o.down(); err != nil {
		return nil, err
	}
	return o.Store.Acquire(ctx, key, ttl, opts...)
}

func (o outageStore) Extend(ctx context.Context, id string, ttl time.Duration) (time.Time, error) {
	if err := o.down(); err != nil {
		return time.Time{}, err
	}
	return o.Store.Extend(ctx, id, ttl)
}

func (o outageStore) Release(ctx context.Context, id string) error {
	if err := o.down(); err != nil {
		return err
	}
	return o.Store.Release(ctx, id)
}

// replicaSet is n replicas on one miniredis (in a synctest bubble), each with
// its store wrapped by wrap, its events collected, and job registered on
// each with opts.
type replicaSet struct {
	replicas []*Scheduler
	events   []*events
	occ      *occurrences
}

func newReplicaSet(t *testing.T, n int, wrap func(lease.Store) lease.Store, register func(s *Scheduler, occ *occurrences)) *replicaSet {
	t.Helper()
	m := newBubbleMiniredis(t)
	f := &replicaSet{occ: newOccurrences()}
	for i := range n {
		store, err := redislease.New(newBubbleClient(t, m))
		require.NoError(t, err)
		ev := &events{}
		var st lease.Store = store
		if wrap != nil {
			st = wrap(store)
		}
		s := newScheduler(t, st, WithInstanceID(fmt.Sprintf("replica-%d", i)), WithObserver(ev.observe))
		register(s, f.occ)
		f.replicas = append(f.replicas, s)
		f.events = append(f.events, ev)
	}
	return f
}

func (f *replicaSet) start(t *testing.T) {
	t.Helper()
	for _, s := range f.replicas {
		require.NoError(t, s.Start())
	}
}

func (f *replicaSet) shutdown(t *testing.T) {
	t.Helper()
	for _, s := range f.replicas {
		shutdown(t, s)
	}
}

// all returns every replica's events of kind k.
func (f *replicaSet) all(k EventKind) []Event {
	var out []Event
	for _, ev := range f.events {
		out = append(out, ev.of(k)...)
	}
	return out
}

// minutes returns the Unix ms of base + each of the minutes.
func minutes(base time.Time, ms ...int) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = base.Add(time.Duration(m) * time.Minute).UnixMilli()
	}
	return out
}

// A Redis outage shorter than the occurrence is ridden out: the replicas
// retry within the occurrence, and the occurrence runs once, late; nothing
// is missed. An outage of three minutes makes three occurrences run
// nowhere, and the next winner reports exactly those.
func TestScheduler_Outage_RetriedWithinTheOccurrenceOrReportedMissed(t *testing.T) {
	tests := []struct {
		name       string
		outage     time.Duration
		ran        []int
		missed     []int // first and last missed minute, nil: none
		missedN    int
		lateMinute int // the minute that started late
	}{
		{"20 seconds", 20 * time.Second, []int{1, 2, 3, 4, 5, 6}, nil, 0, 2},
		{"3 minutes", 3 * time.Minute, []int{1, 5, 6}, []int{2, 4}, 3, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := time.Now() // a whole minute
				from := base.Add(2 * time.Minute)
				wrap := func(s lease.Store) lease.Store { return outageStore{Store: s, from: from, to: from.Add(tt.outage)} }
				f := newReplicaSet(t, 3, wrap, func(s *Scheduler, occ *occurrences) {
					require.NoError(t, s.Register("minutely", Cron("* * * * *"), occ.record, WithTTL(10*time.Second)))
				})
				time.Sleep(30 * time.Second) // off the grid
				f.start(t)
				time.Sleep(6*time.Minute - 20*time.Second)
				synctest.Wait()
				f.shutdown(t)

				assert.Equal(t, minutes(base, tt.ran...), f.occ.sorted("minutely"), "each occurrence ran once, or nowhere")
				missed := f.all(EventMissed)
				if tt.missed == nil {
					assert.Empty(t, missed, "nothing ran nowhere")
				} else {
					require.Len(t, missed, 1, "one winner reports the gap")
					assert.Equal(t, Missed{Count: tt.missedN, First: base.Add(time.Duration(tt.missed[0]) * time.Minute).UTC(),
						Last: base.Add(time.Duration(tt.missed[1]) * time.Minute).UTC()}, missed[0].Missed)
					assert.Equal(t, minutes(base, 5)[0], missed[0].Occurrence.UnixMilli())
				}
				assert.NotEmpty(t, f.all(EventAcquireRetrying), "the replicas retried")
				for _, e := range f.all(EventStarted) {
					late := e.Occurrence.Equal(base.Add(time.Duration(tt.lateMinute) * time.Minute))
					if late {
						assert.GreaterOrEqual(t, e.Lateness, tt.outage, "the occurrence ran after the outage")
					} else {
						assert.Less(t, e.Lateness, time.Second, "%s ran on time", e.Occurrence)
					}
				}
				if tt.missed != nil {
					assert.Len(t, f.all(EventAcquireFailed), 3*3, "each replica gave up each of the three occurrences")
				}
			})
		})
	}
}

// A 10s job whose run takes 35s holds its lease over three later
// occurrences; they run nowhere (overlap policy "skip"), and the next
// winner reports exactly those three.
func TestScheduler_Overlap_HiddenOccurrencesReportedMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		var mu sync.Mutex
		long := true
		f := newReplicaSet(t, 3, nil, func(s *Scheduler, occ *occurrences) {
			require.NoError(t, s.Register("long", Every(10*time.Second), func(ctx context.Context) error {
				_ = occ.record(ctx)
				mu.Lock()
				first := long
				long = false
				mu.Unlock()
				if first {
					time.Sleep(35 * time.Second)
				}
				return nil
			}, WithTTL(3*time.Second)))
		})
		time.Sleep(500 * time.Millisecond)
		f.start(t)
		time.Sleep(55 * time.Second)
		synctest.Wait()
		f.shutdown(t)

		sec := func(s int) int64 { return base.Add(time.Duration(s) * time.Second).UnixMilli() }
		assert.Equal(t, []int64{sec(10), sec(50)}, f.occ.sorted("long"))
		missed := f.all(EventMissed)
		require.Len(t, missed, 1)
		assert.Equal(t, Missed{Count: 3, First: time.UnixMilli(sec(20)).UTC(), Last: time.UnixMilli(sec(40)).UTC()}, missed[0].Missed)
		assert.Equal(t, sec(50), missed[0].Occurrence.UnixMilli())
		var missedTotal uint64
		for _, s := range f.replicas {
			missedTotal += s.Stats().Missed
		}
		assert.Equal(t, uint64(3), missedTotal)
	})
}

// A run after a gap records how many occurrences ran nowhere in its
// status, and so in the job's history: the count rides in the release.
func TestScheduler_Missed_RecordedInTheStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		store := newMemoryStore(t, nil)
		var mu sync.Mutex
		long := true
		s := newScheduler(t, store)
		require.NoError(t, s.Register("long", Every(10*time.Second), func(context.Context) error {
			mu.Lock()
			first := long
			long = false
			mu.Unlock()
			if first {
				time.Sleep(35 * time.Second) // over the occurrences at 20s, 30s and 40s
			}
			return nil
		}, WithTTL(3*time.Second)))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Start())
		time.Sleep(55 * time.Second)
		synctest.Wait()
		shutdown(t, s)

		st, found, err := store.LastStatus(t.Context(), JobKeyPrefix+"long")
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, base.Add(50*time.Second).UnixMilli(), st.Occurrence.UnixMilli())
		assert.Equal(t, 3, st.Missed, "the run after the gap records the three occurrences that ran nowhere")
		runs, total, err := store.History(t.Context(), JobKeyPrefix+"long", 0, 10)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		assert.Equal(t, 3, runs[0].Missed, "the history keeps the count")
		assert.Zero(t, runs[1].Missed, "the first run missed nothing")
	})
}
