package leasebench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// Defaults for Config.
const (
	DefaultRounds      = 5
	DefaultDuration    = 2 * time.Second
	DefaultTTL         = 10 * time.Second
	DefaultContention  = 16
	DefaultParallelism = 64
	DefaultWarmup      = 500 * time.Millisecond
)

// DefaultSweep is the concurrency sweep (goroutines on distinct keys) for
// the throughput chart.
var DefaultSweep = []int{1, 4, 16, 64}

// Config says what to run.
type Config struct {
	Rounds     int           // interleaved rounds; default DefaultRounds
	Duration   time.Duration // per measurement; default DefaultDuration
	TTL        time.Duration // lock TTL; default DefaultTTL
	Sweep      []int         // Parallel worker counts; default DefaultSweep
	Contention int           // workers on the hot key; default DefaultContention
	Warmup     time.Duration // untimed run per contender before round 1; default DefaultWarmup
	Only       []string      // run only the scenarios with these names (Scenario.String); default all
	Log        io.Writer     // progress lines; nil for none
}

func (c *Config) defaults() {
	if c.Rounds <= 0 {
		c.Rounds = DefaultRounds
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if len(c.Sweep) == 0 {
		c.Sweep = DefaultSweep
	}
	if c.Contention <= 0 {
		c.Contention = DefaultContention
	}
	if c.Warmup <= 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Results holds every measurement of a run: Runs[scenario][contender][round].
type Results struct {
	Config     Config
	Contenders []string // in the order given, the floor first
	Scenarios  []Scenario
	Runs       map[Scenario]map[string][]Measurement
	CanExtend  map[string]bool
	Started    time.Time
	Wall       time.Duration
}

// Run measures every scenario for every contender, in interleaved rounds:
// in round r every scenario runs for every contender, in an order rotated
// by r. contenders[0] is the floor the ratios refer to.
func Run(ctx context.Context, admin *Admin, contenders []Contender, cfg Config) (*Results, error) {
	cfg.defaults()
	res := &Results{
		Config:    cfg,
		Runs:      map[Scenario]map[string][]Measurement{},
		CanExtend: map[string]bool{},
		Started:   time.Now(),
	}
	for _, c := range contenders {
		res.Contenders = append(res.Contenders, c.Name())
		res.CanExtend[c.Name()] = c.CanExtend()
	}
	res.Scenarios = append(res.Scenarios, Scenario{Kind: Sequential})
	for _, n := range cfg.Sweep {
		res.Scenarios = append(res.Scenarios, Scenario{Kind: Parallel, Workers: n})
	}
	res.Scenarios = append(res.Scenarios, Scenario{Kind: Contention, Workers: cfg.Contention}, Scenario{Kind: Extend})
	if len(cfg.Only) > 0 {
		res.Scenarios = slices.DeleteFunc(res.Scenarios, func(sc Scenario) bool { return !slices.Contains(cfg.Only, sc.String()) })
	}
	for _, sc := range res.Scenarios {
		res.Runs[sc] = map[string][]Measurement{}
	}

	// Warm up every contender untimed (connections, script cache, pools),
	// so the first measured round is not the first use.
	for _, c := range contenders {
		for _, sc := range []Scenario{{Kind: Sequential}, {Kind: Parallel, Workers: slices.Max(cfg.Sweep)}} {
			if _, err := Measure(ctx, admin, c, sc, cfg.Warmup, cfg.TTL); err != nil {
				return nil, fmt.Errorf("warm-up, %s: %w", c.Name(), err)
			}
		}
	}
	for r := range cfg.Rounds {
		for _, sc := range res.Scenarios {
			for i := range contenders {
				c := contenders[(i+r)%len(contenders)]
				if sc.Kind == Extend && !c.CanExtend() {
					continue
				}
				m, err := Measure(ctx, admin, c, sc, cfg.Duration, cfg.TTL)
				if err != nil {
					return nil, fmt.Errorf("round %d, %s, %s: %w", r+1, sc, c.Name(), err)
				}
				res.Runs[sc][c.Name()] = append(res.Runs[sc][c.Name()], m)
				fmt.Fprintf(cfg.Log, "round %d/%d %-14s %-14s ops=%-8d rate=%9.0f/s p50=%-9s p99=%-9s errors=%d\n",
					r+1, cfg.Rounds, sc, c.Name(), m.Ops, m.Rate(), m.P50, m.P99, m.Errors)
				if m.FirstErr != nil {
					fmt.Fprintf(cfg.Log, "  first error: %v\n", m.FirstErr)
				}
			}
		}
	}
	res.Wall = time.Since(res.Started)
	return res, nil
}
