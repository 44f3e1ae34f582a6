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

// durationFields are the log fields that hold a duration.
var durationFields = []string{"took", "lateness", "retry_in", "past_deadline", "left"}

// A JSON log shows durations as a person reads them ("1.5s", as
// time.Duration's String and slog's text handler write them), not as a
// count of nanoseconds: a run's "took", its "lateness", and the "retry_in"
// of an acquire retried through a store outage.
func TestScheduler_Logs_DurationsReadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, written := jsonDebugLog()
		start := time.Now()
		store := outageStore{Store: newMemoryStore(t, nil), from: start.Add(2*time.Minute - time.Second), to: start.Add(2*time.Minute + 3*time.Second)}
		s := newScheduler(t, store, WithLogger(log))
		require.NoError(t, s.Register("report", Every(time.Minute), func(context.Context) error {
			time.Sleep(1500 * time.Millisecond)
			return nil
		}))
		require.NoError(t, s.Start())
		time.Sleep(150 * time.Second)
		synctest.Wait()
		shutdown(t, s)

		out := written()
		seen := map[string][]string{}
		for line := range strings.Lines(out) {
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
			for _, k := range durationFields {
				v, ok := rec[k]
				if !ok {
					continue
				}
				text, isText := v.(string)
				if assert.True(t, isText, "%s is a duration's text, not %T: %s", k, v, line) {
					_, err := time.ParseDuration(text)
					assert.NoError(t, err, "%s: %s", k, line)
					seen[rec["msg"].(string)+" "+k] = append(seen[rec["msg"].(string)+" "+k], text)
				}
			}
		}
		assert.Equal(t, []string{"1.5s", "1.5s", "1.5s"}, seen["job succeeded took"])
		late := seen["job started lateness"]
		require.Len(t, late, 3)
		assert.Equal(t, []string{"0s", "0s"}, late[:2])
		third, err := time.ParseDuration(late[2])
		require.NoError(t, err)
		assert.GreaterOrEqual(t, third, 3*time.Second, "the third run started after the outage: %s", late[2])
		assert.NotEmpty(t, seen["job lease acquire failed; retrying while the occurrence is current retry_in"])
	})
}
