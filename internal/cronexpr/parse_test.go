package cronexpr

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse_Valid(t *testing.T) {
	tests := []struct {
		name     string
		expr     string
		zone     string // location the expression must be read in
		realTime bool
	}{
		{name: "five fields", expr: "0 2 * * *", zone: "America/New_York"},
		{name: "six fields", expr: "30 0 2 * * *", zone: "America/New_York"},
		{name: "tabs between fields", expr: "0\t2\t*\t*\t*", zone: "America/New_York"},
		{name: "surrounding and repeated whitespace", expr: "  0  2 \t * * *\n", zone: "America/New_York"},
		{name: "unicode whitespace", expr: "0\u00a02\u3000*\u2003*\u2003*", zone: "America/New_York"},
		{name: "TZ prefix with space", expr: "TZ=Asia/Tokyo 0 2 * * *", zone: "Asia/Tokyo"},
		{name: "TZ prefix with tabs", expr: "TZ=UTC\t0\t*\t*\t*\t*", zone: "UTC", realTime: true},
		{name: "CRON_TZ prefix", expr: "CRON_TZ=Europe/London 0 * * * *", zone: "Europe/London", realTime: true},
		{name: "TZ prefix on a descriptor", expr: "TZ=Europe/Berlin @daily", zone: "Europe/Berlin"},
		{name: "names", expr: "0 9 * JAN-jun mon-FRI", zone: "America/New_York"},
		{name: "leading zeros", expr: "05 007 * * *", zone: "America/New_York"},
		{name: "question mark", expr: "0 0 ? * 1", zone: "America/New_York"},
		{name: "hour wildcard", expr: "0 * * * *", zone: "America/New_York", realTime: true},
		{name: "hour question mark", expr: "0 ? * * *", zone: "America/New_York", realTime: true},
		{name: "hour step over all", expr: "0 */2 * * *", zone: "America/New_York", realTime: true},
		{name: "hour question step", expr: "0 ?/3 * * *", zone: "America/New_York", realTime: true},
		{name: "hour full range step", expr: "0 0-23/4 * * *", zone: "America/New_York", realTime: true},
		{name: "hour zero slash step", expr: "0 0/6 * * *", zone: "America/New_York", realTime: true},
		{name: "hour full range", expr: "0 0-23 * * *", zone: "America/New_York", realTime: true},
		{name: "hour full range with leading zeros", expr: "0 00-23 * * *", zone: "America/New_York", realTime: true},
		{name: "hour list is fixed", expr: "0 0-11,12-23 * * *", zone: "America/New_York"},
		{name: "hour partial step is fixed", expr: "0 1/2 * * *", zone: "America/New_York"},
		{name: "hour partial range is fixed", expr: "0 1-23 * * *", zone: "America/New_York"},
		{name: "minute wildcard with fixed hour is fixed", expr: "* 2 * * *", zone: "America/New_York"},
		{name: "seconds with wildcard hour", expr: "* * * * * *", zone: "America/New_York", realTime: true},
		{name: "hourly", expr: "@hourly", zone: "America/New_York", realTime: true},
		{name: "daily", expr: "@daily", zone: "America/New_York"},
		{name: "midnight", expr: "@midnight", zone: "America/New_York"},
		{name: "weekly", expr: "@weekly", zone: "America/New_York"},
		{name: "monthly", expr: "@monthly", zone: "America/New_York"},
		{name: "yearly", expr: "@yearly", zone: "America/New_York"},
		{name: "annually", expr: "@annually", zone: "America/New_York"},
		{name: "29 February", expr: "0 0 29 2 *", zone: "America/New_York"},
		{name: "day-of-month or day-of-week", expr: "0 0 30 2 1", zone: "America/New_York"},
		{name: "step equal to the field width", expr: "*/60 * * * *", zone: "America/New_York", realTime: true},
	}
	ny := zone(t, "America/New_York")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.expr, ny)
			require.NoError(t, err)
			assert.Equal(t, tt.zone, e.Location().String())
			assert.Equal(t, tt.realTime, e.FollowsRealTime())
			assert.Equal(t, tt.expr, e.String())
		})
	}
}

func TestParse_NilLocationIsUTC(t *testing.T) {
	e, err := Parse("0 2 * * *", nil)
	require.NoError(t, err)
	assert.Equal(t, time.UTC, e.Location())
	assert.Equal(t, time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC), e.Next(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)))
}

func TestParse_Invalid(t *testing.T) {
	tests := []struct {
		name string
		expr string
		rule string // the message must contain this
	}{
		{name: "empty", expr: "", rule: "must not be empty"},
		{name: "blank", expr: " \t\n", rule: "must not be empty"},
		{name: "too long", expr: strings.Repeat("0 ", 600), rule: "longer than 1024 bytes"},
		{name: "not UTF-8", expr: "\xff * * * *", rule: "not valid UTF-8"},
		{name: "four fields", expr: "* * * *", rule: "want 5 fields (minute hour dom month dow) or 6 (with leading seconds), got 4"},
		{name: "seven fields", expr: "* * * * * * *", rule: "got 7"},
		{name: "TZ without fields", expr: "TZ=UTC", rule: "TZ=<zone> must be followed by whitespace and the fields"},
		{name: "CRON_TZ without fields", expr: "CRON_TZ=UTC ", rule: "CRON_TZ=<zone> must be followed by whitespace"},
		{name: "TZ with empty zone", expr: "TZ= 0 * * * *", rule: "TZ= needs a zone name"},
		{name: "TZ with unknown zone", expr: "TZ=Mars/Olympus 0 * * * *", rule: `unknown time zone "Mars/Olympus"`},
		{name: "TZ with path", expr: "TZ=../../etc/passwd 0 * * * *", rule: "unknown time zone"},
		{name: "TZ Local", expr: "TZ=Local 0 * * * *", rule: "replicas may not share"},
		{name: "two prefixes", expr: "TZ=UTC CRON_TZ=UTC 0 * * * *", rule: "at most one TZ= or CRON_TZ= prefix"},
		{name: "TZ only whitespace after", expr: "TZ=UTC\t", rule: "must be followed by whitespace and the fields"},
		{name: "every", expr: "@every 1h", rule: "@every counts from when the schedule is loaded, so replicas cannot agree on its occurrences; use scheduler.Every, which is aligned to the Unix epoch"},
		{name: "every with prefix", expr: "TZ=UTC\t@every\t5m", rule: "@every counts from when the schedule is loaded"},
		{name: "every glued", expr: "@every1h", rule: "@every counts from when"},
		{name: "unknown descriptor", expr: "@fortnightly", rule: `unknown descriptor "@fortnightly"`},
		{name: "descriptor case", expr: "@Daily", rule: "unknown descriptor"},
		{name: "descriptor with fields", expr: "@daily 0", rule: "descriptor @daily takes no fields after it"},
		{name: "never fires", expr: "0 0 30 2 *", rule: "never fires"},
		{name: "never fires in short months", expr: "0 0 31 4,6,9,11 *", rule: "never fires"},
		{name: "minute above range", expr: "60 * * * *", rule: "minute field \"60\": 60 out of range 0-59"},
		{name: "huge number", expr: "99999999999999999999 * * * *", rule: "minute field \"99999999999999999999\": a 20-digit number out of range 0-59"},
		{name: "huge step", expr: "*/99999999999999999999 * * * *", rule: "step 1073741824 is larger than the field's 60 values"},
		{name: "hour above range", expr: "0 24 * * *", rule: "hour field \"24\": 24 out of range 0-23"},
		{name: "day-of-month zero", expr: "0 0 0 * *", rule: "day-of-month field \"0\": 0 out of range 1-31"},
		{name: "month thirteen", expr: "0 0 * 13 *", rule: "month field \"13\": 13 out of range 1-12"},
		{name: "day-of-week seven", expr: "0 0 * * 7", rule: "day-of-week field \"7\": 7 out of range 0-6"},
		{name: "second above range", expr: "60 0 0 * * *", rule: "second field \"60\""},
		{name: "zero step", expr: "*/0 * * * *", rule: "step must be at least 1"},
		{name: "step too large", expr: "*/90 * * * *", rule: "step 90 is larger than the field's 60 values (it would select only the start)"},
		{name: "step not a number", expr: "*/x * * * *", rule: `step "x" is not a number`},
		{name: "two slashes", expr: "1/2/3 * * * *", rule: `step "2/3" is not a number`},
		{name: "reversed range", expr: "5-3 * * * *", rule: `range "5-3" starts after it ends`},
		{name: "text after wildcard", expr: "*-5 * * * *", rule: "a wildcard stands alone"},
		{name: "empty list item", expr: "1,,2 * * * *", rule: "empty list item"},
		{name: "trailing comma", expr: "1, * * * *", rule: "empty list item"},
		{name: "negative", expr: "-1 * * * *", rule: "missing value"},
		{name: "plus sign", expr: "+1 * * * *", rule: `"+1" is not a number`},
		{name: "open range", expr: "1- * * * *", rule: "missing value"},
		{name: "two hyphens", expr: "1-2-3 * * * *", rule: `"2-3" is not a number`},
		{name: "letters", expr: "a * * * *", rule: `minute field "a": "a" is not a number`},
		{name: "unknown month name", expr: "0 0 * foo *", rule: `"foo" is not a number or a month name`},
		{name: "month name in hour", expr: "0 jan * * *", rule: `hour field "jan": "jan" is not a number`},
		{name: "unicode digit", expr: "٣ * * * *", rule: `"٣" is not a number`},
		{name: "unicode in name", expr: "0 0 * * ſun", rule: `"ſun" is not a number or a day-of-week name`},
		{name: "NUL byte", expr: "0\x00 * * * *", rule: "is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.expr, time.UTC)
			require.Error(t, err)
			assert.Nil(t, e)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.NotErrorIs(t, err, errParserPanic)
			assert.True(t, strings.HasPrefix(err.Error(), "cronexpr: \""), "message %q", err)
			assert.Contains(t, err.Error(), tt.rule)
		})
	}
}

func TestParse_Invalid_MessageNamesExpression(t *testing.T) {
	_, err := Parse("* * * * * * *", time.UTC)
	require.Error(t, err)
	assert.EqualError(t, err, `cronexpr: "* * * * * * *": want 5 fields (minute hour dom month dow) or 6 (with leading seconds), got 7`)
}

func TestParse_Invalid_LongExpressionClipped(t *testing.T) {
	_, err := Parse(strings.Repeat("1,", 300)+"60 * * * *", time.UTC)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 300, "message quotes a clipped expression: %s", err)
	assert.Contains(t, err.Error(), "...")
}

func TestParse_UnknownZone_WrapsLoadError(t *testing.T) {
	_, err := Parse("TZ=Nowhere/Special 0 * * * *", time.UTC)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalid)
	var inner interface{ Unwrap() []error }
	require.True(t, errors.As(err, &inner))
	assert.Len(t, inner.Unwrap(), 2, "wraps ErrInvalid and the load error")
}

func TestParse_OffsetBeyondADay(t *testing.T) {
	_, err := Parse("0 2 * * *", time.FixedZone("Far", 25*3600))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), `location "Far" has UTC offset 25h0m0s, beyond the ±24h supported`)

	_, err = Parse("0 2 * * *", time.FixedZone("Near", -24*3600))
	assert.NoError(t, err)
}

// TestParse_RobfigPanicInput: the input that panics inside robfig/cron's
// parser (a TZ= prefix followed by a tab) parses here.
func TestParse_RobfigPanicInput(t *testing.T) {
	e, err := Parse("TZ=UTC\t0\t*\t*\t*\t*", time.Local)
	require.NoError(t, err)
	assert.Equal(t, time.UTC, e.Location())
	from := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	assert.Equal(t, time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC), e.Next(from), "minute 0 of every hour")
}

// TestBitsets_ParserPanicBecomesError: the recover around robfig/cron's
// parser turns a panic into an error (Parse never hands it such text).
func TestBitsets_ParserPanicBecomesError(t *testing.T) {
	const text = "TZ=UTC\t0\t*\t*\t*\t*"
	require.Panics(t, func() { _, _ = cronParser.Parse(text) }, "robfig/cron panics on a TZ= prefix followed by a tab")
	_, err := bitsets(text, text)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorIs(t, err, errParserPanic)
	assert.Contains(t, err.Error(), "parser failed")
}

// TestParse_LocalLocation: time.Local (or a location named "Local") is each
// machine's own zone, so replicas would read one expression at different
// instants; it is refused as the TZ=Local prefix is. A prefix naming a real
// zone overrides it (TestParse_RobfigPanicInput).
func TestParse_LocalLocation(t *testing.T) {
	loaded, err := time.LoadLocation("Local")
	require.NoError(t, err)
	for _, loc := range []*time.Location{time.Local, loaded, time.FixedZone("Local", 3600)} {
		_, err := Parse("0 2 * * *", loc)
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), `location "Local" is the zone of the machine that reads it`)
	}
}
