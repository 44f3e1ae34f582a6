package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cronguard/cronguard/bench/schedscale"
)

func runScale(ctx context.Context, f flags, addr string, progress io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := schedscale.Config{
		Addr: addr, Exe: exe, Replicas: f.scaleReps, Jobs: f.scaleJobs,
		Interval: time.Second, TTL: f.scaleTTL, Window: f.scaleDur, Warmup: f.scaleWarmup, Log: progress,
	}
	rep, err := schedscale.Run(ctx, cfg, schedscale.DefaultChildArgs)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, rep.Markdown())
	if rep.Missed > 0 || rep.Duplicated > 0 {
		return fmt.Errorf("scale: %d missed and %d duplicated occurrences", rep.Missed, rep.Duplicated)
	}
	return nil
}

func runScaleChild(_ context.Context, f flags) error {
	return schedscale.Child(schedscale.ChildConfig{
		Addr: f.redis, Replica: f.scaleReplica, Jobs: f.scaleJobs, Interval: time.Second, TTL: f.scaleTTL,
	}, os.Stdin, os.Stdout)
}
