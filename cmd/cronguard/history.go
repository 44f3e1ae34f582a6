package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
)

// historyCommand is cronguard history NAME [--limit N] [--offset N].
var historyCommand = command{name: "history", args: "NAME", summary: "list a job's last runs, newest first", help: historyHelp, run: runHistory,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.IntVar(&o.limit, "limit", inspect.DefaultHistoryLimit, "")
		fs.IntVar(&o.offset, "offset", 0, "")
	},
	check: func(o *options) error {
		switch {
		case o.limit < 1:
			return usagef("history", "history: --limit must be at least 1, got %d", o.limit)
		case o.offset < 0:
			return usagef("history", "history: --offset must not be negative, got %d", o.offset)
		}
		return nil
	}}

const historyHelp = `Usage: cronguard history NAME [--limit N] [--offset N] [--json]

Lists NAME's last runs, newest first, as the replicas that ran them recorded
them when they released the lease: the occurrence (a triggered run's is the
trigger's time), the attempt, the replica, when it started (the store's
time) and ended, how long it took (on the replica's clock), the outcome, how
many occurrences before it ran nowhere (as the ledger reported when it won),
the fence and the error's first line. The store keeps each job's last 100 runs
(redislease.WithHistoryLimit); a run that lost its lease recorded none.

  --limit N    how many runs to print (default 20; at most the store's limit)
  --offset N   how many of the newest runs to skip (for older pages)

Exits 3 when no live replica has registered NAME.
`

type historyJSON struct {
	Job    string          `json:"job"`
	Total  int             `json:"total"`
	Offset int             `json:"offset"`
	Runs   []runRecordJSON `json:"runs"`
}

type runRecordJSON struct {
	Occurrence time.Time `json:"occurrence"`
	Attempt    int       `json:"attempt"`
	Replica    string    `json:"replica"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	Outcome    string    `json:"outcome"`
	Missed     int       `json:"missed"`
	Error      string    `json:"error"`
	Fence      uint64    `json:"fence"`
	Trigger    string    `json:"trigger"`
}

func toRunRecordJSON(r fleet.RunRecord) runRecordJSON {
	return runRecordJSON{Occurrence: utc(r.Occurrence), Attempt: r.Attempt, Replica: r.Replica, Started: utc(r.Started),
		Ended: utc(r.Ended), Outcome: r.Outcome, Missed: r.Missed, Error: r.Error, Fence: uint64(r.Fence), Trigger: r.Trigger}
}

func runHistory(ctx context.Context, s *session, name string) error {
	ctx, cancel := s.opContext(ctx, 0)
	defer cancel()
	h, err := s.in.History(ctx, name, inspect.HistoryQuery{Offset: s.opts.offset, Limit: s.opts.limit})
	if err != nil {
		return err
	}
	if s.json {
		out := historyJSON{Job: name, Total: h.Total, Offset: s.opts.offset, Runs: []runRecordJSON{}}
		for _, r := range h.Runs {
			out.Runs = append(out.Runs, toRunRecordJSON(r))
		}
		return writeJSON(s.env.stdout, out)
	}
	switch {
	case h.Total == 0:
		fmt.Fprintf(s.env.stdout, "no run of %s recorded yet\n", clean(name))
		return nil
	case len(h.Runs) == 0:
		fmt.Fprintf(s.env.stdout, "%s has %s recorded: none past --offset %d\n", clean(name), plural(h.Total, "run"), s.opts.offset)
		return nil
	}
	now := s.env.now()
	t := newTable(s.env.stdout, "OCCURRENCE", "ATTEMPT", "REPLICA", "STARTED", "ENDED", "TOOK", "OUTCOME", "MISSED", "FENCE", "ERROR")
	for _, r := range h.Runs {
		occ := clock(r.Occurrence, now)
		if r.Trigger != "" {
			occ += " (trigger)"
		}
		replica := r.Replica
		if replica == "" {
			replica = "-"
		}
		t.row(occ, fmt.Sprint(r.Attempt), replica, clock(r.Started, now), clock(r.Ended, now), span(r.Ended.Sub(r.Started)),
			r.Outcome, fmt.Sprint(r.Missed), fmt.Sprint(uint64(r.Fence)), r.Error)
	}
	if err := t.flush(); err != nil {
		return err
	}
	first, last := s.opts.offset+1, s.opts.offset+len(h.Runs)
	line := fmt.Sprintf("runs %d-%d of %d, newest first", first, last, h.Total)
	if last < h.Total {
		line += fmt.Sprintf("; older: cronguard history %s --offset %d", clean(name), last)
	}
	fmt.Fprintln(s.env.stdout, line)
	return nil
}
