// Command cronguard shows and steers a fleet of cronguard schedulers
// through the Redis they share: the live replicas, every job with the
// replica running it, its last run and next occurrence; and the
// operator's commands: pause and resume a job fleet-wide, trigger a run
// now, force-release a lease.
//
//	cronguard [--redis URL] [--prefix P] [--json] COMMAND [flags] [NAME]
//
// Commands: replicas, jobs, job NAME, pause NAME --note TEXT, resume NAME,
// trigger NAME [--wait], release NAME --force, and serve, which serves the
// web console (package console). Run cronguard --help for the flags, exit
// codes and the JSON output's fields.
//
// Install it from a clone of the repository with
//
//	go install ./cmd/cronguard
//
// It reads the fleet with package inspect, on lease/redislease.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A second Ctrl-C ends the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], osEnv(os.Stdout, os.Stderr))
	stop()
	os.Exit(code)
}
