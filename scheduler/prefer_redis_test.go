package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
)

// countingRedis counts the acquires a replica sends to Redis, one by one
// or in batches; it is the Redis store in every other respect (the control
// plane included).
type countingRedis struct {
	*redislease.Store
	acquires atomic.Int64
}

func (c *countingRedis) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	c.acquires.Add(1)
	return c.Store.Acquire(ctx, key, ttl, opts...)
}

func (c *countingRedis) AcquireBatch(ctx context.Context, reqs []lease.AcquireRequest, res []lease.AcquireResult) {
	c.acquires.Add(int64(len(reqs)))
	c.Store.AcquireBatch(ctx, reqs, res)
}

// Three replicas on Redis with the control plane: once each has read the
// registry, every occurrence runs once and only its first choice sends an
// acquire; without the control plane the three race as before, three
// acquires per occurrence.
func TestScheduler_Prefer_ThreeReplicasOnRedis(t *testing.T) {
	const jobs = 8
	tests := []struct {
		name         string
		opts         []Option
		acquiresEach int // per occurrence
	}{
		{name: "control plane: the first choice only", opts: []Option{WithRegistryRefresh(time.Second)}, acquiresEach: 1},
		{name: "no control plane: every replica races", opts: []Option{WithoutControlPlane()}, acquiresEach: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newBubbleMiniredis(t)
				loadScripts(t, m)
				occ := newOccurrences()
				var stores []*countingRedis
				var scheds []*Scheduler
				for i := range 3 {
					st, err := redislease.New(newBubbleClient(t, m))
					require.NoError(t, err)
					// The acquire script loaded first: miniredis, served over
					// a pipe in the bubble, lost a reply when a batch's EVAL
					// fallback and a single acquire's went out together on
					// a cold script cache (a real server does not: see
					// lease/redislease's batch tests).
					l, err := st.Acquire(t.Context(), "warm", time.Second)
					require.NoError(t, err)
					require.NoError(t, l.Release(t.Context()))
					cs := &countingRedis{Store: st}
					s := newScheduler(t, cs, append([]Option{WithInstanceID(fmt.Sprintf("replica-%d", i)),
						ahead(time.Duration(i-1) * 30 * time.Millisecond)}, tt.opts...)...)
					for k := range jobs {
						require.NoError(t, s.Register(fmt.Sprintf("j%d", k), Every(time.Second), occ.record))
					}
					stores, scheds = append(stores, cs), append(scheds, s)
				}
				time.Sleep(500 * time.Millisecond) // off the grid
				for _, s := range scheds {
					require.NoError(t, s.Start())
				}
				// Every replica publishes at Start and reads the registry at
				// its next refreshes: by 3s each has seen all three.
				time.Sleep(3 * time.Second)
				synctest.Wait()
				for _, cs := range stores {
					cs.acquires.Store(0)
				}
				from := time.Now().Truncate(time.Second).Add(time.Second).UnixMilli() // the first occurrence counted
				time.Sleep(20 * time.Second)
				synctest.Wait()
				var acquires int64
				for _, cs := range stores {
					acquires += cs.acquires.Load()
				}
				until := time.Now().Add(-BackupGrace - 100*time.Millisecond).Truncate(time.Second).UnixMilli()
				for _, s := range scheds {
					shutdown(t, s)
				}
				synctest.Wait()

				counted := 0
				for k := range jobs {
					name := fmt.Sprintf("j%d", k)
					ms := occ.sorted(name)
					requireOncePerStep(t, name, ms, time.Second)
					for _, o := range ms {
						if o >= from && o <= until {
							counted++
						}
					}
				}
				require.Equal(t, jobs*int((until-from)/1000+1), counted, "every occurrence of the window ran once")
				assert.Equal(t, int64(tt.acquiresEach*counted), acquires, "acquires sent for %d occurrences", counted)
			})
		})
	}
}
