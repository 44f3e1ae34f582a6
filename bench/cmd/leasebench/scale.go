package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cronguard/cronguard/bench/schedscale"
)

func runScale(ctx context.Context, f flags, addr string, progress io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if f.scaleProfile != "" {
		if err := os.MkdirAll(f.scaleProfile, 0o755); err != nil {
			return err
		}
		// The replicas inherit the environment.
		if err := os.Setenv(schedscale.ProfileDirEnv, f.scaleProfile); err != nil {
			return err
		}
	}
	var counts []int
	for _, v := range strings.Split(f.scaleReps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return fmt.Errorf("-scale-replicas: %q is not a replica count", v)
		}
		counts = append(counts, n)
	}
	if f.scaleEvery < time.Second || f.scaleEvery%time.Second != 0 || f.scaleDur%f.scaleEvery != 0 {
		return fmt.Errorf("-scale-interval must be a whole number of seconds that divides -scale-duration (%s), got %s", f.scaleDur, f.scaleEvery)
	}
	offsets, err := schedscale.ParseOffsets(f.scaleOffsets)
	if err != nil {
		return fmt.Errorf("-scale-offsets: %w", err)
	}
	stop, err := schedscale.ParseStop(f.scaleStop)
	if err != nil {
		return fmt.Errorf("-scale-stop: %w", err)
	}
	failed := 0
	var series []*schedscale.Series
	for _, n := range counts {
		cfg := schedscale.Config{
			Addr: addr, Exe: exe, Replicas: n, Jobs: f.scaleJobs,
			Interval: f.scaleEvery, TTL: f.scaleTTL, Window: f.scaleDur, Warmup: f.scaleWarmup, Log: progress,
			Busy: f.scaleBusy, Options: f.scaleOpts, Offsets: offsets, Stop: stop,
		}
		ser := &schedscale.Series{Config: cfg}
		for i := range max(f.scaleRuns, 1) {
			fmt.Fprintf(progress, "scale: %d jobs x %d replicas, run %d of %d, load average %s\n", cfg.Jobs, n, i+1, f.scaleRuns, loadAverage())
			rep, err := schedscale.Run(ctx, cfg, schedscale.DefaultChildArgs)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "Run %d of %d (load average after: %s)\n\n%s\n", i+1, f.scaleRuns, loadAverage(), rep.Markdown())
			if rep.Missed > 0 || rep.Duplicated > 0 {
				failed++
			}
			ser.Runs = append(ser.Runs, rep)
		}
		series = append(series, ser)
	}
	fmt.Fprintln(os.Stdout, "### Summary")
	fmt.Fprintln(os.Stdout)
	for _, ser := range series {
		fmt.Fprintln(os.Stdout, ser.Markdown())
	}
	if failed > 0 {
		return fmt.Errorf("scale: %d runs missed or duplicated occurrences", failed)
	}
	return nil
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func runScaleChild(_ context.Context, f flags) error {
	return schedscale.Child(schedscale.ChildConfig{
		Addr: f.redis, Replica: f.scaleReplica, Jobs: f.scaleJobs, Interval: f.scaleEvery, TTL: f.scaleTTL,
		Span: f.scaleWarmup + f.scaleDur + 5*time.Second, Options: f.scaleOpts, Offset: f.scaleOffset,
	}, os.Stdin, os.Stdout)
}
