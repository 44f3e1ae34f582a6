package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// missedLogDelay is how long the reports of occurrences that ran nowhere
// are gathered before they are logged: one warning per firing group for
// everything its jobs reported in that time. A store outage makes every
// job of a group report a gap at its next win, all within a firing; one
// line per job would be a storm of thousands.
const missedLogDelay = time.Second

// missedSampleSize is how many job names a missed report names at debug.
const missedSampleSize = 10

// missedLog gathers the reports of occurrences that ran nowhere
// (reportMissed) per firing group, and logs each group's once per
// missedLogDelay. Events (EventMissed) and Stats are per job and not
// delayed: only the log line is gathered.
type missedLog struct {
	log   *slog.Logger
	clock clockwork.Clock

	mu      sync.Mutex
	pending map[string]*missedBatch // by group key
	order   []string                // group keys in the order of their first report
	timer   clockwork.Timer         // set while reports wait
	closed  bool
}

// missedBatch is what one group's jobs reported since the last line.
type missedBatch struct {
	jobs, missed int
	capped       bool // a job's count was capped at MaxMissedCount
	first, last  time.Time
	sample       []string // the first missedSampleSize job names
}

func newMissedLog(log *slog.Logger, clock clockwork.Clock) *missedLog {
	return &missedLog{log: log, clock: clock, pending: make(map[string]*missedBatch)}
}

// add records that job of group reported m; the line follows within
// missedLogDelay (at once after close).
func (ml *missedLog) add(group, job string, m Missed) {
	ml.mu.Lock()
	b := ml.pending[group]
	if b == nil {
		b = &missedBatch{first: m.First, last: m.Last}
		ml.pending[group] = b
		ml.order = append(ml.order, group)
	}
	b.jobs++
	b.missed += m.Count
	b.capped = b.capped || m.Capped
	if m.First.Before(b.first) {
		b.first = m.First
	}
	if m.Last.After(b.last) {
		b.last = m.Last
	}
	if len(b.sample) < missedSampleSize {
		b.sample = append(b.sample, job)
	}
	now := ml.closed
	if !now && ml.timer == nil {
		ml.timer = ml.clock.AfterFunc(missedLogDelay, ml.flush)
	}
	ml.mu.Unlock()
	if now {
		ml.flush()
	}
}

// flush logs what waits, one warning per group.
func (ml *missedLog) flush() {
	ml.mu.Lock()
	pending, order := ml.pending, ml.order
	ml.pending, ml.order = make(map[string]*missedBatch), nil
	if ml.timer != nil {
		ml.timer.Stop()
		ml.timer = nil
	}
	ml.mu.Unlock()
	ctx := context.Background()
	for _, group := range order {
		b := pending[group]
		attrs := []slog.Attr{slog.String("group", group), slog.Int("jobs", b.jobs), slog.Int("missed", b.missed),
			slog.Bool("at_least", b.capped), slog.Time("first", b.first), slog.Time("last", b.last)}
		if b.jobs == 1 {
			attrs = append(attrs, slog.String("job", b.sample[0]))
		}
		ml.log.LogAttrs(ctx, slog.LevelWarn, "occurrences ran nowhere", attrs...)
		if b.jobs > 1 && ml.log.Enabled(ctx, slog.LevelDebug) {
			ml.log.LogAttrs(ctx, slog.LevelDebug, "occurrences ran nowhere: jobs",
				slog.String("group", group), slog.Any("sample", b.sample))
		}
	}
}

// close logs what waits now, and every later report at once.
func (ml *missedLog) close() {
	ml.mu.Lock()
	ml.closed = true
	ml.mu.Unlock()
	ml.flush()
}
