package main

const usageText = `cronguard shows and steers a fleet of cronguard schedulers through the Redis
they share.

Usage:
  cronguard [global flags] COMMAND [flags] [NAME]

Commands:
  replicas                  list the live replicas
  jobs                      list the fleet's jobs: where each runs, its last run, its next occurrence
  job NAME                  show one job in detail
  history NAME              list a job's last runs, newest first
  pause NAME --note TEXT    pause a job on every replica (a run in progress finishes)
  resume NAME               resume a paused job (the occurrences it skipped are not run)
  trigger NAME [--wait]     run a job now, once, on one replica
  release NAME --force      force-release a job's lease (unsafe unless the job is fenced)
  serve [--addr HOST:PORT]  serve the web console (read-only unless --auth-file and --actions)
  help [COMMAND | json]     show a command's help, or the fields of the JSON output

Global flags (accepted before or after the command):
  --redis URL    the fleet's Redis: redis://[user:password@]host:port[/db], or
                 rediss://... for TLS (default: $CRONGUARD_REDIS_URL, else
                 redis://localhost:6379). The password is never printed.
  --prefix P     the key prefix of the fleet's lease store (lease/redislease
                 WithPrefix; default "cronguard")
  --json         print JSON for scripts (cronguard help json)

Exit codes:
  0  done
  1  the operation failed: Redis could not be reached, refused it (ACL) or
     holds something unreadable; a trigger for a paused job; replicas, jobs
     and job left out live replicas whose registry entries they could not
     read (they list the rest, then the error names those left out)
  2  usage error: unknown command or flag, a missing or extra argument, a bad
     value (--redis URL, --prefix, --by, --ttl), release without --force
  3  not found: no live replica has the job; release found no lease
  4  trigger --wait: the run ended without success (failed, panicked, timed_out)
  5  trigger --wait: the run did not end within --timeout (the trigger stays
     queued until its --ttl ends)

Errors are one line on stderr. Times are local, with their distance from the
store's clock (for replicas' start times, from this machine's clock).
`

const replicasHelp = `Usage: cronguard replicas [--json]

Lists the live replicas, from the registry each scheduler keeps in Redis: ID,
cronguard version, start (on the replica's clock), refresh period, when its
entry expires unless refreshed (the store's time), and its jobs.

A replica refreshes its entry every refresh period (5s by default); a replica
that dies drops out 3 periods after its last refresh (15s by default), one
that shuts down at once.
`

const jobsHelp = `Usage: cronguard jobs [--json]

Lists every job the live replicas registered, with:
  REPLICAS    how many live replicas registered it
  RUNNING ON  the replica holding its lease now, and the time left on the lease
              by the store's clock (the heartbeat renews it every third of it)
  LAST RUN    the last run's outcome, how long it took and how long ago it ended
  NEXT        the next occurrence of its schedule; "unknown zone" when a replica
              registered a cron schedule in the zone Local (its machine's own,
              which the registry does not record)
  NOTES       paused, conflict (replicas registered it differently), pending
              triggers, last run triggered

Reads the registry once and each job's state once (one pipelined round trip of
plain reads per job: no script, so the read-only ACL user suffices).
`

const jobHelp = `Usage: cronguard job NAME [--json]

Shows one job: its lease key, schedule and replicas; the run in progress (the
holder's label, fence, short lease form, time left); the last occurrence
claimed; the last run (outcome, duration, replica, occurrence or trigger,
fence, error); the pause; pending triggers; the next occurrence; and, when the
replicas disagree on it, each replica's registration.

Exits 3 when no live replica has registered NAME.
`

const pauseHelp = `Usage: cronguard pause NAME --note TEXT [--by WHO]

Pauses NAME on every replica: from now on every scheduled occurrence is
skipped (the replicas report it as skipped, paused), and recorded as handled:
not missed, and not run later. A run in progress is not stopped: it finishes.
Pausing a paused job replaces its note.

  --note TEXT   why (required; at most 1024 bytes), shown to whoever finds it paused
  --by WHO      who pauses it (default: user@host)
`

const resumeHelp = `Usage: cronguard resume NAME

Lifts NAME's pause. The next occurrence runs as usual; the occurrences that
came due while it was paused are not run (not even with catch-up). Prints
whether it was paused.
`

const triggerHelp = `Usage: cronguard trigger NAME [--wait] [--timeout D] [--ttl D] [--by WHO]

Runs NAME now, once, on one live replica that has it, under the job's lease:
the trigger is queued in Redis and announced to the replicas, and the first
one that finds the lease free runs the job. If the job is running, the trigger
waits for that run to end. A triggered run claims no occurrence: the schedule
goes on as before. Refused for a paused job (resume it first, exit 1) and a
job no live replica has (exit 3).

  --wait         wait for the run to end and print its outcome (exit 4 if it
                 did not succeed)
  --timeout D    how long --wait waits (default 1m; exit 5 when it passes: the
                 trigger stays queued, or its run in progress)
  --ttl D        how long the trigger waits for a replica to take it (default
                 1m, at most 24h)
  --by WHO       who asks (default: user@host)
`

const releaseHelp = `Usage: cronguard release NAME --force [--by WHO]

Deletes the lease on NAME, whoever holds it, so that the job can run again at
once instead of when the lease expires. For a holder known to be dead, whose
lease's TTL is too long to wait.

It is unsafe unless the job's writes are fenced (package fencing): the holder
is not stopped. It learns of the loss at its next renewal (within a third of
its TTL) and its context is cancelled, but a job that ignores its context, or
is stuck, keeps running while another replica may start the job again. So
release refuses to act without --force.

  --force     release it anyway
  --by WHO    who releases it, for the record (default: user@host)

Exits 3 when no live lease holds the job.
`

const jsonHelp = `cronguard --json prints one JSON document per command. Field names are
stable: fields may be added, never renamed or removed. Times are RFC 3339 in
UTC, to the millisecond; durations are whole milliseconds in fields ending
in Ms; a missing value is null. Lease IDs are never printed: "leaseHash" is
a short form of the lease ID's hash, enough to tell leases apart; "fence"
identifies a run in the replicas' logs.

replicas:  {"replicas": [Replica], "unreadable": [replica ID]}
  Replica: {"id", "version", "started", "refreshMs", "expires", "jobs": [name]}
  unreadable: live replicas whose registry entries could not be read, left
  out (exit 1); empty when every entry was read

jobs:      {"jobs": [Job], "unreadable": [replica ID]} (their jobs left out)
job NAME:  Job
  Job: {
    "name", "key" (lease key), "schedule", "replicas": [replica ID],
    "conflict": bool,
    "registrations": [{"replica", "schedule", "key", "fingerprint"}],
    "now": the store's time of the read,
    "holder": null | {"owner", "replica", "fence", "leaseHash", "acquiredAt",
                      "expiresAt", "leftMs"},
    "lastOccurrence": time | null,
    "lastRun": null | Run,
    "paused": null | {"by", "note", "since"},
    "pendingTriggers": int,
    "next": time | null (null when none is left or the zone is unknown)
  }
  Run: {"occurrence", "owner", "replica", "fence", "started", "durationMs",
        "outcome" ("succeeded", "failed", "panicked", "timed_out"),
        "error", "trigger" ("" for a scheduled run)}

history NAME: {"job", "total" (runs kept), "offset", "runs": [RunRecord]}
  RunRecord: {"occurrence", "attempt" (1 for the first), "replica", "started",
              "ended", "outcome" (as Run's, or "interrupted", "given_up"),
              "error", "fence", "trigger" ("" for a scheduled run),
              "missed" (occurrences before it that ran nowhere)}

pause:     {"job", "paused": {"by", "note", "since"}}
resume:    {"job", "wasPaused": bool, "next": time | null}
trigger:   {"job", "trigger": {"id", "by", "queuedAt", "expiresAt"},
            "waited": bool, "done": bool, "outcome", "error", "run": null | Run}
release:   {"job", "released": {"owner", "fence", "leaseHash", "acquiredAt",
            "expiresAt"}}

On an error the exit code says what went wrong and stderr has one line;
stdout has the JSON only where the command did something (trigger --wait
that timed out or whose run failed prints its result).
`
