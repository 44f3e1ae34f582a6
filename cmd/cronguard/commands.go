package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
)

// Defaults of the trigger command's flags.
const (
	defaultTriggerTTL  = inspect.DefaultTriggerTTL
	defaultWaitTimeout = time.Minute
)

var commands = []command{
	{name: "replicas", summary: "list the live replicas", help: replicasHelp, run: runReplicas},
	{name: "jobs", summary: "list the fleet's jobs: where each runs, its last run, its next occurrence", help: jobsHelp, run: runJobs},
	{name: "job", args: "NAME", summary: "show one job in detail", help: jobHelp, run: runJob},
	historyCommand,
	{name: "pause", args: "NAME", summary: "pause a job on every replica", help: pauseHelp, run: runPause,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.note, "note", "", "")
			fs.StringVar(&o.by, "by", "", "")
		},
		check: func(o *options) error {
			if strings.TrimSpace(o.note) == "" {
				return usagef("pause", "pause: --note is required: say why the job is paused, for whoever finds it paused")
			}
			return nil
		}},
	{name: "resume", args: "NAME", summary: "resume a paused job", help: resumeHelp, run: runResume},
	{name: "trigger", args: "NAME", summary: "run a job now, once, on one replica", help: triggerHelp, run: runTrigger,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.wait, "wait", false, "")
			fs.DurationVar(&o.timeout, "timeout", defaultWaitTimeout, "")
			fs.DurationVar(&o.ttl, "ttl", defaultTriggerTTL, "")
			fs.StringVar(&o.by, "by", "", "")
		},
		check: func(o *options) error {
			switch {
			case o.set["timeout"] && !o.wait:
				return usagef("trigger", "trigger: --timeout is how long --wait waits: give --wait too")
			case o.timeout <= 0:
				return usagef("trigger", "trigger: --timeout must be positive, got %s", o.timeout)
			case o.ttl <= 0 || o.ttl%time.Millisecond != 0 || o.ttl > fleet.MaxTriggerTTL:
				return usagef("trigger", "trigger: --ttl must be a whole number of milliseconds from 1ms to %s, got %s", fleet.MaxTriggerTTL, o.ttl)
			}
			return nil
		}},
	{name: "release", args: "NAME", summary: "force-release a job's lease (unsafe unless the job is fenced)", help: releaseHelp, run: runRelease,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.force, "force", false, "")
			fs.StringVar(&o.by, "by", "", "")
		},
		check: func(o *options) error {
			if !o.force {
				return usagef("release", "release: refused without --force: the holder is not stopped and may still be running, so another replica could run the job at the same time; only fenced writes are safe from the old run")
			}
			return nil
		}},
	{name: "serve", summary: "serve the web console (read-only unless --actions)", help: serveHelp,
		flags: serveFlags, check: serveCheck, run: runServe},
}

func runReplicas(ctx context.Context, s *session, _ string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	rs, err := s.in.Replicas(ctx)
	unreadable, incomplete, err := incompleteRead(err)
	if err != nil {
		return err
	}
	if s.json {
		out := replicasJSON{Replicas: []replicaJSON{}, Unreadable: unreadableIDs(unreadable)}
		for _, r := range rs {
			out.Replicas = append(out.Replicas, toReplicaJSON(r))
		}
		return errors.Join(writeJSON(s.env.stdout, out), incomplete)
	}
	if len(rs) == 0 {
		if incomplete != nil {
			return incomplete
		}
		s.noReplicas()
		return nil
	}
	now := s.env.now()
	t := newTable(s.env.stdout, "REPLICA", "VERSION", "STARTED", "REFRESH", "ENTRY EXPIRES", "JOBS")
	for _, r := range rs {
		var names []string
		for _, j := range r.Jobs {
			names = append(names, j.Name)
		}
		t.row(r.ID, r.Version, at(r.Started, now), span(r.Refresh), clock(r.Expires, now),
			fmt.Sprintf("%d: %s", len(names), strings.Join(names, ", ")))
	}
	return errors.Join(t.flush(), incomplete)
}

// noReplicas says that the registry is empty, and what to check.
func (s *session) noReplicas() {
	fmt.Fprintf(s.env.stdout, "no live replica under the key prefix %q on %s (check --prefix and --redis)\n", s.prefix, s.server)
}

func runJobs(ctx context.Context, s *session, _ string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	jobs, err := s.in.Jobs(ctx)
	unreadable, incomplete, err := incompleteRead(err)
	if err != nil {
		return err
	}
	if s.json {
		out := jobsJSON{Jobs: []jobJSON{}, Unreadable: unreadableIDs(unreadable)}
		for _, j := range jobs {
			out.Jobs = append(out.Jobs, toJobJSON(j))
		}
		return errors.Join(writeJSON(s.env.stdout, out), incomplete)
	}
	if len(jobs) == 0 {
		if incomplete != nil {
			return incomplete
		}
		s.noReplicas()
		return nil
	}
	t := newTable(s.env.stdout, "JOB", "SCHEDULE", "REPLICAS", "RUNNING ON", "LAST RUN", "NEXT", "NOTES")
	var conflicts []inspect.Job
	for _, j := range jobs {
		running := "-"
		if h := j.Holder; h != nil {
			running = holderName(h) + " (" + left(h.Left) + ")"
		}
		last := "-"
		if r := j.LastRun; r != nil {
			last = fmt.Sprintf("%s in %s, %s", r.Outcome, span(r.Duration), relative(r.Ended(), j.Now))
		}
		next := nextOccurrence(j, "-")
		if localZone(j) {
			next = "unknown zone"
		}
		t.row(j.Name, j.Schedule, fmt.Sprint(len(j.Registrations)), running, last, next, notes(j))
		if j.Conflict {
			conflicts = append(conflicts, j)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, j := range conflicts {
		fmt.Fprintf(s.env.stdout, "\nconflict: the replicas registered %s differently: %s (cronguard job %s shows each)\n",
			clean(j.Name), registrationList(j), clean(j.Name))
	}
	return incomplete
}

// nextOccurrence is j's next occurrence as the tables print it, or none
// when it has none.
func nextOccurrence(j inspect.Job, none string) string {
	if j.Next.IsZero() {
		return none
	}
	return at(j.Next, j.Now)
}

// localZone reports whether j's schedule is a cron expression read in the
// zone "Local" (fleet.ErrLocalZone): the zone of the machine of the replica
// that registered it, which the registry does not record. Its next
// occurrence is unknown here, and reading it in this machine's zone would
// print a wrong time.
func localZone(j inspect.Job) bool {
	if !j.Next.IsZero() {
		return false
	}
	_, err := fleet.Next(j.Spec, j.Now)
	return errors.Is(err, fleet.ErrLocalZone)
}

// holderName names who holds a lease: its replica, else its label.
func holderName(h *inspect.Holder) string {
	if h.Replica != "" {
		return h.Replica
	}
	return h.Owner
}

// notes lists what is special about a job.
func notes(j inspect.Job) string {
	var n []string
	if p := j.Pause; p != nil {
		n = append(n, "paused by "+p.By)
	}
	if j.Conflict {
		n = append(n, "conflict")
	}
	if j.PendingTriggers > 0 {
		n = append(n, plural(j.PendingTriggers, "trigger")+" pending")
	}
	if r := j.LastRun; r != nil && r.Trigger != "" {
		n = append(n, "last run triggered")
	}
	return strings.Join(n, ", ")
}

// registrationList writes who registered the job how.
func registrationList(j inspect.Job) string {
	var parts []string
	for _, r := range j.Registrations {
		parts = append(parts, fmt.Sprintf("%s has %s", clean(r.Replica), clean(r.Job.Schedule)))
	}
	return strings.Join(parts, "; ")
}

func runJob(ctx context.Context, s *session, name string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	j, err := s.in.Job(ctx, name)
	_, incomplete, err := incompleteRead(err)
	if err != nil {
		return err
	}
	if s.json {
		return errors.Join(writeJSON(s.env.stdout, toJobJSON(j)), incomplete)
	}
	return errors.Join(writeJob(s, j), incomplete)
}

// writeJob prints one job in detail.
func writeJob(s *session, j inspect.Job) error {
	now := j.Now
	t := newTable(s.env.stdout, "job:", j.Name)
	t.row("lease key:", j.Key)
	t.row("schedule:", j.Schedule)
	t.row("replicas:", fmt.Sprintf("%d: %s", len(j.Registrations), strings.Join(j.Replicas(), ", ")))
	if h := j.Holder; h != nil {
		t.row("running on:", fmt.Sprintf("%s (holder %s), fence %d", holderName(h), h.Owner, uint64(h.Fence)))
		lease := left(h.Left) + " on its lease"
		if h.Left <= 0 {
			lease = "its lease expiring"
		}
		t.row("", fmt.Sprintf("since %s, %s", at(h.AcquiredAt, now), lease))
	} else {
		t.row("running on:", "-")
	}
	if j.LastOccurrence.IsZero() {
		t.row("last occurrence:", "-")
	} else {
		t.row("last occurrence:", at(j.LastOccurrence, now))
	}
	if r := j.LastRun; r != nil {
		where := r.Replica
		if where == "" {
			where = r.Owner
		}
		t.row("last run:", fmt.Sprintf("%s in %s on %s, ended %s", r.Outcome, span(r.Duration), where, at(r.Ended(), now)))
		kind := "occurrence " + clock(r.Occurrence, now)
		if r.Trigger != "" {
			kind = "trigger " + r.Trigger
		}
		t.row("", fmt.Sprintf("%s, fence %d", kind, uint64(r.Fence)))
		if r.Error != "" {
			t.row("", "error: "+r.Error)
		}
	} else {
		t.row("last run:", "-")
	}
	if p := j.Pause; p != nil {
		t.row("paused:", fmt.Sprintf("by %s since %s: %q", p.By, at(p.At, now), clean(p.Note)))
	} else {
		t.row("paused:", "no")
	}
	t.row("triggers:", fmt.Sprintf("%d pending", j.PendingTriggers))
	if localZone(j) {
		t.row("next:", "unknown: the schedule is in zone Local, the registering replica's own")
	} else {
		t.row("next:", nextOccurrence(j, "-"))
	}
	t.row("store time:", now.Local().Format("2006-01-02 15:04:05.000"))
	if err := t.flush(); err != nil {
		return err
	}
	if j.Conflict {
		fmt.Fprintln(s.env.stdout, "\nconflict: the replicas registered this job differently:")
		rt := newTable(s.env.stdout, "REPLICA", "SCHEDULE", "LEASE KEY", "FINGERPRINT")
		for _, r := range j.Registrations {
			rt.row(r.Replica, r.Job.Schedule, r.Job.Key, r.Job.Fingerprint)
		}
		return rt.flush()
	}
	return nil
}

func runPause(ctx context.Context, s *session, name string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	if err := s.in.Pause(ctx, name, s.opts.by, s.opts.note); err != nil {
		return err
	}
	j, err := s.in.Job(ctx, name)
	if _, _, err = incompleteRead(err); err != nil { // an entry left out does not undo what was done
		return fmt.Errorf("paused %s, but could not read it back: %w", name, err)
	}
	if s.json {
		return writeJSON(s.env.stdout, pausedJSON{Job: name, Paused: toJobJSON(j).Paused})
	}
	fmt.Fprintf(s.env.stdout, "paused %s on every replica (by %s: %q)\n", clean(name), clean(s.opts.by), clean(s.opts.note))
	if h := j.Holder; h != nil {
		fmt.Fprintf(s.env.stdout, "the run in progress on %s is not stopped: it finishes as usual\n", clean(holderName(h)))
	}
	fmt.Fprintf(s.env.stdout, "no occurrence starts until: cronguard resume %s\n", clean(name))
	return nil
}

func runResume(ctx context.Context, s *session, name string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	was, err := s.in.Resume(ctx, name)
	if err != nil {
		return err
	}
	j, err := s.in.Job(ctx, name)
	if _, _, err = incompleteRead(err); err != nil { // an entry left out does not undo what was done
		return fmt.Errorf("resumed %s, but could not read it back: %w", name, err)
	}
	if s.json {
		return writeJSON(s.env.stdout, resumedJSON{Job: name, WasPaused: was, Next: optTime(j.Next)})
	}
	if !was {
		fmt.Fprintf(s.env.stdout, "%s was not paused\n", clean(name))
		return nil
	}
	next := nextOccurrence(j, "none left")
	if localZone(j) {
		next = "unknown (the schedule is in zone Local, the registering replica's own)"
	}
	fmt.Fprintf(s.env.stdout, "resumed %s; the occurrences skipped while it was paused are not run; next occurrence %s\n", clean(name), next)
	return nil
}

func runTrigger(ctx context.Context, s *session, name string) error {
	opts := []inspect.TriggerOption{inspect.WithTTL(s.opts.ttl)}
	extra := time.Duration(0)
	if s.opts.wait {
		opts = append(opts, inspect.WithWait(s.opts.timeout))
		extra = s.opts.timeout
	}
	ctx, cancel := s.opContext(ctx, extra)
	defer cancel()
	res, err := s.in.Trigger(ctx, name, s.opts.by, opts...)
	if res.Trigger.ID == "" {
		return err // nothing queued
	}
	t := res.Trigger
	if s.json {
		out := triggeredJSON{Job: name, Trigger: triggerJSON{ID: t.ID, By: t.By, QueuedAt: utc(t.At), ExpiresAt: utc(t.Expires)},
			Waited: s.opts.wait, Done: res.Done, Outcome: res.Outcome, Error: res.Error, Run: toRunJSON(res.Run)}
		if werr := writeJSON(s.env.stdout, out); werr != nil && err == nil {
			err = werr
		}
	} else {
		fmt.Fprintf(s.env.stdout, "triggered %s: trigger %s by %s, queued until %s (%s)\n",
			clean(name), t.ID, clean(t.By), clock(t.Expires, t.At), span(t.Expires.Sub(t.At)))
		if res.Done {
			where := ""
			if res.Run != nil && res.Run.Replica != "" {
				where = " on " + res.Run.Replica
			}
			took := ""
			if res.Run != nil {
				took = " in " + span(res.Run.Duration)
			}
			line := fmt.Sprintf("%s ran%s: %s%s", clean(name), clean(where), clean(res.Outcome), took)
			if res.Error != "" {
				line += ": " + clean(res.Error)
			}
			fmt.Fprintln(s.env.stdout, line)
		}
	}
	if err != nil {
		return err
	}
	if s.opts.wait && !res.Succeeded() {
		return fmt.Errorf("%w: %s %s", errRunFailed, name, res.Outcome)
	}
	return nil
}

func runRelease(ctx context.Context, s *session, name string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	info, err := s.in.ForceRelease(ctx, name, s.opts.by)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(s.env.stdout, releasedJSON{Job: name, Released: toReleaseJSON(info)})
	}
	now := s.env.now()
	fmt.Fprintf(s.env.stdout, "force-released the lease of %s held by %s (fence %d, acquired %s)\n",
		clean(name), clean(info.Owner), uint64(info.Fence), clock(info.AcquiredAt, now))
	fmt.Fprintln(s.env.stdout, "the holder is not stopped: it learns at its next renewal; until then it may run beside a new run, and only fenced writes are safe from it")
	return nil
}

// left says how long a lease has: "1.8s left", or "expiring" once its
// expiry passed (it stays live lease.ExpiryTolerance longer).
func left(d time.Duration) string {
	if d <= 0 {
		return "expiring"
	}
	return span(d) + " left"
}
