package schedscale

import (
	"fmt"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
)

// offsetClock is the real clock with Now moved by offset (ahead, or behind
// when negative): a replica whose wall clock is off. Timers keep the real
// pace, so a scheduler on it fires when its own Now reaches the scheduled
// time, offset earlier or later than true time. Only the scheduler's clock
// is moved: the lease store measures expiry on the Redis server's clock.
type offsetClock struct {
	clockwork.Clock
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.Clock.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c offsetClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// ParseOffsets parses a comma-separated list of clock offsets ("-400ms,0,
// 400ms", the leasebench flag -scale-offsets): Go durations, a bare 0
// allowed. An empty string is no offsets.
func ParseOffsets(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, v := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("schedscale: clock offset %q: %w", v, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Offset returns replica i's clock offset: Offsets[i mod len(Offsets)] (a
// shorter list repeats; a longer one's tail is unused), 0 without offsets.
func (c Config) Offset(i int) time.Duration {
	if len(c.Offsets) == 0 {
		return 0
	}
	return c.Offsets[i%len(c.Offsets)]
}

// formatOffsets renders the offsets of the replicas of c, "" without any.
func (c Config) formatOffsets() string {
	if len(c.Offsets) == 0 {
		return ""
	}
	parts := make([]string, c.Replicas)
	for i := range parts {
		parts[i] = c.Offset(i).String()
	}
	return strings.Join(parts, ", ")
}
