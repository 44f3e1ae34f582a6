package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/testutil"
)

// Copies of Redis's append-only file, for redis_rollback: one every
// aofEvery, kept while younger than aofKeep; a rollback puts back one
// aged rollbackAge[0] to rollbackAge[1].
const (
	aofEvery = 2 * time.Second
	aofKeep  = 8 * time.Second
)

var rollbackAge = [2]time.Duration{2 * time.Second, 6 * time.Second}

// aofCopy is one copy of the append-only directory, taken between start
// and end: it holds every write acknowledged before start, and none made
// after end.
type aofCopy struct {
	dir        string
	start, end time.Time
}

// aofRing takes and keeps the copies. It is used from the test's goroutine
// only: copies and restarts never run at once.
type aofRing struct {
	root   string
	redis  *testutil.Redis
	copies []aofCopy // oldest first
	next   time.Time // when the next copy is due
	n      int
}

func newAOFRing(t *testing.T, redis *testutil.Redis) *aofRing {
	t.Helper()
	return &aofRing{root: t.TempDir(), redis: redis}
}

// due takes a copy if one is due, drops the copies older than aofKeep, and
// returns when the next copy is due.
func (a *aofRing) due(t *testing.T) time.Time {
	t.Helper()
	now := time.Now()
	if now.Before(a.next) {
		return a.next
	}
	a.n++
	c := aofCopy{dir: filepath.Join(a.root, fmt.Sprintf("aof-%d", a.n)), start: time.Now()}
	a.redis.CopyAOF(c.dir)
	c.end = time.Now()
	a.copies = append(a.copies, c)
	for len(a.copies) > 0 && c.end.Sub(a.copies[0].start) > aofKeep {
		if err := os.RemoveAll(a.copies[0].dir); err != nil {
			t.Errorf("remove old AOF copy: %v", err)
		}
		a.copies = a.copies[1:]
	}
	a.next = now.Add(aofEvery)
	return a.next
}

// pick returns a copy aged between rollbackAge[0] and [1] now, chosen with
// rng, or false if none is (the ring is younger than rollbackAge[0]).
func (a *aofRing) pick(rng *rand.Rand) (aofCopy, bool) {
	var fit []aofCopy
	for _, c := range a.copies {
		age := time.Since(c.start)
		if age >= rollbackAge[0] && age <= rollbackAge[1] {
			fit = append(fit, c)
		}
	}
	if len(fit) == 0 {
		return aofCopy{}, false
	}
	return fit[rng.IntN(len(fit))], true
}

// sleep waits for d, taking the copies that fall due meanwhile: the fault
// schedule is time-based.
func (f *fleet) sleep(t *testing.T, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		next := f.aof.due(t)
		now := time.Now()
		if !now.Before(end) {
			return
		}
		if next.After(end) {
			next = end
		}
		time.Sleep(next.Sub(now))
	}
}

// oldCopy returns a copy aged between rollbackAge[0] and [1], waiting
// (and taking copies) until one is: the first fault can come before any
// copy is old enough.
func (f *fleet) oldCopy(t *testing.T) aofCopy {
	t.Helper()
	for {
		if c, ok := f.aof.pick(f.rng); ok {
			return c
		}
		f.sleep(t, 100*time.Millisecond)
	}
}

// restartLosingData restarts Redis for a redis_wipe fault (kind), without
// its data, or for a redis_rollback, from the copy c of its append-only
// file. While the server is down it records the DataLost event.
func (f *fleet) restartLosingData(t *testing.T, kind string, c aofCopy) {
	t.Helper()
	lost := history.Event{Kind: history.DataLost, Fault: kind}
	change := testutil.WipeAOF(t)
	if kind == history.FaultRedisRollback {
		lost.CopyStart, lost.CopyEnd = c.start.UnixNano(), c.end.UnixNano()
		change = testutil.RestoreAOF(t, c.dir)
	}
	f.redis.RestartWith(func(dir string) {
		f.record(t, lost) // the server is down: this instant divides old data from new
		change(dir)
	})
}
