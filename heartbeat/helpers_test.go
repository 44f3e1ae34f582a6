package heartbeat_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// recorder collects the events a heartbeat reports.
type recorder struct {
	mu     sync.Mutex
	events []heartbeat.Event
}

func (r *recorder) observe(e heartbeat.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// startRecorded starts a heartbeat on l under parent, with a recorder as
// its observer and a discarding logger (plus opts), and fails the test if
// Start does.
func startRecorded(t *testing.T, parent context.Context, store lease.Store, l *lease.Lease, opts ...heartbeat.Option) (context.Context, heartbeat.Stop, *recorder) {
	t.Helper()
	rec := &recorder{}
	ctx, stop, err := heartbeat.Start(parent, store, l,
		append([]heartbeat.Option{heartbeat.WithObserver(rec.observe), heartbeat.WithLogger(discard)}, opts...)...)
	require.NoError(t, err)
	return ctx, stop, rec
}

// of returns the events of kind k, in order.
func (r *recorder) of(k heartbeat.EventKind) []heartbeat.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []heartbeat.Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// all returns every event so far.
func (r *recorder) all() []heartbeat.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]heartbeat.Event(nil), r.events...)
}

// lastDeadline returns the local deadline after the last confirmed Extend,
// or fallback when there was none.
func (r *recorder) lastDeadline(fallback time.Time) time.Time {
	ext := r.of(heartbeat.EventRenewed)
	if len(ext) == 0 {
		return fallback
	}
	return ext[len(ext)-1].Deadline
}

// watchDone records, on the monotonic clock (the bubble's clock under
// synctest), when ctx is done. The returned func waits for it.
func watchDone(ctx context.Context) func() time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		<-ctx.Done()
		ch <- time.Now()
	}()
	return func() time.Time { return <-ch }
}

// discard is a logger that drops everything.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// syncBuffer is a bytes.Buffer safe for a logger on another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// acquire takes key on store, failing the test on error.
func acquire(t testing.TB, store lease.Store, key string, ttl time.Duration) *lease.Lease {
	t.Helper()
	l, err := store.Acquire(t.Context(), key, ttl)
	require.NoError(t, err)
	return l
}

// idle waits until a heartbeat of l started on the fake clock (with the
// default interval) is waiting for its clock, or ctx is done: its one
// start timer until the first renewal is due (one interval after the
// acquire was sent), its renewal and cut-off timers after.
func idle(ctx context.Context, clock *clockwork.FakeClock, l *lease.Lease) error {
	first := l.Deadline.Add(-(l.TTL - leasekit.Drift(l.TTL))).Add(l.TTL / heartbeat.DefaultIntervalDivisor)
	if clock.Now().Before(first) {
		return clock.BlockUntilContext(ctx, 1)
	}
	return clock.BlockUntilContext(ctx, 2)
}
