// Package checker reads the histories of a fault run and the database's
// accepted writes (package faults/history) and reports violations of
// cronguard's guarantees:
//
//  1. Fencing order: per resource, in commit order (the writes table's
//     serial id), no accepted write carries a token lower than an earlier
//     accepted write.
//  2. Once per occurrence: no occurrence of a job has accepted writes from
//     two different leases.
//  3. Mutual exclusion in server time: for one job, no two leases are valid
//     at the same server instant. A lease is valid from its AcquiredAt to
//     its last confirmed ExpiresAt, or to the moment its Release was sent
//     when that Release succeeded or may have run (its reply was lost, or
//     the replica was killed after its run returned): the server's own
//     account of the lease then is unknown, and only an acquire before the
//     earliest instant the lease may have ended is a sure violation.
//  4. Liveness: every occurrence in the checked window ran, unless
//     something explains the miss: the job's lease was held (by a running,
//     stale or killed holder, as the histories show), Redis was down, no
//     replica was healthy, or a faulted replica may have claimed the round
//     or taken the lease without recording it (an acquire in flight when it
//     was killed or cut off, whose reply was lost). Unexplained misses are
//     violations.
//  5. Cancellation before takeover: the run of a lease had its context
//     cancelled (or had returned) before the job's next lease was acquired,
//     in CLOCK_MONOTONIC time. Holders paused (SIGSTOP) or killed during
//     their lease are exempt: Go cannot cancel a stopped process, and
//     fencing (1) is what protects against them.
//
// Server time and local wall time are compared only because the harness
// runs Redis and every replica on one machine, where both are this
// machine's CLOCK_REALTIME. That comparison is used for the release instant
// in (3) (the send time of the Release, a lower bound of when the server
// ran it) and for placing fault windows against occurrences in (4).
package checker
