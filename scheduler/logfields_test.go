package scheduler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every log line names each field once: a JSON line with a key twice is
// read differently by different parsers (most keep the last). A run's
// heartbeat logs with the run's logger, whose fields (job, occurrence)
// go beside the heartbeat's own (lease, fence, key), and so do a
// concurrency slot's heartbeat's.
func TestScheduler_Logs_EachFieldOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, written := jsonDebugLog()
		s := newScheduler(t, newMemoryStore(t, nil), WithLogger(log))
		long := func(context.Context) error {
			time.Sleep(5 * time.Second) // renewed (TTL 3s: every second)
			return nil
		}
		require.NoError(t, s.Register("report", Every(time.Minute), long, WithTTL(3*time.Second)))
		// A concurrency slot has a heartbeat of its own, on another lease.
		require.NoError(t, s.Register("export", Every(time.Minute), long, WithTTL(3*time.Second), WithConcurrencyLimit("db", 1)))
		require.NoError(t, s.Start())
		time.Sleep(70 * time.Second)
		synctest.Wait()
		shutdown(t, s)

		out := written()
		msgs := map[string]bool{}
		for line := range strings.Lines(out) {
			keys := topLevelKeys(t, line)
			seen := map[string]bool{}
			for _, k := range keys {
				assert.False(t, seen[k], "field %q twice: %s", k, line)
				seen[k] = true
			}
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec))
			msgs[rec["msg"].(string)] = true
		}
		for _, m := range []string{"job started", "heartbeat: lease extended", "heartbeat: stopped", "job succeeded"} {
			assert.True(t, msgs[m], "a line %q was written", m)
		}
	})
}

// topLevelKeys returns the keys of the JSON object in line, in order,
// duplicates included.
func topLevelKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, line)
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err, line)
		keys = append(keys, tok.(string))
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v), line)
	}
	return keys
}
