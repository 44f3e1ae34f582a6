// Package faults proves cronguard's safety and liveness under failure with
// real processes and real faults: kills, pauses, partitions from Redis,
// Redis restarts, and Redis losing its data.
//
// TestFaults builds the replica binary (faults/cmd/replica) once, starts a
// redis-server with AOF persistence (appendfsync always) and a PostgreSQL
// server on loopback, and runs several replica processes, each talking to
// Redis through its own fault-injecting proxy. For a bounded time it
// injects faults chosen by a seeded random schedule: kill -9 of a replica
// (restarted later), SIGSTOP/SIGCONT of a replica for longer than the job
// TTLs, a blackhole and a cut between one replica and Redis, a restart of
// redis-server, a restart without its data (wipe), and a restart from a
// copy of its append-only file taken 2-6s before (rollback). A watchdog
// records the windows in which the machine stopped running processes
// (stalls). Every replica records what it did, step by step, in a JSON
// Lines history (package history); every job run writes through
// fencing.AdvanceOnceFromContext into PostgreSQL. At the end, package
// checker reads the histories and the database and reports violations of
// the guarantees:
//
//  1. no accepted write carries a token lower than an earlier accepted
//     write of the same resource (in commit order), data loss or not;
//  2. no occurrence has two committed writes, data loss or not;
//  3. no two leases of one job were valid at the same server instant,
//     unless Redis lost the earlier one with its data before the later
//     acquire (counted and explained);
//  4. every occurrence ran unless a fault explains why not (a held lease,
//     or one a rollback put back, or one whose release was answered only
//     after the occurrence when its replica skipped it as running there;
//     a winner killed before it recorded the run's start, even just after
//     the harness recorded the kill; Redis down; no healthy replica, a stall
//     counting as a pause of every replica; or a request whose outcome was
//     lost in a fault, including one in flight when its replica was paused
//     or killed, which may have claimed the round or held the lease for
//     one TTL);
//  5. a holder cut off from Redis had its context cancelled before another
//     lease of its job was acquired (holders paused, stalled or killed, or
//     whose lease Redis lost with its data, are exempt);
//  6. no occurrence was started by two leases, unless Redis may have lost
//     the first claim with its data (counted and explained: durability
//     keeps the effect single, not the start).
//
// The test fails on any violation and prints its seed (which fixes the
// first faults, not the whole schedule: see README.md) and where it kept the
// histories, the accepted writes and the logs; faults/cmd/recheck checks a
// kept run again without running it.
// See README.md for how to run the short and long forms and for the
// figures of the last runs.
//
// What it does not prove: a schedule is random, not exhaustive; time on one
// machine is shared by all processes (server time is the machine's
// CLOCK_REALTIME, and the monotonic clock is CLOCK_MONOTONIC), so clock
// skew between hosts, a server clock that goes back, and network delays
// beyond the proxy's faults are not exercised; Redis replication and
// failover are out of scope (see lease/redislease's sentinel tests), though a
// wipe or a rollback is what a failover to a lagging replica does to the
// data.
package faults
