package luascripts

import _ "embed"

// Acquire takes a lease, checking liveness, round and clock skew; see acquire.lua.
//
//go:embed acquire.lua
var Acquire string

// AcquireBatch makes the acquires of Acquire for many keys in one call,
// each answered as Acquire answers it (not on a Redis Cluster); see
// acquire_batch.lua.
//
//go:embed acquire_batch.lua
var AcquireBatch string

// Extend moves a lease's expiry to server-now + ttl; see extend.lua.
//
//go:embed extend.lua
var Extend string

// Release deletes a lease held by an ID; see release.lua.
//
//go:embed release.lua
var Release string

// ExtendLease is Extend for a holder that knows the lease's key: every key
// in KEYS, no index read on the common path; see extend_lease.lua.
//
//go:embed extend_lease.lua
var ExtendLease string

// ReleaseLease is Release for a holder that knows the lease's key: every key
// in KEYS, no index read on the common path; see release_lease.lua.
//
//go:embed release_lease.lua
var ReleaseLease string

// Rollback undoes an acquire whose outcome was unknown: releases the lease
// and gives its round back; see rollback.lua.
//
//go:embed rollback.lua
var Rollback string

// AcquireTrigger takes a lease to run a queued trigger, consuming it; see
// acquire_trigger.lua.
//
//go:embed acquire_trigger.lua
var AcquireTrigger string

// ReleaseStatus releases a held lease and records the run's status; see
// release_status.lua.
//
//go:embed release_status.lua
var ReleaseStatus string

// ReleaseBatch makes the releases of ReleaseStatus for many leases in one
// call, each answered as ReleaseStatus answers it (not on a Redis
// Cluster); see release_batch.lua.
//
//go:embed release_batch.lua
var ReleaseBatch string

// AcquireResume takes a lease for the next attempt of an open occurrence;
// see acquire_resume.lua.
//
//go:embed acquire_resume.lua
var AcquireResume string

// GiveUp marks an open occurrence out of attempts or time given up; see
// give_up.lua.
//
//go:embed give_up.lua
var GiveUp string

// Due reads the due entries of the index of open occurrences; see due.lua.
//
//go:embed due.lua
var Due string

// TriggerAdd queues a trigger; see trigger_add.lua.
//
//go:embed trigger_add.lua
var TriggerAdd string

// PauseSet pauses a key; see pause_set.lua.
//
//go:embed pause_set.lua
var PauseSet string

// RegistryPublish writes a replica's registry entry; see
// registry_publish.lua.
//
//go:embed registry_publish.lua
var RegistryPublish string

// RegistryRefresh keeps a replica's registry entry alive; see
// registry_refresh.lua.
//
//go:embed registry_refresh.lua
var RegistryRefresh string

// Lookup reads the live lease on a key; see lookup.lua.
//
//go:embed lookup.lua
var Lookup string

// LookupID reads the live lease with an ID; see lookup_id.lua.
//
//go:embed lookup_id.lua
var LookupID string

// IsLocked reports whether a key is held; see islocked.lua.
//
//go:embed islocked.lua
var IsLocked string

// SemaphoreAcquire makes a semaphore holder; see semaphore_acquire.lua.
//
//go:embed semaphore_acquire.lua
var SemaphoreAcquire string

// SemaphoreExtend extends a semaphore holder; see semaphore_extend.lua.
//
//go:embed semaphore_extend.lua
var SemaphoreExtend string

// SemaphoreRelease removes a semaphore holder; see semaphore_release.lua.
//
//go:embed semaphore_release.lua
var SemaphoreRelease string

// SemaphoreHeld counts a semaphore's live holders; see semaphore_held.lua.
//
//go:embed semaphore_held.lua
var SemaphoreHeld string

// AcquireQueued is one attempt of a fair waiter; see acquire_queued.lua.
//
//go:embed acquire_queued.lua
var AcquireQueued string

// QueueLeave takes a waiter out of a key's queue; see queue_leave.lua.
//
//go:embed queue_leave.lua
var QueueLeave string

// ToleranceMs is the liveness tolerance, in milliseconds, written as
// TOLERANCE_MS into every script that judges liveness by the clock: a lease
// is live while expiresAtMs > now - ToleranceMs. It equals
// lease.ExpiryTolerance (a test checks both).
const ToleranceMs = 1000

// All returns every script by file name, for tests and tooling.
func All() map[string]string {
	return map[string]string{
		"acquire.lua":           Acquire,
		"acquire_batch.lua":     AcquireBatch,
		"release_batch.lua":     ReleaseBatch,
		"extend.lua":            Extend,
		"release.lua":           Release,
		"extend_lease.lua":      ExtendLease,
		"release_lease.lua":     ReleaseLease,
		"rollback.lua":          Rollback,
		"acquire_trigger.lua":   AcquireTrigger,
		"release_status.lua":    ReleaseStatus,
		"trigger_add.lua":       TriggerAdd,
		"pause_set.lua":         PauseSet,
		"registry_publish.lua":  RegistryPublish,
		"registry_refresh.lua":  RegistryRefresh,
		"lookup.lua":            Lookup,
		"lookup_id.lua":         LookupID,
		"islocked.lua":          IsLocked,
		"semaphore_acquire.lua": SemaphoreAcquire,
		"semaphore_extend.lua":  SemaphoreExtend,
		"semaphore_release.lua": SemaphoreRelease,
		"semaphore_held.lua":    SemaphoreHeld,
		"acquire_queued.lua":    AcquireQueued,
		"queue_leave.lua":       QueueLeave,
		"acquire_resume.lua":    AcquireResume,
		"give_up.lua":           GiveUp,
		"due.lua":               Due,
	}
}
