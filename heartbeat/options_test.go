package heartbeat_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/heartbeat"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

func TestStart_InvalidOptions(t *testing.T) {
	drift := leasekit.Drift(ttl)
	tests := []struct {
		name string
		opts []heartbeat.Option
		rule string // part of the message naming the rule; "" means valid
	}{
		{"defaults", nil, ""},
		{"zero interval", []heartbeat.Option{heartbeat.WithInterval(0)}, "interval must be positive"},
		{"negative interval", []heartbeat.Option{heartbeat.WithInterval(-time.Second)}, "interval must be positive"},
		{"negative margin", []heartbeat.Option{heartbeat.WithStopMargin(-time.Millisecond)}, "stop margin must not be negative"},
		{"zero margin", []heartbeat.Option{heartbeat.WithStopMargin(0)}, ""},
		{"interval equal to ttl", []heartbeat.Option{heartbeat.WithInterval(ttl)}, "interval must be less than ttl - drift - stop margin"},
		{"interval leaves no room", []heartbeat.Option{
			heartbeat.WithStopMargin(time.Second), heartbeat.WithInterval(ttl - drift - time.Second),
		}, "interval must be less than ttl - drift - stop margin"},
		{"interval just fits", []heartbeat.Option{
			heartbeat.WithStopMargin(time.Second), heartbeat.WithInterval(ttl - drift - time.Second - time.Millisecond),
		}, ""},
		{"margin leaves no room for default interval", []heartbeat.Option{heartbeat.WithStopMargin(2 * time.Second)}, "interval must be less than"},
		{"nil clock", []heartbeat.Option{heartbeat.WithClock(nil)}, "clock must not be nil"},
		{"nil logger", []heartbeat.Option{heartbeat.WithLogger(nil)}, "logger must not be nil"},
		{"nil observer", []heartbeat.Option{heartbeat.WithObserver(nil)}, "observer must not be nil"},
		{"nil option", []heartbeat.Option{nil}, "option must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore(clockwork.NewRealClock())
			l := acquire(t, store, "job", ttl)
			opts := append([]heartbeat.Option{heartbeat.WithLogger(discard)}, tt.opts...)
			ctx, stop, err := heartbeat.Start(t.Context(), store, l, opts...)
			if tt.rule == "" {
				require.NoError(t, err)
				require.NoError(t, ctx.Err())
				require.NoError(t, stop())
				return
			}
			require.ErrorIs(t, err, heartbeat.ErrInvalidOption)
			assert.Contains(t, err.Error(), tt.rule)
			assert.Nil(t, ctx)
			assert.Nil(t, stop)
		})
	}
}

func TestStart_InvalidArguments(t *testing.T) {
	store := newFakeStore(clockwork.NewRealClock())
	good := func() *lease.Lease { return acquire(t, store, leasekit.NewID(), ttl) }
	var nilCtx context.Context
	tests := []struct {
		name   string
		parent context.Context
		store  lease.Store
		lease  *lease.Lease
		rule   string
	}{
		{"nil parent", nilCtx, store, good(), "parent context must not be nil"},
		{"nil store", t.Context(), nil, good(), "store must not be nil"},
		{"nil lease", t.Context(), store, nil, "lease must not be nil"},
		{"malformed id", t.Context(), store, func() *lease.Lease { l := good(); l.ID = "short"; return l }(), "lease id must be 22 characters"},
		{"zero ttl", t.Context(), store, func() *lease.Lease { l := good(); l.TTL = 0; return l }(), "ttl must be positive"},
		{"no deadline", t.Context(), store, func() *lease.Lease { l := good(); l.Deadline = time.Time{}; return l }(), "lease deadline must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, stop, err := heartbeat.Start(tt.parent, tt.store, tt.lease)
			require.ErrorIs(t, err, heartbeat.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.rule)
			assert.Nil(t, ctx)
			assert.Nil(t, stop)
		})
	}
}

// TestStart_Logs_ShortIDOnlyAtInfoAndAbove checks the log levels of each
// event, and that lines at Info or above carry the short lease ID but
// neither the full ID nor the key.
func TestStart_Logs_ShortIDOnlyAtInfoAndAbove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		store.setExtendHook(func(_ context.Context, n int) error {
			if n == 2 {
				return errUnavailable
			}
			return nil
		})
		const key = "billing/secret-key"
		l := acquire(t, store, key, ttl)
		var buf syncBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		ctx, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithLogger(logger))
		require.NoError(t, err)

		time.Sleep(2*interval + interval/2) // one renewal, one failure and its retry
		require.NoError(t, store.Release(t.Context(), l.ID))
		<-ctx.Done()
		require.ErrorIs(t, stop(), heartbeat.ErrLeaseLost)

		levels := map[string]string{}
		for line := range strings.Lines(buf.String()) {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
			msg, level := rec["msg"].(string), rec["level"].(string)
			levels[msg] = level
			assert.Equal(t, lease.ShortID(l.ID), rec["lease"], line)
			assert.NotContains(t, line, l.ID, "full lease ID in a log line")
			if level != "DEBUG" {
				assert.NotContains(t, line, key, "raw key at %s", level)
			}
			switch level {
			case "WARN":
				assert.Contains(t, rec["error"], "connection refused", line)
			case "ERROR":
				assert.Contains(t, rec["cause"], "heartbeat: lease lost", line)
			}
		}
		assert.Equal(t, map[string]string{
			"heartbeat: lease extended":          "DEBUG",
			"heartbeat: extend failed, retrying": "WARN",
			"heartbeat: lease lost":              "ERROR",
			"heartbeat: stopped":                 "DEBUG",
		}, levels)
	})
}

// TestStart_Logs_RetryInReadable: a JSON log of a failed renewal shows
// when the next attempt comes as a person reads it ("50.693421ms", parsed
// back by time.ParseDuration), not as a count of nanoseconds.
func TestStart_Logs_RetryInReadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore(clockwork.NewRealClock())
		store.setExtendHook(func(_ context.Context, n int) error {
			if n == 1 {
				return errUnavailable
			}
			return nil
		})
		l := acquire(t, store, "k", ttl)
		var buf syncBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		_, stop, err := heartbeat.Start(t.Context(), store, l, heartbeat.WithLogger(logger))
		require.NoError(t, err)
		time.Sleep(interval + interval/2)
		require.NoError(t, stop())

		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(buf.String()), &rec), buf.String())
		assert.Equal(t, "heartbeat: extend failed, retrying", rec["msg"])
		text, ok := rec["retry_in"].(string)
		require.True(t, ok, "retry_in is a duration's text, not %T: %s", rec["retry_in"], buf.String())
		d, err := time.ParseDuration(text)
		require.NoError(t, err)
		assert.Positive(t, d)
	})
}
