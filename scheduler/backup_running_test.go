package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// endsAfterTheRead is a memory store whose first LastRuns of key lets the
// run that holds key end (closes end) once it has read, and returns only
// after the key is free: the backup reads while the run goes on, and
// claims after it ended.
type endsAfterTheRead struct {
	*memory.Store
	key  string
	end  chan struct{} // closed by the read: the held run returns
	read sync.Once
}

func (e *endsAfterTheRead) LastRuns(ctx context.Context, keys []string, spans []lease.RunSpan) error {
	err := e.Store.LastRuns(ctx, keys, spans)
	if slices.Contains(keys, e.key) {
		e.read.Do(func() {
			close(e.end)
			for locked, lerr := true, error(nil); locked && lerr == nil; locked, lerr = e.Store.IsLocked(ctx, e.key) {
				time.Sleep(time.Millisecond) // the bubble's clock: until the run's release
			}
		})
	}
	return err
}

// An occurrence that comes due while a run of its job holds the lease is
// skipped by its backup too, even when that run ends between the backup's
// read and its claim: the read answers the holder's span (the run has not
// recorded itself yet), which covers the occurrence. Replica a is the
// first choice of the job's occurrences at 2s and 3s, b their backup; a's
// run of the occurrence at 2s holds the lease until b has read at 3s, and
// is released before b would claim. The occurrence at 3s runs nowhere, not
// late.
func TestScheduler_Backup_SkipsAnOccurrenceThatCameDueDuringARunThatEndsAsItLooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := []string{"a", "b"}
		at := func(s int) time.Time { return time.Date(2000, 1, 1, 0, 0, s, 0, time.UTC) }
		// A job whose occurrences at 2s and 3s have a as their first
		// choice, b as their backup.
		name := jobNameWhere(t, "b", ids, func(v *fleetView, key string) bool {
			return v.role(key, at(2).UnixMilli()) == roleBackup && v.role(key, at(3).UnixMilli()) == roleBackup
		})
		key := "job:" + name

		store := &endsAfterTheRead{Store: newMemoryStore(t, nil), key: key, end: make(chan struct{})}
		var mu sync.Mutex
		ran := map[int64]string{}
		job := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			mu.Lock()
			ran[r.Occurrence.UnixMilli()] = r.Replica
			mu.Unlock()
			if r.Occurrence.Equal(at(2)) {
				<-store.end
			}
			return nil
		}
		var scheds []*Scheduler
		for _, id := range ids {
			s := newScheduler(t, store, WithInstanceID(id), WithoutControlPlane())
			require.NoError(t, s.Register(name, Every(time.Second), job, WithTTL(10*time.Second)))
			setView(s, ids, key)
			scheds = append(scheds, s)
		}
		runFor(t, scheds, 5*time.Second)

		select {
		case <-store.end:
		default:
			t.Fatal("the backup did not read the job's last run at 3s")
		}
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, "a", ran[at(2).UnixMilli()], "the run at 2s, on its first choice")
		assert.NotContains(t, ran, at(3).UnixMilli(), "the occurrence at 3s came due while the run at 2s held the lease: skipped, not run late")
		assert.Contains(t, ran, at(4).UnixMilli(), "the next occurrence runs")
	})
}
