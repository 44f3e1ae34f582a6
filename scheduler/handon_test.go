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

// stalledPublish is a memory store whose Publish of a trigger's message
// waits until goOn is closed (or its context ends), as a control channel
// that does not answer.
type stalledPublish struct {
	*memory.Store
	called chan fleet.Message // buffered
	goOn   chan struct{}
}

func (s *stalledPublish) Publish(ctx context.Context, m fleet.Message) error {
	if m.Kind != fleet.MessageTrigger {
		return s.Store.Publish(ctx, m)
	}
	s.called <- m
	select {
	case <-s.goOn:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.Publish(ctx, m)
}

// The hand-on of a waiting trigger (a run's end on a replica that stops,
// or no longer has the job) publishes on a goroutine of its own: the end
// of a run is delivered to its job's owner on the goroutine of its release
// batch, whose other runs' ends must not wait for the control channel.
// Shutdown waits for the publish.
func TestScheduler_HandOnTrigger_DoesNotHoldTheDeliveringGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &stalledPublish{Store: newMemoryStore(t, nil), called: make(chan fleet.Message, 1), goOn: make(chan struct{})}
		s := newScheduler(t, store)
		require.NoError(t, s.Register("report", Every(time.Hour), func(context.Context) error { return nil }))
		require.NoError(t, s.Start())
		synctest.Wait()
		j, _ := registrationOf(t, s, "report")

		returned := make(chan struct{})
		go func() {
			s.do(j, act{kind: actHandOn})
			close(returned)
		}()
		m := <-store.called
		assert.Equal(t, j.key, m.Key)
		synctest.Wait()
		select {
		case <-returned:
		default:
			close(store.goOn) // let it end
			<-returned
			t.Fatal("the hand-on's publish ran on the goroutine that delivered it")
		}

		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			stopped <- s.Shutdown(ctx)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Shutdown returned before the hand-on's publish")
		default:
		}
		close(store.goOn)
		require.NoError(t, <-stopped)
	})
}
