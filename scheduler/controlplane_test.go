package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease/memory"
)

// slowPending is a store whose PendingTriggers waits until released.
type slowPending struct {
	*memory.Store
	release chan struct{}
}

func (s slowPending) PendingTriggers(ctx context.Context, key string) (int, error) {
	<-s.release
	return s.Store.PendingTriggers(ctx, key)
}

// A resync (the control channel reconnected) looks for pending triggers
// outside the subscription's callback: the callback returns at once, so
// the channel's next messages are not held behind one store read per job.
func TestControlPlane_OnMessage_ResyncDoesNotBlockTheCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := slowPending{Store: newMemoryStore(t, nil), release: make(chan struct{})}
		s := newScheduler(t, store)
		for _, name := range []string{"a", "b", "c"} {
			require.NoError(t, s.Register(name, Every(time.Hour), nop))
		}
		time.Sleep(30 * time.Second)
		require.NoError(t, s.Start())
		synctest.Wait()
		returned := make(chan struct{})
		go func() {
			s.control.onMessage(fleet.Message{Kind: fleet.MessageResync})
			close(returned)
		}()
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Error("the subscription's callback waits for the store reads of a resync")
		}
		close(store.release)
		<-returned
		shutdown(t, s)
	})
}

// Conflicts are reported once while they last: one that is resolved is
// forgotten (the set of reported conflicts does not only grow), and
// reported again if it comes back.
func TestControlPlane_Report_ForgetsResolvedConflicts(t *testing.T) {
	var ev events
	s := newScheduler(t, newMemoryStore(t, nil), WithObserver(ev.observe))
	require.NoError(t, s.Register("report", Every(time.Hour), nop))
	cp := &controlPlane{s: s, reported: make(map[string]bool)}
	conflict := func(fp string) fleet.Conflict {
		return fleet.Conflict{Job: "report", Key: "job:report", Replicas: [2]string{"a", "b"},
			Jobs: [2]fleet.Job{{Fingerprint: "x"}, {Fingerprint: fp}}}
	}
	cp.report([]fleet.Conflict{conflict("y")})
	cp.report([]fleet.Conflict{conflict("y")})
	assert.Len(t, ev.of(EventConflict), 1, "reported once while it lasts")
	for _, fp := range []string{"z1", "z2", "z3"} {
		cp.report([]fleet.Conflict{conflict(fp)})
	}
	cp.report(nil)
	assert.Empty(t, cp.reported, "resolved conflicts are forgotten")
	cp.report([]fleet.Conflict{conflict("y")})
	assert.Len(t, ev.of(EventConflict), 5, "a conflict that comes back is reported again")
}
