package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/testutil"
)

// BenchmarkScheduler_Redis_Resume measures, on a real redis-server and the
// real clock, how soon replica b resumes an occurrence whose attempt on
// replica a ended without completing it (the bounds that the synctest
// tests TestScheduler_Completion_ShutdownResumesOnAnotherReplica and
// TestScheduler_Completion_DeadHolderResumedAfterItsTTL hold on the
// bubble's clock):
//
//   - AfterRelease: a shuts down during the run, which releases it open and
//     announces it. "ms-to-resume" runs from the call of a's Shutdown to
//     the start of b's attempt 2 (the README's "within a second of a
//     release").
//   - AfterDeath: a is cut off from Redis during the run (no renewal, no
//     release). "ms-to-resume" runs from the cut to the start of b's
//     attempt 2 (the README's "within TTL + 2s of a replica's death", with a
//     TTL of 2s here); "ms-past-live" from the moment a's lease stopped
//     counting as live (its expiry on the server's clock, read after the
//     cut, plus lease.ExpiryTolerance) to that start: the wait for the next
//     read of the fleet's index (up to resumePoll, 1s) and the claim.
//
// Each iteration is a fresh job on a fresh pair of replicas: run it with
// -benchtime=Nx (each AfterDeath iteration takes about 5s).
func BenchmarkScheduler_Redis_Resume(b *testing.B) {
	for _, tc := range []struct {
		name  string
		death bool
	}{
		{"AfterRelease", false},
		{"AfterDeath", true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := testutil.StartRedis(b)
			var toResume, pastLive time.Duration
			for i := range b.N {
				took, past := measureResume(b, srv, fmt.Sprintf("resume-%s-%d", tc.name, i), tc.death)
				toResume += took
				pastLive += past
			}
			b.ReportMetric(float64(toResume.Milliseconds())/float64(b.N), "ms-to-resume")
			if tc.death {
				b.ReportMetric(float64(pastLive.Milliseconds())/float64(b.N), "ms-past-live")
			}
		})
	}
}

// measureResume runs job name's occurrence on replica a, ends a's attempt
// (a's Shutdown, or its death when death is set), and returns how long
// after that b's attempt 2 started and, after a death, how long after
// a's lease stopped counting as live.
func measureResume(b *testing.B, srv *testutil.Redis, name string, death bool) (took, pastLive time.Duration) {
	b.Helper()
	ctx := b.Context()
	proxy := testutil.NewProxy(b, srv.Addr)
	defer proxy.Close()
	viaProxy, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer viaProxy.Close()
	direct := srv.Client(b)
	storeA, err := redislease.New(viaProxy, redislease.WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	storeB, err := redislease.New(direct, redislease.WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}

	aStarted, bStarted := make(chan struct{}, 1), make(chan time.Time, 1)
	job := func(ctx context.Context) error {
		r, _ := RunFromContext(ctx)
		if r.Attempt == 1 {
			aStarted <- struct{}{}
			<-ctx.Done()
			return context.Cause(ctx)
		}
		bStarted <- time.Now()
		return nil
	}
	var renewed atomic.Bool
	observe := func(e Event) {
		if e.Kind == EventRenewed {
			renewed.Store(true)
		}
	}
	stopA := startResumeReplica(b, storeA, "a-"+name, name, job, WithObserver(observe))
	defer stopA()
	await(b, aStarted, "a's attempt 1")
	stopB := startResumeReplica(b, storeB, "b-"+name, name, job)
	defer stopB()
	for !renewed.Load() || subscribers(b, direct) < 2 {
		if ctx.Err() != nil {
			b.Fatal(ctx.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}

	var live time.Time // when a's lease stops counting as live
	start := time.Now()
	if death {
		proxy.Blackhole()
		info, err := storeB.Lookup(ctx, JobKeyPrefix+name)
		if err != nil {
			b.Fatal(err)
		}
		live = info.ExpiresAt.Add(lease.ExpiryTolerance)
	} else {
		stopA()
	}
	at := await(b, bStarted, "b's attempt 2")
	took = at.Sub(start)
	if death {
		pastLive = at.Sub(live)
	}
	proxy.Restore()
	return took, pastLive
}

// startResumeReplica starts replica id on store with job name, an hourly
// job whose occurrence of the hour is caught up at Start (a claim with
// attempts, as a scheduled one), and returns what shuts it down (safe to
// call more than once; after a death the replica cannot release, and
// says so).
func startResumeReplica(b *testing.B, store lease.Store, id, name string, job func(context.Context) error, opts ...Option) (stop func()) {
	b.Helper()
	s, err := New(store, append([]Option{WithInstanceID(id), WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Register(name, Every(time.Hour), job, WithTTL(2*time.Second), WithCatchUp(time.Hour)); err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}
}

// await returns the next value on ch, failing b after 30s.
func await[T any](b *testing.B, ch <-chan T, what string) T {
	b.Helper()
	select {
	case v := <-ch:
		return v
	case <-b.Context().Done():
		b.Fatal(b.Context().Err())
	case <-time.After(30 * time.Second):
		b.Fatalf("gave up after 30s waiting for %s", what)
	}
	var zero T
	return zero
}
