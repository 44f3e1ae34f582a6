package cronexpr

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// BenchmarkExpr_Next chains Next through New York's 2025, crossing both
// transitions for the sparse expressions.
func BenchmarkExpr_Next(b *testing.B) {
	ny := zone(b, "America/New_York")
	for _, expr := range []string{"0 2 * * *", "*/15 * * * *", "* * * * * *", "30 1 * * *", "0 9 * * mon-fri"} {
		b.Run(expr, func(b *testing.B) {
			e := mustParse(b, expr, ny)
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			end := start.AddDate(1, 0, 0)
			at := start
			for b.Loop() {
				at = e.Next(at)
				if at.After(end) {
					at = start
				}
			}
		})
	}
}

// BenchmarkExpr_Prev steps back from scattered instants, as the mapping of
// a firing to its occurrence does.
func BenchmarkExpr_Prev(b *testing.B) {
	ny := zone(b, "America/New_York")
	for _, expr := range []string{"0 2 * * *", "*/15 * * * *", "* * * * * *"} {
		b.Run(expr, func(b *testing.B) {
			e := mustParse(b, expr, ny)
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			at := start
			for b.Loop() {
				e.Prev(at)
				at = at.Add(7*time.Hour + 13*time.Minute + 17*time.Second)
				if at.Year() > 2025 {
					at = start
				}
			}
		})
	}
}

func BenchmarkExpr_Gaps(b *testing.B) {
	e := mustParse(b, "*/15 * * * *", zone(b, "America/New_York"))
	occ := time.Date(2025, 11, 2, 6, 0, 0, 0, time.UTC)
	for b.Loop() {
		e.Gaps(occ)
	}
}

func BenchmarkParse(b *testing.B) {
	ny := zone(b, "America/New_York")
	for b.Loop() {
		if _, err := Parse("5,10,15-20/2 1-5 * jan-mar mon-fri", ny); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRobfigNext is robfig/cron's SpecSchedule.Next on the same
// chains, for comparison.
func BenchmarkRobfigNext(b *testing.B) {
	ny := zone(b, "America/New_York")
	for _, expr := range []string{"0 2 * * *", "*/15 * * * *", "* * * * * *"} {
		b.Run(expr, func(b *testing.B) {
			parsed, err := robfigParser.Parse(expr)
			if err != nil {
				b.Fatal(err)
			}
			spec := parsed.(*cron.SpecSchedule)
			spec.Location = ny
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			end := start.AddDate(1, 0, 0)
			at := start
			for b.Loop() {
				at = spec.Next(at)
				if at.After(end) {
					at = start
				}
			}
		})
	}
}
