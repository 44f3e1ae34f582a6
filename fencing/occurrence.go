package fencing

import (
	"context"
	"time"
)

type occurrenceKey struct{}

// NewOccurrenceContext returns a copy of ctx that carries occurrence: the
// scheduled time of the run the context belongs to. A scheduler job's
// context carries it next to the token (see NewContext), for
// AdvanceOnceFromContext. The time is stored as given and checked when it
// is used.
func NewOccurrenceContext(ctx context.Context, occurrence time.Time) context.Context {
	return context.WithValue(ctx, occurrenceKey{}, occurrence)
}

// OccurrenceFromContext returns the occurrence carried by ctx, and whether
// there was one.
func OccurrenceFromContext(ctx context.Context) (time.Time, bool) {
	o, ok := ctx.Value(occurrenceKey{}).(time.Time)
	return o, ok
}

// occurrenceMillis checks occurrence and returns it in Unix milliseconds,
// the form the fence table keeps and compares: times within one millisecond
// are the same occurrence. The zero time, and times before 1 ms after the
// Unix epoch, are refused, as are times that do not fit in an int64 of
// milliseconds.
func occurrenceMillis(occurrence time.Time) (int64, error) {
	if occurrence.IsZero() {
		return 0, invalid("occurrence must not be the zero time.Time")
	}
	ms := occurrence.UnixMilli()
	if !time.UnixMilli(ms).Equal(occurrence.Truncate(time.Millisecond)) {
		return 0, invalid("occurrence %s does not fit in int64 Unix milliseconds", occurrence.UTC())
	}
	if ms <= 0 {
		return 0, invalid("occurrence must be at least 1ms after the Unix epoch, got %s (%d ms)",
			occurrence.UTC().Format(time.RFC3339Nano), ms)
	}
	return ms, nil
}

// formatMillis formats Unix milliseconds for an error message.
func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
