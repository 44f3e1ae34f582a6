package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// debugLog keeps the debug log of the schedulers of one test, and prints
// it if the test fails: a scheduler on a real server decides on what the
// server answered when, which only its log tells afterwards.
type debugLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// newDebugLog returns a debugLog that prints itself at the end of a
// failed t. Make it before the schedulers that log to it: t's cleanups run
// in reverse order, so it prints before they shut down.
func newDebugLog(t *testing.T) *debugLog {
	d := &debugLog{}
	t.Cleanup(func() {
		if t.Failed() {
			d.mu.Lock()
			defer d.mu.Unlock()
			t.Logf("the schedulers' debug log:\n%s", d.buf.String())
		}
	})
	return d
}

func (d *debugLog) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.buf.Write(p)
}

// logger returns a debug-level logger into d whose lines name replica.
func (d *debugLog) logger(replica string) *slog.Logger {
	return slog.New(slog.NewTextHandler(d, &slog.HandlerOptions{Level: slog.LevelDebug})).With(slog.String("r", replica))
}

// subscribers returns how many subscriptions the channels of c's server
// have (PUBSUB CHANNELS, then PUBSUB NUMSUB).
func subscribers(t testing.TB, c rueidis.Client) int {
	t.Helper()
	ctx := context.Background()
	chans, err := c.Do(ctx, c.B().PubsubChannels().Build()).AsStrSlice()
	require.NoError(t, err)
	if len(chans) == 0 {
		return 0
	}
	counts, err := c.Do(ctx, c.B().PubsubNumsub().Channel(chans...).Build()).ToArray()
	require.NoError(t, err)
	n := 0
	for i := 1; i < len(counts); i += 2 {
		v, err := counts[i].AsInt64()
		require.NoError(t, err)
		n += int(v)
	}
	return n
}
