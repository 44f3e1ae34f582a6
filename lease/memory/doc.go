// Package memory is an in-process lease.Store with the same semantics as
// lease/redis: the same validation, the same liveness rule (a lease is live
// while ExpiresAt > now - lease.ExpiryTolerance), the same retention of
// expired records for lease.ExpiredRetention (so Extend and Release report
// lease.ReasonExpired), fence counters and round records kept per key for
// the life of the Store, and the same order of checks on acquire (live
// lease, round claimed, clock skew).
//
// It is for tests and for programs that run as a single process. Its
// "server time" is the clock given with WithClock, so a clockwork fake
// clock drives expiry without sleeping. Leases live in one process's
// memory: they exclude nothing across processes, and fences and rounds are
// lost when the process ends, so a fence from a previous run can be issued
// again. Use lease/redis for more than one replica.
//
// Memory grows with the number of distinct keys ever used (their fences and
// rounds are kept), plus the leases of the last lease.ExpiredRetention.
package memory
