package scheduler

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/lease"
)

// A run's logger writes the run's attributes on every line, as With would,
// keeps them (and attributes added with With) outside a group, and formats
// nothing for a disabled level.
func TestRunLogger_AddsTheRunsAttrsLikeWith(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level:       slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	}))
	occ := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	r := &run{job: &job{name: "a"}, info: Run{Occurrence: occ}, lease: &lease.Lease{Fence: 7}, shortID: "…abcdef"}
	r.handler = runHandler{h: base.Handler(), r: r}
	r.logger = *slog.New(&r.handler)
	r.log = &r.logger
	const attrs = "job=a occurrence=2026-11-26T02:00:00.000Z lease=…abcdef fence=7"

	r.log.Info("started", slog.Int("n", 1))
	r.log.WithGroup("g").Info("grouped", slog.Int("n", 2))
	r.log.With(slog.String("k", "v")).Info("with", slog.Int("n", 3))
	r.log.With(slog.String("k", "v")).WithGroup("g").Info("with, grouped", slog.Int("n", 4))
	r.log.Debug("hidden")
	assert.Equal(t, "level=INFO msg=started n=1 "+attrs+"\n"+
		"level=INFO msg=grouped "+attrs+" g.n=2\n"+
		"level=INFO msg=with n=3 "+attrs+" k=v\n"+
		"level=INFO msg=\"with, grouped\" "+attrs+" k=v g.n=4\n", buf.String())
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
