// Package redislease is the production lease.Store: leases kept in Redis (a
// single server, a primary with replicas, or Redis Cluster) through a
// rueidis client.
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{
//		InitAddress:  []string{"127.0.0.1:6379"},
//		DisableCache: true, // the store never reads through the client-side cache
//	})
//	store, err := redislease.New(client, redislease.WithPrefix("myapp"))
//	l, err := store.Acquire(ctx, "job:report", 30*time.Second)
//
// Every lease operation is one Lua script from internal/luascripts, sent
// with EVALSHA (EVAL when the server answers NOSCRIPT), so it takes one
// round trip and runs atomically. The fleet's reads (Replicas, JobState,
// PauseOf, PendingTriggers, PendingTriggersBatch) are plain read commands,
// pipelined, so that a Redis user who may run no script can make them
// (docs/redis-acl.md). Set DisableCache: true on the client unless you use
// client-side caching elsewhere; the store does not need it.
//
// # What it guarantees
//
//   - Expiry is judged by the Redis server's clock only (TIME inside each
//     script). A lease is live while ExpiresAt > server-now -
//     lease.ExpiryTolerance; an acquire succeeds only when no live lease
//     holds the key. Lease.Deadline is local: the moment just before the
//     request was sent, on the Store's clock, plus TTL minus TTL/100 + 2ms (lease.LocalDeadline).
//   - Each acquire issues a fence one above the key's fence counter, or the
//     server clock's floor (lease.FenceFloor: its Unix ms * 100) if that is
//     greater, and stores it; no script deletes or expires the counter. So
//     fences grow strictly, and a counter lost with Redis's data (a restart
//     without persistence, a failover to a replica that lagged, a restored
//     snapshot) resumes above every fence issued before, as long as the
//     server clock did not go back by more than the time since the last
//     acquire. Rounds (lease.WithRound) are recorded the same way (never
//     deleted); only the roll-back of an acquire whose outcome was unknown
//     sets a round record back, to the round before it. A won acquire
//     reports that previous round (Lease.PrevRound): the rounds in between
//     were claimed by no one. A round not newer than the recorded one is
//     refused (lease.ErrRoundClaimed) before the key's liveness is looked
//     at, so a refusal with lease.ErrLocked means the key is held for an
//     earlier round.
//   - Extend and Release act only when the ID in the stored record is the
//     caller's, and tell not found, expired and not owner apart
//     (*lease.NotHeldError). An ID whose leading characters route to no slot
//     is not found without any I/O.
//   - Lease.Extend and Lease.Release (and heartbeat) take a keyed path
//     (ExtendLease, ReleaseLease; lease.KeyedStore): the lease's key gives
//     the data key, which the script declares in KEYS with the index, and
//     reads directly instead of through the index. The answers are those of
//     Extend and Release by ID.
//   - An acquire whose outcome is unknown is rolled back before Acquire
//     returns. The outcome is unknown when the caller's context ended
//     (lease.ErrTimeout, lease.ErrAborted) or the connection broke or
//     timed out after the request may have been written: EOF, a reset or
//     closed connection, a network timeout, the client closing (all
//     lease.ErrUnavailable or lease.ErrTimeout). It is known when the
//     server answered with an error reply (BUSY, LOADING, NOPERM, ...) or
//     the connection could not be made (refused, no address, DNS, an
//     untrusted certificate): then nothing ran. The roll-back (a script,
//     retried on transient errors within min(ttl, 5s), with a fresh
//     context) releases the lease if the acquire took it and gives back
//     the round it claimed if that is still the recorded one, so the key
//     is free at once and the occurrence can still run elsewhere. The key
//     stays locked until its TTL, with no holder, only if the roll-back
//     fails, or reaches the server ahead of the acquire on another
//     connection (rueidis closes a synchronous connection whose deadline
//     passes, and the acquire then may never run at all). Neither outcome
//     gives the key two holders; the fence counter never goes back.
//   - Errors are *Error (the operation, what it was about, the cause) and
//     wrap one lease sentinel and the client's cause; see
//     lease.ErrUnavailable, lease.ErrAuth, lease.ErrTimeout.
//
// # What it does not guarantee
//
//   - Replication is asynchronous. After a failover the new primary may not
//     have a lease (two holders at once) or the latest fence and round
//     records. Fences and rounds survive restarts only with persistence
//     (appendonly yes, appendfsync everysec or always) or WAIT; without it a
//     restart resets them and fencing.Advance is what still rejects stale
//     writers, as long as the fence table is in a database that persisted.
//   - Mutual exclusion is time-bounded: a holder that pauses past its
//     Deadline may still be running. Cancel work at Deadline (heartbeat does).
//
// # Records, keys and retention
//
// With prefix P, a key's storage key K is the key itself, or, when P, the
// key and the longest namespace would pass 1000 bytes, the 22-character
// hash of the key (base64url of the first 16 bytes of its SHA-256; not
// reachable within the limits on keys and prefixes). Its hash tag G is K,
// or the hash of K when K contains a brace. The keys are:
//
//	P:{G}              lease record (JSON), PX = ttl + ExpiryTolerance
//	P:id:{T}:<id>      ID index, value P:{G}, PX = ttl + ExpiryTolerance + ExpiredRetention
//	P:fence:{G}        fence counter, never expires
//	P:round:{G}        highest round, never expires
//	P:attempt:{G}      completion record, "round|attempt|state|notBeforeMs|deadlineMs|max",
//	                   never expires; written only with lease.WithAttempts, read (and
//	                   marked given up when superseded) by trigger acquires too
//	                   (see completion.go)
//	P:open             index of open and running occurrences (fleet.Store.DueOccurrences):
//	                   sorted set, "<round>:<deadlineMs>:<key>" -> ms when due; its own slot
//
// T is a short fixed tag in G's slot. A lease ID's first three characters
// encode that slot (so all of a lease's keys are in one slot and the index
// is found from the ID alone); the other 19 are random (114 bits).
//
// The record is JSON, {"lockId","expiresAtMs","acquiredAtMs","fence",
// "round","prev","key","owner"}, with the fence as a 15-digit string, the
// round the acquire claimed and the one recorded before it, and the ID and
// expiry at fixed offsets so scripts read them without decoding JSON. The record's
// PX ends exactly when the lease stops being live (expiresAtMs +
// ExpiryTolerance), so Redis removes a dead lease by itself and a record
// that exists is live: Release needs no server time. The ID index outlives
// the record by ExpiredRetention, so Extend and Release of a lease that
// expired within that time say ReasonExpired rather than ReasonNotFound.
//
// Fences follow the clock's floor, so they reach 850000000000000 in the
// year 2239, when a warning is logged, and 900000000000000 in 2255, when
// Acquire gives the lease back and fails with lease.ErrInternal. A counter
// more than a minute's worth ahead of its floor is logged too: it would go
// back if lost. Rounds must be at most 2^53-1 (Lua numbers).
//
// # Release notifications
//
// Every script that deletes a lease (Release, ReleaseLease,
// ReleaseWithStatus, the roll-back of an acquire; ForceRelease goes
// through Release) publishes on the sharded channel named after the
// lease's data key, P:{G} (SPUBLISH, Redis 7.0; the name carries the key's
// hash tag, so the channel is in the key's slot and the publish works on
// Redis Cluster). Store.Watch (lease.Notifier) subscribes to it with
// SSUBSCRIBE; lease.Lock uses it to wake at a release. A Store keeps one
// subscription per channel, shared by all its waiters of that key and
// held by one goroutine, which unsubscribes when the last of them stops.
// The publish costs about 0.1 µs of server time per release when nobody
// waits (BENCHMARKS.md). It is sent with redis.pcall: on a server without
// sharded pub/sub, or a user without the grants below, releases work as
// before and waiters poll; the refusal is logged once at warn. A lease
// that expires is not published (Redis does not tell without keyspace
// notifications): waiters wake when the holder's lease runs out, which
// they learn from the refused acquire (lease.LockedError.Remaining). A
// replica running an older release script does not publish either; its
// waiters then wake at that time too.
//
// # Semaphores
//
// The Store is a lease.SemaphoreStore. A semaphore's name gives a hash tag
// S as a key does, and its keys are P:sem:{S}, a sorted set of holder IDs
// scored by their expiry (server ms; it expires with its longest-lived
// holder), and P:sem:{S}:fence, its fence counter (never expires). The
// acquire script drops the holders that stopped being live, counts the
// rest, and adds the new one only below the limit; extend and release act
// on one holder by ID; a release publishes on the channel P:sem:{S}, which
// Semaphore.Acquire's waiters watch. Both keys and the channel are in one
// slot, so semaphores work on Redis Cluster. An acquire whose outcome is
// unknown removes its holder again before it returns.
//
// # Fair queues
//
// The Store is a lease.FairStore (lease.WithFairness). A key's queue of
// waiters lives in the key's slot: P:queue:{G}, a list of tickets in
// arrival order, and P:queue:{G}:exp, a hash of each ticket's expiry
// (server ms); both expire with the longest-lived place. One script keeps
// a waiter's place (appending its ticket the first time, moving its expiry
// every time), drops the dead tickets at the head, and takes the lease
// only if the key is free and the ticket is at the head. A lease so taken
// is an ordinary one: releasing it publishes on the key's channel, which
// wakes the queue; a waiter that leaves from the head publishes too.
// Store.Acquire does not read the queue, so a plain acquire costs nothing
// more, and is not held back by it.
//
// # Least-privilege ACL
//
// The store sends EVALSHA (and EVAL after a script cache flush) on keys
// matching P:*, where P is the prefix. Redis checks the ACL of every command
// a script calls, so those are granted too (TestStore_ACL runs the whole
// conformance suite as this user):
//
//	ACL SETUSER cronguard on >secret resetkeys ~P:* resetchannels &P:* -@all +evalsha +eval +time +get +mget +set +mset +del +pexpire +ping +spublish +ssubscribe +sunsubscribe
//
// The channels and the last three commands are for release notifications
// (above); without them everything works and waiters poll. Add
// +zadd +zrem +zscore +zcard +zcount +zrange +zremrangebyscore +pttl for
// semaphores, +exists +hset +hget +hdel +rpush +lpop +lindex +lrem +llen +pttl for
// fair waiters, +cluster|slots +cluster|shards on Redis Cluster, and +wait
// with WithReplicaAck. docs/redis-acl.md explains each grant.
//
// A user granted EVAL or EVALSHA can run any script, not only the
// store's, and a script that loops holds up the whole server (every
// replica's heartbeat with it): the ACL cannot restrict which script runs.
// Trust such a user like the service; a user who only reads the fleet
// needs no script (docs/redis-acl.md, the read-only user).
package redislease
