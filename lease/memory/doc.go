// Package memory is an in-process lease.Store with the same semantics as
// lease/redislease: the same validation, the same liveness rule (a lease is live
// while ExpiresAt > now - lease.ExpiryTolerance), the same retention of
// expired records for lease.ExpiredRetention (so Extend and Release report
// lease.ReasonExpired), fence counters and round records kept per key for
// the life of the Store, and the same order of checks on acquire (pause
// when asked, round claimed, live lease, clock skew; for a trigger
// acquire, live lease, then a pending trigger). It is a lease.Notifier:
// every release wakes the key's watches, in process, at once. It is a
// lease.SemaphoreStore too, with lease/redislease's rules (holders live as
// leases do, dropped by the next acquire once not live; a fence counter
// per semaphore), and a lease.FairStore (a queue of waiters per key).
//
// A Store is also a fleet.Store, the control plane's storage, again with
// lease/redislease's semantics and limits (MaxTriggerTTL, MaxPauseNoteBytes,
// MaxReplicaIDBytes): pauses honoured by lease.WithPauseCheck, triggers
// consumed by lease.WithTrigger, run status recorded by ReleaseWithStatus,
// the registry of replicas and its conflicts, and the control channel
// (Publish, Subscribe).
//
// It is for tests and for programs that run as a single process. Its
// "server time" is the clock given with WithClock, so a clockwork fake
// clock drives expiry, trigger expiry and registry lapses without
// sleeping; it also works inside a testing/synctest bubble. Leases live in
// one process's memory: they exclude nothing across processes, and fences
// and rounds are lost when the process ends, so a fence from a previous run
// can be issued again. The registry, pauses, statuses and triggers are
// likewise this Store's own, and the control channel reaches only the
// subscribers of the same Store value: two Stores, even in one process,
// are two separate fleets. Use lease/redislease for more than one replica.
//
// Memory grows with the number of distinct keys and semaphores ever used
// (their fences, rounds and last statuses are kept), plus the leases of the last
// lease.ExpiredRetention, the pauses in force, the live triggers and
// registry entries (expired ones are dropped as the Store goes), and at
// most MaxPendingMessages undelivered messages per subscription.
package memory
