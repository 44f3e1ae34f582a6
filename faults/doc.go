// Package faults proves cronguard's safety and liveness under failure with
// real processes and real faults: kills, pauses, partitions from Redis and
// Redis restarts.
//
// TestFaults builds the replica binary (faults/cmd/replica) once, starts a
// redis-server with AOF persistence (appendfsync always) and a PostgreSQL
// server on loopback, and runs several replica processes, each talking to
// Redis through its own fault-injecting proxy. For a bounded time it
// injects faults chosen by a seeded random schedule: kill -9 of a replica
// (restarted later), SIGSTOP/SIGCONT of a replica for longer than the job
// TTLs, a blackhole and a cut between one replica and Redis, and a restart
// of redis-server. Every replica records what it did, step by step, in a
// JSON Lines history (package history); every job run writes through
// fencing.Advance into PostgreSQL. At the end, package checker reads the
// histories and the database and reports violations of the guarantees:
//
//  1. no accepted write carries a token lower than an earlier accepted
//     write of the same resource (in commit order);
//  2. no occurrence has accepted writes from two runs;
//  3. no two leases of one job were valid at the same server instant;
//  4. every occurrence ran unless a fault explains why not (a held lease,
//     Redis down, no healthy replica, or a request whose outcome was lost
//     in a fault, including one in flight when its replica was paused or
//     killed, which may have claimed the round or held the lease for one
//     TTL);
//  5. a holder cut off from Redis had its context cancelled before another
//     lease of its job was acquired.
//
// The test fails on any violation and prints the seed that reproduces the
// schedule, and where it kept the histories, the accepted writes and the
// logs; faults/cmd/recheck checks a kept run again without running it.
// See README.md for how to run the short and long forms and for the
// figures of the last runs.
//
// What it does not prove: a schedule is random, not exhaustive; time on one
// machine is shared by all processes (server time is the machine's
// CLOCK_REALTIME, and the monotonic clock is CLOCK_MONOTONIC), so clock
// skew between hosts and network delays beyond the proxy's faults are not
// exercised; Redis replication and failover are out of scope (see
// lease/redis's sentinel tests).
package faults
