// Package history is the event log of a fault run: the steps each replica
// took (lease acquired, extended, lost, released; run started and ended;
// write accepted or rejected) and the faults the harness injected, one JSON
// object per line.
//
// Every event carries two clocks of this machine: CLOCK_MONOTONIC (Mono),
// which is comparable across processes on one host, unlike Go's
// per-process monotonic reading, and CLOCK_REALTIME (Wall). Lease times
// reported by Redis (AcquiredAt, ExpiresAt) are server time, in Unix
// milliseconds.
//
// A Writer appends each event with a single write(2) on a file opened with
// O_APPEND, so a replica killed with SIGKILL loses at most the line it was
// writing; ReadFile tolerates such a torn last line. Writes are not fsynced:
// the histories survive a process crash, not a machine crash.
package history
