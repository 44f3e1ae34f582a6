package leasebench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Kind names a scenario.
type Kind int

// The scenarios.
const (
	// Sequential: one goroutine, acquire+release cycles on one key; latency
	// of each cycle.
	Sequential Kind = iota + 1
	// Parallel: Workers goroutines, each cycling acquire+release on its own
	// key; cycles per second.
	Parallel
	// Contention: Workers goroutines trying one key without waiting; a
	// success is released at once; successful acquisitions per second.
	Contention
	// Extend: one goroutine extending one held lock; latency of each extend.
	Extend
)

// Scenario is one measurement shape.
type Scenario struct {
	Kind    Kind
	Workers int // goroutines, for Parallel and Contention
}

// String returns a short label such as "parallel-64".
func (s Scenario) String() string {
	switch s.Kind {
	case Sequential:
		return "sequential"
	case Parallel:
		return fmt.Sprintf("parallel-%d", s.Workers)
	case Contention:
		return fmt.Sprintf("contention-%d", s.Workers)
	case Extend:
		return "extend"
	}
	return "unknown"
}

// Measurement is one contender's result for one scenario in one round.
type Measurement struct {
	Ops       int64         // completed cycles, successful acquisitions or extends
	Contended int64         // attempts that found the key held (Contention)
	Errors    int64         // failures of any other kind
	Elapsed   time.Duration // wall time of the measurement
	P50, P99  time.Duration // per-operation latency (Sequential, Extend)
	// Commands are the INFO commandstats deltas (CONFIG RESETSTAT before
	// the measurement), harness commands excluded.
	Commands map[string]CommandStat
	// FirstErr is the first failure seen, for the log.
	FirstErr error
}

// Rate returns Ops per second.
func (m Measurement) Rate() float64 {
	if m.Elapsed <= 0 {
		return 0
	}
	return float64(m.Ops) / m.Elapsed.Seconds()
}

// Measure runs scenario sc for contender c for about d, with locks of ttl,
// resetting and reading Redis statistics through admin around it.
func Measure(ctx context.Context, admin *Admin, c Contender, sc Scenario, d, ttl time.Duration) (Measurement, error) {
	if err := admin.ResetStats(ctx); err != nil {
		return Measurement{}, fmt.Errorf("leasebench: reset stats: %w", err)
	}
	var m Measurement
	prefix := "lb:" + c.Name() + ":"
	switch sc.Kind {
	case Sequential:
		m = measureLatency(ctx, d, func() error {
			h, err := c.Acquire(ctx, prefix+"seq", ttl)
			if err != nil {
				return err
			}
			return h.Release(ctx)
		})
	case Extend:
		h, err := c.Acquire(ctx, prefix+"ext", ttl)
		if err != nil {
			return Measurement{}, fmt.Errorf("leasebench: %s: acquire for extend: %w", c.Name(), err)
		}
		m = measureLatency(ctx, d, func() error { return h.Extend(ctx, ttl) })
		if err := h.Release(ctx); err != nil {
			return Measurement{}, fmt.Errorf("leasebench: %s: release after extend: %w", c.Name(), err)
		}
	case Parallel:
		keys := make([]string, sc.Workers) // built before the clock starts
		for i := range keys {
			keys[i] = fmt.Sprintf("%spar:%d", prefix, i)
		}
		m = measureWorkers(ctx, sc.Workers, d, func(i int, counts *counts) {
			h, err := c.Acquire(ctx, keys[i], ttl)
			if err == nil {
				err = h.Release(ctx)
			}
			counts.record(err)
		})
	case Contention:
		key := prefix + "hot"
		m = measureWorkers(ctx, sc.Workers, d, func(_ int, counts *counts) {
			h, err := c.Acquire(ctx, key, ttl)
			if err == nil {
				err = h.Release(ctx)
			}
			counts.record(err)
		})
	default:
		return Measurement{}, fmt.Errorf("leasebench: unknown scenario %d", sc.Kind)
	}
	cmds, err := admin.CommandStats(ctx)
	if err != nil {
		return Measurement{}, fmt.Errorf("leasebench: read commandstats: %w", err)
	}
	m.Commands = cmds
	return m, nil
}

// measureLatency calls op in a loop on this goroutine for d and records
// each call's latency.
func measureLatency(ctx context.Context, d time.Duration, op func() error) Measurement {
	var m Measurement
	samples := make([]time.Duration, 0, 1<<15)
	start := time.Now()
	for ctx.Err() == nil {
		t0 := time.Now()
		err := op()
		t1 := time.Now()
		if err != nil {
			m.Errors++
			if m.FirstErr == nil {
				m.FirstErr = err
			}
		} else {
			m.Ops++
			samples = append(samples, t1.Sub(t0))
		}
		if t1.Sub(start) >= d {
			break
		}
	}
	m.Elapsed = time.Since(start)
	m.P50 = Percentile(samples, 50)
	m.P99 = Percentile(samples, 99)
	return m
}

// counts is one worker's tally. The padding keeps each worker's tally on
// its own cache lines, so 64 workers counting do not contend for them.
type counts struct {
	ops, contended, errors int64
	firstErr               error
	_                      [128]byte
}

func (c *counts) record(err error) {
	switch {
	case err == nil:
		c.ops++
	case errors.Is(err, ErrContended):
		c.contended++
	default:
		c.errors++
		if c.firstErr == nil {
			c.firstErr = err
		}
	}
}

// measureWorkers runs step in a loop on n goroutines for d and sums their
// tallies.
func measureWorkers(ctx context.Context, n int, d time.Duration, step func(i int, c *counts)) Measurement {
	var stop atomic.Bool
	tallies := make([]counts, n)
	var ready, wg sync.WaitGroup
	ready.Add(n)
	startGate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-startGate
			for !stop.Load() && ctx.Err() == nil {
				step(i, &tallies[i])
			}
		})
	}
	ready.Wait()
	start := time.Now()
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	close(startGate)
	wg.Wait()
	timer.Stop()
	m := Measurement{Elapsed: time.Since(start)}
	for _, t := range tallies {
		m.Ops += t.ops
		m.Contended += t.contended
		m.Errors += t.errors
		if m.FirstErr == nil {
			m.FirstErr = t.firstErr
		}
	}
	return m
}
