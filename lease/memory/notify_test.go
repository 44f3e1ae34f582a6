package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// Every way a lease leaves the store wakes the key's watches at once.
func TestStore_Watch_EveryReleaseNotifies(t *testing.T) {
	s, _ := newStore(t)
	tests := []struct {
		name    string
		release func(ctx context.Context, l *lease.Lease) error
	}{
		{"ByID", func(ctx context.Context, l *lease.Lease) error { return s.Release(ctx, l.ID) }},
		{"Lease", func(ctx context.Context, l *lease.Lease) error { return l.Release(ctx) }},
		{"WithStatus", func(ctx context.Context, l *lease.Lease) error {
			_, err := s.ReleaseWithStatus(ctx, l, fleet.Status{Outcome: "succeeded"})
			return err
		}},
		{"ForceRelease", func(ctx context.Context, l *lease.Lease) error {
			_, err := s.ForceRelease(ctx, l.Key)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			l, err := s.Acquire(ctx, tt.name, time.Minute)
			require.NoError(t, err)
			w, err := s.Watch(ctx, tt.name)
			require.NoError(t, err)
			defer w.Stop()
			other, err := s.Watch(ctx, "other")
			require.NoError(t, err)
			defer other.Stop()
			require.NoError(t, tt.release(ctx, l))
			select {
			case <-w.C():
			default:
				t.Fatal("the release did not wake the key's watch")
			}
			select {
			case <-other.C():
				t.Fatal("a release woke another key's watch")
			default:
			}
		})
	}
}

func TestStore_Watch_StoppedWatchIsNotWoken(t *testing.T) {
	s, err := memory.New()
	require.NoError(t, err)
	ctx := t.Context()
	w, err := s.Watch(ctx, "k")
	require.NoError(t, err)
	w.Stop()
	l, err := s.Acquire(ctx, "k", time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	select {
	case <-w.C():
		t.Fatal("a stopped watch was woken")
	default:
	}
}
