package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// viewOf returns the replicas in s's view for key, or nil when the key
// races (absent from the view).
func viewOf(s *Scheduler, key string) []string {
	v := s.view.Load()
	if v == nil {
		return nil
	}
	vj, ok := v.jobs[key]
	if !ok {
		return nil
	}
	return vj.c.ids
}

// A replica that joins or leaves the fleet is in the others' views at
// once, not at their next refresh (an hour here): it announces the change
// of its registry entry on the control channel, and they read the registry
// then. Until they do, their choices of a preferred replica differ from
// its own, which costs extra claims or a grace of lateness.
func TestScheduler_ControlPlane_JoinAndLeaveSeenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		noop := func(context.Context) error { return nil }
		a := newScheduler(t, store, WithInstanceID("a"), WithRegistryRefresh(time.Hour))
		require.NoError(t, a.Register("j", Every(time.Minute), noop))
		require.NoError(t, a.Start())
		synctest.Wait()
		require.Equal(t, []string{"a"}, viewOf(a, "job:j"), "a alone")

		b := newScheduler(t, store, WithInstanceID("b"), WithRegistryRefresh(time.Hour))
		require.NoError(t, b.Register("j", Every(time.Minute), noop))
		require.NoError(t, b.Start())
		synctest.Wait()
		assert.Equal(t, []string{"a", "b"}, viewOf(b, "job:j"), "b read the registry as it published")
		assert.Equal(t, []string{"a", "b"}, viewOf(a, "job:j"), "a read it when b announced its entry")

		shutdown(t, b)
		synctest.Wait()
		assert.Equal(t, []string{"a"}, viewOf(a, "job:j"), "a read it when b announced it left")
	})
}
