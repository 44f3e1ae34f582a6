// Package checker reads the histories of a fault run and the database's
// accepted writes (package faults/history) and reports violations of
// cronguard's guarantees:
//
//  1. Fencing order: per resource, in commit order (the writes table's
//     serial id), no accepted write carries a token lower than an earlier
//     accepted write. Data loss does not excuse it: fences never go back.
//
//  2. Once per occurrence, committed: no occurrence of a job has two
//     committed writes (every run writes once), whatever their leases.
//     Data loss does not excuse it: fencing.AdvanceOnce refuses a second
//     write of an occurrence.
//
//  3. Mutual exclusion in server time: for one job, no two leases are valid
//     at the same server instant. A lease is valid from its AcquiredAt to
//     its last confirmed ExpiresAt, or to the moment its Release was sent
//     when that Release succeeded or may have run (its reply was lost, or
//     the replica was killed after its run returned): the server's own
//     account of the lease then is unknown, and only an acquire before the
//     earliest instant the lease may have ended is a sure violation. An
//     overlap is explained (and counted) when Redis lost its data after the
//     earlier lease was acquired and before the later one was, and
//     afterwards the server surely knew no expiry of the earlier lease that
//     kept it live, to the tolerance, at the later acquire: nothing, if the
//     acquire may have been lost; otherwise the latest expiry set by an
//     operation that surely ran before the copy put back was taken (or on
//     the new data, before the later acquire).
//
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
//     Redis's restarts with data loss count as Redis down; a lease blocks
//     only while the server may have known it: not after a data loss that
//     surely discarded it (a wipe, or a rollback to a copy taken before its
//     acquire or after its release), and, after a rollback whose copy may
//     have held it, again from the data loss to the latest expiry the copy
//     may have held (a lease put back: "restored"). A stall of the machine
//     recorded by the harness counts as a pause of every replica. Requests
//     whose outcome was lost are described below. An occurrence whose
//     round a recorded lease claimed, and that no run started, is missed
//     by the winner's choice (Redis was answering, no other replica could
//     claim it): a violation unless the winner was killed within the TTL
//     after its acquire.
//
//  5. Cancellation before takeover: the run of a lease had its context
//     cancelled (or had returned) before the job's next lease was acquired,
//     in CLOCK_MONOTONIC time. Holders paused (SIGSTOP, or a stall of the
//     machine) or killed during their lease are exempt: Go cannot cancel a
//     stopped process, and fencing (1) is what protects against them. So
//     are holders whose lease Redis lost with its data before the next
//     acquire (as in 3): the holder learns it at its next renewal, and
//     fencing (1, 2) protects the effect.
//
//  6. Once per attempt, started: no attempt at an occurrence of a job is
//     started by two leases (a later attempt of the occurrence, resumed or
//     retried, is not a second start), unless Redis may have lost the
//     first lease's claim with its data before the second acquire: a data
//     loss lies between them, and no claim of that occurrence at that
//     attempt or a later one, or of a later occurrence (by any recorded
//     lease), was surely in the server's data at the second acquire. Such
//     duplicate starts are counted and listed with their explanation; any
//     other is a violation.
//
//  7. Completion: for a job with completion (Job.Completion), every
//     occurrence a recorded lease claimed is completed (exactly one
//     accepted write, (2) forbidding a second) or reported given up by a
//     replica's scheduler, never both and never twice; it is never taken
//     for done without its effect (released done, or its write refused as
//     a duplicate, with no accepted write) and never attempted again after
//     it was released done or reported given up (unless Redis lost its
//     data after the acquire of the lease that released it, which may
//     have taken the record of that end with it). The exceptions, each
//     counted and explained: Redis lost its data between the claim and
//     the time the occurrence had to be resolved (data_lost); the
//     replicas began to shut down before that time (open_at_end); the
//     store marked it given up for a replica killed before reporting it
//     (report_lost); it was committed by an attempt that never told the
//     store it succeeded, and then given up (commit_unreported). See
//     completion.go.
//
// Requests whose outcome was lost, for (4). An acquire is in flight across
// a pause (SIGSTOP, or a stall) if it was sent before the pause began and
// its failure was recorded after (the replica woke to a passed deadline),
// and across a kill if the killed process recorded no outcome for it: a
// replica acquires one job's occurrences one at a time and in order,
// recording each outcome before the next acquire, so the acquire in flight
// is for an occurrence after the last recorded outcome that fired before
// the kill, or a retry of that occurrence if its outcome was an error (the
// scheduler retries within the occurrence). Redis may have run it until
// the kill, or for a pause until the later of the resume and the recorded
// failure (the request sits in the socket meanwhile). If it won, it
// claimed its round and held the lease, unrenewed, until then plus the TTL
// and lease.ExpiryTolerance: it explains the miss of its own occurrence and
// of later ones fired after it was sent and before that bound. An acquire
// whose outcome the replica learned (a lease, locked, claimed, or a failure
// before the pause) or that was sent after the resume explains nothing. An
// Extend whose outcome its holder never learned likewise may have extended
// the lease unrecorded: one whose reply was lost (a timeout, a broken
// connection: it may have run from its send to its failure, plus the
// slack, as a lost acquire may), or one in flight when its holder was
// paused or killed. It runs only on a live lease, so the lease blocks at
// most until its latest possible expiry (confirmed, or set by an earlier
// such Extend) plus the tolerance, plus the TTL, plus the tolerance. An
// Extend the server refused ("not held") did nothing.
//
// What the server knew after a data loss is bounded from the histories: a
// lease operation ran at some instant between its send and its reply; the
// copy a rollback put back holds every write acknowledged before the copy
// began and none made after it ended; a wipe keeps nothing. See
// dataloss.go.
//
// A stall is a window in which the harness's watchdog woke up late (the
// machine stopped running processes, the harness's own included). The
// checker takes it for a pause of every replica and explains with it
// exactly what such a pause explains: misses while no replica was healthy,
// requests in flight across it, and exemption from (5). A stall of the
// harness alone would be taken for one of the machine.
//
// Server time and local wall time are compared only because the harness
// runs Redis and every replica on one machine, where both are this
// machine's CLOCK_REALTIME. That comparison is used for the release instant
// in (3) (the send time of the Release, a lower bound of when the server
// ran it) and for placing fault windows against occurrences in (4).
package checker
