package fleet

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cronguard/cronguard/internal/cronexpr"
	"github.com/cronguard/cronguard/lease"
)

// Next returns the first occurrence of a job's schedule strictly after t,
// from its Spec, with the scheduler's rules (an Every grid aligned to the
// Unix epoch; a cron expression in its location, with cron's daylight
// saving rules); the zero time when there is none left. It fails with
// lease.ErrInvalidArgument on a spec it cannot read, and with ErrLocalZone
// (which wraps it) on a cron spec in the zone "Local".
func Next(spec string, t time.Time) (time.Time, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "every":
		d, off, ok := strings.Cut(rest, "+")
		dn, err1 := strconv.ParseInt(d, 10, 64)
		on, err2 := strconv.ParseInt(off, 10, 64)
		if !ok || err1 != nil || err2 != nil || dn <= 0 || on < 0 || on >= dn {
			break
		}
		k := floorDiv(t.UnixNano()-on, dn) + 1
		return time.Unix(0, k*dn+on), nil
	case "cron":
		i := strings.IndexByte(rest, ':')
		if i < 0 {
			break
		}
		if rest[:i] == "Local" {
			return time.Time{}, fmt.Errorf("%w: spec %q", ErrLocalZone, spec)
		}
		loc, err := time.LoadLocation(rest[:i])
		if err != nil {
			break
		}
		e, err := cronexpr.Parse(rest[i+1:], loc)
		if err != nil {
			break
		}
		return e.Next(t), nil
	case "at":
		ms, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			break
		}
		if at := time.UnixMilli(ms); at.After(t) {
			return at, nil
		}
		return time.Time{}, nil
	}
	return time.Time{}, fmt.Errorf("%w: schedule spec %q is not every:<ns>+<ns>, cron:<location>:<expression> or at:<ms>", lease.ErrInvalidArgument, spec)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
