package cronexpr

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// zone loads an IANA zone or fails the test.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err, "load zone %s", name)
	return loc
}

// mustParse parses expr in loc or fails the test.
func mustParse(t testing.TB, expr string, loc *time.Location) *Expr {
	t.Helper()
	e, err := Parse(expr, loc)
	require.NoError(t, err, "parse %q", expr)
	return e
}

// occurrences returns the occurrences of e after from and before to,
// chained with Next.
func occurrences(t testing.TB, e *Expr, from, to time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	for at := e.Next(from); !at.IsZero() && at.Before(to); at = e.Next(at) {
		require.Less(t, len(out), 100000, "runaway occurrence list for %q", e)
		out = append(out, at)
	}
	return out
}

// local formats instants as wall times with zone abbreviations, for
// readable failures.
func local(loc *time.Location, ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, at := range ts {
		out[i] = at.In(loc).Format("2006-01-02 15:04:05 MST")
	}
	return out
}
