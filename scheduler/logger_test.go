package scheduler

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A lazy logger writes its attributes on every line, as With would, keeps
// attributes added before a group outside it, and formats nothing for a
// disabled level.
func TestWithLazy_AddsAttrsLikeWith(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level:       slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	}))
	l := withLazy(base, slog.String("job", "a")).With(slog.String("lease", "x"))
	l.Info("started", slog.Int("n", 1))
	l.WithGroup("g").Info("grouped", slog.Int("n", 2))
	l.Debug("hidden")
	assert.Equal(t, "level=INFO msg=started n=1 job=a lease=x\nlevel=INFO msg=grouped job=a lease=x g.n=2\n", buf.String())
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
