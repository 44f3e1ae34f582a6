package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

func testChannel(t *testing.T, env Env) {
	ctx := t.Context()
	got := make(chan fleet.Message, 8)
	stop, err := env.Store.Subscribe(ctx, func(m fleet.Message) { got <- m })
	require.NoError(t, err)
	defer stop()

	tr, err := env.Store.AddTrigger(ctx, "job:chan", "ops", time.Minute)
	require.NoError(t, err)
	require.NoError(t, env.Store.Publish(ctx, fleet.Message{Kind: fleet.MessageDone, Key: "job:chan", Trigger: tr.ID, Outcome: "succeeded"}))

	want := []fleet.Message{
		{Kind: fleet.MessageTrigger, Key: "job:chan", Trigger: tr.ID},
		{Kind: fleet.MessageDone, Key: "job:chan", Trigger: tr.ID, Outcome: "succeeded"},
	}
	for _, w := range want {
		timer := time.NewTimer(10 * time.Second)
		select {
		case m := <-got:
			assert.Equal(t, w, m)
		case <-timer.C:
			t.Fatalf("no message %v within 10s", w)
		}
		timer.Stop()
	}
	stop()
	stop() // idempotent
}
