package fleettest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
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

	opens := []fleet.Message{
		{Kind: fleet.MessageOpen, Key: "job:a", Round: 1_700_000_000_000},
		{Kind: fleet.MessageOpen, Key: "job:b", Round: 1_700_000_001_000},
	}
	if bp, ok := env.Store.(fleet.BatchPublisher); ok {
		err := bp.PublishBatch(ctx, []fleet.Message{opens[0], {Kind: fleet.MessageResync}})
		require.ErrorIs(t, err, lease.ErrInvalidArgument, "a resync is the subscription's own")
		assert.ErrorContains(t, err, "message 1")
		require.NoError(t, bp.PublishBatch(ctx, nil))
		require.NoError(t, bp.PublishBatch(ctx, opens))
	} else {
		for _, m := range opens {
			require.NoError(t, env.Store.Publish(ctx, m))
		}
	}

	want := append([]fleet.Message{
		{Kind: fleet.MessageTrigger, Key: "job:chan", Trigger: tr.ID},
		{Kind: fleet.MessageDone, Key: "job:chan", Trigger: tr.ID, Outcome: "succeeded"},
	}, opens...) // the invalid batch published nothing
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
