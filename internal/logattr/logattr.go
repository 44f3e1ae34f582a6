// Package logattr builds the log attributes whose form every package of
// cronguard shares, so that a field has one type and one look in every
// handler.
package logattr

import (
	"log/slog"
	"time"
)

// Duration is a duration field as a person reads it: time.Duration's
// String ("1.5s", "96.789857ms", "0s"), the form slog's text handler
// already writes, rather than the count of nanoseconds slog's JSON handler
// writes for slog.Duration. time.ParseDuration reads it back.
func Duration(key string, d time.Duration) slog.Attr {
	return slog.String(key, d.String())
}
