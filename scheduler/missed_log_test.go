package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jonboulle/clockwork"
)

// recordsHandler keeps every record logged at or above level.
type recordsHandler struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (h *recordsHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *recordsHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}
func (h *recordsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordsHandler) WithGroup(string) slog.Handler      { return h }

// with returns the records of level and msg, each as its attributes.
func (h *recordsHandler) with(level slog.Level, msg string) []map[string]slog.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range h.recs {
		if r.Level != level || r.Message != msg {
			continue
		}
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		out = append(out, attrs)
	}
	return out
}

// A store outage of three minutes makes every job of a firing group miss
// three occurrences; each job reports its gap (EventMissed) at its next
// win, but the log has one warning for the group, naming how many jobs
// and occurrences, and a sample of the jobs at debug.
func TestScheduler_ReportMissed_StormLogsOneWarningPerGroup(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const jobs = 200
				base := time.Now() // a whole minute
				from := base.Add(2 * time.Minute)
				store := outageStore{Store: newMemoryStore(t, nil), from: from, to: from.Add(3 * time.Minute)}
				logs := &recordsHandler{level: level}
				ev := &events{}
				s := newScheduler(t, store, WithLogger(slog.New(logs)), WithObserver(ev.observe))
				for i := range jobs {
					require.NoError(t, s.Register(fmt.Sprintf("job-%03d", i), Cron("* * * * *"), func(context.Context) error { return nil },
						WithTTL(10*time.Second)))
				}
				time.Sleep(30 * time.Second) // off the grid
				require.NoError(t, s.Start())
				time.Sleep(5*time.Minute + 10*time.Second) // the win at minute 5 reports minutes 2-4
				synctest.Wait()

				assert.Len(t, ev.of(EventMissed), jobs, "every job reports its own gap")
				warn := logs.with(slog.LevelWarn, "occurrences ran nowhere")
				require.Len(t, warn, 1, "one warning for the storm")
				assert.Equal(t, int64(jobs), warn[0]["jobs"].Int64())
				assert.Equal(t, int64(3*jobs), warn[0]["missed"].Int64())
				assert.Equal(t, base.Add(2*time.Minute).UnixMilli(), warn[0]["first"].Time().UnixMilli())
				assert.Equal(t, base.Add(4*time.Minute).UnixMilli(), warn[0]["last"].Time().UnixMilli())
				assert.NotContains(t, warn[0], "job", "no job is named when there are many")
				sample := logs.with(slog.LevelDebug, "occurrences ran nowhere: jobs")
				if level == slog.LevelDebug {
					require.Len(t, sample, 1)
					assert.Len(t, sample[0]["sample"].Any(), missedSampleSize)
				} else {
					assert.Empty(t, sample)
				}
				shutdown(t, s)
				assert.Len(t, logs.with(slog.LevelWarn, "occurrences ran nowhere"), 1, "nothing was left to log at Shutdown")
			})
		})
	}
}

// A single job's gap is logged with the job's name, after the delay that
// gathers a group's reports; one reported while the scheduler shuts down
// is logged at once.
func TestMissedLog_Add_OneJobNamedAndFlushedAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &recordsHandler{level: slog.LevelInfo}
		ml := newMissedLog(slog.New(logs), clockwork.NewRealClock())
		first := time.Now()
		ml.add("every:1s", "invoices", Missed{Count: 2, First: first, Last: first.Add(time.Second)})
		assert.Empty(t, logs.with(slog.LevelWarn, "occurrences ran nowhere"), "gathered, not logged yet")
		time.Sleep(missedLogDelay)
		synctest.Wait()
		warn := logs.with(slog.LevelWarn, "occurrences ran nowhere")
		require.Len(t, warn, 1)
		assert.Equal(t, "invoices", warn[0]["job"].String())
		assert.Equal(t, int64(1), warn[0]["jobs"].Int64())

		ml.close()
		ml.add("every:1s", "reports", Missed{Count: 1, First: first, Last: first})
		assert.Len(t, logs.with(slog.LevelWarn, "occurrences ran nowhere"), 2, "logged at once after close")
	})
}
