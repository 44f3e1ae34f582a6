package scheduler

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDbg(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		s, err := New(store, WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		require.NoError(t, err)
		require.NoError(t, s.Register("long", Every(10*time.Second), func(ctx context.Context) error { return nil }, WithTTL(3*time.Second)))
		require.NoError(t, s.Start())
		time.Sleep(25 * time.Second)
		shutdown(t, s)
	})
}
