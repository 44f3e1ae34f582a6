package cronexpr

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
)

// parityExprs exercise every field form; in a zone without DST both
// policies reduce to "every instant whose wall time matches", which is
// what robfig/cron computes.
var parityExprs = []string{
	"* * * * *",
	"*/7 * * * *",
	"5,10,15-20 * * * *",
	"0-59/13 */5 * * *",
	"0 9-17 * * mon-fri",
	"0 22 * * 1-5",
	"30 4 1-7 * sun",
	"0 0 1,15 * *",
	"0 0 13 * 5",  // day-of-month or day-of-week
	"0 0 */2 * 1", // a step is not "*": still or
	"0 0 ? * 1",
	"0 0 1 * ?",
	"0 0 31 * *",
	"0 0 29 2 *",
	"59 23 31 12 *",
	"0 0 1 jan,jul *",
	"15 3 * 2-11/3 *",
	"0 12 1 1 *",
	"? ? ? ? ?",
	"*/10 * * * * *",
	"0 30 2 * * *",
	"5-55/10 1 2 3 * ?",
	"0 0 0 29 2 mon",
	"7 6/7 5-20/3 * feb-nov/2 *",
	"@yearly",
	"@annually",
	"@monthly",
	"@weekly",
	"@daily",
	"@midnight",
	"@hourly",
}

var robfigParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func TestExpr_Next_ParityWithRobfig(t *testing.T) {
	for _, name := range []string{"UTC", "Asia/Tokyo"} {
		loc := zone(t, name)
		for _, expr := range parityExprs {
			t.Run(name+"/"+expr, func(t *testing.T) {
				e := mustParse(t, expr, loc)
				parsed, err := robfigParser.Parse(expr)
				require.NoError(t, err)
				spec := parsed.(*cron.SpecSchedule)
				spec.Location = loc
				mine := time.Date(2024, 2, 27, 13, 44, 5, 123, loc)
				theirs := mine
				for step := range 1000 {
					mine, theirs = e.Next(mine), spec.Next(theirs)
					require.Equal(t, theirs.Unix(), mine.Unix(), "step %d: robfig %s, here %s", step, theirs, mine)
					if theirs.IsZero() {
						require.True(t, mine.IsZero())
						return
					}
					p, ok := e.Prev(mine)
					require.True(t, ok)
					require.Equal(t, mine, p, "Prev of an occurrence is itself")
				}
			})
		}
	}
}
