package cronexpr

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fuzzZones are the zones FuzzParse reads expressions in: no DST, the
// usual northern shift, a 30-minute shift and a skipped day.
var fuzzZones = []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "Asia/Tokyo"}

// fuzzSeeds is the seed corpus; it runs in every plain go test.
var fuzzSeeds = []string{
	"",
	" ",
	"* * * * *",
	"* * * * * *",
	"0 2 * * *",
	"30 2 * * *",
	"*/15 * * * *",
	"0 */2 * * *",
	"0 0-23/3 * * *",
	"0 0/4 * * *",
	"5,10,15-20/2 1-5 * jan-mar mon-fri",
	"0 0 13 * 5",
	"0 0 29 2 *",
	"0 0 30 2 *",
	"59 59 23 31 12 *",
	"TZ=UTC\t0\t*\t*\t*\t*",
	"TZ=UTC 0 * * * *",
	"TZ=UTC",
	"TZ=",
	"TZ= ",
	"TZ=\t\t* * * * *",
	"CRON_TZ=America/New_York 30 1 * * *",
	"CRON_TZ=Australia/Lord_Howe\n0 2 * * *",
	"TZ=Local * * * * *",
	"TZ=../../../etc/passwd * * * * *",
	"TZ=/etc/localtime * * * * *",
	"TZ=UTC TZ=UTC * * * * *",
	"TZ=Europe/London @hourly",
	"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
	"@every 1h", "@every", "@", "@@", "@daily extra",
	"99999999999999999999 * * * *",
	"*/99999999999999999999 * * * *",
	"0-99999999999999999999 * * * *",
	"9223372036854775807 * * * *",
	"-1 * * * *",
	"*/0 * * * *",
	"*-5 * * * *",
	"1-2-3 * * * *",
	"1/2/3 * * * *",
	",,, * * * *",
	"? ? ? ? ?",
	"0 0 * * ſun",
	"٣ * * * *",
	"0\u00a02\u3000*\u2003*\u2003*",
	"\xff\xfe * * * *",
	"0\x00 * * * *",
	"🕑 * * * *",
	strings.Repeat("1,", 511) + "1",
	strings.Repeat("* ", 513),
}

// FuzzParse: Parse never panics and every error wraps ErrInvalid without
// the parser having panicked; a parsed expression's Next is strictly
// increasing, and Prev agrees with it.
func FuzzParse(f *testing.F) {
	locs := make([]*time.Location, len(fuzzZones))
	for i, name := range fuzzZones {
		locs[i] = zone(f, name)
	}
	for i, seed := range fuzzSeeds {
		f.Add(seed, int64(i)*7_777_777_777, uint8(i))
	}
	// Instants from 1900 to 2200.
	base := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() / 1e6
	span := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()/1e6 - base
	f.Fuzz(func(t *testing.T, expr string, startMs int64, zoneIndex uint8) {
		e, err := Parse(expr, locs[int(zoneIndex)%len(locs)])
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			require.NotErrorIs(t, err, errParserPanic, "the field checks let through text the parser panics on")
			require.True(t, strings.HasPrefix(err.Error(), "cronexpr: \""), err.Error())
			return
		}
		at := time.UnixMilli(base + floorMod(startMs, span))
		for range 4 {
			next := e.Next(at)
			if next.IsZero() {
				return
			}
			require.True(t, next.After(at), "%q: Next(%s) = %s", expr, at, next)
			self, ok := e.Prev(next)
			require.True(t, ok, "%q: Prev(%s)", expr, next)
			require.Equal(t, next, self, "%q: Prev of an occurrence is itself", expr)
			if prev, ok := e.Prev(next.Add(-time.Nanosecond)); ok {
				require.True(t, prev.Before(next))
				require.Equal(t, next, e.Next(prev), "%q: Next after Prev(%s)", expr, next)
			}
			at = next
		}
	})
}
