package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease/redislease"
)

type ctxKey struct{}

// Middleware wraps every job, outermost first, sees the run in its context
// and can hand the job a context of its own; observers are all called, in
// order; each job has its own Stats.
func TestScheduler_MiddlewareObserversAndJobStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var order []string
		var mu sync.Mutex
		note := func(s string) {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
		}
		mw := func(name string) Middleware {
			return func(next func(context.Context) error) func(context.Context) error {
				return func(ctx context.Context) error {
					r, ok := RunFromContext(ctx)
					require.True(t, ok, "the run is in the middleware's context")
					note(name + " before " + r.Job)
					err := next(context.WithValue(ctx, ctxKey{}, name))
					note(name + " after")
					return err
				}
			}
		}
		var first, second atomic.Int32
		s := newScheduler(t, store,
			WithMiddleware(mw("outer")), WithMiddleware(mw("inner")),
			WithObserver(func(Event) { first.Add(1) }), WithObserver(func(Event) { second.Add(1) }))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("ok", Every(time.Second), func(ctx context.Context) error {
			note("job sees " + ctx.Value(ctxKey{}).(string))
			return nil
		}))
		require.NoError(t, s.Register("bad", Every(time.Minute), func(context.Context) error { return errors.New("no") }))
		require.NoError(t, s.Start())
		time.Sleep(time.Second)
		synctest.Wait()

		assert.Equal(t, []string{"outer before ok", "inner before ok", "job sees inner", "inner after", "outer after"}, order)
		assert.Positive(t, first.Load())
		assert.Equal(t, first.Load(), second.Load(), "every observer sees every event")
		ok, found := s.JobStats("ok")
		require.True(t, found)
		assert.Equal(t, uint64(1), ok.Succeeded)
		assert.Zero(t, ok.Failed)
		bad, found := s.JobStats("bad")
		require.True(t, found)
		assert.Zero(t, bad.Started, "bad's first occurrence is a minute away")
		_, found = s.JobStats("nope")
		assert.False(t, found)
		assert.Equal(t, s.Stats().Succeeded, ok.Succeeded+bad.Succeeded)
	})
}

// Renewals are reported with their latency.
func TestScheduler_Run_RenewalsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		var ev events
		s := newScheduler(t, store, WithObserver(ev.observe))
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, s.Register("long", Every(time.Minute), func(context.Context) error {
			time.Sleep(3500 * time.Millisecond) // renewed at 1s, 2s, 3s (ttl/3)
			return nil
		}, WithTTL(3*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(time.Minute + 4*time.Second)
		synctest.Wait()
		renewed := ev.of(EventRenewed)
		require.Len(t, renewed, 3)
		for _, e := range renewed {
			assert.Zero(t, e.Latency, "the in-process store answers at once on the bubble's clock")
			assert.Equal(t, "long", e.Job)
			assert.NotZero(t, e.Fence)
		}
		assert.Equal(t, uint64(3), s.Stats().Renewals)
	})
}

// Every log line of a run's life, from the scheduler, its heartbeat and the
// Redis store, gives each field one JSON type, and the shared fields their
// agreed names and types: job, occurrence, lease, fence, replica.
func TestScheduler_Logs_OneTypePerField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, written := jsonDebugLog()
		m := newBubbleMiniredis(t)
		store, err := redislease.New(newBubbleClient(t, m), redislease.WithLogger(log))
		require.NoError(t, err)
		from := time.Now().Add(3 * time.Minute)
		wrapped := outageStore{Store: store, from: from, to: from.Add(10 * time.Second)}
		s := newScheduler(t, wrapped, WithLogger(log), WithInstanceID("replica-1"))
		var lost atomic.Bool
		require.NoError(t, s.Register("ok", Cron("* * * * *"), func(context.Context) error { return nil }))
		require.NoError(t, s.Register("fails", Cron("* * * * *"), func(context.Context) error { return errors.New("disk full") }))
		require.NoError(t, s.Register("panics", Cron("* * * * *"), func(context.Context) error { panic("boom") }))
		require.NoError(t, s.Register("slow", Cron("* * * * *"), func(ctx context.Context) error {
			time.Sleep(3 * time.Second) // renewed, then times out
			return nil
		}, WithTTL(3*time.Second), WithTimeout(2*time.Second)))
		require.NoError(t, s.Register("lost", Cron("* * * * *"), func(ctx context.Context) error {
			if lost.CompareAndSwap(false, true) {
				r, _ := RunFromContext(ctx)
				_ = store.Release(ctx, r.LeaseID) // behind its back
				<-ctx.Done()
			}
			return nil
		}, WithTTL(3*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		shutdown(t, s)

		lines := strings.Split(strings.TrimSpace(written()), "\n")
		require.Greater(t, len(lines), 30)
		types := map[string]string{}
		msgs := map[string]bool{}
		for _, line := range lines {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
			msgs[rec["msg"].(string)] = true
			for k, v := range rec {
				typ := fmt.Sprintf("%T", v)
				if prev, seen := types[k]; seen {
					assert.Equal(t, prev, typ, "field %q has two types; line: %s", k, line)
				}
				types[k] = typ
			}
		}
		for _, m := range []string{"job started", "job succeeded", "job failed", "job panicked", "job timed out",
			"heartbeat: lease lost", "job lease acquire failed; retrying while the occurrence is current"} {
			assert.True(t, msgs[m], "the stream has %q", m)
		}
		want := map[string]string{"job": "string", "occurrence": "string", "lease": "string", "fence": "float64", "replica": "string"}
		for k, typ := range want {
			assert.Equal(t, typ, types[k], "field %q", k)
		}
		assert.NotContains(t, types, "instance", "the replica field has one name")
	})
}

// jsonDebugLog returns a JSON logger at debug level, and a func that
// returns what it has written so far.
func jsonDebugLog() (*slog.Logger, func() string) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return log, func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
