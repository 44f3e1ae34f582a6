package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronguard/cronguard/lease/memory"
)

// FuzzRegister_Schedules registers a job with arbitrary schedule input:
// Register never panics, and every refusal wraps ErrInvalidSchedule (and
// ErrInvalidArgument) and says which rule broke. The seed corpus runs in
// the normal test suite.
func FuzzRegister_Schedules(f *testing.F) {
	for _, seed := range []string{
		"TZ=UTC\t0\t*\t*\t*\t*",
		"CRON_TZ=Europe/London\t30 2 * * *",
		"TZ=\t",
		"TZ=Nowhere/Zone 0 * * * *",
		"TZ=UTC",
		"CRON_TZ=",
		"0 2 * * *",
		"*/15 * * * *",
		"0,1,10,11,20,21,30,31,40,41,50,51 * * * * *",
		"@every 5m",
		"@hourly",
		"@reboot",
		"99999999999999999999 * * * *",
		"* * * * * * *",
		"*/0 * * * *",
		"5-1 * * * *",
		"0 0 30 2 *",
		"\xff\xfe * * * *",
		"ｓ * * * *",
		"🙂 * * * *",
		"",
		"   ",
		"0-59/99999999999 * * * *",
		"?/5 ? ? ? ?",
	} {
		f.Add(seed, int64(time.Second), int64(0))
	}
	f.Add("", int64(-1), int64(0))
	f.Add("", int64(1500*time.Microsecond), int64(7))
	f.Add("", int64(time.Minute), int64(time.Hour))
	f.Fuzz(func(t *testing.T, expr string, every, offset int64) {
		store, err := memory.New()
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(store, WithLogger(discardLogger()))
		if err != nil {
			t.Fatal(err)
		}
		nop := func(context.Context) error { return nil }
		for _, sch := range []Schedule{
			Cron(expr),
			Every(time.Duration(every)),
			EveryWithOffset(time.Duration(every), time.Duration(offset)),
			At(time.Unix(0, every)),
		} {
			name := "job-" + sch.String()
			if len(name) > 200 {
				name = name[:200]
			}
			err := s.Register(name, sch, nop)
			if err == nil {
				continue
			}
			if errors.Is(err, ErrDuplicateJob) {
				continue // the same schedule twice (an empty name suffix)
			}
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Register(%s): error does not wrap ErrInvalidArgument: %v", sch, err)
			}
			if errors.Is(err, ErrInvalidSchedule) && len(err.Error()) < len("scheduler: invalid schedule: ")+10 {
				t.Fatalf("Register(%s): the error names no rule: %v", sch, err)
			}
		}
		_ = s.Shutdown(context.Background())
	})
}
