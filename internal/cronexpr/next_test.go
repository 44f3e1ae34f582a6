package cronexpr

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpr_PrevNext_Consistent(t *testing.T) {
	exprs := []string{
		"30 2 * * *", "30 1 * * *", "0 * * * *", "*/15 * * * *", "* 2 * * *",
		"*/20 * 1-3 * * *", "0 0 29 2 *", "0 9 * * mon-fri", "@daily", "@hourly",
		"15,45 0-5 * * *", "0 0 1 * *",
	}
	zones := []string{"UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Apia", "Antarctica/Troll"}
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	span := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - start
	for _, name := range zones {
		loc := zone(t, name)
		for _, expr := range exprs {
			e := mustParse(t, expr, loc)
			for range 300 {
				at := time.Unix(start+rng.Int64N(span), rng.Int64N(1e9))
				next := e.Next(at)
				require.False(t, next.IsZero(), "%s in %s: Next(%s)", expr, name, at)
				assert.True(t, next.After(at), "%s in %s: Next(%s) = %s", expr, name, at, next)
				assert.Equal(t, time.UTC, next.Location())
				assert.Zero(t, next.Nanosecond())

				prevOfNext, ok := e.Prev(next)
				require.True(t, ok)
				assert.Equal(t, next, prevOfNext, "%s in %s: Prev(Next(%s))", expr, name, at)

				prev, ok := e.Prev(at)
				require.True(t, ok)
				assert.False(t, prev.After(at), "%s in %s: Prev(%s) = %s", expr, name, at, prev)
				assert.Equal(t, next, e.Next(prev), "%s in %s: nothing lies between Prev(%s) and Next", expr, name, at)

				after := e.Next(next)
				assert.True(t, after.After(next), "%s in %s: Next is strictly increasing", expr, name)
			}
		}
	}
}

func TestExpr_Next_SubSecond(t *testing.T) {
	e := mustParse(t, "* * * * * *", time.UTC)
	at := time.Date(2025, 6, 1, 10, 0, 0, 500_000_000, time.UTC)
	assert.Equal(t, time.Date(2025, 6, 1, 10, 0, 1, 0, time.UTC), e.Next(at))
	prev, ok := e.Prev(at)
	require.True(t, ok)
	assert.Equal(t, time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), prev)
	assert.Equal(t, time.Date(2025, 6, 1, 10, 0, 1, 0, time.UTC), e.Next(time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)), "strictly after")
}

func TestExpr_Next_BeyondHorizon(t *testing.T) {
	e := mustParse(t, "0 0 29 2 *", time.UTC)
	assert.True(t, e.Next(time.Date(2097, 3, 1, 0, 0, 0, 0, time.UTC)).IsZero(), "2100 is no leap year: the next 29 February is 7 years away")
	_, ok := e.Prev(time.Date(2103, 3, 1, 0, 0, 0, 0, time.UTC))
	assert.False(t, ok)
	assert.Equal(t, time.Date(2096, 2, 29, 0, 0, 0, 0, time.UTC), e.Next(time.Date(2092, 3, 1, 0, 0, 0, 0, time.UTC)))
}

func TestExpr_Next_ExtremeInputs(t *testing.T) {
	e := mustParse(t, "30 2 * * *", zone(t, "America/New_York"))
	assert.False(t, e.Next(time.Time{}).IsZero(), "zero time")
	prev, ok := e.Prev(time.Time{})
	require.True(t, ok, "proleptic calendar before year 1")
	assert.True(t, prev.Before(time.Time{}))
	assert.False(t, e.Next(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero())
}

func TestExpr_Between(t *testing.T) {
	ny := zone(t, "America/New_York")
	utc := func(h, m int) time.Time { return time.Date(2025, 6, 1, h, m, 0, 0, time.UTC) }
	tests := []struct {
		name        string
		expr        string
		loc         *time.Location
		a, b        time.Time
		limit       int
		n           int
		first, last time.Time
		capped      bool
	}{
		{name: "strictly between", expr: "*/15 * * * *", loc: time.UTC, a: utc(10, 0), b: utc(11, 0), limit: 10,
			n: 3, first: utc(10, 15), last: utc(10, 45)},
		{name: "capped keeps the true last", expr: "*/15 * * * *", loc: time.UTC, a: utc(10, 0), b: utc(12, 0), limit: 2,
			n: 2, first: utc(10, 15), last: utc(11, 45), capped: true},
		{name: "exactly the limit is not capped", expr: "*/15 * * * *", loc: time.UTC, a: utc(10, 0), b: utc(11, 0), limit: 3,
			n: 3, first: utc(10, 15), last: utc(10, 45)},
		{name: "limit zero", expr: "*/15 * * * *", loc: time.UTC, a: utc(10, 0), b: utc(11, 0), limit: 0,
			n: 0, first: utc(10, 15), last: utc(10, 45), capped: true},
		{name: "none", expr: "0 * * * *", loc: time.UTC, a: utc(10, 0), b: utc(11, 0), limit: 10},
		{name: "empty interval", expr: "* * * * * *", loc: time.UTC, a: utc(10, 0), b: utc(10, 0), limit: 10},
		{name: "fall-back night counts both 01:00", expr: "0 * * * *", loc: ny,
			a: time.Date(2025, 11, 2, 4, 30, 0, 0, time.UTC), b: time.Date(2025, 11, 2, 7, 30, 0, 0, time.UTC), limit: 10,
			n: 3, first: time.Date(2025, 11, 2, 5, 0, 0, 0, time.UTC), last: time.Date(2025, 11, 2, 7, 0, 0, 0, time.UTC)},
		{name: "a day of seconds capped", expr: "* * * * * *", loc: ny,
			a: time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC), b: time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC), limit: 100,
			n: 100, first: time.Date(2025, 3, 9, 0, 0, 1, 0, time.UTC), last: time.Date(2025, 3, 9, 23, 59, 59, 0, time.UTC), capped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustParse(t, tt.expr, tt.loc)
			n, first, last, capped := e.Between(tt.a, tt.b, tt.limit)
			assert.Equal(t, tt.n, n, "count")
			assert.Equal(t, tt.first, first, "first")
			assert.Equal(t, tt.last, last, "last")
			assert.Equal(t, tt.capped, capped, "capped")
		})
	}
}

func TestExpr_Gaps(t *testing.T) {
	ny := zone(t, "America/New_York")
	tests := []struct {
		name          string
		expr          string
		occ           time.Time
		before, after time.Duration
	}{
		{name: "daily across spring forward", expr: "0 2 * * *", occ: time.Date(2025, 3, 9, 7, 0, 0, 0, time.UTC), // 03:00 EDT, end of gap
			before: 24 * time.Hour, after: 23 * time.Hour},
		{name: "daily across fall back", expr: "30 1 * * *", occ: time.Date(2025, 11, 2, 5, 30, 0, 0, time.UTC), // 01:30 EDT
			before: 24 * time.Hour, after: 25 * time.Hour},
		{name: "quarter hours in the repeated hour", expr: "*/15 * * * *", occ: time.Date(2025, 11, 2, 6, 0, 0, 0, time.UTC), // 01:00 EST
			before: 15 * time.Minute, after: 15 * time.Minute},
		{name: "hourly over the gap", expr: "0 * * * *", occ: time.Date(2025, 3, 9, 7, 0, 0, 0, time.UTC), // 03:00 EDT
			before: time.Hour, after: time.Hour},
		{name: "no neighbour within the horizon", expr: "0 0 29 2 *", occ: time.Date(2096, 2, 29, 5, 0, 0, 0, time.UTC),
			before: (366 + 3*365) * 24 * time.Hour, after: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustParse(t, tt.expr, ny)
			before, after := e.Gaps(tt.occ)
			assert.Equal(t, tt.before, before, "to the previous occurrence")
			assert.Equal(t, tt.after, after, "to the next occurrence")
		})
	}
}
