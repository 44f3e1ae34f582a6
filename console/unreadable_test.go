package console_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease/redislease"
)

// A live replica whose registry entry the console cannot read (one
// written by a later version, or by hand) does not take the pages down:
// the fleet, jobs and job pages show what the readable entries say, with
// a warning that names the replica left out.
func TestConsole_UnreadableEntry_TheRestIsShown(t *testing.T) {
	f := newLiveFleet(t)
	ctx := t.Context()
	store, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix))
	require.NoError(t, err)
	_, err = store.PublishReplica(ctx, fleet.Replica{ID: "replica-a", Version: "v1.2.3", Started: time.Now(),
		Refresh: 5 * time.Second, Jobs: []fleet.Job{reportJob, tickJob}}, time.Minute)
	require.NoError(t, err)
	key := f.prefix + ":fleet:{fleet}:"
	for _, r := range f.admin.DoMulti(ctx,
		f.admin.B().Set().Key(key+"replica:replica-z").Value(`{"id":`).Px(time.Minute).Build(),
		f.admin.B().Zadd().Key(key+"replicas").ScoreMember().ScoreMember(float64(time.Now().Add(time.Minute).UnixMilli()), "replica-z").Build(),
	) {
		require.NoError(t, r.Error())
	}
	c, err := console.New(f.in, console.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	b := newBrowser(t, c)

	for page, want := range map[string]string{"/": "replica-a", "/jobs": `href="/jobs/tick"`, "/jobs/tick": "Run history"} {
		rec := b.get(page)
		require.Equal(t, http.StatusOK, rec.Code, page)
		body := rec.Body.String()
		assert.Contains(t, body, want, page)
		assert.Contains(t, body, `role="alert"`, page)
		assert.Contains(t, body, "The registry entries of 1 live replica could not be read", page)
		assert.Contains(t, body, "<code>replica-z</code>", page)
	}
	require.NoError(t, f.admin.Do(ctx, f.admin.B().Zrem().Key(key+"replicas").Member("replica-z").Build()).Error())
	assert.NotContains(t, b.get("/").Body.String(), "could not be read", "no warning once every entry reads")
}
