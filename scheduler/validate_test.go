package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func nop(context.Context) error { return nil }

func TestNew_InvalidOptions(t *testing.T) {
	store := newMemoryStore(t, nil)
	tests := []struct {
		name string
		opt  Option
		want string
	}{
		{"nil option", nil, "option must not be nil"},
		{"nil logger", WithLogger(nil), "logger must not be nil"},
		{"nil location", WithLocation(nil), "location must not be nil"},
		{"nil clock", WithClock(nil), "clock must not be nil"},
		{"nil observer", WithObserver(nil), "observer must not be nil"},
		{"empty instance", WithInstanceID(""), "id must not be empty"},
		{"long instance", WithInstanceID(strings.Repeat("x", MaxInstanceIDLen+1)), "at most 128 bytes"},
		{"bad utf-8 instance", WithInstanceID("web-\xff"), "owner must be valid UTF-8"},
		{"control in instance", WithInstanceID("web\t7"), "owner must not contain control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(store, tt.opt)
			require.ErrorIs(t, err, ErrInvalidArgument)
			assert.ErrorContains(t, err, tt.want)
			assert.Nil(t, s)
		})
	}
	_, err := New(nil)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}

func TestScheduler_Register_Invalid(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := newScheduler(t, newMemoryStore(t, clock), WithClock(clock))
	require.NoError(t, s.Register("taken", Every(time.Minute), nop))
	tests := []struct {
		name    string
		job     string
		sch     Schedule
		fn      func(context.Context) error
		opts    []JobOption
		wantErr error
		want    string
	}{
		{"empty name", "", Every(time.Second), nop, nil, ErrInvalidArgument, "job name must not be empty"},
		{"nil schedule", "j", nil, nop, nil, ErrInvalidArgument, "schedule must not be nil"},
		{"nil function", "j", Every(time.Second), nil, nil, ErrInvalidArgument, "job function must not be nil"},
		{"key too long", strings.Repeat("k", 600), Every(time.Second), nop, nil, ErrInvalidArgument, "at most 512 bytes"},
		{"duplicate", "taken", Every(time.Second), nop, nil, ErrDuplicateJob, `"taken"`},
		{"bad cron", "j", Cron("not a cron"), nop, nil, ErrInvalidSchedule, "want 5 fields"},
		{"bad cron field", "j", Cron("61 * * * *"), nop, nil, ErrInvalidSchedule, "cron"},
		{"empty cron", "j", Cron(" "), nop, nil, ErrInvalidSchedule, "must not be empty"},
		{"cron @every", "j", Cron("@every 5m"), nop, nil, ErrInvalidSchedule, "use scheduler.Every"},
		{"cron never", "j", Cron("0 0 30 2 *"), nop, nil, ErrInvalidSchedule, "never fires"},
		{"every sub-ms", "j", Every(1500 * time.Microsecond), nop, nil, ErrInvalidSchedule, "whole number of milliseconds"},
		{"every zero", "j", Every(0), nop, nil, ErrInvalidSchedule, "at least 1ms"},
		{"every negative", "j", Every(-time.Second), nop, nil, ErrInvalidSchedule, "at least 1ms"},
		{"offset too big", "j", EveryWithOffset(time.Second, time.Second), nop, nil, ErrInvalidSchedule, "offset"},
		{"offset negative", "j", EveryWithOffset(time.Second, -time.Millisecond), nop, nil, ErrInvalidSchedule, "offset"},
		{"offset sub-ms", "j", EveryWithOffset(time.Second, time.Microsecond), nop, nil, ErrInvalidSchedule, "offset must be a whole"},
		{"at in the past", "j", At(clock.Now().Add(-time.Second)), nop, nil, ErrInvalidSchedule, "not in the future"},
		{"at zero", "j", At(time.Time{}), nop, nil, ErrInvalidSchedule, "after the Unix epoch"},
		{"ttl zero", "j", Every(time.Second), nop, []JobOption{WithTTL(0)}, ErrInvalidArgument, "ttl must be positive"},
		{"ttl sub-ms", "j", Every(time.Second), nop, []JobOption{WithTTL(1500 * time.Microsecond)}, ErrInvalidArgument, "whole number of milliseconds"},
		{"ttl tiny", "j", Every(time.Second), nop, []JobOption{WithTTL(time.Millisecond)}, ErrInvalidArgument, "at least 10ms"},
		{"timeout zero", "j", Every(time.Second), nop, []JobOption{WithTimeout(0)}, ErrInvalidArgument, "timeout must be positive"},
		{"owner too long", "j", Every(time.Second), nop, []JobOption{WithOwner(strings.Repeat("o", 257))}, ErrInvalidArgument, "owner must be at most 256 bytes"},
		{"owner bad utf-8", "j", Every(time.Second), nop, []JobOption{WithOwner("bad\xffowner")}, ErrInvalidArgument, "owner must be valid UTF-8"},
		{"owner control", "j", Every(time.Second), nop, []JobOption{WithOwner("a\nb")}, ErrInvalidArgument, "owner must not contain control characters"},
		{"nil job option", "j", Every(time.Second), nop, []JobOption{nil}, ErrInvalidArgument, "job option must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Register(tt.job, tt.sch, tt.fn, tt.opts...)
			require.ErrorIs(t, err, tt.wantErr)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestScheduler_Register_DuplicateAfterNFC(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	require.NoError(t, s.Register("caf\u00e9", Every(time.Minute), nop))
	err := s.Register("cafe\u0301", Every(time.Minute), nop)
	assert.ErrorIs(t, err, ErrDuplicateJob)
}

func TestScheduler_Start_Lifecycle(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	require.NoError(t, s.Register("before", Every(time.Minute), nop))
	require.NoError(t, s.Start())
	assert.ErrorIs(t, s.Start(), ErrAlreadyStarted)
	assert.NoError(t, s.Register("after", Cron("*/5 * * * *"), nop), "Register after Start schedules the job")
	require.NoError(t, s.Shutdown(t.Context()))
	require.NoError(t, s.Shutdown(t.Context()), "Shutdown twice is safe")
	assert.ErrorIs(t, s.Start(), ErrShutdown)
	assert.ErrorIs(t, s.Register("late", Every(time.Minute), nop), ErrShutdown)
}

func TestScheduler_Shutdown_BeforeStart(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	require.NoError(t, s.Register("j", Every(time.Minute), nop))
	assert.NoError(t, s.Shutdown(t.Context()))
	assert.ErrorIs(t, s.Start(), ErrShutdown)
}
