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
//     stale or killed holder, as the histories show; when every replica
//     acquired the occurrence late, behind a slow acquire, it is enough
//     that each was told "locked" while a recorded lease may have been
//     valid), Redis was down, no replica was healthy, or a replica may have
//     claimed the round or taken the lease without recording it: an acquire
//     whose reply was lost (a timeout, a cut connection: it may have run at
//     any instant from its send to its failure), or one in flight when its
//     replica was paused or killed. Unexplained misses are violations.
//
// An acquire is in flight across a pause (SIGSTOP) if it was sent before
// the pause began and its failure was recorded after (the replica woke to
// a passed deadline), and across a kill if the killed process recorded no
// outcome for it: a replica acquires one job's occurrences one at a time
// and in order, recording each outcome before the next acquire, so the
// acquire in flight is for an occurrence after the last recorded outcome
// that fired before the kill. Redis may have run it until the kill, or for
// a pause until the later of the resume and the recorded failure (the
// request sits in the socket meanwhile). If it won, it claimed its round
// and held the lease, unrenewed, until then plus the TTL and
// lease.ExpiryTolerance: it explains the miss of its own occurrence and of
// later ones fired after it was sent and before that bound. An acquire
// whose outcome the replica learned (a lease, locked, claimed, or a failure
// before the pause) or that was sent after the resume explains nothing. An
// Extend in flight when its holder was paused or killed likewise may have
// extended the lease unrecorded, but only while the lease was live, so the
// lease blocks at most until its confirmed expiry plus the tolerance, plus
// the TTL, plus the tolerance.
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
