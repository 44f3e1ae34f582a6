package cronexpr_test

import (
	"fmt"
	"time"

	"github.com/cronguard/cronguard/internal/cronexpr"
)

// A fixed hour runs once per local day: inside the spring-forward gap at
// the end of the gap, and once on the fall-back night.
func ExampleParse() {
	e, err := cronexpr.Parse("CRON_TZ=America/New_York 30 2 * * *", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ny := e.Location()
	at := time.Date(2025, 3, 7, 12, 0, 0, 0, ny)
	for range 3 {
		at = e.Next(at)
		fmt.Println(at.In(ny).Format("Mon Jan 2 15:04 MST"))
	}
	// Output:
	// Sat Mar 8 02:30 EST
	// Sun Mar 9 03:00 EDT
	// Mon Mar 10 02:30 EDT
}

// A wildcard hour follows real time: both instances of a repeated hour.
func ExampleExpr_Next() {
	ny, _ := time.LoadLocation("America/New_York")
	e, _ := cronexpr.Parse("0 * * * *", ny)
	at := time.Date(2025, 11, 2, 0, 30, 0, 0, ny)
	for range 3 {
		at = e.Next(at)
		fmt.Println(at.Format(time.RFC3339), at.In(ny).Format("15:04 MST"))
	}
	// Output:
	// 2025-11-02T05:00:00Z 01:00 EDT
	// 2025-11-02T06:00:00Z 01:00 EST
	// 2025-11-02T07:00:00Z 02:00 EST
}

// Parse refuses what replicas could not agree on, naming the rule.
func ExampleParse_error() {
	_, err := cronexpr.Parse("@every 1h", time.UTC)
	fmt.Println(err)
	_, err = cronexpr.Parse("0 0 30 2 *", time.UTC)
	fmt.Println(err)
	// Output:
	// cronexpr: "@every 1h": @every counts from when the schedule is loaded, so replicas cannot agree on its occurrences; use scheduler.Every, which is aligned to the Unix epoch
	// cronexpr: "0 0 30 2 *": never fires: no date matches its day-of-month, month and day-of-week fields
}

// Between counts the occurrences a ledger missed, capped.
func ExampleExpr_Between() {
	e, _ := cronexpr.Parse("*/15 * * * *", time.UTC)
	a := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	b := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	n, first, last, capped := e.Between(a, b, 5)
	fmt.Println(n, first.Format("15:04"), last.Format("15:04"), capped)
	// Output:
	// 5 10:15 11:45 true
}
