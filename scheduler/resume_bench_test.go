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
	const ttl = 2 * time.Second
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
	opts := []JobOption{WithTTL(ttl), WithCatchUp(time.Hour)} // the hour's occurrence, caught up at Start
	a, err := New(storeA, WithInstanceID("a-"+name), WithLogger(discardLogger()), WithObserver(observe))
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Register(name, Every(time.Hour), job, opts...); err != nil {
		b.Fatal(err)
	}
	if err := a.Start(); err != nil {
		b.Fatal(err)
	}
	stopA := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(sctx) // after a death: a cannot release, and says so
	}
	defer stopA()
	awaitSignal(b, aStarted, "a's attempt 1")
	bs, err := New(storeB, WithInstanceID("b-"+name), WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	if err := bs.Register(name, Every(time.Hour), job, opts...); err != nil {
		b.Fatal(err)
	}
	if err := bs.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = bs.Shutdown(sctx)
	}()
	for !renewed.Load() || subscribersOf(b, direct) < 2 {
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
	select {
	case at := <-bStarted:
		took = at.Sub(start)
		if death {
			pastLive = at.Sub(live)
		}
	case <-time.After(30 * time.Second):
		b.Fatal("b did not resume the occurrence within 30s")
	}
	proxy.Restore()
	return took, pastLive
}

// awaitSignal waits for a value on ch, failing b after 30s.
func awaitSignal(b *testing.B, ch <-chan struct{}, what string) {
	b.Helper()
	select {
	case <-ch:
	case <-b.Context().Done():
		b.Fatal(b.Context().Err())
	case <-time.After(30 * time.Second):
		b.Fatalf("gave up after 30s waiting for %s", what)
	}
}

// subscribersOf returns how many clients are subscribed to the control
// channel of redislease.DefaultPrefix.
func subscribersOf(b *testing.B, c rueidis.Client) int64 {
	b.Helper()
	channel := redislease.DefaultPrefix + ":control"
	n, err := c.Do(b.Context(), c.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
	if err != nil {
		b.Fatal(err)
	}
	return n[channel]
}
