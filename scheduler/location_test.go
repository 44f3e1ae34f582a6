package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithLocation_Local: time.Local is the zone of each replica's machine,
// so replicas in New York and Berlin would run "0 2 * * *" six hours apart
// under one fingerprint ("Local"). It is refused, as TZ=Local is.
func TestWithLocation_Local(t *testing.T) {
	store := newMemoryStore(t, nil)
	loaded, err := time.LoadLocation("Local")
	require.NoError(t, err)
	for _, loc := range []*time.Location{time.Local, loaded, time.FixedZone("Local", 0)} {
		s, err := New(store, WithLocation(loc))
		require.ErrorIs(t, err, ErrInvalidArgument)
		assert.ErrorContains(t, err, `WithLocation: location "Local" is the zone of the machine it runs on`)
		assert.Nil(t, s)
	}
}

// TestJob_Fingerprint_Location: replicas that read one cron expression in
// different zones disagree on its occurrences, so their fingerprints
// differ and the control plane reports the conflict.
func TestJob_Fingerprint_Location(t *testing.T) {
	fingerprint := func(zone, expr string) string {
		t.Helper()
		loc, err := time.LoadLocation(zone)
		require.NoError(t, err)
		s := newScheduler(t, newMemoryStore(t, nil), WithLocation(loc), WithoutControlPlane())
		require.NoError(t, s.Register("nightly", Cron(expr), nop))
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.order[0].registered().fingerprint()
	}
	ny, berlin := fingerprint("America/New_York", "0 2 * * *"), fingerprint("Europe/Berlin", "0 2 * * *")
	assert.NotEqual(t, ny, berlin)
	assert.Equal(t, ny, fingerprint("America/New_York", "0 2 * * *"))
}
