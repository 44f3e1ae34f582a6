// Package lease is cronguard's backend-agnostic lease model: the Store
// interface and the optional interfaces a Store may add, Lease and Info, the
// errors every Store returns, the rules for keys, TTLs and owner labels
// (which a Store implementation checks with NormalizeKey, ValidateTTL,
// ValidateOwner and ResolveAcquireOptions), Lock, which waits for a locked
// key, and Semaphore.
//
// A lease is a named, time-limited claim on a key. Store.Acquire makes one
// attempt to take it for a TTL; the holder keeps it alive with Extend (which
// sets the expiry to server-now + TTL; it never adds) and gives it up with
// Release. Both work from the lease's ID alone, which is the only proof of
// ownership. lease/redislease is the production Store; lease/memory keeps leases
// in process with the same semantics; lease/leasetest is the conformance
// suite both pass.
//
// Lock waits for a locked key. A Store that is a Notifier tells waiters of
// every release, so Lock wakes at the release (or when the holder's lease
// runs out) instead of polling; other stores, and stores whose
// notifications are unavailable, are polled with backoff. With
// WithFairness, Lock serves a key's waiters in arrival order through a
// queue the store keeps (a FairStore).
//
// Semaphore admits up to a limit of holders of one name at a time, on a
// store that is a SemaphoreStore (lease/redislease, lease/memory). Holders are
// Leases with the semaphore's own fences; Semaphore.Acquire waits as Lock
// does.
//
// # Guarantees
//
//   - Mutual exclusion, best effort and time-bounded: at most one lease on a
//     key is live at a time, as judged by the store's (server's) clock.
//   - Liveness rule: a lease is live while ExpiresAt > serverNow -
//     ExpiryTolerance (1s). The tolerance absorbs small steps of the server
//     clock and errs towards exclusion: a key is free for another holder only
//     a second after its lease's ExpiresAt.
//   - Expired leases are remembered for ExpiredRetention (10s) so that Extend
//     and Release can say ReasonExpired instead of ReasonNotFound. Such
//     records never block an acquire.
//   - Fences: every successful acquire returns a fencing.Token strictly
//     greater than every earlier token for that key. Fence counters are kept
//     forever: they are never deleted and never expire.
//   - Rounds: Acquire with WithRound or WithRoundTime succeeds only for a
//     round newer than every round recorded for the key, and records it in
//     the same atomic step. Round records, too, are kept forever. A time
//     round further ahead of the server's clock than its maximum skew is
//     refused with ErrClockSkew and nothing is recorded.
//   - Completion: a round acquire with WithAttempts records its occurrence
//     (attempt 1, running) beside the round, under a policy of attempts and
//     a deadline; WithResume claims the next attempt of the last claimed
//     round while that record says the occurrence is open (released open,
//     or running with no live lease), attempts remain, the deadline has not
//     passed and its backoff has. Giving an occurrence up (a resume out of
//     attempts or time, a newer round's acquire with WithAttempts or a
//     trigger's acquire that supersedes it) changes
//     the record in the same atomic step, so it is reported exactly once
//     (GivenUpError.First, Lease.Superseded). Completion records are kept
//     forever, like rounds.
//   - Validation happens before any I/O: a bad key, TTL, ID or option fails
//     with ErrInvalidArgument and a message naming the rule.
//
// # What is not guaranteed
//
//   - A holder that is paused or partitioned may still be running after its
//     lease expired. Lease.Deadline (on the local, monotonic clock: the time
//     the acquire was sent, plus the TTL, minus a drift allowance) says how
//     long the holder may trust the lease; heartbeat cancels work before it. Go
//     cannot stop a goroutine that ignores its context: protect writes with
//     the lease's fence (package fencing).
//   - ExpiresAt and AcquiredAt are server times for display: never compare
//     them with the local clock.
//   - With Redis, replication is asynchronous: a failover can lose a lease,
//     and fencing holds only if the fence counter survives (persistence or
//     WAIT). lease/memory forgets everything when the process ends.
//   - Extend and Release may take effect on the server even when they
//     return ErrTimeout.
package lease
