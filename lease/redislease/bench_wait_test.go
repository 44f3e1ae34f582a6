package redislease

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// BenchmarkLockHandOff measures how long a waiting Lock takes to get a key
// after its holder releases it: from just before the release is sent to
// the return of the waiter's successful acquire (Lock itself returns one
// round trip later when it was the key's last waiter: it unsubscribes
// first). The waiter starts waiting handOffDelay before the
// release, so a polling waiter has made its first attempts and sleeps on
// its backoff (100ms, ±50%, doubling), as a waiter does that found the key
// held. Notified: the Store as it is (lease.Notifier). Polling: the same
// Store with its Notifier hidden, as a Store that cannot notify is waited
// for. Reports the median and 90th percentile hand-off, in µs.
func BenchmarkLockHandOff(b *testing.B) {
	_, st := benchServer(b)
	st.log = quietLogger()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		store lease.Store
	}{
		{"Notified", &wonAt{Store: st}},
		{"Polling", &wonAt{Store: struct{ lease.Store }{st}}}, // hides Watch
	} {
		b.Run(tc.name, func(b *testing.B) {
			var handOffs []time.Duration
			won := tc.store.(*wonAt)
			for b.Loop() {
				holder, err := st.Acquire(ctx, "job:handoff", 30*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				got := make(chan time.Time, 1)
				go func() {
					l, err := lease.Lock(ctx, won, "job:handoff", 30*time.Second, lease.WithMaxWait(time.Minute))
					if err != nil {
						b.Error(err)
					} else if err := l.Release(ctx); err != nil {
						b.Error(err)
					}
					got <- won.at
				}()
				time.Sleep(handOffDelay) // real time is what is measured
				released := time.Now()
				if err := holder.Release(ctx); err != nil {
					b.Fatal(err)
				}
				handOffs = append(handOffs, (<-got).Sub(released))
			}
			slices.Sort(handOffs)
			b.ReportMetric(float64(handOffs[len(handOffs)/2].Microseconds()), "handoff-p50-µs")
			b.ReportMetric(float64(handOffs[len(handOffs)*9/10].Microseconds()), "handoff-p90-µs")
		})
	}
}

// wonAt is a lease.Store (and a lease.Notifier when its Store is one)
// that records when its last successful Acquire returned. One waiter uses
// it at a time.
type wonAt struct {
	lease.Store
	at time.Time
}

func (s *wonAt) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	l, err := s.Store.Acquire(ctx, key, ttl, opts...)
	if err == nil {
		s.at = time.Now()
	}
	return l, err
}

func (s *wonAt) Watch(ctx context.Context, key string) (lease.Watch, error) {
	if n, ok := s.Store.(lease.Notifier); ok {
		return n.Watch(ctx, key)
	}
	return nil, lease.ErrUnavailable
}

// handOffDelay is how long the waiter of BenchmarkLockHandOff waits before
// the release.
const handOffDelay = 150 * time.Millisecond

// BenchmarkReleasePublish measures what publishing a release costs: the
// keyed release script as it is (it SPUBLISHes on the key's channel) and
// the same script without the SPUBLISH line, alternated in every
// iteration on one key, each after an acquire. Reports the client latency
// of each release (ns), their ratio, and the server time of the SPUBLISH
// itself per release (INFO commandstats, which counts the commands a
// script calls). NoWatch: nobody waits for the key (the message goes
// nowhere). OneWatch: a waiter watches it (one message delivered per
// release).
func BenchmarkReleasePublish(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	const publishLine = "  redis.pcall('SPUBLISH', KEYS[1], 'release')\n"
	if !strings.Contains(luascripts.ReleaseLease, publishLine) {
		b.Fatal("release_lease.lua no longer publishes as this benchmark expects")
	}
	silentRelease := rueidis.NewLuaScript(strings.Replace(luascripts.ReleaseLease, publishLine, "", 1))
	for _, watched := range []bool{false, true} {
		name := "NoWatch"
		if watched {
			name = "OneWatch"
		}
		b.Run(name, func(b *testing.B) {
			if watched {
				w, err := st.Watch(ctx, "job:publish")
				if err != nil {
					b.Fatal(err)
				}
				defer w.Stop()
			}
			acquire := func() *lease.Lease {
				l, err := st.Acquire(ctx, "job:publish", 30*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				return l
			}
			acquire().Release(ctx) // load the scripts
			l := acquire()
			data, index, head, _ := heldKeys(st.prefix, l.Key, l.ID)
			if n, err := silentRelease.Exec(ctx, c, []string{data, index}, []string{head}).AsInt64(); err != nil || n != 1 {
				b.Fatal(n, err)
			}
			if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
				b.Fatal(err)
			}
			var silent, published time.Duration
			for b.Loop() {
				l := acquire()
				data, index, head, _ := heldKeys(st.prefix, l.Key, l.ID)
				t0 := time.Now()
				if n, err := silentRelease.Exec(ctx, c, []string{data, index}, []string{head}).AsInt64(); err != nil || n != 1 {
					b.Fatal(n, err)
				}
				silent += time.Since(t0)
				l = acquire()
				t1 := time.Now()
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
				published += time.Since(t1)
			}
			b.StopTimer()
			stats, err := commandStats(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(silent.Nanoseconds())/n, "silent-ns/release")
			b.ReportMetric(float64(published.Nanoseconds())/n, "publish-ns/release")
			b.ReportMetric(float64(published)/float64(silent), "publish/silent")
			b.ReportMetric(stats["spublish"].usec/n, "spublish-µs/release")
		})
	}
}

// BenchmarkWaitingScriptCost is BenchmarkScriptCost for the waiting
// primitives: server µs per operation (INFO commandstats: EVALSHA, which
// includes the commands a script calls) and commands per operation, for a
// semaphore holder's acquire and release, and a fair (queued) acquire of a
// free key and its release. Compare with AcquireRelease/ByLease there.
func BenchmarkWaitingScriptCost(b *testing.B) {
	c, st := benchServer(b)
	ctx := context.Background()
	run := func(b *testing.B, op func()) {
		b.Helper()
		measureScripts(b, c, op)
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	sem, err := lease.NewSemaphore(st, "job:sem", 3)
	must(err)
	b.Run("Semaphore/AcquireRelease", func(b *testing.B) {
		run(b, func() {
			l, err := sem.TryAcquire(ctx, 30*time.Second)
			must(err)
			must(l.Release(ctx))
		})
	})
	b.Run("Fair/AcquireRelease", func(b *testing.B) {
		run(b, func() {
			l, err := st.AcquireQueued(ctx, "job:fair", 30*time.Second, leasekit.NewID(), 3*time.Second)
			must(err)
			must(l.Release(ctx))
		})
	})
	b.Run("Plain/AcquireRelease", func(b *testing.B) {
		run(b, func() {
			l, err := st.Acquire(ctx, "job:plain", 30*time.Second)
			must(err)
			must(l.Release(ctx))
		})
	})
}
